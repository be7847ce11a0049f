// bench/bringup.mjs's figures of a scale cycle (bench/lib/bringup-report.mjs): what it computes from
// the Machines, Jobs, Pods and /metrics samples it collected, and the lines and JSON fields it prints.
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "@jest/globals";
import type { ContainerCpu } from "./container-cpu.js";

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
  parseProcStat(text: string): { comm: string; ppid: number; ownTicks: number; childrenTicks: number };
  machineBusyTicks(procStat: string): number;
  planeComponents(processes: Map<number, { comm: string; ppid: number }>, rootPid: number): Map<number, string>;
  runnerCpu(logText: string): { steps: Record<string, number>; own?: number };
  cpuBreakdown(before: Snapshot, after: Snapshot, jobPods: Map<string, string>): Breakdown;
  cpuLines(label: string, breakdown: Breakdown, cores: number, idle?: Breakdown): string[];
  apiRequests(metricsText: string): Map<string, { count: number; seconds: number }>;
  apiRequestsBetween(
    before: Map<string, { count: number; seconds: number }>,
    after: Map<string, { count: number; seconds: number }>,
    top?: number,
  ): { request: string; count: number; seconds: number }[];
}
interface Snapshot {
  at: number;
  machineTicks: number;
  processes: Map<number, { name: string; seconds: number }>;
  bench: { own: number; children: number };
  containers: ContainerCpu[];
}
interface Breakdown {
  wallSeconds: number;
  machine: number;
  accounted: number;
  components: { name: string; seconds: number }[];
  perJob: { name: string; p50: number; mean: number; count: number }[];
  jobs: number;
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

  it("reads a process's command, parent and CPU ticks from /proc/<pid>/stat, whatever its command name holds", () => {
    const fields = "S 41 42 42 0 -1 4194560 100 0 0 0 250 50 30 20 20 0 1 0 100 0 0";
    expect(report.parseProcStat(`42 (kube-apiserver) ${fields}`)).toEqual({
      comm: "kube-apiserver",
      ppid: 41,
      ownTicks: 300,
      childrenTicks: 50,
    });
    expect(report.parseProcStat(`7 (a (b) c) ${fields}`).comm).toBe("a (b) c");
    // user nice system idle iowait irq softirq steal: idle and iowait are not busy.
    expect(report.machineBusyTicks("cpu  100 2 30 5000 40 1 6 7 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n")).toBe(146);
  });

  it("names the plane's long-lived processes that descend from the bench, not another plane's", () => {
    const processes = new Map([
      [10, { comm: "node", ppid: 1 }],
      [11, { comm: "etcd", ppid: 10 }],
      [12, { comm: "kube-apiserver", ppid: 10 }],
      [13, { comm: "kube-controller", ppid: 10 }],
      [14, { comm: "capi-manager", ppid: 10 }],
      [15, { comm: "sh", ppid: 10 }],
      [16, { comm: "kube-apiserver", ppid: 15 }],
      [20, { comm: "kube-apiserver", ppid: 1 }],
    ]);
    expect([...report.planeComponents(processes, 10)]).toEqual([
      [11, "etcd"],
      [12, "kube-apiserver"],
      [13, "kube-controller-manager"],
      [14, "Cluster API's manager"],
      [16, "kube-apiserver"],
    ]);
  });

  it("reads the runner's CPU per step and its own from its log lines, other lines skipped", () => {
    const log = [
      '{"level":"info","msg":"step finished","step":"init","exit":0,"seconds":1.2,"cpuSeconds":0.12}',
      "OpenTofu has been successfully initialized!",
      '{"level":"info","msg":"step finished","step":"apply","exit":0,"seconds":2,"cpuSeconds":0.2}',
      '{"level":"info","msg":"step finished","step":"state-push","exit":0,"seconds":1}',
      '{"level":"info","msg":"run finished","op":"apply","seconds":4,"cpuSeconds":0.11,"commandsCpuSeconds":0.4}',
      "{not json",
    ].join("\n");
    expect(report.runnerCpu(log)).toEqual({ steps: { init: 0.12, apply: 0.2 }, own: 0.11 });
    expect(report.runnerCpu("")).toEqual({ steps: {}, own: undefined });
  });

