// `bench/controller.mjs --managers M`: one workload, run twice on one control plane, by 1 manager
// (--shards=1, today's wiring) and by M managers with --shards=M (bench/lib/controller-manager.mjs
// processes claiming the shard Leases, as the Deployment's replicas do). The workload: --clusters
// externally managed clusters (each its own shard key) sharing --machines TerraformMachines, every
// apply Job completed by bench/lib/controller-jobs.mjs. Each run gets its own namespace; the managers
// start over it empty and, once the shards settled (every shard Lease held, one per manager), the
// fixtures are created: the clock runs from their creation to the last machine provisioned.
// Prints per run the wall time, machines per second, Jobs (one per machine, else flagged),
// reconciles and CPU seconds per manager, then the M / 1 ratio of machines per second.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { loadController, loadControllerFile, loadDependency, loadTestkit, repo } from "./controller-packages.mjs";
import { benchControllerManagerFlags, infra, inParallel, installCrds, moduleImage, types } from "./controller-fixtures.mjs";
import { startJobCompleter } from "./controller-jobs.mjs";

const capi = { group: "cluster.x-k8s.io", version: "v1beta2" };
const leaseType = { group: "coordination.k8s.io", version: "v1", plural: "leases", kind: "Lease", namespaced: true };
const sleep = (millis) => new Promise((resolve) => setTimeout(resolve, millis));

/** User + system CPU seconds of a process so far. */
function cpuOf(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
}

/** bench/lib/controller-fixtures.mjs's cluster, once per cluster name, and its share of the machines. */
async function createWorkload(client, namespace, identity, clusters, machines) {
  await client.create(types.secret, namespace, {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "bench-credentials" },
    stringData: { NOOP_TOKEN: "bench" },
  });
  await client.create(types.identity, undefined, {
    apiVersion: `${infra.group}/${infra.version}`,
    kind: "TerraformClusterIdentity",
    metadata: { name: identity },
    spec: { type: "Secret", secretRef: { name: "bench-credentials", namespace }, allowedNamespaces: { list: [namespace] } },
  });
  const clusterNames = Array.from({ length: clusters }, (_, i) => `c-${String(i).padStart(String(clusters - 1).length, "0")}`);
  await inParallel(clusterNames, 16, async (name) => {
    await client.create(types.terraformCluster, namespace, {
      apiVersion: `${infra.group}/${infra.version}`,
      kind: "TerraformCluster",
      metadata: { name, annotations: { "cluster.x-k8s.io/managed-by": "external" } },
      spec: { source: { image: "registry.invalid/unused:v1" }, identityRef: { name: identity } },
    });
    await client.create(types.cluster, namespace, {
      apiVersion: `${capi.group}/${capi.version}`,
      kind: "Cluster",
      metadata: { name },
      spec: { infrastructureRef: { apiGroup: infra.group, kind: "TerraformCluster", name } },
    });
  });
  const machineNames = Array.from({ length: machines }, (_, i) => ({
    name: `m-${String(i).padStart(String(machines - 1).length, "0")}`,
    cluster: clusterNames[i % clusters],
  }));
  await inParallel(machineNames, 16, async ({ name, cluster }) => {
    const clusterLabel = { "cluster.x-k8s.io/cluster-name": cluster };
    await client.create(types.secret, namespace, {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: `${name}-bootstrap`, labels: clusterLabel },
      stringData: { value: "#cloud-config\n", format: "cloud-config" },
    });
    const machine = await client.create(types.machine, namespace, {
      apiVersion: `${capi.group}/${capi.version}`,
      kind: "Machine",
      metadata: { name, labels: clusterLabel },
      spec: {
        clusterName: cluster,
        bootstrap: { dataSecretName: `${name}-bootstrap` },
        infrastructureRef: { apiGroup: infra.group, kind: "TerraformMachine", name },
      },
    });
    await client.create(types.terraformMachine, namespace, {
      apiVersion: `${infra.group}/${infra.version}`,
      kind: "TerraformMachine",
      metadata: {
        name,
        labels: clusterLabel,
        ownerReferences: [
          {
            apiVersion: `${capi.group}/${capi.version}`,
            kind: "Machine",
            name,
            uid: machine.metadata.uid,
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
      },
      spec: { source: { image: moduleImage } },
    });
  });
}

