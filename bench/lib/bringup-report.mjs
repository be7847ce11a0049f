// What bench/bringup.mjs computes from the objects and samples it collected during a scale cycle
// (3 → 3+N → 3): pure functions, unit-tested in packages/testkit/src/bringup-report.test.ts.
import { percentile } from "./controller-samples.mjs";

/** Count, p50, p95 and max of `values` (seconds); NaN figures when there are none. */
export function distribution(values) {
  return {
    count: values.length,
    p50: percentile(values, 0.5),
    p95: percentile(values, 0.95),
    max: values.length ? Math.max(...values) : NaN,
  };
}

/** Whether Cluster API counts a Machine ready, as the e2e's readProgress does: Running, a nodeRef and Ready=True. */
export function machineReady(machine) {
  return (
    machine.status?.phase === "Running" &&
    Boolean(machine.status?.nodeRef?.name) &&
    (machine.status?.conditions ?? []).some((condition) => condition.type === "Ready" && condition.status === "True")
  );
}

/** The Job a Pod runs for, by the label the Job controller sets (either spelling). */
function jobOf(pod) {
  const labels = pod.metadata?.labels ?? {};
  return labels["batch.kubernetes.io/job-name"] ?? labels["job-name"];
}

/** When a container status says it started (running or terminated), in ms since the epoch; undefined before. */
function startedAt(status) {
  const at = status.state?.running?.startedAt ?? status.state?.terminated?.startedAt;
  return at ? new Date(at).getTime() : undefined;
}

/**
 * Per Job among `jobNames`, the seconds from its creationTimestamp to its Pod's first init container's start
 * and to its first (main) container's start, as the Pods' container statuses say (API timestamps: whole
 * seconds). A Job with several Pods counts its first Pod's start; a Job whose container never started is left out.
 */
export function jobStarts(jobs, pods, jobNames) {
  const created = new Map(
    jobs
      .filter((job) => jobNames.has(job.metadata.name))
      .map((job) => [job.metadata.name, new Date(job.metadata.creationTimestamp).getTime()]),
  );
  const earliest = (map, job, at) => at !== undefined && map.set(job, Math.min(at, map.get(job) ?? at));
  const init = new Map();
  const main = new Map();
  for (const pod of pods) {
    const job = jobOf(pod);
    if (!created.has(job)) continue;
    for (const status of pod.status?.initContainerStatuses ?? []) earliest(init, job, startedAt(status));
    for (const status of pod.status?.containerStatuses ?? []) earliest(main, job, startedAt(status));
  }
  const seconds = (map) => [...map].map(([job, at]) => ({ job, seconds: (at - created.get(job)) / 1000 })).sort(byName("job"));
  return { init: seconds(init), main: seconds(main) };
}

/** Per object seen in both maps (name → ms since the epoch), the seconds from `from` to `to`, by name. */
export function secondsBetween(from, to) {
  return [...from]
    .filter(([name]) => to.has(name))
    .map(([name, at]) => ({ name, seconds: (to.get(name) - at) / 1000 }))
    .sort(byName("name"));
}

function byName(field) {
  return (a, b) => (a[field] < b[field] ? -1 : a[field] > b[field] ? 1 : 0);
}

/** process_resident_memory_bytes from a Prometheus exposition, in MiB; undefined when it has none. */
export function residentMiB(metricsText) {
  const match = /^process_resident_memory_bytes(?:\{[^}]*\})?\s+([0-9.eE+]+)\s*$/m.exec(metricsText);
  return match ? Number(match[1]) / 1024 / 1024 : undefined;
}

/** The largest of the samples taken (MiB), undefined before any. */
export function peakOf(samples) {
  const values = samples.filter((value) => value !== undefined);
  return values.length ? Math.max(...values) : undefined;
}

/**
 * The run's memory figures over its cycles: RSS after GC before the first scale, per cycle the peak and the
 * RSS after the scale back down and a GC, and the last cycle's after-GC RSS against the first's (issue 35's
 * bar: at most 1.2).
 */
export function memorySummary(beforeMiB, cycles) {
  const after = cycles.map((cycle) => cycle.rssAfterGcMiB);
  return {
    rssBeforeMiB: beforeMiB,
    rssPeakMiB: peakOf(cycles.map((cycle) => cycle.rssPeakMiB)),
    rssAfterGcMiB: after,
    lastToFirstAfterGc: after.length && after[0] ? after[after.length - 1] / after[0] : NaN,
  };
}

const fixed = (value, digits = 1) => (Number.isFinite(value) ? value.toFixed(digits) : "-");

/** A distribution as printed: "p50 1.0 s, p95 2.0 s, max 3.0 s (n=3)". */
export function distributionText(figures) {
  return `p50 ${fixed(figures.p50)} s, p95 ${fixed(figures.p95)} s, max ${fixed(figures.max)} s (n=${figures.count})`;
}

