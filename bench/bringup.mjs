#!/usr/bin/env node
// The demo's bring-up on the e2e management plane (Cluster API's core manager, captf installed from
// its manifests, the chroot kubelet running every Job): wall time from applying the demo to Ready as
// Cluster API reports it, and the Jobs it took, per object.
//
// Baseline, from the same run: the Jobs' own critical path (the cluster's apply, then the slowest
// machine or pool apply, from each Job's start to its completion). What the bring-up takes beyond it
// is captf's and Cluster API's reaction time plus the chroot kubelet's queue (Job Pods at a time: the
// e2e plane's parallelPodsFor, from the machine's cores and memory; the manager's own Pod takes no slot).
// Target (issue 11): Ready in 60 s or less with the tools built; Jobs = one per object plus at most
// one re-apply of the cluster.
//
// Then, once Ready, --cycles scale cycles (issue 32, 35): the MachineDeployment demo-md-0 scaled up by
// --scale new Machines (default 3; 0 skips them) and back down. Per cycle it prints the time from the
// scale to every new Machine's InfrastructureReady and to all Ready, per new Machine its creation → Ready
// (p50, p95), per new TerraformMachine its creation → first Job (about 30 s would be the owner wait), per
// Job of theirs its creation → init and runner container started (from the Pods' container statuses and
// the Jobs' creationTimestamps: whole seconds), the scale down's time to the removed objects gone, and
// the manager's RSS (process_resident_memory_bytes on its /metrics, sampled each second): its peak, and
// after the scale down and a forced GC (HeapProfiler.collectGarbage through the manager's
// --profiler-address, which this bench turns on). Before the first cycle: the RSS after a forced GC.
// Targets (issue 35): 50 Ready in 30 s, p95 per object 20 s; the RSS after GC of the last of 10 cycles at
// most 1.2x the first's. Baseline, from the same run: the slowest new apply Job's own run.
//
//   npx tsc -b && node bench/bringup.mjs [--runs 1] [--scale 3] [--cycles 1]
//
// Needs root (the chroot kubelet) and the tools of tools/install.sh (etcd, tofu, kube, capi).
import { execFile } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { request as httpsRequest } from "node:https";
import { availableParallelism, loadavg } from "node:os";
import { parseArgs, promisify } from "node:util";
import {
  apiRequests,
  apiRequestsBetween,
  cpuBreakdown,
  cpuLines,
  cycleLines,
  distribution,
  jobStarts,
  machineBusyTicks,
  machineReady,
  memorySummary,
  parseProcStat,
  peakOf,
  planeComponents,
  residentMiB,
  secondsBetween,
} from "./lib/bringup-report.mjs";
import { loadDependency } from "./lib/controller-packages.mjs";
import { applyObjects } from "../e2e/dist/apply.js";
import { demoClusterName, demoNamespace, demoObjects, demoVariables } from "../e2e/dist/demo-objects.js";
import { startManagementPlane } from "../e2e/dist/management-plane.js";
import { listCaptfJobs, listEventsOfReason, readProgress } from "../e2e/dist/progress.js";

const { values } = parseArgs({
  options: { runs: { type: "string", default: "1" }, scale: { type: "string", default: "3" }, cycles: { type: "string", default: "1" } },
});
const k8s = await loadDependency("@kubernetes/client-node");
const { freeLoopbackPort } = await import("../packages/testkit/dist/control-plane.js");
const opLabel = "captf.infrastructure.cluster.x-k8s.io/op";
const ownerKindLabel = "captf.infrastructure.cluster.x-k8s.io/owner-kind";
const ownerNameLabel = "captf.infrastructure.cluster.x-k8s.io/owner-name";
// A full GC in the manager through its inspector (--profiler-address): one DevTools message from a child
// node, whose WebSocket client Node 20 has behind a flag.
const collectGarbageScript = `
const socket = new WebSocket(process.argv[1]);
socket.onopen = () => socket.send(JSON.stringify({ id: 1, method: "HeapProfiler.collectGarbage" }));
socket.onmessage = (event) => { if (JSON.parse(event.data).id === 1) process.exit(0); };
socket.onerror = () => process.exit(1);`;

