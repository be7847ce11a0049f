// bench/bringup.mjs's figures of a scale cycle (bench/lib/bringup-report.mjs): what it computes from
// the Machines, Jobs, Pods and /metrics samples it collected, and the lines and JSON fields it prints.
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "@jest/globals";

interface Distribution {
  count: number;
  p50: number;
  p95: number;
  max: number;
}
interface Report {
  distribution(values: number[]): Distribution;
  machineReady(machine: unknown): boolean;
  jobStarts(
    jobs: unknown[],
    pods: unknown[],
    jobNames: Set<string>,
  ): { init: { job: string; seconds: number }[]; main: { job: string; seconds: number }[] };
  secondsBetween(from: Map<string, number>, to: Map<string, number>): { name: string; seconds: number }[];
  residentMiB(metricsText: string): number | undefined;
  peakOf(samples: (number | undefined)[]): number | undefined;
  memorySummary(
    beforeMiB: number,
    cycles: { rssPeakMiB?: number; rssAfterGcMiB?: number }[],
  ): { rssBeforeMiB: number; rssPeakMiB?: number; rssAfterGcMiB: (number | undefined)[]; lastToFirstAfterGc: number };
  cycleLines(label: string, cycle: Record<string, unknown>): string[];
}

const report = (await import(fileURLToPath(new URL("../../../bench/lib/bringup-report.mjs", import.meta.url)))) as Report;

const job = (name: string, created: string) => ({ metadata: { name, creationTimestamp: created } });
const pod = (jobName: string, init: string | undefined, main: { running?: string; terminated?: string } | undefined) => ({
  metadata: { labels: { "batch.kubernetes.io/job-name": jobName } },
  status: {
    initContainerStatuses: init ? [{ name: "runner-bundle", state: { terminated: { startedAt: init } } }] : [],
    containerStatuses: main
      ? [
          {
            name: "runner",
            state: main.running ? { running: { startedAt: main.running } } : { terminated: { startedAt: main.terminated } },
          },
        ]
      : [{ name: "runner", state: { waiting: { reason: "PodInitializing" } } }],
  },
});