/** The lines a cycle prints, from its figures (see bench/bringup.mjs's measureCycle). */
export function cycleLines(label, cycle) {
  return [
    `${label}: scale ${cycle.from} → ${cycle.to}: every new Machine InfrastructureReady in ${fixed(cycle.infrastructureReadySeconds)} s, ` +
      `all Ready in ${fixed(cycle.readySeconds)} s; baseline, the slowest new apply Job's run: ${fixed(cycle.slowestJobSeconds)} s`,
    `${label}: Machine created → Ready: ${distributionText(cycle.createdToReady)}`,
    `${label}: TerraformMachine created → first Job: ${distributionText(cycle.createdToFirstJob)} (an owner wait would be about 30 s)`,
    `${label}: Job created → init container started: ${distributionText(cycle.jobToInitStart)}`,
    `${label}: Job created → runner container started: ${distributionText(cycle.jobToContainerStart)} (API timestamps, whole seconds)`,
    `${label}: scale ${cycle.to} → ${cycle.from}: the removed Machines and TerraformMachines gone in ${fixed(cycle.scaleDownSeconds)} s`,
    `${label}: manager RSS peak ${fixed(cycle.rssPeakMiB)} MiB, after the scale down and a forced GC ${fixed(cycle.rssAfterGcMiB)} MiB`,
  ];
}

// --- Where the CPU of a scale-up goes ---

/** A /proc/<pid>/stat line's command name, parent, own CPU ticks (utime + stime) and ended children's (cutime + cstime). */
export function parseProcStat(text) {
  const close = text.lastIndexOf(")");
  const fields = text
    .slice(close + 2)
    .trim()
    .split(" ");
  return {
    comm: text.slice(text.indexOf("(") + 1, close),
    ppid: Number(fields[1]),
    ownTicks: Number(fields[11]) + Number(fields[12]),
    childrenTicks: Number(fields[13]) + Number(fields[14]),
  };
}

/** The busy ticks of /proc/stat's first line (all but idle and iowait), the whole machine's CPU. */
export function machineBusyTicks(procStat) {
  const [, user, nice, system, , , irq, softirq, steal] = procStat.split("\n")[0].trim().split(/\s+/).map(Number);
  return user + nice + system + irq + softirq + steal;
}

/** The plane's long-lived processes by their command name (at most 15 characters in /proc). */
const planeProcesses = {
  etcd: "etcd",
  "kube-apiserver": "kube-apiserver",
  "kube-controller": "kube-controller-manager",
  "capi-manager": "Cluster API's manager",
};

/** The plane's long-lived processes among `processes` (pid → parsed stat) that descend from `rootPid`: pid → component name. */
export function planeComponents(processes, rootPid) {
  const descends = (pid) => {
    for (let at = pid, hops = 0; at > 1 && hops < 64; hops++) {
      if (at === rootPid) return true;
      at = processes.get(at)?.ppid ?? 0;
    }
    return false;
  };
  return new Map(
    [...processes]
      .filter(([pid, stat]) => planeProcesses[stat.comm] && descends(pid))
      .map(([pid, stat]) => [pid, planeProcesses[stat.comm]]),
  );
}

/** The runner's per-step CPU ("step finished" lines' cpuSeconds) and its own ("run finished"), from a runner container's log. */
export function runnerCpu(logText) {
  const steps = {};
  let own;
  for (const line of logText.split("\n")) {
    if (!line.startsWith("{")) continue;
    let entry;
    try {
      entry = JSON.parse(line);
    } catch {
      continue;
    }
    if (entry.msg === "step finished" && typeof entry.cpuSeconds === "number")
      steps[entry.step] = (steps[entry.step] ?? 0) + entry.cpuSeconds;
    if (entry.msg === "run finished" && typeof entry.cpuSeconds === "number") own = entry.cpuSeconds;
  }
  return { steps, own };
}

const sum = (values) => values.reduce((total, value) => total + value, 0);

/**
 * The CPU seconds of a window (the scale-up) by component, from two snapshots and what the kubelet and the runners
 * account. A snapshot: { at (ms), machineTicks, processes: Map(pid → component, ticks), bench: { own, children } (s),
 * containers: [{ namespace, pod, container, restart, seconds, running }] }. `jobPods` maps the new Jobs' Pod names to
 * their runner containers' logs. Returns { wallSeconds, machine, components: [{ name, seconds }], perJob: [{ name,
 * p50, mean }], jobs }.
 */
