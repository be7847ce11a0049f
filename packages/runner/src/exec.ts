import { spawn } from "node:child_process";
import { monotonicMs } from "./durations.js";
import type { Environment } from "./workspace.js";

/** Enough stderr to keep a failing step's "Error:" block behind whatever a provider printed before it. */
export const maxStderrTailChars = 64 * 1024;
/** How long to wait for a stopped step's output pipes once it has exited (a grandchild may hold them). */
const pipeDrainMs = 2000;

export interface StepProcess {
  /** The runtime command (`--bin`) and the step's arguments. */
  command: readonly string[];
  cwd: string;
  env: Environment;
  /** Keep stdout in memory for the caller. */
  captureStdout: boolean;
  onStdout?: ((text: string) => void) | undefined;
  onStderr?: ((text: string) => void) | undefined;
  /** Aborted when the runner is told to stop. */
  signal: AbortSignal;
  /** After SIGTERM, how long the step may take before its process group is killed. */
  stopTimeoutMs: number;
}

export interface StepOutcome {
  exit: number;
  seconds: number;
  stdout: string;
  stderrTail: string;
  /** Why there is no exit code: the command could not start, or a signal ended it. */
  failure?: string;
}

function signalGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // the group is already gone
  }
}

/**
 * Runs one step in its own process group, so a signal meant for the runner never reaches it
 * directly. On abort the runtime alone gets SIGTERM (it stops its providers and provisioners
 * itself, saving state and releasing the lock); its whole group gets SIGKILL after the stop
 * timeout, and once it has exited, so no orphaned `local-exec` child outlives the run.
 */
export function runStep(step: StepProcess): Promise<StepOutcome> {
  const started = monotonicMs();
  const [file, ...args] = step.command;
  let stdout = "";
  let stderrTail = "";
  return new Promise((resolve) => {
    // stdin is an empty pipe, not /dev/null: an image root may have no /dev at all.
    const child = spawn(file!, args, { cwd: step.cwd, env: step.env, detached: true, stdio: ["pipe", "pipe", "pipe"] });
    child.stdin.end();
    let killTimer: NodeJS.Timeout | undefined;
    let drainTimer: NodeJS.Timeout | undefined;
    let settled = false;
    const onAbort = () => {
      child.kill("SIGTERM");
      killTimer = setTimeout(() => signalGroup(child.pid, "SIGKILL"), step.stopTimeoutMs);
    };
    const finish = (exit: number, failure?: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(killTimer);
      clearTimeout(drainTimer);
      step.signal.removeEventListener("abort", onAbort);
      if (step.signal.aborted) signalGroup(child.pid, "SIGKILL");
      const seconds = Math.round((monotonicMs() - started) / 10) / 100;
      resolve({ exit, seconds, stdout, stderrTail, ...(failure ? { failure } : {}) });
    };
    child.stdout.setEncoding("utf8");
    child.stderr.setEncoding("utf8");
    child.stdout.on("data", (text: string) => {
      if (step.captureStdout) stdout += text;
      step.onStdout?.(text);
    });
    child.stderr.on("data", (text: string) => {
      stderrTail = (stderrTail + text).slice(-maxStderrTailChars);
      step.onStderr?.(text);
    });
    child.on("error", (error) => finish(1, `${file} could not be started: ${error.message}`));
    child.on("exit", () => {
      // Stopping: what the runtime left in its group (a local-exec child) would hold the pipes open.
      if (step.signal.aborted) signalGroup(child.pid, "SIGKILL");
      drainTimer = setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
      }, pipeDrainMs);
    });
    child.on("close", (code, signal) => finish(code ?? 1, code === null ? `killed by ${signal ?? "a signal"}` : undefined));
    if (step.signal.aborted) onAbort();
    else step.signal.addEventListener("abort", onAbort, { once: true });
  });
}
