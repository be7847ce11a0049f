#!/usr/bin/env node
// The hostile-module drill: on the e2e plane (Cluster API's core manager, captf installed from its
// manifests, real Jobs on the chroot kubelet), a cluster with a victim machine (the no-op module) and
// a hostile machine (packages/module-hostile) whose module code attacks at every step of its apply
// and destroy: credentials in files, /proc and the environment; the API server directly and through
// the state broker; the victim's state, lock, run Secret, the cluster's kubeconfig and CA, the
// credential mirror, Pods, Jobs, events; and the runner's result. Once with the OpenTofu image, once
// with the Terraform 1.5.7 image. It prints attempts and successes per kind (via × target) per
// runtime, checks nothing of the victim changed and what the manager recorded for the hostile object,
// and exits 1 when any attempt at a Kubernetes credential or at anything of another object succeeded
// (or the drill could not prove it: no report of a phase, a dead broker channel).
//
//   npx tsc -b && node bench/drills/hostile-module.mjs [--runtimes tofu,terraform]
//
// Needs root (the chroot kubelet) and the tools of the e2e (tools/install.sh: etcd, kube, tofu,
// terraform, capi; umoci, skopeo, docker-registry). CAPTF_DRILL_KEEP=1 keeps the plane's work
// directory (the kubelet's container logs) and prints where it is.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { loadDependency, loadTestkit } from "../lib/controller-packages.mjs";
import { applyObjects } from "../../e2e/dist/apply.js";
import { demoClusterName, demoNamespace, demoObjects, demoVariables } from "../../e2e/dist/demo-objects.js";
import { startManagementPlane } from "../../e2e/dist/management-plane.js";
import { readProgress } from "../../e2e/dist/progress.js";
import {
  brokerRefusalsPerJob,
  buildAndPushHostileImage,
  describeAttempts,
  hostileLeftovers,
  isBoundaryAttempt,
  readHostileRecord,
  snapshotChanges,
  snapshotVictim,
  startReportServer,
  tally,
  victimTargets,
} from "../../e2e/dist/hostile-module.js";

const drill = "hostile-module";
const { values } = parseArgs({ options: { runtimes: { type: "string", default: "tofu,terraform" } } });
const runtimes = values.runtimes.split(",");
const { requireTool } = await loadTestkit();
const k8s = await loadDependency("@kubernetes/client-node");
for (const runtime of runtimes) requireTool(runtime);

const started = Date.now();
const step = (text) => process.stderr.write(`${drill} [${((Date.now() - started) / 1000).toFixed(1).padStart(6)} s]: ${text}\n`);
const sleep = (millis) => new Promise((resolve) => setTimeout(resolve, millis));
const infra = { group: "infrastructure.cluster.x-k8s.io", version: "v1alpha1", namespace: demoNamespace };
const capi = { group: "cluster.x-k8s.io", version: "v1beta2", namespace: demoNamespace };
const displayName = { tofu: "OpenTofu", terraform: "Terraform 1.5.7" };