describe("bench/bringup's scale-cycle figures", () => {
  it("gives p50 and p95 as the sample at that rank, and the max", () => {
    const values = Array.from({ length: 20 }, (_, index) => index + 1);
    expect(report.distribution(values)).toEqual({ count: 20, p50: 11, p95: 20, max: 20 });
    expect(report.distribution([4, 1, 3])).toEqual({ count: 3, p50: 3, p95: 4, max: 4 });
    expect(report.distribution([])).toEqual({ count: 0, p50: NaN, p95: NaN, max: NaN });
  });

  it("counts a Machine ready as the e2e does: Running, a nodeRef and Ready=True", () => {
    const ready = { phase: "Running", nodeRef: { name: "n" }, conditions: [{ type: "Ready", status: "True" }] };
    expect(report.machineReady({ status: ready })).toBe(true);
    expect(report.machineReady({ status: { ...ready, phase: "Provisioned" } })).toBe(false);
    expect(report.machineReady({ status: { ...ready, nodeRef: undefined } })).toBe(false);
    expect(report.machineReady({ status: { ...ready, conditions: [{ type: "Ready", status: "False" }] } })).toBe(false);
    expect(report.machineReady({})).toBe(false);
  });

  it("times each Job from its creation to its Pod's init and runner containers' start, first Pod counting", () => {
    const jobs = [job("a", "2026-12-07T12:00:00Z"), job("b", "2026-12-07T12:00:01Z"), job("other", "2026-12-07T12:00:00Z")];
    const pods = [
      pod("a", "2026-12-07T12:00:02Z", { terminated: "2026-12-07T12:00:04Z" }),
      // a's second Pod (the first one failed) started later: the first start counts.
      pod("a", "2026-12-07T12:00:30Z", { running: "2026-12-07T12:00:31Z" }),
      pod("b", "2026-12-07T12:00:05Z", undefined),
      pod("other", "2026-12-07T12:00:01Z", { running: "2026-12-07T12:00:01Z" }),
    ];
    expect(report.jobStarts(jobs, pods, new Set(["a", "b"]))).toEqual({
      init: [
        { job: "a", seconds: 2 },
        { job: "b", seconds: 4 },
      ],
      main: [{ job: "a", seconds: 4 }],
    });
  });

  it("reads a Job's Pod by either job-name label", () => {
    const legacy = { ...pod("a", undefined, { running: "2026-12-07T12:00:03Z" }), metadata: { labels: { "job-name": "a" } } };
    expect(report.jobStarts([job("a", "2026-12-07T12:00:00Z")], [legacy], new Set(["a"])).main).toEqual([{ job: "a", seconds: 3 }]);
  });

  it("times objects seen in both maps, by name", () => {
    const from = new Map([
      ["m-2", 1_000],
      ["m-1", 2_000],
      ["never-ready", 0],
    ]);
    const to = new Map([
      ["m-1", 4_500],
      ["m-2", 2_000],
    ]);
    expect(report.secondsBetween(from, to)).toEqual([
      { name: "m-1", seconds: 2.5 },
      { name: "m-2", seconds: 1 },
    ]);
  });

  it("reads process_resident_memory_bytes from the manager's /metrics in MiB", () => {
    const text = [
      "# HELP process_resident_memory_bytes Resident memory size in bytes.",
      "# TYPE process_resident_memory_bytes gauge",
      "process_resident_memory_bytes 136314880",
      "process_heap_bytes 1e9",
    ].join("\n");
    expect(report.residentMiB(text)).toBe(130);
    expect(report.residentMiB('process_resident_memory_bytes{pod="x"} 1.048576e6\n')).toBe(1);
    expect(report.residentMiB("captf_jobs_total 1\n")).toBeUndefined();
    expect(report.residentMiB("")).toBeUndefined();
  });

  it("sums the memory up over cycles: peak of peaks, after-GC per cycle, last against first", () => {
    expect(report.peakOf([undefined, 3, 7, undefined, 5])).toBe(7);
    expect(report.peakOf([undefined])).toBeUndefined();
    const cycles = [
      { rssPeakMiB: 300, rssAfterGcMiB: 150 },
      { rssPeakMiB: 320, rssAfterGcMiB: 165 },
    ];
    expect(report.memorySummary(120, cycles)).toEqual({
      rssBeforeMiB: 120,
      rssPeakMiB: 320,
      rssAfterGcMiB: [150, 165],
      lastToFirstAfterGc: 1.1,
    });
    expect(report.memorySummary(120, []).lastToFirstAfterGc).toBeNaN();
  });

  it("prints each figure of a cycle, a missing one as a dash", () => {
    const figures = { count: 3, p50: 1.04, p95: 2, max: 2.5 };
    const lines = report.cycleLines("run 1 cycle 2", {
      from: 3,
      to: 6,
      infrastructureReadySeconds: 12.34,
      readySeconds: 20,
      slowestJobSeconds: 1.5,
      createdToReady: figures,
      createdToFirstJob: figures,
      jobToInitStart: figures,
      jobToContainerStart: report.distribution([]),
      scaleDownSeconds: 9,
      rssPeakMiB: 210.25,
      rssAfterGcMiB: undefined,
    });
    expect(lines).toEqual([
      "run 1 cycle 2: scale 3 → 6: every new Machine InfrastructureReady in 12.3 s, all Ready in 20.0 s; " +
        "baseline, the slowest new apply Job's run: 1.5 s",
      "run 1 cycle 2: Machine created → Ready: p50 1.0 s, p95 2.0 s, max 2.5 s (n=3)",
      "run 1 cycle 2: TerraformMachine created → first Job: p50 1.0 s, p95 2.0 s, max 2.5 s (n=3) (an owner wait would be about 30 s)",
      "run 1 cycle 2: Job created → init container started: p50 1.0 s, p95 2.0 s, max 2.5 s (n=3)",
      "run 1 cycle 2: Job created → runner container started: p50 - s, p95 - s, max - s (n=0) (API timestamps, whole seconds)",
      "run 1 cycle 2: scale 6 → 3: the removed Machines and TerraformMachines gone in 9.0 s",
      "run 1 cycle 2: manager RSS peak 210.3 MiB, after the scale down and a forced GC - MiB",
    ]);
  });
});