/** One bench/lib/controller-manager.mjs process on `namespace`; resolves once it serves. */
async function startManager({ kubeconfig, namespace, shards, concurrency, work, index }) {
  const logFile = join(work, `manager-${shards}-${index}.log`);
  const sharded = shards > 1 ? ["--manager-flag=--leader-elect", `--manager-flag=--shards=${shards}`] : [];
  const child = spawn(
    process.execPath,
    [
      join(repo, "bench/lib/controller-manager.mjs"),
      "--kubeconfig",
      kubeconfig,
      "--concurrency",
      String(concurrency),
      `--manager-flag=--namespace=${namespace}`,
      ...sharded,
    ],
    {
      env: { ...process.env, POD_NAMESPACE: namespace },
      stdio: ["pipe", "pipe", "pipe"],
    },
  );
  const log = [];
  createInterface({ input: child.stderr }).on("line", (line) => log.push(line));
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  const ports = await Promise.race([
    new Promise((resolve) => createInterface({ input: child.stdout }).once("line", (line) => resolve(JSON.parse(line)))),
    exited.then((result) => Promise.reject(new Error(`manager ${index} exited ${JSON.stringify(result)}: ${log.slice(-10).join("\n")}`))),
  ]);
  return {
    pid: child.pid,
    logFile,
    async reconciles() {
      const text = await (await fetch(`http://127.0.0.1:${ports.metricsPort}/metrics`)).text();
      return text
        .split("\n")
        .filter((line) => line.startsWith("controller_runtime_reconcile_total{") && line.includes('controller="terraformmachine"'))
        .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(" ") + 1)), 0);
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 25_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** One run: `managers` processes over a fresh namespace, then the workload; its figures. */
async function runOnce({ client, kubeconfig, managers, clusters, machines, concurrency, jobSeconds, timeoutMillis, work, logger, step }) {
  const namespace = `bench-shards-${managers}`;
  await client.create(types.namespace, undefined, { apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } });
  const started = await Promise.all(
    Array.from({ length: managers }, (_, index) => startManager({ kubeconfig, namespace, shards: managers, concurrency, work, index })),
  );
  try {
    if (managers > 1) {
      // Settled: every shard Lease held, each by another manager.
      const deadline = Date.now() + 120_000;
      for (;;) {
        const holders = await Promise.all(
          Array.from({ length: managers }, (_, i) =>
            client.get(leaseType, namespace, `captf-shard-${i}`).then(
              (lease) => lease.spec?.holderIdentity ?? "",
              () => "",
            ),
          ),
        );
        if (holders.every(Boolean) && new Set(holders).size === managers) break;
        if (Date.now() > deadline) throw new Error(`shards never settled over ${managers} managers: ${holders.join(", ")}`);
        await sleep(250);
      }
    }
    step(
      `${managers} manager(s) up${managers > 1 ? `, ${managers} shards settled` : ""}; ` +
        `creating ${clusters} clusters and ${machines} machines`,
    );
    const completer = startJobCompleter({ client, namespace, logger, jobSeconds });
    await completer.synced();
    const provisioned = new Set();
    let everyone;
    const all = new Promise((resolve) => (everyone = resolve));
    const { Informer } = await loadController();
    const informer = new Informer({ client, type: types.terraformMachine, namespace, logger, resyncPeriodMillis: 0 });
    const onMachine = (object) => {
      if (object.status?.initialization?.provisioned === true) provisioned.add(object.metadata.name);
      if (provisioned.size === machines) everyone();
    };
    informer.addHandlers({ add: onMachine, update: (_old, object) => onMachine(object) });
    informer.start();
    await informer.waitForSync(60_000);
    const cpuBefore = started.map((manager) => cpuOf(manager.pid));
    const load = loadavg()[0];
    const begin = Date.now();
    await createWorkload(client, namespace, namespace, clusters, machines);
    const finished = await Promise.race([all.then(() => true), sleep(timeoutMillis).then(() => false)]);
    const seconds = (Date.now() - begin) / 1000;
    const reconciles = await Promise.all(started.map((manager) => manager.reconciles().catch(() => NaN)));
    const cpu = started.map((manager, i) => cpuOf(manager.pid) - cpuBefore[i]);
    const jobs = [...completer.stats.jobs.values()];
    const owners = new Set(jobs.map((job) => job.owner));
    await informer.stop();
    await completer.stop();
    return {
      managers,
      finished,
      provisioned: provisioned.size,
      seconds,
      machinesPerSecond: provisioned.size / seconds,
      jobs: jobs.length,
      extraJobs: jobs.length - owners.size,
      reconciles,
      cpu,
      load,
    };
  } finally {
    await Promise.all(started.map((manager) => manager.stop()));
  }
}

