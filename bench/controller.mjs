#!/usr/bin/env node
// The manager at scale on the real API server: N TerraformMachines (each with its Machine and
// bootstrap Secret, in one externally managed cluster whose TerraformCluster names the
// TerraformClusterIdentity `bench`), the manager started as a child process with the shipped
// wiring (bench/lib/controller-manager.mjs: parseManagerFlags, bootstrapManager,
// createManagerControllers; no leader election, no webhooks), and every apply Job it creates
// completed by this process (bench/lib/controller-jobs.mjs: state Secret + Pod status through
// pods/status; kube-controller-manager's Job controller then marks the Job Complete).
//
// Prints the wall time until all N are provisioned, reconciles (the manager's own /metrics) and
// reconciles per second, the Jobs created (must be N: flagged otherwise), the API requests the
// manager made by verb and resource (a counting HTTPS proxy sits between it and kube-apiserver;
// watches apart), CPU seconds per process, and the manager's RSS (peak, and after a full GC once
// quiet). Baselines measured in the same run: for requests, the manager's own writes (what a
// controller reading from its caches would still send); for memory, the same manager with every
// reconcile a no-op over the same objects (the runtime and its informer caches alone).
//
//   npx tsc -b && node bench/controller.mjs [--machines 1000] [--concurrency 10] [--job-seconds 0]
//                                           [--settle-seconds 20] [--timeout-seconds S] [--cpu-prof-dir <dir>]
//                                           [--resync-seconds 30] [--managers M [--clusters 20]]
//
// --managers M runs bench/lib/controller-shards.mjs instead: the machines spread over --clusters
// clusters, provisioned once by 1 manager and once by M managers with --shards=M; both figures and
// the ratio.
//
// Then, over the settled objects: a manager restart (its Jobs and writes until quiet: both must be
// 0) and, in that restarted manager (`--sync-period` = --resync-seconds), one full resync (its writes:
// must be 0). Targets (issue 12) are printed next to the figures; the last line is one JSON object
// {"machines","seconds","machinesPerSecond","requestsPerMachine","writesPerMachine",
// "reconcilesPerMachine","jobs","peakRssMiB","baselinePeakRssMiB","restartJobs","restartWrites","resyncWrites"}.
//
// --machines 20 is the smoke run (about a minute here, most of it the manager's passes). The
// fixtures exist before the manager starts, so it meets N new TerraformMachines at once (a restart,
// or a large scale-up). --job-seconds delays each Job's completion (a run's duration).
// --cpu-prof-dir writes a V8 CPU profile of the manager there (node --cpu-prof). CPU seconds come
// from /proc: the manager, kube-apiserver, etcd, kube-controller-manager, and this process (the
// proxy's TLS and the Job completer). Ctrl-C stops everything it started and removes its temp dirs.
import { spawn } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { basename, join } from "node:path";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { loadController, loadControllerFile, loadDependency, loadTestkit, repo, requireBuilt } from "./lib/controller-packages.mjs";

requireBuilt();
const { values: flags } = parseArgs({
  options: {
    machines: { type: "string", default: "1000" },
    concurrency: { type: "string", default: "10" },
    "job-seconds": { type: "string", default: "0" },
    "timeout-seconds": { type: "string" },
    "settle-seconds": { type: "string", default: "20" },
    "cpu-prof-dir": { type: "string" },
    "resync-seconds": { type: "string", default: "30" },
    // The shard bench (bench/lib/controller-shards.mjs): this workload spread over --clusters, by 1 manager and by M.
    managers: { type: "string" },
    clusters: { type: "string", default: "20" },
  },
});
if (flags.managers !== undefined) {
  const { runShardBench } = await import("./lib/controller-shards.mjs");
  const machines = Number(flags.machines);
  const options = {
    managers: Number(flags.managers),
    clusters: Number(flags.clusters),
    machines,
    concurrency: Number(flags.concurrency),
    jobSeconds: Number(flags["job-seconds"]),
  };
  process.exit(
    await runShardBench({ ...options, timeoutMillis: 1000 * Number(flags["timeout-seconds"] ?? 120 + 2 * machines + options.jobSeconds) }),
  );
}
const N = Number(flags.machines);
const concurrency = Number(flags.concurrency);
const jobSeconds = Number(flags["job-seconds"]);
const timeoutMillis = 1000 * Number(flags["timeout-seconds"] ?? 120 + 2 * N + jobSeconds);
const settleMillis = 1000 * Number(flags["settle-seconds"]);
const resyncSeconds = Number(flags["resync-seconds"]);
if (!Number.isInteger(N) || N < 1 || !Number.isInteger(concurrency) || concurrency < 1) {
  console.error("bench: --machines and --concurrency take positive integers");
  process.exit(2);
}

