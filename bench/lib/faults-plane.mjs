// What the fault and load drills (bench/drills/faults-*.mjs, load-*.mjs) share: the testkit's
// control plane with the bench's fixtures (bench/lib/controller-fixtures.mjs: one externally managed
// cluster, N TerraformMachines with their Machines and bootstrap Secrets), the bench's Job
// completer (bench/lib/controller-jobs.mjs), a watch recording when each machine is provisioned, and
// the manager as a child process with the shipped wiring (bench/lib/controller-manager.mjs) that a
// drill may SIGKILL and start again. Everything started is stopped on every exit path.
import { spawn } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { loadController, loadDependency, loadTestkit, loadControllerFile, repo, requireBuilt } from "./controller-packages.mjs";

requireBuilt();
const { startControlPlane, clusterApiCrdPaths } = await loadTestkit();
const { KubeClient, Informer } = await loadController();
const { rbacObjects, defaultInstallOptions } = await loadControllerFile("install/manifests.js");
const k8s = await loadDependency("@kubernetes/client-node");
const { pino } = await loadDependency("pino");
const { benchControllerManagerFlags, createClusterFixtures, createMachineFixtures, inParallel, installCrds, machineName, types } =
  await import("./controller-fixtures.mjs");
const { startJobCompleter } = await import("./controller-jobs.mjs");
const { memoryOf, quietWhile, percentile } = await import("./controller-samples.mjs");

export const sleep = (millis) => new Promise((resolve) => setTimeout(resolve, millis));
export const seconds = (millis) => (millis / 1000).toFixed(1);
export const logger = pino({ level: "warn" }, pino.destination(2));
export { types, machineName, inParallel, memoryOf, quietWhile, percentile };

const started = Date.now();
/** A progress line on stderr, stamped with the seconds since the drill started. */
export const step = (drill, text) => process.stderr.write(`${drill} [${seconds(Date.now() - started).padStart(6)} s]: ${text}\n`);

/** Cleanups run in reverse on exit, Ctrl-C or a crash; `run` wraps a drill's body and exits with its code. */
export function drillRunner(drill) {
  const work = mkdtempSync(join(tmpdir(), `captf-${drill}-`));
  const cleanups = [];
  let cleaning;
  const cleanup = () =>
    (cleaning ??= (async () => {
      for (const fn of cleanups.reverse()) await fn().catch((error) => console.error(`${drill}: cleanup: ${error.message}`));
      // CAPTF_DRILL_KEEP=1 keeps the manager's log and the rest of the work directory for a look afterwards.
      if (process.env.CAPTF_DRILL_KEEP === "1") console.error(`${drill}: kept ${work} (manager.log: the manager's log)`);
      else rmSync(work, { recursive: true, force: true });
    })());
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) process.once(signal, () => void cleanup().finally(() => process.exit(130)));
  for (const event of ["uncaughtException", "unhandledRejection"]) {
    process.on(event, (error) => {
      process.stderr.write(`${drill}: ${event}: ${error?.stack ?? error}\n`);
      void cleanup().finally(() => process.exit(1));
    });
  }
  return {
    work,
    onCleanup: (fn) => cleanups.push(fn),
    async run(body) {
      let code = 1;
      try {
        code = (await body()) ? 0 : 1;
      } catch (error) {
        console.error(`${drill}: ${error.stack ?? error}`);
      } finally {
        await cleanup();
      }
      process.exit(code);
    },
  };
}

/** The sum of a metric's samples in Prometheus text whose labels contain `filter`. */
export function metricSum(text, name, filter = "") {
  let total = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(name) || !/[{ ]/.test(line[name.length]) || !line.includes(filter)) continue;
    total += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return total;
}

/**
 * The plane (etcd, kube-apiserver, kube-controller-manager), the CRDs, the cluster's fixtures and
 * `machines` machines' (created before any manager runs), the Job completer (`jobSeconds` per
 * run; `hold` as the completer's) and the provisioned watch: `provisionedAt` (name → ms), `allProvisioned()` resolves once
 * every machine is.
 */