export function cpuBreakdown(before, after, jobPods) {
  const wallSeconds = (after.at - before.at) / 1000;
  const components = [];
  const planeBefore = before.processes;
  const byName = new Map();
  for (const [pid, { name, seconds }] of after.processes)
    byName.set(name, (byName.get(name) ?? 0) + seconds - (planeBefore.get(pid)?.seconds ?? 0));
  for (const [name, seconds] of byName) components.push({ name, seconds });
  const key = (run) => `${run.namespace}/${run.pod}/${run.container}/${run.restart}`;
  const earlier = new Map(before.containers.map((run) => [key(run), run.seconds]));
  const runs = after.containers.map((run) => ({ ...run, seconds: run.seconds - (earlier.get(key(run)) ?? 0) }));
  const ended = sum(runs.filter((run) => !run.running).map((run) => run.seconds));
  const jobRuns = runs.filter((run) => jobPods.has(run.pod));
  const managerRuns = runs.filter((run) => run.container === "manager");
  components.push({ name: "captf's manager (its container)", seconds: sum(managerRuns.map((run) => run.seconds)) });
  components.push({
    name: "the chroot kubelet, the stand-ins and this bench (one Node process)",
    seconds: after.bench.own - before.bench.own,
  });
  components.push({
    name: "the kubelet's own child processes (image pulls, root copies, probes)",
    seconds: Math.max(0, after.bench.children - before.bench.children - ended),
  });
  const perContainer = new Map();
  for (const run of jobRuns) perContainer.set(run.container, [...(perContainer.get(run.container) ?? []), run.seconds]);
  const otherContainers = sum(runs.filter((run) => !jobPods.has(run.pod) && run.container !== "manager").map((run) => run.seconds));
  for (const [container, values] of perContainer) components.push({ name: `new Jobs' ${container} containers`, seconds: sum(values) });
  if (otherContainers > 0) components.push({ name: "other Pods' containers", seconds: otherContainers });
  const perJob = [...perContainer].map(([container, values]) => ({ name: `container ${container}`, ...spread(values) }));
  const stepValues = new Map();
  const own = [];
  for (const log of jobPods.values()) {
    const cpu = runnerCpu(log);
    for (const [step, seconds] of Object.entries(cpu.steps)) stepValues.set(step, [...(stepValues.get(step) ?? []), seconds]);
    if (cpu.own !== undefined) own.push(cpu.own);
  }
  perJob.push({ name: "  the runner's own Node process", ...spread(own) });
  for (const [step, values] of stepValues) perJob.push({ name: `  step ${step}`, ...spread(values) });
  const machine = (after.machineTicks - before.machineTicks) / 100;
  const accounted = sum(components.map((component) => component.seconds));
  return { wallSeconds, machine, accounted, components, perJob, jobs: jobPods.size };
}

function spread(values) {
  return { p50: percentile(values, 0.5), mean: values.length ? sum(values) / values.length : NaN, count: values.length };
}

/**
 * The lines the breakdown prints; with `idle` (the same breakdown over a quiet window before the scale), each component's
 * idle rate over the scale-up's wall time beside it, what it would have used had nothing been scaled.
 */
export function cpuLines(label, breakdown, cores, idle) {
  const lines = [
    `${label}: CPU during the scale-up (${fixed(breakdown.wallSeconds)} s wall, ${cores} cores = ` +
      `${fixed(breakdown.wallSeconds * cores)} CPU-s): machine busy ${fixed(breakdown.machine)} s, of which this plane ` +
      `${fixed(breakdown.accounted)} s (the rest: other processes on the machine)`,
  ];
  const idleRate = new Map((idle?.components ?? []).map(({ name, seconds }) => [name, seconds / idle.wallSeconds]));
  for (const { name, seconds } of [...breakdown.components].sort((a, b) => b.seconds - a.seconds)) {
    const quiet = idleRate.has(name) ? ` (idle rate: ${fixed(idleRate.get(name) * breakdown.wallSeconds)} s)` : "";
    lines.push(`${label}:   ${fixed(seconds).padStart(6)} s  ${name}${quiet}`);
  }
  lines.push(`${label}: CPU per new Job (${breakdown.jobs} Jobs): p50 / mean seconds`);
  for (const { name, p50, mean, count } of breakdown.perJob)
    lines.push(`${label}:   ${fixed(p50, 2)} / ${fixed(mean, 2)}  ${name} (n=${count})`);
  return lines;
}

/**
 * The API server's requests from its /metrics: per verb and resource (with its subresource), the count and the seconds spent
 * serving them (apiserver_request_total, apiserver_request_duration_seconds_sum), summed over codes, scopes and versions.
 */
export function apiRequests(metricsText) {
  const requests = new Map();
  const add = (labels, field, value) => {
    const resource = labels.subresource ? `${labels.resource}/${labels.subresource}` : labels.resource;
    const key = `${labels.verb} ${resource || "(none)"}`;
    const entry = requests.get(key) ?? { count: 0, seconds: 0 };
    entry[field] += value;
    requests.set(key, entry);
  };
  for (const line of metricsText.split("\n")) {
    const match = /^(apiserver_request_total|apiserver_request_duration_seconds_sum)\{([^}]*)\}\s+(\S+)$/.exec(line);
    if (!match) continue;
    const labels = Object.fromEntries([...match[2].matchAll(/(\w+)="([^"]*)"/g)].map((label) => [label[1], label[2]]));
    add(labels, match[1] === "apiserver_request_total" ? "count" : "seconds", Number(match[3]));
  }
  return requests;
}

/** The `top` request kinds between two readings of {@link apiRequests}, by count: [{ request, count, seconds }]. */
export function apiRequestsBetween(before, after, top = 15) {
  return [...after]
    .map(([request, { count, seconds }]) => ({
      request,
      count: count - (before.get(request)?.count ?? 0),
      seconds: seconds - (before.get(request)?.seconds ?? 0),
    }))
    .filter((entry) => entry.count > 0)
    .sort((a, b) => b.count - a.count)
    .slice(0, top);
}
