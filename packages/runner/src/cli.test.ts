import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { main, type CliIo } from "./cli.js";
import { runnerVersion } from "./version.js";
import type { RunResult } from "@captf/contract/run-result";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "runner-cli-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function cli(argv: string[], io: Partial<CliIo> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const code = await main(argv, {
    stdout: (text) => (stdout += text),
    stderr: (text) => (stderr += text),
    env: { PATH: "/usr/bin:/bin" },
    ...io,
  });
  return { code, stdout, stderr };
}

describe("runner --help", () => {
  it("reads like a manual: synopsis, commands, exit status", async () => {
    const { code, stdout } = await cli(["--help"]);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^runner <command> \[options\]\n\nThe captf runner runs inside every captf Job/);
    expect(stdout).toContain("runner copy <dest>");
    expect(stdout).toContain("EXIT STATUS\n  0  the operation succeeded");
  });

  it("documents every run flag with its default, the steps and the signals", async () => {
    const { code, stdout } = await cli(["run", "--help"]);
    expect(code).toBe(0);
    for (const flag of [
      "--op",
      "--bin",
      "--image",
      "--module",
      "--providers",
      "--workdir",
      "--config",
      "--backend-config",
      "--lock-timeout",
      "--stop-timeout",
      "--force-unlock",
      "--guard-deletes",
      "--inputs-hash",
      "--allow-deletes-hash",
      "--expect-plan",
      "--restore-chunks",
      "--restore-resources",
      "--event-object",
      "--job-name",
      "--result",
    ]) {
      expect(stdout).toContain(`  ${flag} `);
    }
    expect(stdout).toContain('[default: "/dev/termination-log"]');
    expect(stdout).toContain("STEPS\n  apply    init, validate, apply");
    expect(stdout).toContain("SIGNALS");
    expect(stdout).not.toContain("--events-server");
  });
});

describe("runner version", () => {
  it("prints the runner, contract and node versions, as text or JSON", async () => {
    expect((await cli(["version"])).stdout).toBe(`runner ${runnerVersion} (contract v1alpha1, node ${process.version})\n`);
    expect(JSON.parse((await cli(["version", "--format=json"])).stdout)).toEqual({
      runner: runnerVersion,
      contract: "v1alpha1",
      node: process.version,
    });
    expect((await cli(["--version"])).stdout).toBe(`runner ${runnerVersion} (contract v1alpha1, node ${process.version})\n`);
  });

  it("matches package.json", async () => {
    const manifest = JSON.parse(await readFile(new URL("../package.json", import.meta.url), "utf8")) as { version: string };
    expect(runnerVersion).toBe(manifest.version);
  });
});

describe("usage errors", () => {
  it.each([
    [["run", "--op=delete"], /Invalid values:\n  Argument: op, Given: "delete"/],
    [["run"], /Missing required argument: op/],
    [["run", "--op=apply", "extra"], /run takes no arguments besides its flags/],
    [["run", "--op=apply", "--bogus"], /Unknown argument: bogus/],
    [["run", "--op=apply", "--lock-timeout=5"], /--lock-timeout: "5" is not a duration/],
    [["run", "--op=restore", "--restore-chunks=-1"], /--restore-chunks must be a whole number of at least 0/],
  ])("%j exits 2 and still writes a result naming the flags", async (argv, message) => {
    const result = join(dir, "usage.json");
    await rm(result, { force: true });
    const { code, stderr } = await cli([...argv, `--result=${result}`]);
    expect(code).toBe(2);
    expect(stderr).toMatch(message);
    expect(stderr).toContain('Run "runner --help"');
    const document = JSON.parse(await readFile(result, "utf8")) as RunResult;
    expect(document).toMatchObject({ version: 1, steps: [], error: { kind: "step", step: "flags" } });
    expect(document.error?.summary).toMatch(message);
  });

  it("exits 2 for an unknown command or none", async () => {
    expect((await cli(["frobnicate"])).code).toBe(2);
    expect((await cli([])).stderr).toContain("name a command: run, broker, copy or version");
  });
});

describe("runner run outside an image", () => {
  it("reports an image-layout error, exit 1, without running a step", async () => {
    const result = join(dir, "layout.json");
    const { code } = await cli([
      "run",
      "--op=apply",
      `--module=${join(dir, "nothing")}`,
      "--bin=/nonexistent/tofu",
      `--result=${result}`,
      "--image=m:1",
    ]);
    expect(code).toBe(1);
    const document = JSON.parse(await readFile(result, "utf8")) as RunResult;
    expect(document).toMatchObject({ op: "apply", image: { ref: "m:1" }, steps: [], error: { kind: "image-layout", step: null } });
    expect(document.error?.summary).toMatch(/no module directory at .*nothing/);
  });

  it("resolves relative paths before the steps change directory", async () => {
    const result = join(dir, "relative.json");
    const { code } = await cli(["run", "--op=apply", "--module=relative/module", "--bin=./tofu", `--result=${result}`], {});
    expect(code).toBe(1);
    const document = JSON.parse(await readFile(result, "utf8")) as RunResult;
    expect(document.runtime.command).toEqual([join(process.cwd(), "tofu")]);
    expect(document.error?.summary).toContain(`no module directory at ${join(process.cwd(), "relative/module")}`);
  });

  it("exits 1 when the result cannot be written, saying where it tried", async () => {
    const { code, stderr } = await cli([
      "run",
      "--op=apply",
      `--module=${join(dir, "nothing")}`,
      `--result=${join(dir, "missing", "dir", "result.json")}`,
    ]);
    expect(code).toBe(1);
    expect(stderr).toMatch(/cannot write the result to .*missing\/dir\/result\.json/);
  });
});

describe("runner copy", () => {
  it("refuses a directory that is not a bundle, naming the build step", async () => {
    const { code, stderr } = await cli(["copy", join(dir, "dest")], { bundleDir: dir });
    expect(code).toBe(1);
    expect(stderr).toMatch(/is not a runner bundle .*build-bundle\.mjs/);
  });

  it("copies the bundle given with --from", async () => {
    const from = join(dir, "bundle");
    await mkdir(join(from, "lib"), { recursive: true });
    await writeFile(join(from, "node"), "n");
    await writeFile(join(from, "runner.mjs"), "r");
    await writeFile(join(from, "runner.cjs"), "c");
    await writeFile(join(from, "broker.cjs"), "b");
    const { code } = await cli(["copy", join(dir, "bin"), `--from=${from}`]);
    expect(code).toBe(0);
    expect(await readFile(join(dir, "bin", "runner.mjs"), "utf8")).toBe("r");
  });
});