const { startControlPlane, writeKubeconfig, clusterApiCrdPaths } = await loadTestkit();
const { KubeClient, Informer } = await loadController();
const { rbacObjects, defaultInstallOptions } = await loadControllerFile("install/manifests.js");
/** The ClusterRole the install ships and the manager binds in each namespace (captf-runner). */
const runnerRole = rbacObjects(defaultInstallOptions).runnerRole;
const k8s = await loadDependency("@kubernetes/client-node");
const { pino } = await loadDependency("pino");
const { decodeOutputs } = await loadDependency("@captf/contract");
const { labels: contractLabels } = await loadDependency("@captf/contract/api");
const { startCountingProxy, difference } = await import("./lib/controller-proxy.mjs");
const { benchControllerManagerFlags, createClusterFixtures, createMachineFixtures, inParallel, installCrds, machineName, types } =
  await import("./lib/controller-fixtures.mjs");
const { startJobCompleter, noopMachineOutputs } = await import("./lib/controller-jobs.mjs");
const { memoryOf, percentile, quietWhile } = await import("./lib/controller-samples.mjs");

// The synthetic state must decode as the reconciler decodes it, or nothing ever provisions.
const selfCheck = decodeOutputs(
  "machine",
  Object.fromEntries(Object.entries(noopMachineOutputs("ns", "m")).map(([k, v]) => [k, v.value])),
  undefined,
  { fromState: true },
);
if (selfCheck.status !== "True") throw new Error(`bench: the synthetic machine outputs do not decode: ${selfCheck.problems.join("; ")}`);

// ---- cleanup, on every exit path ------------------------------------------------------------
const work = mkdtempSync(join(tmpdir(), "captf-bench-controller-"));
const cleanups = [];
let cleaning;
/** Set on Ctrl-C: children are killed at once and nothing more is measured or printed. */
let interrupted = false;
function cleanup() {
  cleaning ??= (async () => {
    for (const fn of cleanups.reverse()) await fn().catch((error) => console.error(`bench: cleanup: ${error.message}`));
    rmSync(work, { recursive: true, force: true });
  })();
  return cleaning;
}
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.once(signal, () => {
    interrupted = true;
    process.stderr.write(`bench: ${signal}, cleaning up\n`);
    void cleanup().finally(() => process.exit(130));
  });
}
// Output piped into `head` must not kill the bench before it stopped what it started.
for (const stream of [process.stdout, process.stderr]) stream.on("error", () => {});
for (const event of ["uncaughtException", "unhandledRejection"]) {
  process.on(event, (error) => {
    process.stderr.write(`bench: ${event}: ${error?.stack ?? error}\n`);
    void cleanup().finally(() => process.exit(1));
  });
}

const logger = pino({ level: "warn" }, pino.destination(2));
const sleep = (millis) => new Promise((resolve) => setTimeout(resolve, millis));
const seconds = (millis) => (millis / 1000).toFixed(1);
const benchStarted = Date.now();
const step = (text) => interrupted || process.stderr.write(`bench [${seconds(Date.now() - benchStarted).padStart(6)} s]: ${text}\n`);

/** User + system CPU seconds of a process so far, undefined once it is gone. */
function cpuOf(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in USER_HZ (100 on Linux)
  } catch {
    return undefined;
  }
}