async function until(what, timeoutMillis, probe) {
  const deadline = Date.now() + timeoutMillis;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMillis / 1000} s`);
    await sleep(1000);
  }
}

/** The demo's identity and cluster, and its MachineDeployment at one machine: the victim. */
function victimObjects(plane) {
  return demoObjects(
    demoVariables(plane.images, { credential: "drill-credential", variable: "drill-variable", bootstrap: "drill-bootstrap" }),
  )
    .filter((object) => !["MachinePool", "TerraformMachinePool"].includes(object.kind))
    .map((object) => (object.kind === "MachineDeployment" ? { ...object, spec: { ...object.spec, replicas: 1 } } : object));
}

/** A TerraformMachineTemplate of the hostile image and a MachineDeployment of one machine over it. */
function hostileObjects(name, image, variables) {
  const selector = { matchLabels: { "cluster.x-k8s.io/deployment-name": name } };
  return [
    {
      apiVersion: `${infra.group}/${infra.version}`,
      kind: "TerraformMachineTemplate",
      metadata: { name, namespace: demoNamespace },
      spec: { template: { spec: { source: { image }, variables } } },
    },
    {
      apiVersion: `${capi.group}/${capi.version}`,
      kind: "MachineDeployment",
      metadata: { name, namespace: demoNamespace },
      spec: {
        clusterName: demoClusterName,
        replicas: 1,
        selector,
        template: {
          metadata: { labels: selector.matchLabels },
          spec: {
            clusterName: demoClusterName,
            version: "v1.36.3",
            bootstrap: { dataSecretName: "demo-bootstrap" },
            infrastructureRef: { apiGroup: infra.group, kind: "TerraformMachineTemplate", name },
          },
        },
      },
    },
  ];
}

/** One runtime's hostile machine, from apply to destroy: the reports, the record, the checks. */
async function attackWith(plane, runtime, image, targets) {
  const custom = plane.kubeConfig.makeApiClient(k8s.CustomObjectsApi);
  const name = `demo-md-hostile-${runtime}`;
  const reports = await startReportServer();
  try {
    const before = await snapshotVictim(plane.kubeConfig, targets);
    step(`${runtime}: the hostile machine on ${image}`);
    await applyObjects(plane.applier, hostileObjects(name, image, { hostile_targets: JSON.stringify(targets), report_url: reports.url }));
    const machines = async () =>
      ((await custom.listNamespacedCustomObject({ ...infra, plural: "terraformmachines" })).items ?? []).filter((machine) =>
        machine.metadata.name.startsWith(`${name}-`),
      );
    const hostile = (await until(`${name}'s TerraformMachine`, 120_000, async () => (await machines())[0])).metadata.name;
    await until(`${hostile} Ready, the cluster with it`, 600_000, async () => {
      const machine = (await machines())[0];
      const ready = (machine?.status?.conditions ?? []).some((condition) => condition.type === "Ready" && condition.status === "True");
      return ready && (await readProgress(plane.kubeConfig, demoNamespace, demoClusterName)).ready ? true : undefined;
    });
    const record = await readHostileRecord(plane.kubeConfig, demoNamespace, hostile);
    const refusalsAtApply = await brokerRefusalsPerJob(plane.kubeConfig, demoNamespace, hostile);
    step(
      `${runtime}: ${hostile} Ready (${record.jobs.map((job) => `${job.op}:${job.succeeded ? "ok" : "failed"}`).join(", ")}); ` +
        `deleting it for its destroy`,
    );

    await custom.deleteNamespacedCustomObject({ ...capi, plural: "machinedeployments", name });
    await until(`${hostile} destroyed and gone`, 600_000, async () => ((await machines()).length === 0 ? true : undefined));
    const refusals = await brokerRefusalsPerJob(plane.kubeConfig, demoNamespace, hostile);
    await custom.deleteNamespacedCustomObject({ ...infra, plural: "terraformmachinetemplates", name });
    // The destroy's last report may still be on its way when the object goes.
    await sleep(2000);
    const after = await snapshotVictim(plane.kubeConfig, targets);
    return {
      hostile,
      reports: [...reports.reports],
      record,
      refusalsAtApply,
      refusals,
      changes: snapshotChanges(before, after),
      leftovers: await hostileLeftovers(plane.kubeConfig, demoNamespace),
    };
  } finally {
    await reports.close();
  }
}

