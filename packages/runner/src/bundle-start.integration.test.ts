import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { execFileSync, spawnSync } from "node:child_process";
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { RunResult } from "@captf/contract/run-result";

const buildScript = fileURLToPath(new URL("../scripts/build-bundle.mjs", import.meta.url));
const pinnedNodeScript = new URL("../scripts/pinned-node.mjs", import.meta.url).href;

// What a Job's `run` loads before its first step is the runner's start-up cost (bench/runner-overhead.mjs).
describe("the bundle's start for a run", () => {
  let base: string;
  let bundle: string;
  /** The node Jobs run the bundle with (the pinned LTS), not this machine's. */
  let jobNode: string;
  beforeAll(async () => {
    const { pinnedNodeDir, hostArchitecture } = (await import(pinnedNodeScript)) as {
      pinnedNodeDir: (arch: string) => string;
      hostArchitecture: () => string;
    };
    jobNode = join(pinnedNodeDir(hostArchitecture()), "node");
    base = await mkdtemp(join(tmpdir(), "runner-start-"));
    bundle = join(base, "bundle");
    execFileSync(process.execPath, [buildScript, "--js-only", "--out", bundle], { stdio: "pipe" });
    await writeFile(join(base, "main.tf"), "");
    // Prints the built-in modules the process loaded, as it exits.
    await writeFile(join(base, "loaded.mjs"), 'process.on("exit", () => process._rawDebug(JSON.stringify(process.moduleLoadList)));\n');
  });
  afterAll(async () => {
    await rm(base, { recursive: true, force: true });
  });

  /** A run that stops at preflight (no runtime): everything it loaded, it loaded at start. */
  function preflightRun(entry: string): { status: number | null; builtins: string[]; result: string } {
    const resultPath = join(base, "result.json");
    const child = spawnSync(
      jobNode,
      [
        "--import",
        join(base, "loaded.mjs"),
        entry,
        "run",
        "--op=apply",
        `--bin=${join(base, "no-runtime")}`,
        `--module=${base}`,
        `--config=${base}`,
        `--workdir=${join(base, "work")}`,
        `--result=${resultPath}`,
      ],
      { encoding: "utf8", env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } },
    );
    const loaded = JSON.parse(child.stderr.trim().split("\n").at(-1)!) as string[];
    return {
      status: child.status,
      builtins: loaded.filter((name) => name.startsWith("NativeModule ")).map((name) => name.slice("NativeModule ".length)),
      result: child.status === null ? "" : resultPath,
    };
  }

  it("splits off what only help and usage errors need; run, version and copy work without it", async () => {
    const withoutHelp = join(base, "without-help");
    await cp(bundle, withoutHelp, { recursive: true });
    const helpModule = (await readdir(withoutHelp)).find((name) => name.startsWith("runner-yargs"));
    expect(helpModule).toBeDefined();
    await rm(join(withoutHelp, helpModule!));
    await writeFile(join(withoutHelp, "node"), "a stand-in: --js-only builds no node, and copy relocates only an ELF node");
    const run = preflightRun(join(withoutHelp, "runner.mjs"));
    expect(run.status).toBe(1);
    expect((JSON.parse(await readFile(run.result, "utf8")) as RunResult).error).toMatchObject({ kind: "image-layout" });
    // version and copy are what a Job's init container runs.
    const start = (args: string[]) => spawnSync(jobNode, [join(withoutHelp, "runner.mjs"), ...args], { encoding: "utf8" });
    expect(start(["version", "--format=json"])).toMatchObject({ status: 0, stderr: "" });
    const copied = start(["copy", join(base, "copy-target"), `--from=${withoutHelp}`]);
    expect(copied).toMatchObject({ status: 0, stderr: "" });
    expect(await readFile(join(base, "copy-target", "runner.cjs"), "utf8")).toBe(await readFile(join(bundle, "runner.cjs"), "utf8"));
  });

  it("loads neither TLS nor zlib: events and restores load them when they need them", () => {
    const { builtins } = preflightRun(join(bundle, "runner.mjs"));
    expect(builtins).toContain("child_process");
    expect(builtins.filter((name) => ["http", "https", "tls", "zlib"].includes(name))).toEqual([]);
  });

  it("starts its first step before it loads TLS for events or sets up process.stdout and process.stderr", async () => {
    // At the first spawn: which builtins were loaded, and whether the process's stream objects were ever made.
    const probe = join(base, "first-step.mjs");
    await writeFile(
      probe,
      [
        'import { ChildProcess } from "node:child_process";',
        "const touched = new Set();",
        'for (const name of ["stdout", "stderr"]) {',
        "  const { get } = Object.getOwnPropertyDescriptor(process, name);",
        "  Object.defineProperty(process, name, { configurable: true, enumerable: true, get() { touched.add(name); return " +
          "get.call(process); } });",
        "}",
        "let atFirstStep;",
        "const spawn = ChildProcess.prototype.spawn;",
        "ChildProcess.prototype.spawn = function (options) {",
        '  atFirstStep ??= { builtins: process.moduleLoadList.filter((name) => name.startsWith("NativeModule ")).map((name) => ' +
          "name.slice(13)), touched: [...touched] };",
        "  return spawn.call(this, options);",
        "};",
        'process.on("exit", () => process._rawDebug(JSON.stringify({ atFirstStep, touched: [...touched] })));',
      ].join("\n"),
    );
    const work = join(base, "events-work");
    const child = spawnSync(
      jobNode,
      [
        "--import",
        probe,
        join(bundle, "runner.cjs"),
        "run",
        "--op=apply",
        "--bin=/bin/true",
        `--module=${base}`,
        `--config=${base}`,
        `--workdir=${work}`,
        `--result=${join(base, "events-result.json")}`,
        "--event-object=infrastructure.cluster.x-k8s.io/v1alpha1/TerraformMachine/team-a/m/uid-1",
        "--events-server=https://127.0.0.1:1",
        `--service-account-dir=${join(base, "no-service-account")}`,
      ],
      { encoding: "utf8", env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } },
    );
    expect(child.status).toBe(0);
    const { atFirstStep, touched } = JSON.parse(child.stderr.trim().split("\n").at(-1)!) as {
      atFirstStep: { builtins: string[]; touched: string[] };
      touched: string[];
    };
    expect(atFirstStep.builtins).toContain("child_process");
    expect(atFirstStep.builtins.filter((name) => ["https", "tls"].includes(name))).toEqual([]);
    // The events were tried once the steps ran (the API server here refuses them), so TLS did load.
    expect(child.stderr).toContain("sending event");
    expect(atFirstStep.touched).toEqual([]);
    // Node's own sockets look at process.stderr when they close (net.Socket#_destroy), so only stdout stays untouched all through.
    expect(touched).not.toContain("stdout");
  });

  it("loads neither node:fs/promises nor readline: the few local files a run prepares go through node:fs", () => {
    const { builtins } = preflightRun(join(bundle, "runner.mjs"));
    expect(builtins.filter((name) => ["fs/promises", "internal/fs/promises", "internal/readline/interface"].includes(name))).toEqual([]);
  });

  it("loads neither crypto nor perf_hooks: the plan hash loads crypto when it hashes, durations use process.hrtime", () => {
    const { builtins } = preflightRun(join(bundle, "runner.mjs"));
    expect(builtins.filter((name) => ["crypto", "perf_hooks"].includes(name))).toEqual([]);
  });
});