/** The plane's processes, found by their temp dir in their command lines (read-only, from /proc). */
function planeProcesses(dir) {
  const found = {};
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let cmdline;
    try {
      cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
    } catch {
      continue;
    }
    if (!cmdline.some((arg) => arg.includes(dir))) continue;
    const name = basename(cmdline[0]);
    if (["etcd", "kube-apiserver", "kube-controller-manager"].includes(name)) found[name] = Number(entry);
  }
  return found;
}

/** CPU seconds of each named pid now. */
const cpuSnapshot = (pids) => Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuOf(pid) ?? NaN]));

/** The manager child: spawned, its ports read, ready once /readyz answers 200 (caches synced). */
async function startManager(mode, kubeconfig, syncPeriodSeconds) {
  const logFile = join(work, `manager-${mode}.log`);
  const fd = openSync(logFile, "a");
  const started = Date.now();
  const child = spawn(
    process.execPath,
    [
      "--expose-gc",
      ...(flags["cpu-prof-dir"] && mode === "manager" ? ["--cpu-prof", `--cpu-prof-dir=${flags["cpu-prof-dir"]}`] : []),
      join(repo, "bench/lib/controller-manager.mjs"),
      "--kubeconfig",
      kubeconfig,
      "--concurrency",
      String(concurrency),
      "--mode",
      mode,
      ...(syncPeriodSeconds ? ["--sync-period", `${syncPeriodSeconds}s`] : []),
    ],
    {
      stdio: ["pipe", "pipe", fd], // its stdin closes when this process dies: the child then stops itself
    },
  );
  closeSync(fd);
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return exited;
    child.kill(interrupted ? "SIGKILL" : "SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 25_000);
    const result = await exited;
    clearTimeout(timer);
    return result;
  };
  cleanups.push(async () => void (await stop()));
  const tail = () => {
    try {
      return readFileSync(logFile, "utf8").trimEnd().split("\n").slice(-20).join("\n");
    } catch {
      return "";
    }
  };
  const ports = await Promise.race([
    new Promise((resolve) => createInterface({ input: child.stdout }).once("line", (line) => resolve(JSON.parse(line)))),
    exited.then((result) =>
      Promise.reject(new Error(`the manager (${mode}) exited ${JSON.stringify(result)} before serving; its log ends:\n${tail()}`)),
    ),
  ]);
  const samples = [];
  const sampler = setInterval(() => {
    const memory = memoryOf(child.pid);
    if (memory) samples.push({ at: Date.now(), ...memory });
  }, 200);
  cleanups.push(async () => clearInterval(sampler));
  for (;;) {
    const ok = await fetch(`http://127.0.0.1:${ports.healthPort}/readyz`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) break;
    if (child.exitCode !== null) throw new Error(`the manager (${mode}) exited before it was ready; its log ends:\n${tail()}`);
    await sleep(50);
  }
  return {
    child,
    pid: child.pid,
    started,
    readyAt: Date.now(),
    controllers: ports.controllers,
    samples,
    tail,
    memory: () => memoryOf(child.pid),
    metrics: () => scrape(ports.metricsPort),
    async stop() {
      clearInterval(sampler);
      return stop();
    },
  };
}

/** The manager's counters: reconciles by result, errors, and the reconcile time histogram's sum. */
async function scrape(port) {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const sum = (name, filter = "") => {
    let total = 0;
    for (const line of text.split("\n")) {
      if (!line.startsWith(name) || line[name.length] === "_" || !line.includes(filter)) continue;
      total += Number(line.slice(line.lastIndexOf(" ") + 1));
    }
    return total;
  };
  const controller = 'controller="terraformmachine"';
  return {
    reconciles: sum("controller_runtime_reconcile_total", controller),
    errors: sum("controller_runtime_reconcile_errors_total", controller),
    requeueAfter: sum("controller_runtime_reconcile_total", 'result="requeue_after"'),
    reconcileSeconds: sum("controller_runtime_reconcile_time_seconds_sum", controller),
    queueAdds: sum("workqueue_adds_total", 'name="terraformmachine"'),
    heapUsedMiB: sum("nodejs_heap_size_used_bytes") / 2 ** 20,
    externalMiB: sum("nodejs_external_memory_bytes") / 2 ** 20,
  };
}

