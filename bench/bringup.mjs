#!/usr/bin/env node
// The demo's bring-up on the e2e management plane (Cluster API's core manager, captf installed from
// its manifests, the chroot kubelet running every Job): wall time from applying the demo to Ready as
// Cluster API reports it, and the Jobs it took, per object.
//
// Baseline, from the same run: the Jobs' own critical path (the cluster's apply, then the slowest
// machine or pool apply, from each Job's start to its completion). What the bring-up takes beyond it
// is captf's and Cluster API's reaction time plus the chroot kubelet's queue (2 Pods at a time).
// Target (issue 11): Ready in 60 s or less with the tools built; Jobs = one per object plus at most
// one re-apply of the cluster.
//
// Then, once Ready, a scale-up (issue 32, 35): the MachineDeployment demo-md-0 scaled by --scale new
// Machines (default 3; 0 skips it). It prints the time from the scale to every new Machine's
// InfrastructureReady and to Ready, and per new TerraformMachine the time from its creation to its
// first Job, as this bench's watches saw both appear. Baseline, from the same run: the slowest new apply
// Job's own run (start to completion). A creation → Job of about 30 s is the owner wait (a pass that
// missed the Machine's ownerReference and waited for its requeue).
//
//   npx tsc -b && node bench/bringup.mjs [--runs 1] [--scale 3]
//
// Needs root (the chroot kubelet) and the tools of tools/install.sh (etcd, tofu, kube, capi).
import { parseArgs } from "node:util";
import { loadDependency } from "./lib/controller-packages.mjs";
import { percentile } from "./lib/controller-samples.mjs";
import { applyObjects } from "../e2e/dist/apply.js";
import { demoClusterName, demoNamespace, demoObjects, demoVariables } from "../e2e/dist/demo-objects.js";
import { startManagementPlane } from "../e2e/dist/management-plane.js";
import { listCaptfJobs, listEventsOfReason, readProgress } from "../e2e/dist/progress.js";

const { values } = parseArgs({ options: { runs: { type: "string", default: "1" }, scale: { type: "string", default: "3" } } });
const k8s = await loadDependency("@kubernetes/client-node");
const opLabel = "captf.infrastructure.cluster.x-k8s.io/op";
const ownerKindLabel = "captf.infrastructure.cluster.x-k8s.io/owner-kind";
const ownerNameLabel = "captf.infrastructure.cluster.x-k8s.io/owner-name";

for (let run = 1; run <= Number(values.runs); run++) {
  const planeStarted = Date.now();
  const plane = await startManagementPlane({ log: (line) => (/: done in /.test(line) ? console.log(`  ${line}`) : undefined) });
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
    const scaleUp = Number(values.scale) > 0 ? await measureScaleUp(plane.kubeConfig, Number(values.scale), run) : undefined;
    console.log(
      JSON.stringify({
        run,
        seconds,
        jobs: jobs.length,
        objects,
        criticalPathSeconds: criticalPath,
        planeSeconds: plane.startSteps,
        ...(scaleUp ? { scaleUp } : {}),
      }),
    );
  } finally {
    await plane.stop();
  }
}

/** Calls `record(object, seconds since the epoch)` for each object the watch on `path` sees first; resolves to a stop function. */
async function watchFirstSeen(kubeConfig, path, labelSelector, record) {
  const seen = new Set();
  const request = await new k8s.Watch(kubeConfig).watch(
    path,
    labelSelector ? { labelSelector } : {},
    (_type, object) => {
      if (seen.has(object.metadata.uid)) return;
      seen.add(object.metadata.uid);
      record(object, Date.now());
    },
    () => undefined,
  );
  return () => request.abort();
}

/**
 * Scales demo-md-0 up by `added` Machines once the demo is Ready, and measures how long the new ones take: to
 * InfrastructureReady and to Ready from the scale, and per TerraformMachine from its creation to its first Job.
 */
