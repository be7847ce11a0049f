#!/usr/bin/env node
// Fault drill: the node lost while Jobs run, on the e2e's management plane (captf installed from its
// manifests and running as a Pod, Cluster API's own controllers, real runner Pods on the testkit's
// chroot kubelet). The demo cluster comes up; its MachineDeployment is scaled up; once a new
// machine's apply Pod runs, the kubelet is stopped: its containers killed (the runner mid-apply and
// the captf manager itself) and its Node gone, as when a node dies. After --outage-seconds a new
// node comes up (another kubelet, another Node name): kube-controller-manager's pod GC removes the
// lost node's Pods, the Job controller fails their Jobs, the Deployment starts a new manager.
//
//   npx tsc -b && sudo node bench/drills/faults-kubelet.mjs [--scale-to 5] [--outage-seconds 30]
//
// Prints what was lost and what ran twice: every object Ready again, the Jobs created per object and
// operation, the Jobs that did not succeed (each must be reported as JobInterrupted and never as
// JobFailed), succeeded Jobs whose result the manager never recorded (results lost: must be 0),
// objects with two succeeded runs of one operation and inputs hash (must be 0), the manager Pods,
// and the time to converge once the new node is up. Exits 1 when any of these is missed. Needs root
// (the chroot kubelet); about 6 minutes here, most of it the plane's start.
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { loadDependency, repo } from "../lib/controller-packages.mjs";
import { drillRunner, seconds, sleep, step } from "../lib/faults-plane.mjs";

const { values: flags } = parseArgs({
  options: { "scale-to": { type: "string", default: "5" }, "outage-seconds": { type: "string", default: "30" } },
});
const scaleTo = Number(flags["scale-to"]);
const outageMillis = 1000 * Number(flags["outage-seconds"]);
if (!Number.isInteger(scaleTo) || scaleTo < 4 || !(outageMillis >= 0)) {
  console.error("faults-kubelet: --scale-to takes an integer >= 4 (the demo's MachineDeployment has 3), --outage-seconds a number >= 0");
  process.exit(2);
}
if (process.getuid?.() !== 0) {
  console.error("faults-kubelet: needs root (the chroot kubelet mounts and chroots)");
  process.exit(2);
}

const e2e = (file) => import(join(repo, "e2e/dist", file));
const { startManagementPlane } = await e2e("management-plane.js");
const { applyObjects } = await e2e("apply.js");
const { demoClusterName, demoNamespace, demoObjects, demoVariables } = await e2e("demo-objects.js");
const { readProgress, listCaptfJobs, listEventsOfReason, formatProgress } = await e2e("progress.js");
const { managerNamespace } = await e2e("captf-install.js");
const { startChrootKubelet } = await import(join(repo, "packages/testkit/dist/kubelet.js"));
const { annotations, labels } = await loadDependency("@captf/contract/api");
const k8s = await loadDependency("@kubernetes/client-node");

const drill = "faults-kubelet";
const runner = drillRunner(drill);
const capi = { group: "cluster.x-k8s.io", version: "v1beta2", namespace: demoNamespace };