/** RSS as it stands, then after a full collection (SIGUSR2 → gc()): the mean over 1.5 s, and the heap used. */
async function steadyMemory(handle) {
  const asIs = handle.memory()?.rss ?? NaN;
  handle.child.kill("SIGUSR2");
  await sleep(500);
  const from = Date.now();
  await sleep(1500);
  const afterGc = mean(handle.samples.filter((s) => s.at >= from).map((s) => s.rss));
  const scraped = await handle.metrics().catch(() => undefined);
  return { asIs, afterGc, heapUsed: scraped?.heapUsedMiB ?? NaN, external: scraped?.externalMiB ?? NaN, peak: handle.memory()?.hwm ?? NaN };
}

/** Resolves once the proxy saw no request for `quietMillis`, or after `maxMillis`. */
const quiet = (counts, quietMillis, maxMillis) =>
  quietWhile(() => [...counts.byKey.values()].reduce((n, e) => n + e.count, 0), quietMillis, maxMillis);

const mean = (values) => (values.length ? values.reduce((a, b) => a + b, 0) / values.length : NaN);

let exitCode = 0;
try {
  // ---- the plane, the CRDs and the fixtures ---------------------------------------------------
  let mark = Date.now();
  // Registered before it is up: a Ctrl-C while it starts still stops it (a failed start cleans up itself).
  const planeStarting = startControlPlane({ controllerManagerFlags: benchControllerManagerFlags });
  cleanups.push(async () => (await planeStarting.catch(() => undefined))?.stop());
  const plane = await planeStarting;
  step(`control plane up in ${seconds(plane.startMillis)} s`);
  const kubeConfig = new k8s.KubeConfig();
  kubeConfig.loadFromFile(plane.kubeconfigPath);
  const client = new KubeClient(kubeConfig, { userAgent: "captf-bench" });
  cleanups.push(async () => client.close());
  const crds = await installCrds(client, clusterApiCrdPaths());
  step(`${crds} CRDs installed and Established`);
  const namespace = "bench";
  await createClusterFixtures(client, namespace, runnerRole);
  const names = Array.from({ length: N }, (_, i) => machineName(i, N));
  mark = Date.now();
  await inParallel(names, 16, (name) => createMachineFixtures(client, namespace, name));
  const fixtureMillis = Date.now() - mark;
  step(`the cluster's and ${N} machines' fixtures (3 objects each) created, the machines' in ${seconds(fixtureMillis)} s`);

  // ---- the counting proxy, the Job completer, the provisioned watch ----------------------------
  const proxy = await startCountingProxy({
    upstream: plane.server,
    caFile: plane.caFile,
    certFile: join(plane.dir, "certs", "apiserver.crt"),
    keyFile: join(plane.dir, "certs", "apiserver.key"),
  });
  cleanups.push(() => proxy.close());
  const managerKubeconfig = join(work, "manager.kubeconfig");
  writeKubeconfig(managerKubeconfig, { server: proxy.url, token: plane.token, caFile: plane.caFile });

  const completer = startJobCompleter({ client, namespace, logger, jobSeconds });
  cleanups.push(() => completer.stop());
  await completer.synced();

  const provisionedAt = new Map();
  let allProvisioned;
  const everyone = new Promise((resolve) => (allProvisioned = resolve));
  const machines = new Informer({ client, type: types.terraformMachine, namespace, logger, resyncPeriodMillis: 0 });
  const onMachine = (object) => {
    if (object.status?.initialization?.provisioned === true && !provisionedAt.has(object.metadata.name)) {
      provisionedAt.set(object.metadata.name, Date.now());
      if (provisionedAt.size === N) allProvisioned();
    }
  };
  machines.addHandlers({ add: onMachine, update: (_old, object) => onMachine(object) });
  machines.start();
  cleanups.push(() => machines.stop());
  await machines.waitForSync(60_000);

  // ---- the manager ------------------------------------------------------------------------------
  const before = proxy.counts.snapshot();
  const loadBefore = loadavg()[0];
  const processes = { ...planeProcesses(plane.dir), bench: process.pid };
  const cpuBefore = cpuSnapshot(processes);
  const manager = await startManager("manager", managerKubeconfig);
  processes.manager = manager.pid;
  cpuBefore.manager = 0;
  step(
    `manager pid ${manager.pid} ready (caches synced) ${manager.readyAt - manager.started} ms after spawn; waiting for ${N} provisioned`,
  );
  const progress = setInterval(
    () =>
      step(
        `  ${provisionedAt.size}/${N} provisioned, ${completer.stats.jobs.size} Jobs, ${completer.stats.podsCompleted} Pods completed, ` +
          `RSS ${manager.memory()?.rss.toFixed(0)} MiB`,
      ),
    10_000,
  );
  cleanups.push(async () => clearInterval(progress));
  const finished = await Promise.race([
    everyone.then(() => true),
    sleep(timeoutMillis).then(() => false),
    new Promise((resolve) => manager.child.once("exit", () => resolve(false))),
  ]);
  clearInterval(progress);
  if (interrupted) throw new Error("interrupted");
  const doneAt = Date.now();
  const atDone = {
    counts: proxy.counts.snapshot(),
    metrics: await manager.metrics().catch(() => undefined),
    memory: manager.memory(),
    cpu: cpuSnapshot(processes),
    load: loadavg()[0],
  };
  if (!finished) {
    exitCode = 1;
    step(
      `NOT all provisioned: ${provisionedAt.size}/${N} after ${seconds(doneAt - manager.started)} s; ` +
        `the manager's log ends:\n${manager.tail()}`,
    );
  }

  // Objects that grow with N: the credential mirrors carry one ownerReference per user object.
  const mirrors = (await client.list(types.secret, namespace, { labelSelector: `${contractLabels.mirrored}=true` })).items.map(
    (secret) =>
      `${secret.metadata.name} ${secret.metadata.ownerReferences?.length ?? 0} ownerReferences, ` +
      `${(Buffer.byteLength(JSON.stringify(secret)) / 1024).toFixed(0)} KiB`,
  );

  // ---- settle: what the manager still does once everything is provisioned -----------------------
  step(`all provisioned; waiting until the manager is quiet (at most ${seconds(settleMillis)} s)`);
  const settled = await quiet(proxy.counts, 2000, settleMillis);
  const atSettle = { counts: proxy.counts.snapshot(), metrics: await manager.metrics().catch(() => undefined), memory: manager.memory() };
  const steady = await steadyMemory(manager);
  const managerExit = await manager.stop();
  // The manager's events (the largest share of its writes) by reason, as they stand once it is quiet.
  const eventReasons = new Map();
  for (const event of (await client.list(types.event, namespace)).items)
    eventReasons.set(event.reason, (eventReasons.get(event.reason) ?? 0) + (event.count ?? 1));

  // ---- restart over the settled objects, then one full resync in the restarted manager ----------
  step("manager stopped; restarting it over the settled objects");
  const jobsBeforeRestart = completer.stats.jobs.size;
  const restartStart = proxy.counts.snapshot();
  const restarted = await startManager("manager", managerKubeconfig, resyncSeconds);
  const restartQuiet = await quiet(proxy.counts, 3000, settleMillis + 2 * N * 100);
  const atRestart = { counts: proxy.counts.snapshot(), metrics: await restarted.metrics().catch(() => undefined) };
  const restartJobs = completer.stats.jobs.size - jobsBeforeRestart;
  step(
    `restarted manager quiet${restartQuiet ? "" : " (NOT quiet)"}: ${atRestart.metrics?.reconciles ?? "?"} reconciles; ` +
      `waiting for its --sync-period ${resyncSeconds} s resync`,
  );
  const resyncDeadline = Date.now() + 1000 * (3 * resyncSeconds + 60) + 200 * N;
  while (
    Date.now() < resyncDeadline &&
    ((await restarted.metrics().catch(() => undefined))?.reconciles ?? 0) < (atRestart.metrics?.reconciles ?? 0) + N
  )
    await sleep(500);
  const resyncReconciles = ((await restarted.metrics().catch(() => undefined))?.reconciles ?? 0) - (atRestart.metrics?.reconciles ?? 0);
  await quiet(proxy.counts, 3000, settleMillis);
  const atResync = proxy.counts.snapshot();
  await restarted.stop();
  step("restart and resync measured; measuring the baseline");

  // ---- the baseline: the same Manager and watches, no reconciler, over the same objects ---------
  const baselineCountsStart = proxy.counts.snapshot();
  const baseline = await startManager("informers", managerKubeconfig);
  await quiet(proxy.counts, 1000, 15_000);
  const baselineMemory = await steadyMemory(baseline);
  const baselineRequests = difference(proxy.counts.snapshot(), baselineCountsStart);
  await baseline.stop();
  step("baseline measured");

  // ---- figures ----------------------------------------------------------------------------------
  const toDone = difference(atDone.counts, before);
  const tail = difference(atSettle.counts, atDone.counts);
  const jobs = [...completer.stats.jobs.values()];
  const perOwner = new Map();
  for (const job of jobs) perOwner.set(job.owner, (perOwner.get(job.owner) ?? 0) + 1);
  const extra = jobs.length - perOwner.size;
  const nonApply = jobs.filter((job) => job.op !== "apply").length;
  const complete = jobs.filter((job) => job.completeAt).length;
  const completeLag = jobs.filter((job) => job.completeAt && job.podSucceededAt).map((job) => job.completeAt - job.podSucceededAt);
  const bookkept = jobs.filter((job) => job.bookkeptAt).length;
  const wall = doneAt - manager.started;
  const active = doneAt - manager.readyAt;
  const reconcilesDone = atDone.metrics?.reconciles ?? NaN;
  const reconcilesSettled = atSettle.metrics?.reconciles ?? reconcilesDone;
  const requestsOf = (diff, filter = () => true) =>
    [...diff.byKey].filter(([key]) => !key.startsWith("watch ") && filter(key)).reduce((n, [, e]) => n + e.count, 0);
  const isWrite = (key) => /^(create|update|patch|delete|deletecollection) /.test(key);
  const totalDone = requestsOf(toDone);
  const writesDone = requestsOf(toDone, isWrite);
  const peak = Math.max(steady.peak, atSettle.memory?.hwm ?? 0, ...manager.samples.map((s) => s.hwm));
  const latencies = [...provisionedAt.values()].map((at) => at - manager.readyAt);
  const restartDiff = difference(atRestart.counts, restartStart);
  const resyncDiff = difference(atResync, atRestart.counts);
  const restartWrites = requestsOf(restartDiff, isWrite);
  const resyncWrites = requestsOf(resyncDiff, isWrite);
  const topOf = (diff) =>
    [...diff.byKey]
      .filter(([k]) => !k.startsWith("watch "))
      .sort((a, b) => b[1].count - a[1].count)
      .slice(0, 6)
      .map(([k, e]) => `${k} ${e.count}`)
      .join(", ");

  console.log(`controller bench: ${N} TerraformMachines, concurrency ${concurrency}, job run ${jobSeconds} s, kube ${plane.server}`);
  console.log(
    `  manager: the shipped wiring (createManagerControllers) without leader election or webhooks; ` +
      `controllers ${manager.controllers.join(", ")}`,
  );
  console.log(`  plane: kube-controller-manager ${benchControllerManagerFlags.join(" ")} (its Job controller must not set the pace)`);
  console.log(
    `  fixtures: ${N} x (bootstrap Secret, Machine, TerraformMachine) created in ${seconds(fixtureMillis)} s before the manager started`,
  );
  console.log(
    `  wall time, manager spawn to all ${provisionedAt.size}/${N} provisioned: ` +
      `${seconds(wall)} s (start and cache sync ${seconds(manager.readyAt - manager.started)} s; reconciling ${seconds(active)} s)`,
  );
  console.log(
    `  time to provisioned after ready: p50 ${seconds(percentile(latencies, 0.5))} s, p90 ${seconds(percentile(latencies, 0.9))} s, ` +
      `max ${seconds(Math.max(...latencies))} s`,
  );
  console.log(`  machines provisioned per second: ${(provisionedAt.size / (active / 1000)).toFixed(1)}`);
  console.log(
    `  reconciles until all provisioned: ${reconcilesDone} (${(reconcilesDone / N).toFixed(2)} per machine), ` +
      `${(reconcilesDone / (active / 1000)).toFixed(1)} per second; errors ${atDone.metrics?.errors ?? "?"}; ` +
      `mean pass ${((1000 * (atDone.metrics?.reconcileSeconds ?? NaN)) / reconcilesDone).toFixed(1)} ms`,
  );
  console.log(
    `  reconciles after, until quiet${settled ? "" : ` (NOT quiet after ${seconds(settleMillis)} s)`}: ` +
      `${reconcilesSettled - reconcilesDone} more (${reconcilesSettled} total, ${(reconcilesSettled / N).toFixed(2)} per machine)`,
  );
  const jobFlags = [extra > 0 ? `${extra} EXTRA (more than one per machine)` : "", nonApply > 0 ? `${nonApply} not apply` : ""]
    .filter(Boolean)
    .join(", ");
  console.log(
    `  Jobs created: ${jobs.length} for ${perOwner.size} machines${jobFlags ? `: ${jobFlags}` : " (one apply each)"}; ` +
      `Complete ${complete}, bookkept ${bookkept}; Pod Succeeded -> Job Complete p50 ${percentile(completeLag, 0.5)} ms, ` +
      `max ${Math.max(...completeLag)} ms`,
  );
  console.log(`  credential mirror Secrets in the namespace: ${mirrors.join("; ") || "none"}`);
  if (completer.stats.errors.length)
    console.log(`  Job completer errors: ${completer.stats.errors.length}, first: ${completer.stats.errors[0]}`);
  console.log(
    `  API requests by the manager until all provisioned: ${totalDone} = ${(totalDone / reconcilesDone).toFixed(2)} per reconcile, ` +
      `${(totalDone / N).toFixed(2)} per machine; TLS handshakes ${toDone.tlsHandshakes} ` +
      `(${(toDone.tlsHandshakes / totalDone).toFixed(2)} per request)`,
  );
  console.log(
    `  request baseline: writes are ${writesDone} (${(writesDone / N).toFixed(2)} per machine), ` +
      `the floor for a controller reading from its caches; all requests / writes = ${(totalDone / writesDone).toFixed(2)}x`,
  );
  console.log(
    `    ${"verb resource".padEnd(42)} ${"count".padStart(7)} ${"/reconcile".padStart(10)} ${"/machine".padStart(9)} ` +
      `${"mean ms".padStart(8)}  codes`,
  );
  for (const [key, entry] of [...toDone.byKey].filter(([k]) => !k.startsWith("watch ")).sort((a, b) => b[1].count - a[1].count)) {
    const codes = Object.entries(entry.codes)
      .map(([code, n]) => `${code}:${n}`)
      .join(" ");
    console.log(
      `    ${key.padEnd(42)} ${String(entry.count).padStart(7)} ${(entry.count / reconcilesDone).toFixed(2).padStart(10)} ` +
        `${(entry.count / N).toFixed(2).padStart(9)} ${(entry.millis / entry.count).toFixed(1).padStart(8)}  ${codes}`,
    );
  }
  console.log(
    `    events by reason, per machine: ${
      [...eventReasons]
        .sort((a, b) => b[1] - a[1])
        .map(([reason, count]) => `${reason} ${(count / N).toFixed(2)}`)
        .join(", ") || "none"
    }`,
  );
  const watches = [...toDone.byKey].filter(([k]) => k.startsWith("watch ")).map(([k, e]) => `${k.slice(6)} ${e.count}`);
  console.log(`    watches opened: ${watches.join(", ") || "none"}`);
  const tailTotal = requestsOf(tail);
  console.log(
    `  API requests after all provisioned, until quiet: ${tailTotal}${
      tailTotal
        ? ` (${[...tail.byKey]
            .filter(([k]) => !k.startsWith("watch "))
            .sort((a, b) => b[1].count - a[1].count)
            .slice(0, 6)
            .map(([k, e]) => `${k} ${e.count}`)
            .join(", ")})`
        : ""
    }`,
  );
  const cpu = Object.entries(atDone.cpu).map(([name, value]) => `${name} ${(value - cpuBefore[name]).toFixed(1)}`);
  console.log(
    `  CPU seconds, manager spawn to all provisioned (${seconds(wall)} s on ${availableParallelism()} cores; ` +
      `1-min load ${loadBefore.toFixed(1)} -> ${atDone.load.toFixed(1)}): ${cpu.join(", ")}`,
  );
  const mib = (value) => `${value.toFixed(0)} MiB`;
  console.log(
    `  manager RSS: peak (VmHWM) ${mib(peak)}; once quiet ${mib(steady.asIs)}, after a full GC ${mib(steady.afterGc)} (heap used ` +
      `${mib(steady.heapUsed)}, external ${mib(steady.external)}); exit ${JSON.stringify(managerExit)}`,
  );
  console.log(
    `  RSS baseline (the same Manager, controllers and watches, each reconcile a no-op, ` +
      `over the same ${N} TerraformMachines and Jobs): peak ${mib(baselineMemory.peak)}; ` +
      `after a full GC ${mib(baselineMemory.afterGc)} (heap used ${mib(baselineMemory.heapUsed)}, ` +
      `external ${mib(baselineMemory.external)}); its list+watch ${requestsOf(baselineRequests)} requests`,
  );
  console.log(
    `  manager / baseline: peak ${(peak / baselineMemory.peak).toFixed(2)}x, ` +
      `after GC ${(steady.afterGc / baselineMemory.afterGc).toFixed(2)}x, ` +
      `heap used ${(steady.heapUsed / baselineMemory.heapUsed).toFixed(2)}x`,
  );
  console.log(
    `  restart over ${N} settled machines: ${restartJobs} Jobs, ${restartWrites} writes, ` +
      `${requestsOf(restartDiff)} requests (${topOf(restartDiff) || "none"}); ${atRestart.metrics?.reconciles ?? "?"} reconciles`,
  );
  console.log(
    `  --sync-period resync (${resyncSeconds} s) of ${N} settled machines: ${resyncReconciles} reconciles, ${resyncWrites} writes, ` +
      `${requestsOf(resyncDiff)} requests (${topOf(resyncDiff) || "none"})`,
  );
  const perMachine = (value) => Number((value / N).toFixed(2));
  const figures = {
    machines: N,
    seconds: Number((wall / 1000).toFixed(1)),
    machinesPerSecond: Number((provisionedAt.size / (active / 1000)).toFixed(2)),
    requestsPerMachine: perMachine(totalDone),
    writesPerMachine: perMachine(writesDone),
    reconcilesPerMachine: perMachine(reconcilesDone),
    jobs: jobs.length,
    peakRssMiB: Math.round(peak),
    baselinePeakRssMiB: Math.round(baselineMemory.peak),
    restartJobs,
    restartWrites,
    resyncWrites,
  };
  const targets = [
    ["writes per machine <= 20", figures.writesPerMachine <= 20],
    ["requests <= 1.15x writes", totalDone <= 1.15 * writesDone],
    ["reconciles per machine <= 3", figures.reconcilesPerMachine <= 3],
    ["machines per second >= 10", figures.machinesPerSecond >= 10],
    ["peak RSS <= 1.25x baseline", peak <= 1.25 * baselineMemory.peak],
    ["restart: 0 Jobs, 0 writes", restartJobs === 0 && restartWrites === 0],
    ["resync: 0 writes", resyncWrites === 0],
  ];
  console.log(`  targets (issue 12): ${targets.map(([name, met]) => `${name} ${met ? "met" : "MISSED"}`).join("; ")}`);
  console.log(JSON.stringify(figures));
  if (!finished || extra > 0 || complete < jobs.length) exitCode = 1;
} catch (error) {
  if (!interrupted) console.error(`bench: ${error.stack ?? error}`);
  exitCode = 1;
} finally {
  await cleanup();
  step("cleaned up");
}
process.exit(exitCode);