async function measureScaleUp(kubeConfig, added, run) {
  const custom = kubeConfig.makeApiClient(k8s.CustomObjectsApi);
  const capi = { group: "cluster.x-k8s.io", version: "v1beta2", namespace: demoNamespace };
  const deploymentSelector = "cluster.x-k8s.io/deployment-name=demo-md-0";
  const machines = async () =>
    (await custom.listNamespacedCustomObject({ ...capi, plural: "machines", labelSelector: deploymentSelector })).items;
  const before = new Set((await machines()).map((machine) => machine.metadata.name));
  const deployment = await custom.getNamespacedCustomObject({ ...capi, plural: "machinedeployments", name: "demo-md-0" });
  const from = deployment.spec.replicas;
  const infra = { group: "infrastructure.cluster.x-k8s.io", version: "v1alpha1", namespace: demoNamespace, plural: "terraformmachines" };
  const existing = new Set((await custom.listNamespacedCustomObject(infra)).items.map((object) => object.metadata.name));

  const created = new Map();
  const firstJob = new Map();
  const stops = [
    await watchFirstSeen(
      kubeConfig,
      `/apis/infrastructure.cluster.x-k8s.io/v1alpha1/namespaces/${demoNamespace}/terraformmachines`,
      "",
      (object, at) => created.set(object.metadata.name, at),
    ),
    await watchFirstSeen(kubeConfig, `/apis/batch/v1/namespaces/${demoNamespace}/jobs`, `${ownerKindLabel}=TerraformMachine`, (job, at) => {
      const owner = job.metadata.labels[ownerNameLabel];
      if (!firstJob.has(owner)) firstJob.set(owner, at);
    }),
  ];
  try {
    const scaled = Date.now();
    await custom.patchNamespacedCustomObject(
      { ...capi, plural: "machinedeployments", name: "demo-md-0", body: { spec: { replicas: from + added } } },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
    );
    let infrastructureSeconds;
    for (;;) {
      const fresh = (await machines()).filter((machine) => !before.has(machine.metadata.name));
      const infrastructureReady = (machine) =>
        (machine.status?.conditions ?? []).some((condition) => condition.type === "InfrastructureReady" && condition.status === "True");
      if (infrastructureSeconds === undefined && fresh.length === added && fresh.every(infrastructureReady))
        infrastructureSeconds = (Date.now() - scaled) / 1000;
      if (infrastructureSeconds !== undefined && (await readProgress(kubeConfig, demoNamespace, demoClusterName)).ready) break;
      if (Date.now() - scaled > 600_000) throw new Error(`the scale-up by ${added} not Ready within 600 s`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    const readySeconds = (Date.now() - scaled) / 1000;

    const newMachines = [...created.keys()].filter((name) => !existing.has(name)).sort();
    const toFirstJob = newMachines.map((name) => ({ name, seconds: (firstJob.get(name) - created.get(name)) / 1000 }));
    const runs = (await listCaptfJobs(kubeConfig, demoNamespace))
      .filter((job) => newMachines.includes(job.metadata.labels[ownerNameLabel]) && job.status?.startTime && job.status?.completionTime)
      .map((job) => (new Date(job.status.completionTime).getTime() - new Date(job.status.startTime).getTime()) / 1000);
    const slowestJob = Math.max(0, ...runs);
    const waits = toFirstJob.map((machine) => machine.seconds);
    console.log(
      `run ${run}: scale demo-md-0 ${from} → ${from + added}: ` +
        `every new Machine InfrastructureReady in ${infrastructureSeconds.toFixed(1)} s, ` +
        `Ready in ${readySeconds.toFixed(1)} s; baseline, the slowest new apply Job's run: ${slowestJob.toFixed(1)} s ` +
        `(${(infrastructureSeconds / Math.max(slowestJob, 0.001)).toFixed(2)}x)`,
    );
    console.log(
      `run ${run}: TerraformMachine created → first Job: p50 ${percentile(waits, 0.5).toFixed(2)} s, ` +
        `max ${Math.max(...waits).toFixed(2)} s (an owner wait would be about 30 s)`,
    );
    for (const machine of toFirstJob) console.log(`  TerraformMachine/${machine.name}: ${machine.seconds.toFixed(2)} s`);
    return {
      from,
      to: from + added,
      infrastructureReadySeconds: infrastructureSeconds,
      readySeconds,
      slowestJobSeconds: slowestJob,
      createdToFirstJobSeconds: toFirstJob,
    };
  } finally {
    for (const stop of stops) stop();
  }
}
