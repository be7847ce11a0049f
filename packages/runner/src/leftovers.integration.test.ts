import { afterAll, beforeAll, describe, expect, it, jest } from "@jest/globals";
import { execFileSync, spawn } from "node:child_process";
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

jest.setTimeout(60_000);

// A module's code can leave a process behind that writes its own result over the runner's. The
// runner, PID 1 of its container as in every Job, kills what is left before it writes its result.
const buildScript = fileURLToPath(new URL("../scripts/build-bundle.mjs", import.meta.url));
const forged = JSON.stringify({ version: 1, op: "apply", error: null, forged: true });

describe("the runner as its container's PID 1", () => {
  let base: string;
  let bundle: string;
  beforeAll(async () => {
    base = await mkdtemp(join(tmpdir(), "runner-leftovers-"));
    bundle = join(base, "bundle");
    execFileSync(process.execPath, [buildScript, "--js-only", "--out", bundle], { stdio: "pipe" });
    await mkdir(join(base, "module"));
    await writeFile(join(base, "module", "main.tf"), "");
    await mkdir(join(base, "config"));
    // A runtime whose every step leaves a writer behind that keeps putting the forged result in place.
    const runtime = join(base, "runtime");
    await writeFile(
      runtime,
      `#!/bin/sh\n(while :; do printf '%s' '${forged}' > "$RESULT_FILE"; sleep 0.01; done) >/dev/null 2>&1 &\nexit 0\n`,
    );
    await chmod(runtime, 0o755);
  });
  afterAll(async () => {
    await rm(base, { recursive: true, force: true });
  });

  it("stops every process module code left running before it writes its result", async () => {
    const result = join(base, "result.json");
    const args = [
      "run",
      "--op=refresh",
      `--bin=${join(base, "runtime")}`,
      `--module=${join(base, "module")}`,
      `--config=${join(base, "config")}`,
      `--workdir=${join(base, "work")}`,
      `--providers=${join(base, "none")}`,
      `--result=${result}`,
    ];
    // unshare's forked child is PID 1 of a new PID namespace and execs node, as a container's entrypoint is.
    const code = await new Promise<number | null>((resolve) => {
      const child = spawn("unshare", ["--pid", "--fork", "--mount-proc", process.execPath, join(bundle, "runner.cjs"), ...args], {
        stdio: "ignore",
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", RESULT_FILE: result },
      });
      child.on("close", resolve);
    });
    expect(code).toBe(0);
    // Had a writer survived, it would have replaced the runner's result within 10 ms.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const written = JSON.parse(await readFile(result, "utf8")) as Record<string, unknown>;
    expect(written.forged).toBeUndefined();
    expect(written).toMatchObject({ op: "refresh", error: null });
  });
});
