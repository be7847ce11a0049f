import { describe, expect, it } from "@jest/globals";
import { readFileSync } from "node:fs";
import { runStep, type StepProcess } from "./exec.js";

function shell(script: string, extra: Partial<StepProcess> = {}): Promise<ReturnType<typeof runStep> extends Promise<infer T> ? T : never> {
  return runStep({
    command: ["/bin/sh", "-c", script],
    cwd: "/",
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
    captureStdout: true,
    signal: new AbortController().signal,
    stopTimeoutMs: 5000,
    ...extra,
  });
}

/** Running or sleeping; a killed orphan may linger as a zombie where PID 1 does not reap. */
function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) [ZX]/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

describe("runStep", () => {
  it("reports the exit code, captures stdout and keeps the stderr tail while passing both on", async () => {
    const seen: string[] = [];
    const outcome = await shell("echo out; echo err >&2; exit 3", {
      onStdout: (text) => seen.push(`o:${text}`),
      onStderr: (text) => seen.push(`e:${text}`),
    });
    expect(outcome).toMatchObject({ exit: 3, stdout: "out\n", stderrTail: "err\n" });
    expect(outcome.failure).toBeUndefined();
    expect(seen.sort()).toEqual(["e:err\n", "o:out\n"]);
  });

  it("runs in the given directory with exactly the given environment", async () => {
    const outcome = await runStep({
      command: ["/bin/sh", "-c", 'pwd; echo "$ONLY"; echo "${HOME:-unset}"'],
      cwd: "/tmp",
      env: { ONLY: "this" },
      captureStdout: true,
      signal: new AbortController().signal,
      stopTimeoutMs: 1000,
    });
    expect(outcome.stdout).toBe("/tmp\nthis\nunset\n");
  });

  it("reports a command that cannot start", async () => {
    const outcome = await runStep({
      command: ["/nonexistent/tofu"],
      cwd: "/",
      env: {},
      captureStdout: false,
      signal: new AbortController().signal,
      stopTimeoutMs: 1000,
    });
    expect(outcome.exit).toBe(1);
    expect(outcome.failure).toMatch(/\/nonexistent\/tofu could not be started: .*ENOENT/);
  });

  it("on abort sends SIGTERM to the runtime and kills what it left behind in its group", async () => {
    const stop = new AbortController();
    let sleeper = 0;
    const outcome = shell("trap 'echo stopping >&2; exit 7' TERM; sleep 30 & echo $!; wait", {
      signal: stop.signal,
      onStdout: (text) => {
        sleeper = Number(text.trim());
        stop.abort();
      },
    });
    const result = await outcome;
    expect(result.exit).toBe(7);
    expect(result.stderrTail).toBe("stopping\n");
    expect(sleeper).toBeGreaterThan(0);
    expect(alive(sleeper)).toBe(false);
    expect(result.seconds).toBeLessThan(1.5);
  });

  it("kills the whole group once the stop timeout passes", async () => {
    const stop = new AbortController();
    const outcome = shell("trap '' TERM; echo ready; sleep 20; echo finished", {
      signal: stop.signal,
      stopTimeoutMs: 200,
      onStdout: () => stop.abort(),
    });
    const result = await outcome;
    expect(result.exit).toBe(1);
    expect(result.failure).toBe("killed by SIGKILL");
    expect(result.stdout).toBe("ready\n");
    expect(result.seconds).toBeLessThan(5);
  });
});
