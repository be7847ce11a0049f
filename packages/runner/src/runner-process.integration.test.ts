import { afterAll, beforeAll, expect, it, jest } from "@jest/globals";
import { execFileSync, spawn } from "node:child_process";
import { chmod, mkdir, readdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describeWithTools } from "@captf/testkit";
import { RunnerFixture } from "./runner-fixture.test-support.js";
import type { RunResult } from "@captf/contract/run-result";

jest.setTimeout(60_000);

const buildScript = fileURLToPath(new URL("../scripts/build-bundle.mjs", import.meta.url));

/** Runs the bundled runner.mjs as its own process, the way a Job's container does. */
function runBundle(bundle: string, args: string[], onStdout?: (text: string, child: ReturnType<typeof spawn>) => void) {
  const child = spawn(process.execPath, [join(bundle, "runner.mjs"), ...args], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (text: string) => {
    stdout += text;
    onStdout?.(text, child);
  });
  child.stderr.setEncoding("utf8").on("data", (text: string) => (stderr += text));
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on("close", (code) => resolve({ code, stdout, stderr })),
  );
}

describeWithTools(["tofu"], "the bundled runner as a process", () => {
  let fixture: RunnerFixture;
  let bundle: string;
  beforeAll(async () => {
    fixture = await RunnerFixture.create("module", {
      variables: { name: { type: "string" }, generation: { type: "number" }, sleep_seconds: { type: "number" } },
    });
    bundle = join(fixture.base, "bundle");
    execFileSync(process.execPath, [buildScript, "--js-only", "--out", bundle], { stdio: "pipe" });
  });
  afterAll(async () => {
    await fixture.remove();
  });

  it("ends interrupted, exit 1, when the container gets SIGTERM during a long apply", async () => {
    await fixture.setInputs({ name: "beta", generation: 1, sleep_seconds: 30 });
    const resultPath = join(fixture.base, "result.json");
    const started = Date.now();
    const run = await runBundle(
      bundle,
      [
        "run",
        "--op=apply",
        `--bin=${fixture.runtime}`,
        `--module=${fixture.moduleDir}`,
        `--config=${fixture.configDir}`,
        `--workdir=${fixture.workdir}`,
        `--providers=${join(fixture.base, "none")}`,
        `--backend-config=path=${fixture.statePath}`,
        `--result=${resultPath}`,
        "--stop-timeout=5s",
      ],
      (text, child) => text.includes("slow-step-started") && child.kill("SIGTERM"),
    );
    expect(run.code).toBe(1);
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(run.stderr).toContain("received SIGTERM; stopping the running step");
    const result = JSON.parse(await readFile(resultPath, "utf8")) as RunResult;
    expect(result.error).toMatchObject({ kind: "interrupted", step: "apply" });
    expect(result.steps.map((step) => step.name)).toEqual(["init", "validate", "apply"]);
  });

  it("copies its own bundle directory into the shared volume", async () => {
    await writeFile(join(bundle, "node"), "#!/bin/sh\n");
    await chmod(join(bundle, "node"), 0o755);
    await mkdir(join(bundle, "lib"), { recursive: true });
    await writeFile(join(bundle, "lib", "libc.so.6"), "not really");
    const dest = join(fixture.base, "captf-bin");
    const scripts = (await readdir(bundle)).filter((name) => name.startsWith("runner") || name.startsWith("broker"));
    expect(scripts.length).toBeGreaterThan(3); // runner.mjs, the runner.cjs it loads, the yargs module for help and the broker's broker.cjs
    const run = await runBundle(bundle, ["copy", dest]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(
      new RegExp(`^copied the runner bundle from ${bundle} to ${dest}: ${scripts.length + 2} files, \\d+ bytes\\n$`),
    );
    expect((await stat(join(dest, "node"))).mode & 0o777).toBe(0o755);
    expect(await readFile(join(dest, "lib", "libc.so.6"), "utf8")).toBe("not really");
    for (const script of scripts) expect(await readFile(join(dest, script), "utf8")).toBe(await readFile(join(bundle, script), "utf8"));
  });
});
