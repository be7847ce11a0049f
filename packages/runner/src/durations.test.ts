import { describe, expect, it } from "@jest/globals";
import { execFileSync } from "node:child_process";
import { DurationSyntaxError, endedChildrenCpuSeconds, ownCpuSeconds, parseDuration, wholeSeconds } from "./durations.js";

describe("parseDuration", () => {
  it.each([
    ["5m0s", 300_000],
    ["300s", 300_000],
    ["1m30s", 90_000],
    ["1h", 3_600_000],
    ["1.5s", 1500],
    ["250ms", 250],
    ["0", 0],
  ])("reads the Go duration %s", (text, milliseconds) => {
    expect(parseDuration(text)).toBe(milliseconds);
  });

  it.each(["", "300", "5 m", "5mins", "s", "-1s", "1s junk"])("rejects %j with the expected form in the message", (text) => {
    expect(() => parseDuration(text)).toThrow(DurationSyntaxError);
    expect(() => parseDuration(text)).toThrow(/for example 300s, 5m0s/);
  });

  it("passes whole seconds to -lock-timeout", () => {
    expect(wholeSeconds(parseDuration("1m0.9s"))).toBe(60);
  });
});

describe("CPU seconds", () => {
  it("reads the ended children's from /proc/self/stat's cutime and cstime (ticks of 1/100 s), whatever the command name holds", () => {
    const stat = "42 (node (x) y) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 30 20 20 0 1 0 100 0 0";
    expect(endedChildrenCpuSeconds(stat)).toBe(0.5);
    expect(endedChildrenCpuSeconds("42 (node) S 1")).toBeUndefined();
  });

  it("counts a child's CPU once it has ended, and this process's own apart", () => {
    const before = endedChildrenCpuSeconds()!;
    const own = ownCpuSeconds();
    // CPU time, not wall time: the child spins until it has used 0.3 s.
    const burn = "const t = process.cpuUsage(); while ((u => u.user + u.system)(process.cpuUsage(t)) < 300000);";
    execFileSync(process.execPath, ["-e", burn]);
    expect(endedChildrenCpuSeconds()! - before).toBeGreaterThanOrEqual(0.29);
    expect(ownCpuSeconds()).toBeGreaterThan(own);
  });
});