await runner.run(async () => {
  const plane = await startManagementPlane({ log: (line) => (/: done in /.test(line) ? step(drill, line) : undefined) });
  runner.onCleanup(() => plane.stop());
  const core = plane.kubeConfig.makeApiClient(k8s.CoreV1Api);
  const custom = plane.kubeConfig.makeApiClient(k8s.CustomObjectsApi);
  const machineCount = (progress) => progress.rows.filter((row) => row.object.startsWith("Machine/")).length;
  /** Polls the demo's progress until Cluster API counts everything ready with `machines` Machines (any number when undefined). */
  const waitReady = async (what, machines, timeoutMillis) => {
    const deadline = Date.now() + timeoutMillis;
    let progress;
    while (Date.now() < deadline) {
      progress = await readProgress(plane.kubeConfig, demoNamespace, demoClusterName);
      if (progress.ready && machineCount(progress) === (machines ?? machineCount(progress))) return progress;
      await sleep(2000);
    }
    step(
      drill,
      `${what}: not Ready after ${seconds(timeoutMillis)} s:\n${formatProgress(progress?.rows.filter((row) => !row.ready) ?? [])}`,
    );
    return undefined;
  };

  const secrets = {
    credential: randomBytes(12).toString("hex"),
    variable: randomBytes(12).toString("hex"),
    bootstrap: randomBytes(12).toString("hex"),
  };
  await applyObjects(plane.applier, demoObjects(demoVariables(plane.images, secrets)));
  const demo = await waitReady("the demo", undefined, 600_000);
  if (!demo) return false;
  const readyMachines = machineCount(demo);
  const deployment = await custom.getNamespacedCustomObject({ ...capi, plural: "machinedeployments", name: "demo-md-0" });
  const added = scaleTo - deployment.spec.replicas;
  step(drill, `demo Ready (${readyMachines} machines); scaling demo-md-0 from ${deployment.spec.replicas} to ${scaleTo}`);
  await custom.patchNamespacedCustomObject(
    { ...capi, plural: "machinedeployments", name: "demo-md-0", body: { spec: { replicas: scaleTo } } },
    k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
  );

  // The node dies while a new machine's runner applies.
  const runningApply = async () =>
    (await core.listNamespacedPod({ namespace: demoNamespace })).items.find(
      (pod) =>
        pod.status?.phase === "Running" &&
        pod.metadata?.labels?.[labels.op] === "apply" &&
        pod.status?.containerStatuses?.some((status) => status.state?.running),
    );
  const deadline = Date.now() + 300_000;
  let victim;
  while (!(victim = await runningApply()) && Date.now() < deadline) await sleep(250);
  if (!victim) throw new Error("no apply Pod ran within 300 s of the scale-up");
  const runningAtStop = (await core.listNamespacedPod({ namespace: demoNamespace })).items
    .filter((pod) => pod.status?.phase === "Running")
    .map((pod) => pod.metadata.name);
  await plane.kubelet.stop();
  const stoppedAt = Date.now();
  step(
    drill,
    `kubelet stopped (Node gone) while ${runningAtStop.length} captf Pods ran (${runningAtStop.join(", ")}) and the manager's Pod ran`,
  );
  await sleep(outageMillis);
  const kubelet = await startChrootKubelet({
    kubeconfigPath: plane.kubeconfigPath,
    nodeName: "faults-kubelet-2",
    workDir: join(plane.workDir, "kubelet-2"),
    maxParallel: 2,
    log: () => undefined,
  });
  runner.onCleanup(() => kubelet.stop());
  const restartedAt = Date.now();
  step(drill, `a new node (faults-kubelet-2) up after ${seconds(restartedAt - stoppedAt)} s`);
  const ready = Boolean(await waitReady(`${readyMachines + added} machines after the node loss`, readyMachines + added, 900_000));
  const convergeMillis = Date.now() - restartedAt;
  await sleep(5000); // the manager's events are written asynchronously

  // Figures: what ran, what was interrupted, what was recorded.
  const jobs = await listCaptfJobs(plane.kubeConfig, demoNamespace);
  const succeeded = jobs.filter((job) => job.status?.succeeded === 1);
  const unsucceeded = jobs.filter((job) => !(job.status?.succeeded === 1));
  const mentions = async (reason) =>
    (await listEventsOfReason(plane.kubeConfig, demoNamespace, reason)).map((event) => event.message ?? "");
  const [succeededNotes, interruptedNotes, failedNotes] = await Promise.all([
    mentions("JobSucceeded"),
    mentions("JobInterrupted"),
    mentions("JobFailed"),
  ]);
  const named = (notes, job) => notes.some((note) => note.includes(job.metadata.name));
  const lost = succeeded.filter((job) => !named(succeededNotes, job)).map((job) => job.metadata.name);
  const notInterrupted = unsucceeded.filter((job) => !named(interruptedNotes, job)).map((job) => job.metadata.name);
  const reportedFailed = jobs.filter((job) => named(failedNotes, job)).map((job) => job.metadata.name);
  // Runs of given inputs (apply, plan, restore carry their hash); refreshes and drift checks recur by design.
  const runKey = (job) =>
    `${job.metadata.labels[labels.ownerKind]}/${job.metadata.labels[labels.ownerName]} ${job.metadata.labels[labels.op]} ` +
    `${job.metadata.annotations[annotations.inputsHash]}`;
  const perRun = new Map();
  for (const job of succeeded.filter((candidate) => candidate.metadata.annotations?.[annotations.inputsHash]))
    perRun.set(runKey(job), (perRun.get(runKey(job)) ?? 0) + 1);
  const twice = [...perRun].filter(([, count]) => count > 1).map(([key]) => key);
  const perObject = new Map();
  for (const job of jobs) {
    const key = `${job.metadata.labels[labels.ownerKind]}/${job.metadata.labels[labels.ownerName]}`;
    perObject.set(key, [
      ...(perObject.get(key) ?? []),
      `${job.metadata.labels[labels.op]}${job.status?.succeeded === 1 ? "" : "(not succeeded)"}`,
    ]);
  }
  const managerPods = (await core.listNamespacedPod({ namespace: managerNamespace })).items.map(
    (pod) => `${pod.metadata.name} ${pod.spec?.nodeName ?? "-"} ${pod.status?.phase}`,
  );

  console.log(
    `\nfaults-kubelet: the node lost for ${seconds(restartedAt - stoppedAt)} s while ${runningAtStop.length} captf Pods and the ` +
      `manager ran`,
  );
  console.log(`  every object Ready again: ${ready ? "yes" : "NO"}, ${seconds(convergeMillis)} s after the new node came up`);
  console.log(`  Jobs: ${jobs.length} (${succeeded.length} succeeded, ${unsucceeded.length} not) for ${perObject.size} objects:`);
  for (const [object, ops] of [...perObject].sort()) console.log(`    ${object}: ${ops.join(", ")}`);
  console.log(
    `  Jobs that did not succeed, reported JobInterrupted: ${unsucceeded.length - notInterrupted.length} of ` +
      `${unsucceeded.length}${notInterrupted.length ? ` (not: ${notInterrupted.join(", ")})` : ""}`,
  );
  console.log(`  Jobs reported JobFailed: ${reportedFailed.length}${reportedFailed.length ? ` (${reportedFailed.join(", ")})` : ""}`);
  console.log(`  results lost (a succeeded Job never recorded): ${lost.length}${lost.length ? ` (${lost.join(", ")})` : ""}`);
  console.log(
    `  runs done twice (two succeeded Jobs of one object, operation and inputs hash: applies, plans, restores): ` +
      `${twice.length}${twice.length ? ` (${twice.join("; ")})` : ""}`,
  );
  console.log(`  manager Pods: ${managerPods.join("; ")}`);
  return ready && lost.length === 0 && notInterrupted.length === 0 && reportedFailed.length === 0 && twice.length === 0;
});
