// How the chroot kubelet reads a container run's CPU time from its cgroup (packages/testkit/src/container-cpu.ts).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "@jest/globals";
import { cpuHierarchy, cpuSecondsOf } from "./container-cpu.js";

const base = mkdtempSync(join(tmpdir(), "captf-cgroups-"));
afterAll(() => rmSync(base, { recursive: true, force: true }));

describe("a container run's CPU time from its cgroup", () => {
  it("reads cgroup v1's cpuacct.usage (nanoseconds) and cgroup v2's cpu.stat (usage_usec)", () => {
    expect(cpuSecondsOf("cgroup v1", "1250000000\n")).toBe(1.25);
    expect(cpuSecondsOf("cgroup v2", "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\n")).toBe(2.5);
    expect(() => cpuSecondsOf("cgroup v2", "user_usec 1\n")).toThrow("cpu.stat has no usage_usec line");
  });

  it("finds v1's cpuacct hierarchy first, else a v2 unified one, else none", () => {
    const v1 = join(base, "v1");
    mkdirSync(join(v1, "cpuacct"), { recursive: true });
    writeFileSync(join(v1, "cpuacct", "cpuacct.usage"), "0\n");
    expect(cpuHierarchy(v1)).toEqual({ kind: "cgroup v1", root: join(v1, "cpuacct") });
    const v2 = join(base, "v2");
    mkdirSync(v2);
    writeFileSync(join(v2, "cgroup.controllers"), "cpu io memory pids\n");
    expect(cpuHierarchy(v2)).toEqual({ kind: "cgroup v2", root: v2 });
    expect(cpuHierarchy(join(base, "none"))).toBeUndefined();
  });
});