for (let run = 1; run <= Number(values.runs); run++) {
  const planeStarted = Date.now();
  const profilerPort = await freeLoopbackPort();
  const plane = await startManagementPlane({
    log: (line) => (/: done in /.test(line) ? console.log(`  ${line}`) : undefined),
    managerArgs: [`--profiler-address=127.0.0.1:${profilerPort}`],
  });
  try {
    console.log(`run ${run}: plane up in ${((Date.now() - planeStarted) / 1000).toFixed(1)} s`);
    const secrets = { credential: "bench-credential", variable: "bench-variable", bootstrap: "bench-bootstrap" };
    const started = Date.now();
    await applyObjects(plane.applier, demoObjects(demoVariables(plane.images, secrets)));
    for (;;) {
      if ((await readProgress(plane.kubeConfig, demoNamespace, demoClusterName)).ready) break;
      if (Date.now() - started > 600_000) throw new Error("not Ready within 600 s");
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    const seconds = (Date.now() - started) / 1000;

    const jobs = await listCaptfJobs(plane.kubeConfig, demoNamespace);
    const perObject = new Map();
    const durations = { cluster: [], other: [] };
    for (const job of jobs) {
      const labels = job.metadata.labels;
      const key = `${labels[ownerKindLabel]}/${labels[ownerNameLabel]}`;
      perObject.set(key, [...(perObject.get(key) ?? []), labels[opLabel]]);
      const start = job.status?.startTime ? new Date(job.status.startTime).getTime() : undefined;
      const end = job.status?.completionTime ? new Date(job.status.completionTime).getTime() : undefined;
      if (start && end) (labels[ownerKindLabel] === "TerraformCluster" ? durations.cluster : durations.other).push((end - start) / 1000);
    }
    const objects = perObject.size;
    const criticalPath = (durations.cluster[0] ?? 0) + Math.max(0, ...durations.other);
    console.log(
      `run ${run}: apply → Ready ${seconds.toFixed(1)} s (target ≤ 60 s); baseline, the Jobs' critical path: ` +
        `${criticalPath.toFixed(1)} s (${(seconds / Math.max(criticalPath, 0.001)).toFixed(2)}x)`,
    );
    console.log(`run ${run}: ${jobs.length} Jobs for ${objects} objects (target ≤ ${objects + 1})`);
    for (const [object, operations] of [...perObject].sort()) console.log(`  ${object}: ${operations.length} (${operations.join(", ")})`);
    // Why each Job started, as the manager's JobCreated events say: an object run twice shows its reason here.
    for (const event of await listEventsOfReason(plane.kubeConfig, demoNamespace, "JobCreated")) {
      console.log(`    ${event.involvedObject.kind}/${event.involvedObject.name}: ${event.message}`);
    }
    const scale =
      Number(values.scale) > 0 ? await measureCycles(plane, profilerPort, Number(values.scale), Number(values.cycles), run) : undefined;
    console.log(
      JSON.stringify({
        run,
        seconds,
        jobs: jobs.length,
        objects,
        criticalPathSeconds: criticalPath,
        planeSeconds: plane.startSteps,
        ...(scale ?? {}),
        loadAverage: loadavg(),
      }),
    );
  } finally {
    await plane.stop();
  }
}

/** Calls `record(object, ms since the epoch)` on every event of the watch on `path`; resolves to a stop function. */
async function watchAll(kubeConfig, path, labelSelector, record) {
  const request = await new k8s.Watch(kubeConfig).watch(
    path,
    labelSelector ? { labelSelector } : {},
    (type, object) => record(object, Date.now(), type),
    () => undefined,
  );
  return () => request.abort();
}

/** The manager's RSS (MiB) from its /metrics, undefined while it does not answer. */
async function managerRss(plane) {
  return residentMiB(await plane.managerMetrics().catch(() => ""));
}

/** Forces a full GC in the manager, waits 2 s for the heap to be given back, and reads its RSS (MiB). */
async function rssAfterGc(plane, profilerPort) {
  const targets = await (await fetch(`http://127.0.0.1:${profilerPort}/json/list`)).json();
  await promisify(execFile)(
    process.execPath,
    ["--experimental-websocket", "--no-warnings", "-e", collectGarbageScript, targets[0].webSocketDebuggerUrl],
    { timeout: 60_000 },
  );
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  return managerRss(plane);
}

/** `cycles` scale cycles by `added` Machines with the manager's RSS sampled each second; the JSON line's fields. */
async function measureCycles(plane, profilerPort, added, cycles, run) {
  const rssBefore = await rssAfterGc(plane, profilerPort);
  console.log(`run ${run}: manager RSS after a forced GC, before scaling: ${rssBefore?.toFixed(1)} MiB`);
  // A quiet window first: what each component uses when nothing is being scaled.
  const quietBefore = cpuSnapshot(plane);
  await new Promise((resolve) => setTimeout(resolve, 10_000));
  const idle = cpuBreakdown(quietBefore, cpuSnapshot(plane), new Map());
  let samples = [];
  const sampler = setInterval(async () => samples.push(await managerRss(plane)), 1_000);
  const figures = [];
  try {
    for (let cycle = 1; cycle <= cycles; cycle++) {
      samples = [];
      const { cpu, ...measured } = await measureCycle(plane, added);
      const rssPeakMiB = peakOf(samples);
      const figure = { cycle, ...measured, rssPeakMiB, rssAfterGcMiB: await rssAfterGc(plane, profilerPort), cpu: cpuFigures(cpu) };
      figures.push(figure);
      for (const line of cycleLines(`run ${run} cycle ${cycle}`, figure)) console.log(line);
      for (const line of cpuLines(`run ${run} cycle ${cycle}`, cpu, availableParallelism(), idle)) console.log(line);
      console.log(`run ${run} cycle ${cycle}: the API server's requests during the scale-up (count, seconds serving them):`);
      for (const { request, count, seconds } of measured.requests)
        console.log(`run ${run} cycle ${cycle}:   ${String(count).padStart(6)}  ${seconds.toFixed(1).padStart(6)} s  ${request}`);
    }
  } finally {
    clearInterval(sampler);
  }
  const memory = memorySummary(rssBefore, figures);
  console.log(
    `run ${run}: manager RSS after GC: before ${memory.rssBeforeMiB?.toFixed(1)} MiB, after each cycle ` +
      `${memory.rssAfterGcMiB.map((value) => value?.toFixed(1)).join(", ")} MiB; last/first ${memory.lastToFirstAfterGc.toFixed(2)} ` +
      `(target ≤ 1.2); peak ${memory.rssPeakMiB?.toFixed(1)} MiB; load average ${loadavg()
        .map((load) => load.toFixed(1))
        .join(" ")}`,
  );
  return { scaleCycles: figures, memory };
}

/** The API server's /metrics, read with the plane's kubeconfig. */
async function apiserverMetrics(kubeConfig) {
  const options = { method: "GET", headers: {} };
  await kubeConfig.applyToHTTPSOptions(options);
  const url = new URL(`${kubeConfig.getCurrentCluster().server}/metrics`);
  return new Promise((resolve, reject) => {
    const request = httpsRequest(url, options, (response) => {
      let text = "";
      response.setEncoding("utf8");
      response.on("data", (chunk) => (text += chunk));
      response.on("end", () => resolve(text));
    });
    request.on("error", reject);
    request.end();
  });
}

/**
 * What CPU time the plane has used so far: the machine's busy ticks, this bench's long-lived plane processes (its
 * descendants by command name), this process's own CPU and its ended children's, and the kubelet's container runs.
 */
function cpuSnapshot(plane) {
  const processes = new Map();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      processes.set(Number(entry), parseProcStat(readFileSync(`/proc/${entry}/stat`, "utf8")));
    } catch {
      // Gone since the listing.
    }
  }
  const plain = new Map();
  for (const [pid, name] of planeComponents(processes, process.pid)) {
    const stat = processes.get(pid);
    plain.set(pid, { name, seconds: (stat.ownTicks + stat.childrenTicks) / 100 });
  }
  const self = parseProcStat(readFileSync("/proc/self/stat", "utf8"));
  return {
    at: Date.now(),
    machineTicks: machineBusyTicks(readFileSync("/proc/stat", "utf8")),
    processes: plain,
    bench: { own: self.ownTicks / 100, children: self.childrenTicks / 100 },
    containers: plane.kubelet.containerCpu(),
  };
}

