import { spawn } from "node:child_process";
import { cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, sep } from "node:path";
import { requireTool } from "./tools.js";

export interface CommandRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to completion, capturing its output. */
export function runCommand(
  command: string,
  args: readonly string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
): Promise<CommandRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** An OpenTofu environment free of the caller's TF_* settings, with the given (usually empty) CLI config. */
export function tofuEnvironment(cliConfigFile: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith("TF_") && key !== "CHECKPOINT_DISABLE") env[key] = value;
  return { ...env, TF_CLI_CONFIG_FILE: cliConfigFile, CHECKPOINT_DISABLE: "1", TF_IN_AUTOMATION: "1", TF_INPUT: "0" };
}

/** Copies a module to run it elsewhere: its links' targets copied in, without .terraform, the lock file or node_modules. */
export function copyModuleForRun(moduleDir: string, destination: string): void {
  const skipped = new Set([".terraform", ".terraform.lock.hcl", "node_modules"]);
  cpSync(moduleDir, destination, {
    recursive: true,
    dereference: true,
    filter: (path) =>
      !relative(moduleDir, path)
        .split(sep)
        .some((part) => skipped.has(part)),
  });
}

export interface TofuTestRun extends CommandRun {
  passed: number;
  failed: number;
}

/**
 * Copies a module (without .terraform, its links' targets copied in) to a temp dir and runs `tofu
 * init`, with `validate` also `tofu validate`, then `tofu test` there with the real OpenTofu;
 * returns the pass and fail counts of tofu's closing line, or the first failing step's output.
 * `cliConfig` is the CLI configuration (empty by default: no provider installation settings).
 */
export async function runTofuTest(moduleDir: string, options: { cliConfig?: string; validate?: boolean } = {}): Promise<TofuTestRun> {
  const tofu = requireTool("tofu");
  const dir = mkdtempSync(join(tmpdir(), "captf-tofu-test-"));
  try {
    const copy = join(dir, "module");
    copyModuleForRun(moduleDir, copy);
    writeFileSync(join(dir, "cli.tfrc"), options.cliConfig ?? "");
    const env = tofuEnvironment(join(dir, "cli.tfrc"));
    const init = await runCommand(tofu, ["init", "-input=false", "-no-color"], { cwd: copy, env });
    if (init.code !== 0) return { ...init, passed: 0, failed: 0 };
    if (options.validate) {
      const validate = await runCommand(tofu, ["validate", "-no-color"], { cwd: copy, env });
      if (validate.code !== 0) return { ...validate, passed: 0, failed: 0 };
    }
    const test = await runCommand(tofu, ["test", "-no-color"], { cwd: copy, env });
    const counts = /(\d+) passed, (\d+) failed/.exec(test.stdout);
    return { ...test, passed: counts ? Number(counts[1]) : 0, failed: counts ? Number(counts[2]) : 0 };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