/** Runs the workload with 1 and `managers` managers on one plane and prints both figures and the ratio. */
export async function runShardBench({ managers, clusters, machines, concurrency, jobSeconds, timeoutMillis }) {
  const work = mkdtempSync(join(tmpdir(), "captf-bench-shards-"));
  const { startControlPlane, clusterApiCrdPaths } = await loadTestkit();
  const { KubeClient } = await loadController();
  const k8s = await loadDependency("@kubernetes/client-node");
  const { pino } = await loadDependency("pino");
  const logger = pino({ level: "warn" }, pino.destination(2));
  const benchStarted = Date.now();
  const step = (text) => process.stderr.write(`bench [${((Date.now() - benchStarted) / 1000).toFixed(1).padStart(6)} s]: ${text}\n`);
  const plane = await startControlPlane({ controllerManagerFlags: benchControllerManagerFlags });
  let client;
  try {
    const kubeConfig = new k8s.KubeConfig();
    kubeConfig.loadFromFile(plane.kubeconfigPath);
    client = new KubeClient(kubeConfig, { userAgent: "captf-bench" });
    await installCrds(client, clusterApiCrdPaths());
    // The ClusterRole the install ships and the manager binds in each namespace (captf-runner).
    const { rbacObjects, defaultInstallOptions } = await loadControllerFile("install/manifests.js");
    await client.create(types.clusterRole, undefined, {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      ...rbacObjects(defaultInstallOptions).runnerRole,
    });
    step(`control plane up, CRDs installed; ${machines} machines in ${clusters} clusters, 1 manager then ${managers}`);
    const runs = [];
    for (const count of [1, managers]) {
      runs.push(
        await runOnce({
          client,
          kubeconfig: plane.kubeconfigPath,
          managers: count,
          clusters,
          machines,
          concurrency,
          jobSeconds,
          timeoutMillis,
          work,
          logger,
          step,
        }),
      );
      step(`run with ${count} manager(s) done`);
    }
    console.log(
      `controller bench, shards: ${machines} TerraformMachines in ${clusters} clusters, concurrency ${concurrency} per manager, ` +
        `job run ${jobSeconds} s, ${availableParallelism()} cores`,
    );
    for (const run of runs) {
      const jobsNote = run.extraJobs > 0 ? `, ${run.extraJobs} EXTRA` : " (one apply each)";
      console.log(
        `  ${run.managers} manager(s)${run.managers > 1 ? `, --shards=${run.managers}` : ""}: ` +
          `${run.provisioned}/${machines} provisioned in ${run.seconds.toFixed(1)} s${run.finished ? "" : " (NOT all)"}, ` +
          `${run.machinesPerSecond.toFixed(2)} machines/s; Jobs ${run.jobs}${jobsNote}; ` +
          `terraformmachine reconciles per manager ${run.reconciles.join(" / ")}; ` +
          `CPU s per manager ${run.cpu.map((c) => c.toFixed(1)).join(" / ")}; 1-min load at start ${run.load.toFixed(1)}`,
      );
    }
    const ratio = runs[1].machinesPerSecond / runs[0].machinesPerSecond;
    console.log(`  ${managers} managers / 1 manager, machines per second: ${ratio.toFixed(2)}x`);
    console.log(
      JSON.stringify({
        machines,
        clusters,
        managers,
        seconds: runs.map((r) => Number(r.seconds.toFixed(1))),
        machinesPerSecond: runs.map((r) => Number(r.machinesPerSecond.toFixed(2))),
        ratio: Number(ratio.toFixed(2)),
        extraJobs: runs.map((r) => r.extraJobs),
      }),
    );
    return runs.every((run) => run.finished && run.extraJobs === 0) ? 0 : 1;
  } finally {
    client?.close();
    await plane.stop();
    rmSync(work, { recursive: true, force: true });
  }
}