/** The breakdown's figures for the JSON line, rounded. */
function cpuFigures(cpu) {
  const round = (value) => Math.round(value * 100) / 100;
  return {
    wallSeconds: round(cpu.wallSeconds),
    machineSeconds: round(cpu.machine),
    planeSeconds: round(cpu.accounted),
    components: Object.fromEntries(cpu.components.map(({ name, seconds }) => [name, round(seconds)])),
    perJobP50: Object.fromEntries(cpu.perJob.map(({ name, p50 }) => [name.trim(), round(p50)])),
  };
}

/**
 * One cycle once the demo is Ready: demo-md-0 scaled up by `added` Machines, measured to every new one Ready, then
 * back to its replicas, measured to the removed Machines and TerraformMachines gone.
 */
async function measureCycle(plane, added) {
  const kubeConfig = plane.kubeConfig;
  const custom = kubeConfig.makeApiClient(k8s.CustomObjectsApi);
  const capi = { group: "cluster.x-k8s.io", version: "v1beta2", namespace: demoNamespace };
  const deploymentSelector = "cluster.x-k8s.io/deployment-name=demo-md-0";
  const machines = async () =>
    (await custom.listNamespacedCustomObject({ ...capi, plural: "machines", labelSelector: deploymentSelector })).items;
  const infra = { group: "infrastructure.cluster.x-k8s.io", version: "v1alpha1", namespace: demoNamespace, plural: "terraformmachines" };
  const terraformMachines = async () => (await custom.listNamespacedCustomObject(infra)).items;
  const before = new Set((await machines()).map((machine) => machine.metadata.name));
  const existing = new Set((await terraformMachines()).map((object) => object.metadata.name));
  const deployment = await custom.getNamespacedCustomObject({ ...capi, plural: "machinedeployments", name: "demo-md-0" });
  const from = deployment.spec.replicas;
  const scaleTo = (replicas) =>
    custom.patchNamespacedCustomObject(
      { ...capi, plural: "machinedeployments", name: "demo-md-0", body: { spec: { replicas } } },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
    );

  const created = new Map();
  const firstJob = new Map();
  const machineSeen = new Map();
  const machineReadyAt = new Map();
  const latestMachines = new Map();
  const jobs = new Map();
  const pods = new Map();
  const firstSeen = (map, name, at) => map.has(name) || map.set(name, at);
  const base = `/apis/infrastructure.cluster.x-k8s.io/v1alpha1/namespaces/${demoNamespace}`;
  const stops = [
    await watchAll(kubeConfig, `${base}/terraformmachines`, "", (object, at) => firstSeen(created, object.metadata.name, at)),
    await watchAll(
      kubeConfig,
      `/apis/cluster.x-k8s.io/v1beta2/namespaces/${demoNamespace}/machines`,
      deploymentSelector,
      (machine, at, type) => {
        if (type === "DELETED") latestMachines.delete(machine.metadata.name);
        else latestMachines.set(machine.metadata.name, machine);
        firstSeen(machineSeen, machine.metadata.name, at);
        if (machineReady(machine)) firstSeen(machineReadyAt, machine.metadata.name, at);
      },
    ),
    await watchAll(kubeConfig, `/apis/batch/v1/namespaces/${demoNamespace}/jobs`, `${ownerKindLabel}=TerraformMachine`, (job, at) => {
      firstSeen(firstJob, job.metadata.labels[ownerNameLabel], at);
      jobs.set(job.metadata.name, job);
    }),
    // Pods of every Job (a Job's Pod may be gone by the cycle's end): their container statuses as last seen.
    await watchAll(kubeConfig, `/api/v1/namespaces/${demoNamespace}/pods`, "batch.kubernetes.io/job-name", (pod) =>
      pods.set(pod.metadata.uid, pod),
    ),
  ];
  try {
    const requestsBefore = apiRequests(await apiserverMetrics(kubeConfig));
    const cpuBefore = cpuSnapshot(plane);
    const scaled = Date.now();
    await scaleTo(from + added);
    let infrastructureSeconds;
    // From the Machines' watch, so that the wait itself lists nothing (its lists were API server CPU the plane was charged
    // for); the demo's whole progress is read only once every new Machine is Ready.
    for (;;) {
      const fresh = [...latestMachines.values()].filter((machine) => !before.has(machine.metadata.name));
      const infrastructureReady = (machine) =>
        (machine.status?.conditions ?? []).some((condition) => condition.type === "InfrastructureReady" && condition.status === "True");
      if (infrastructureSeconds === undefined && fresh.length === added && fresh.every(infrastructureReady))
        infrastructureSeconds = (Date.now() - scaled) / 1000;
      const allReady = fresh.length === added && fresh.every(machineReady);
      if (infrastructureSeconds !== undefined && allReady && (await readProgress(kubeConfig, demoNamespace, demoClusterName)).ready) break;
      if (Date.now() - scaled > 600_000) throw new Error(`the scale-up by ${added} not Ready within 600 s`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    const readySeconds = (Date.now() - scaled) / 1000;
    const cpuAfter = cpuSnapshot(plane);
    const requests = apiRequestsBetween(requestsBefore, apiRequests(await apiserverMetrics(kubeConfig)));

    const newMachines = new Map([...machineSeen].filter(([name]) => !before.has(name)));
    const newTerraformMachines = new Map([...created].filter(([name]) => !existing.has(name)));
    const theirJobs = [...jobs.values()].filter((job) => newTerraformMachines.has(job.metadata.labels[ownerNameLabel]));
    const runs = theirJobs
      .filter((job) => job.status?.startTime && job.status?.completionTime)
      .map((job) => (new Date(job.status.completionTime).getTime() - new Date(job.status.startTime).getTime()) / 1000);
    const starts = jobStarts(theirJobs, [...pods.values()], new Set(theirJobs.map((job) => job.metadata.name)));
    const jobNames = new Set(theirJobs.map((job) => job.metadata.name));
    const jobPods = new Map(
      [...pods.values()]
        .filter((pod) => jobNames.has(pod.metadata.labels["batch.kubernetes.io/job-name"]))
        .map((pod) => [pod.metadata.name, plane.kubelet.containerLog(demoNamespace, pod.metadata.name, "source")]),
    );
    const cpu = cpuBreakdown(cpuBefore, cpuAfter, jobPods);

    const scaledDown = Date.now();
    await scaleTo(from);
    for (;;) {
      const [left, leftInfra] = await Promise.all([machines(), terraformMachines()]);
      if (left.length === from && leftInfra.length === existing.size) break;
      if (Date.now() - scaledDown > 600_000) throw new Error(`the scale down to ${from} not done within 600 s`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    const scaleDownSeconds = (Date.now() - scaledDown) / 1000;
    return {
      from,
      to: from + added,
      infrastructureReadySeconds: infrastructureSeconds,
      readySeconds,
      slowestJobSeconds: Math.max(0, ...runs),
      createdToReady: distribution(secondsBetween(newMachines, machineReadyAt).map((machine) => machine.seconds)),
      createdToFirstJob: distribution(secondsBetween(newTerraformMachines, firstJob).map((machine) => machine.seconds)),
      jobToInitStart: distribution(starts.init.map((job) => job.seconds)),
      jobToContainerStart: distribution(starts.main.map((job) => job.seconds)),
      scaleDownSeconds,
      cpu,
      requests,
    };
  } finally {
    for (const stop of stops) stop();
  }
}