export async function startDrillPlane({ runner, drill, machines, jobSeconds = 0, namespace = "bench", hold }) {
  const planeStarting = startControlPlane({ controllerManagerFlags: benchControllerManagerFlags });
  runner.onCleanup(async () => (await planeStarting.catch(() => undefined))?.stop());
  const plane = await planeStarting;
  step(drill, `control plane up in ${seconds(plane.startMillis)} s`);
  const kubeConfig = new k8s.KubeConfig();
  kubeConfig.loadFromFile(plane.kubeconfigPath);
  const client = new KubeClient(kubeConfig, { userAgent: `captf-${drill}` });
  runner.onCleanup(async () => client.close());
  await installCrds(client, clusterApiCrdPaths());
  await createClusterFixtures(client, namespace, rbacObjects(defaultInstallOptions).runnerRole);
  const names = Array.from({ length: machines }, (_, i) => machineName(i, machines));
  const fixturesFrom = Date.now();
  await inParallel(names, 16, (name) => createMachineFixtures(client, namespace, name));
  step(drill, `${machines} machines' fixtures created in ${seconds(Date.now() - fixturesFrom)} s`);

  const completer = startJobCompleter({ client, namespace, logger, jobSeconds, ...(hold ? { hold } : {}) });
  runner.onCleanup(() => completer.stop());
  await completer.synced();

  const provisionedAt = new Map();
  const waiters = [];
  const informer = new Informer({ client, type: types.terraformMachine, namespace, logger, resyncPeriodMillis: 0 });
  const onMachine = (object) => {
    if (object.status?.initialization?.provisioned === true && !provisionedAt.has(object.metadata.name)) {
      provisionedAt.set(object.metadata.name, Date.now());
      if (provisionedAt.size === machines) for (const resolve of waiters.splice(0)) resolve();
    }
  };
  informer.addHandlers({ add: onMachine, update: (_old, object) => onMachine(object) });
  informer.start();
  runner.onCleanup(() => informer.stop());
  await informer.waitForSync(60_000);
  return {
    plane,
    client,
    namespace,
    names,
    completer,
    machines: informer,
    provisionedAt,
    allProvisioned: () => (provisionedAt.size === machines ? Promise.resolve() : new Promise((resolve) => waiters.push(resolve))),
  };
}

/**
 * The manager as a child process (bench/lib/controller-manager.mjs) on `kubeconfig`, its log appended
 * to `<work>/manager.log`; resolves once it serves (its ports printed), or with `ready: true`
 * once /readyz answers 200. `managerFlags` are more of the manager's own flags.
 */
export async function spawnManager({ runner, kubeconfig, concurrency = 10, managerFlags = [], waitReady = true }) {
  const logFile = join(runner.work, "manager.log");
  const fd = openSync(logFile, "a");
  const spawnedAt = Date.now();
  const child = spawn(
    process.execPath,
    [
      join(repo, "bench/lib/controller-manager.mjs"),
      "--kubeconfig",
      kubeconfig,
      "--concurrency",
      String(concurrency),
      ...managerFlags.map((flag) => `--manager-flag=${flag}`),
    ],
    {
      stdio: ["pipe", "pipe", fd], // its stdin closes when this process dies: the child then stops itself
    },
  );
  closeSync(fd);
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  const gone = () => child.exitCode !== null || child.signalCode !== null;
  runner.onCleanup(async () => {
    if (gone()) return;
    child.kill("SIGKILL");
    await exited;
  });
  const tail = () => {
    try {
      return readFileSync(logFile, "utf8").trimEnd().split("\n").slice(-20).join("\n");
    } catch {
      return "";
    }
  };
  let ports;
  const serving = Promise.race([
    new Promise((resolve) => createInterface({ input: child.stdout }).once("line", (line) => resolve((ports = JSON.parse(line))))),
    exited.then(() => undefined),
  ]);
  const handle = {
    child,
    pid: child.pid,
    spawnedAt,
    exited,
    tail,
    memory: () => memoryOf(child.pid),
    /** Resolves true once it serves (metrics and health ports open, caches still syncing), false if it exited first. */
    serving: () => serving.then(Boolean),
    /** The manager's /metrics text, or "" when it does not answer. */
    metrics: () =>
      ports
        ? fetch(`http://127.0.0.1:${ports.metricsPort}/metrics`).then(
            (r) => r.text(),
            () => "",
          )
        : Promise.resolve(""),
    /** Whether /readyz answers 200 now (its caches synced). */
    readyNow: () =>
      ports
        ? fetch(`http://127.0.0.1:${ports.healthPort}/readyz`).then(
            (r) => r.status === 200,
            () => false,
          )
        : Promise.resolve(false),
    async ready() {
      if (!(await serving)) throw new Error(`the manager exited before serving; its log ends:\n${tail()}`);
      for (;;) {
        if (await handle.readyNow()) return Date.now();
        if (gone()) throw new Error(`the manager exited before it was ready; its log ends:\n${tail()}`);
        await sleep(50);
      }
    },
    /** SIGTERM (or `signal`), SIGKILL after 25 s; resolves with how it exited. */
    async stop(signal = "SIGTERM") {
      if (gone()) return exited;
      child.kill(signal);
      const timer = setTimeout(() => child.kill("SIGKILL"), 25_000);
      const result = await exited;
      clearTimeout(timer);
      return result;
    },
  };
  if (waitReady) handle.readyAt = await handle.ready();
  return handle;
}

/** Jobs the completer saw, by owner: the owners with more than one Job of `op`, and Jobs of other ops. */
export function jobsPerOwner(completer, op = "apply") {
  const jobs = [...completer.stats.jobs.values()];
  const byOwner = new Map();
  for (const job of jobs.filter((j) => j.op === op)) byOwner.set(job.owner, (byOwner.get(job.owner) ?? 0) + 1);
  return {
    jobs: jobs.length,
    ofOp: jobs.filter((j) => j.op === op).length,
    owners: byOwner.size,
    duplicated: [...byOwner].filter(([, n]) => n > 1),
    otherOps: jobs.filter((j) => j.op !== op).map((j) => `${j.owner}:${j.op}`),
    failed: jobs.filter((j) => j.failedAt).length,
  };
}
