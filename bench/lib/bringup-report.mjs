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