  it("splits a window's CPU by component: plane processes, the manager, the bench, its ended children, each Job container", () => {
    const run = (pod: string, container: string, seconds: number, running = false) => ({
      namespace: "demo",
      pod,
      container,
      restart: 0,
      seconds,
      running,
    });
    const before: Snapshot = {
      at: 0,
      machineTicks: 1000,
      processes: new Map([[11, { name: "kube-apiserver", seconds: 5 }]]),
      bench: { own: 2, children: 10 },
      containers: [run("manager-x", "manager", 3, true), run("old-job", "source", 0.5)],
    };
    const after: Snapshot = {
      at: 10_000,
      machineTicks: 2500,
      processes: new Map([
        [11, { name: "kube-apiserver", seconds: 9 }],
        [12, { name: "etcd", seconds: 1 }],
      ]),
      bench: { own: 3.5, children: 11.5 },
      containers: [
        run("manager-x", "manager", 4, true),
        run("old-job", "source", 0.5),
        run("job-a", "broker", 0.25),
        run("job-a", "source", 0.5),
        run("job-b", "broker", 0.35),
        run("job-b", "source", 0.3),
        run("job-c", "source", 0.1, true),
      ],
    };
    const logs = new Map([
      ["job-a", '{"msg":"step finished","step":"apply","cpuSeconds":0.2}\n{"msg":"run finished","cpuSeconds":0.1}'],
      ["job-b", '{"msg":"step finished","step":"apply","cpuSeconds":0.1}\n{"msg":"run finished","cpuSeconds":0.2}'],
      ["job-c", ""],
    ]);
    const breakdown = report.cpuBreakdown(before, after, logs);
    const seconds = Object.fromEntries(breakdown.components.map(({ name, seconds: value }) => [name, Math.round(value * 100) / 100]));
    expect(seconds).toEqual({
      "kube-apiserver": 4,
      etcd: 1,
      "captf's manager (its container)": 1,
      "the chroot kubelet, the stand-ins and this bench (one Node process)": 1.5,
      // 1.5 s of ended children less the 1.4 s of the container runs that ended.
      "the kubelet's own child processes (image pulls, root copies, probes)": 0.1,
      "new Jobs' broker containers": 0.6,
      "new Jobs' source containers": 0.9,
    });
    expect(breakdown.wallSeconds).toBe(10);
    expect(breakdown.machine).toBe(15);
    expect(breakdown.jobs).toBe(3);
    expect(breakdown.perJob.map(({ name, count }) => [name, count])).toEqual([
      ["container broker", 2],
      ["container source", 3],
      ["  the runner's own Node process", 2],
      ["  step apply", 2],
    ]);
    const lines = report.cpuLines("c1", breakdown, 2, { ...breakdown, wallSeconds: 20 });
    expect(lines[0]).toBe(
      "c1: CPU during the scale-up (10.0 s wall, 2 cores = 20.0 CPU-s): machine busy 15.0 s, of which this plane 9.1 s " +
        "(the rest: other processes on the machine)",
    );
    expect(lines[1]).toBe("c1:      4.0 s  kube-apiserver (idle rate: 2.0 s)");
  });

  it("counts the API server's requests by verb and resource between two readings of its /metrics", () => {
    const metrics = (pods: number, events: number) =>
      [
        "# TYPE apiserver_request_total counter",
        `apiserver_request_total{code="200",resource="pods",scope="namespace",subresource="status",verb="PATCH",version="v1"} ${pods}`,
        `apiserver_request_total{code="201",resource="events",scope="namespace",subresource="",verb="POST",version="v1"} ${events}`,
        `apiserver_request_total{code="409",resource="events",scope="namespace",subresource="",verb="POST",version="v1"} 1`,
        `apiserver_request_duration_seconds_sum{resource="events",subresource="",verb="POST",version="v1"} ${events / 100}`,
        'apiserver_request_duration_seconds_bucket{le="0.1",resource="events",verb="POST"} 7',
      ].join("\n");
    const before = report.apiRequests(metrics(10, 5));
    expect(before.get("POST events")).toEqual({ count: 6, seconds: 0.05 });
    const between = report.apiRequestsBetween(before, report.apiRequests(metrics(40, 105)));
    expect(between).toEqual([
      { request: "POST events", count: 100, seconds: 1 },
      { request: "PATCH pods/status", count: 30, seconds: 0 },
    ]);
  });
});
