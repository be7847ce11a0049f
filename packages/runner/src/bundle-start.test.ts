import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const buildScript = fileURLToPath(new URL("../scripts/build-bundle.mjs", import.meta.url));

// What a Job's `run` loads before its first step is the runner's start-up cost (bench/runner-overhead.mjs).
describe("the bundle's start for a run", () => {
  let base: string;
  let bundle: string;
  beforeAll(async () => {
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
      process.execPath,
      ["--import", join(base, "loaded.mjs"), entry, "run", "--op=apply", `--bin=${join(base, "no-runtime")}`, `--module=${base}`, `--config=${base}`, `--workdir=${join(base, "work")}`, `--result=${resultPath}`],
      { encoding: "utf8", env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } },
    );
    const loaded = JSON.parse(child.stderr.trim().split("\n").at(-1)!) as string[];
    return { status: child.status, builtins: loaded.filter((name) => name.startsWith("NativeModule ")).map((name) => name.slice("NativeModule ".length)), result: child.status === null ? "" : resultPath };
  }

  it("splits off what only help and usage errors need, and runs without it", async () => {
    const chunks = (await readdir(bundle)).filter((name) => name.endsWith(".mjs") && name !== "runner.mjs");
    const helpChunk = chunks.find((name) => name.startsWith("runner-yargs-"));
    expect(helpChunk).toBeDefined();
    await rm(join(bundle, helpChunk!));
    const run = preflightRun(join(bundle, "runner.mjs"));
    expect(run.status).toBe(1);
    expect(JSON.parse(await readFile(run.result, "utf8")).error).toMatchObject({ kind: "image-layout" });
  });

  it("loads neither TLS nor zlib: events and restores load them when they need them", () => {
    const { builtins } = preflightRun(join(bundle, "runner.mjs"));
    expect(builtins).toContain("child_process");
    expect(builtins.filter((name) => ["http", "https", "tls", "zlib"].includes(name))).toEqual([]);
  });

  it("loads neither crypto nor perf_hooks: the plan hash loads crypto when it hashes, durations use process.hrtime", () => {
    const { builtins } = preflightRun(join(bundle, "runner.mjs"));
    expect(builtins.filter((name) => ["crypto", "perf_hooks"].includes(name))).toEqual([]);
  });
});