/** Prints one runtime's outcome and returns the problems that fail the drill. */
function judge(runtime, outcome) {
  const attempts = outcome.reports.flatMap((report) => report.attempts);
  const phases = [...new Set(outcome.reports.map((report) => report.phase))];
  console.log(`\n${displayName[runtime]}: ${outcome.hostile}, ${outcome.reports.length} reports, phases ${phases.join(", ")}`);
  console.log("| via | target | attempts | succeeded | refused | error |");
  console.log("| --- | --- | --- | --- | --- | --- |");
  for (const row of tally(attempts.filter((attempt) => !attempt.observed)))
    console.log(`| ${row.via} | ${row.target} | ${row.attempts} | ${row.succeeded} | ${row.refused} | ${row.errors} |`);
  const boundary = attempts.filter(isBoundaryAttempt);
  const breaches = boundary.filter((attempt) => attempt.outcome === "succeeded");
  const errors = boundary.filter((attempt) => attempt.outcome === "error");
  const controls = attempts.filter((attempt) => attempt.control);
  const forged = outcome.record.forgedRecorded || outcome.record.forgedTerminationMessages.length > 0;
  console.log(
    `boundary attempts: ${boundary.length}, succeeded ${breaches.length}, ` +
      `refused ${boundary.filter((attempt) => attempt.outcome === "refused").length}, error ${errors.length}`,
  );
  console.log(
    `controls (own state through the broker): ${controls.filter((attempt) => attempt.outcome === "succeeded").length} of ` +
      `${controls.length} succeeded`,
  );
  const unchanged = "unchanged (state Secret data and resourceVersion, lock, run Secret, credential mirror, kubeconfig and CA)";
  console.log(`victim: ${outcome.changes.length === 0 ? unchanged : outcome.changes.join("; ")}`);
  console.log(`created by the attacks: ${outcome.leftovers.length === 0 ? "nothing" : outcome.leftovers.join(", ")}`);
  console.log(`BrokerRefused events per Job: ${JSON.stringify(outcome.refusals)}`);
  console.log(
    `result forgery: ${forged ? "RECORDED" : "not recorded"} (status.lastRun ` +
      `${outcome.record.forgedRecorded ? "carries" : "does not carry"} the forged step; forged termination messages: ` +
      `${outcome.record.forgedTerminationMessages.join(", ") || "none"}; ` +
      `lastRun ${JSON.stringify(outcome.record.lastRun?.steps ?? null)})`,
  );
  for (const attempt of attempts.filter((candidate) => candidate.observed))
    console.log(`  ${attempt.phase}: ${attempt.attempt}: ${attempt.outcome === "refused" ? "refused" : "made"} (${attempt.detail})`);
  const problems = [];
  if (breaches.length) problems.push(`${breaches.length} attempts succeeded:\n${describeAttempts(breaches)}`);
  if (errors.length) problems.push(`${errors.length} attempts could not be made (not a refusal):\n${describeAttempts(errors)}`);
  if (controls.length === 0 || controls.some((attempt) => attempt.outcome !== "succeeded"))
    problems.push(`the broker channel was not proven live: ${describeAttempts(controls) || "no control attempt"}`);
  for (const phase of ["init", "apply", "provisioner-apply", "destroy", "provisioner-destroy"])
    if (!phases.includes(phase)) problems.push(`no report of phase ${phase}`);
  if (outcome.changes.length) problems.push(`the victim changed: ${outcome.changes.join("; ")}`);
  if (outcome.leftovers.length) problems.push(`the attacks created ${outcome.leftovers.join(", ")}`);
  return { problems, forged, breaches: breaches.length, boundary: boundary.length };
}

const work = mkdtempSync(join(tmpdir(), `captf-${drill}-`));
let plane;
let stopping;
const stop = () =>
  (stopping ??= (async () => {
    await plane?.stop().catch((error) => console.error(`${drill}: stopping the plane: ${error.message}`));
    if (process.env.CAPTF_DRILL_KEEP === "1") console.error(`${drill}: kept ${work}`);
    else rmSync(work, { recursive: true, force: true });
  })());
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) process.once(signal, () => void stop().finally(() => process.exit(130)));

let code = 1;
try {
  step("starting the e2e plane");
  plane = await startManagementPlane({ log: (line) => (/: done in /.test(line) ? step(line) : undefined) });
  const images = { tofu: plane.images.hostileMachine };
  for (const runtime of runtimes) images[runtime] ??= buildAndPushHostileImage(plane.images.registry, join(work, "oci"), runtime);
  step(`hostile images: ${JSON.stringify(images)}`);

  await applyObjects(plane.applier, victimObjects(plane));
  await until("the cluster and its victim machine Ready", 600_000, async () =>
    (await readProgress(plane.kubeConfig, demoNamespace, demoClusterName)).ready ? true : undefined,
  );
  const custom = plane.kubeConfig.makeApiClient(k8s.CustomObjectsApi);
  const victim = (await custom.listNamespacedCustomObject({ ...infra, plural: "terraformmachines" })).items.find((machine) =>
    machine.metadata.name.startsWith("demo-md-0-"),
  ).metadata.name;
  const targets = await victimTargets(plane.kubeConfig, demoNamespace, demoClusterName, victim);
  step(`victim ${victim}: ${JSON.stringify(targets)}`);

  const verdicts = {};
  for (const runtime of runtimes) verdicts[runtime] = judge(runtime, await attackWith(plane, runtime, images[runtime], targets));

  console.log("\n| runtime | boundary attempts | succeeded | result forgery |");
  console.log("| --- | --- | --- | --- |");
  for (const runtime of runtimes)
    console.log(
      `| ${displayName[runtime]} | ${verdicts[runtime].boundary} | ${verdicts[runtime].breaches} | ` +
        `${verdicts[runtime].forged ? "recorded" : "not recorded"} |`,
    );
  const problems = runtimes.flatMap((runtime) => verdicts[runtime].problems.map((problem) => `${displayName[runtime]}: ${problem}`));
  for (const problem of problems) console.log(`FAIL ${problem}`);
  code = problems.length === 0 ? 0 : 1;
  console.log(`${drill}: ${code === 0 ? "held" : "FAILED"} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
} catch (error) {
  console.error(`${drill}: ${error.stack ?? error}`);
} finally {
  await stop();
}
process.exit(code);
