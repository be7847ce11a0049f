import { rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import { stateSecretSuffix } from "@captf/render";
import { describeWithTools, waitFor } from "@captf/testkit";
import { clusterAdapter } from "../kinds/adapters.js";
import { backupSecretName } from "../state/state-backups.js";
import { durableInputsSecretName } from "./durable-inputs.js";
import { startJobExecutor, type JobExecutor } from "./job-executor.test-support.js";
import {
  allJobsFinished,
  createTerraformCluster,
  extendedClusterModule,
  mergePatchOptions,
  managerEventsOnce,
  preparePlane,
  skewablePasses,
  type PlaneClients,
} from "./plane.test-support.js";
import type { TerraformCluster } from "../api/terraformcluster.js";
import type { ReadBack } from "./read-back.test-support.js";

type Json = Record<string, unknown>;
type Cluster = ReadBack<TerraformCluster>;

const image = "registry.invalid/captf/paths-cluster:v1";
// Another reference to the same module: a change of spec.source.image alone.
const otherImage = "registry.invalid/captf/paths-cluster-mirror:v2";
const infra = { group: "infrastructure.cluster.x-k8s.io", version: "v1alpha1" };
const opLabel = "captf.infrastructure.cluster.x-k8s.io/op";

// The paths a TerraformCluster's apply takes past the first one, on the real API server with real
// Jobs, the real runner and OpenTofu: the destructive-plan guard and its approval, an approved plan
// that plans differently (PlanChanged), inputs over the size limit, the drift remediation cap, the
// retry of a failed apply whose inputs the state already has, an image change that drops the pinned
// digest, and the state backup each new serial gets.
describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager", "tofu", "go"], "a cluster's apply paths", () => {
  const namespace = `applypaths-${Date.now().toString(36)}`;
  let plane: PlaneClients;
  let passes: ReturnType<typeof skewablePasses>;
  let executor: JobExecutor;
  let moduleDir = "";

  beforeAll(async () => {
    plane = await preparePlane(namespace);
    // Tests move time forward by skewing the pass clock.
    passes = skewablePasses(plane, namespace, "apply-paths-test");
    // The no-op cluster module with a resource `generation` replaces, one `size` updates, one a marker file updates (a plan that
    // differs from the approved one, or drift), and a check that fails the plan while `fail` is "yes", or the apply while the marker
    // and a fail marker are both there (a remediation apply that fails).
    moduleDir = extendedClusterModule("captf-apply-paths-module-", {
      "paths.tf": [
        'variable "generation" {\n  type    = string\n  default = "1"\n}\n\n',
        'variable "size" {\n  type    = string\n  default = "1"\n}\n\n',
        'variable "fail" {\n  type    = string\n  default = "no"\n}\n\n',
        'variable "note" {\n  type    = string\n  default = ""\n}\n\n',
        'resource "terraform_data" "replaced" {\n  triggers_replace = var.generation\n}\n\n',
        'resource "terraform_data" "sized" {\n  input = var.size\n}\n\n',
        'resource "terraform_data" "marked" {\n  input = fileexists("${path.module}/../marker-${var.captf_object.name}")\n}\n\n',
        'resource "terraform_data" "check" {\n  input = terraform_data.marked.output\n  lifecycle {\n',
        '    precondition {\n      condition     = var.fail != "yes"\n      error_message = "the test asked this plan to fail"\n    }\n',
        '    precondition {\n      condition     = !fileexists("${path.module}/../fail-${var.captf_object.name}") || ',
        '!terraform_data.marked.output\n      error_message = "the test asked this apply to fail"\n    }\n  }\n}\n',
      ].join(""),
    });
    executor = startJobExecutor({
      kubeconfigPath: plane.kubeconfigPath,
      namespace,
      modules: { [image]: moduleDir, [otherImage]: moduleDir },
    });
  }, 120_000);
  afterAll(() => {
    executor?.close();
    if (moduleDir) rmSync(moduleDir, { recursive: true, force: true });
  });

  /** A marker file the module reads for the cluster of this name. */
  const marker = (kind: "marker" | "fail", name: string) => join(dirname(moduleDir), `${kind}-${name}`);
  const getCluster = (name: string) =>
    plane.custom.getNamespacedCustomObject({ ...infra, namespace, plural: "terraformclusters", name }) as Promise<Cluster>;
  const condition = (object: Cluster, type: string) => (object.status?.conditions ?? []).find((c) => c.type === type);
  const jobsOf = async (name: string) =>
    (await plane.batch.listNamespacedJob({ namespace, labelSelector: `captf.infrastructure.cluster.x-k8s.io/owner-name=${name}` })).items;
  const newestJob = async (name: string, op: string) =>
    (await jobsOf(name))
      .filter((job) => job.metadata?.labels?.[opLabel] === op)
      .sort(
        (a, b) =>
          Number(b.metadata?.labels?.["captf.infrastructure.cluster.x-k8s.io/attempt"]) -
          Number(a.metadata?.labels?.["captf.infrastructure.cluster.x-k8s.io/attempt"]),
      )[0]!;
  const pass = (name: string, ahead = 0) => passes.pass(clusterAdapter, name, ahead);
  const runJobs = () => allJobsFinished(plane.batch, namespace, executor);
  const patchCluster = (name: string, body: Json) =>
    plane.custom.patchNamespacedCustomObject({ ...infra, namespace, plural: "terraformclusters", name, body }, mergePatchOptions());
  /** The manager's events about one cluster, once `reason` is among them (events are recorded in the background). */
  const eventsOnce = (name: string, reason: string) =>
    managerEventsOnce(
      passes.eventsApi,
      namespace,
      name,
      (events) => events.some((event) => event.reason === reason),
      `a ${reason} event about ${name}`,
    );

  /** A provisioned cluster of the module: created, applied once, its first state read. */
  async function provisioned(name: string, spec: Json = {}): Promise<Cluster> {
    await createTerraformCluster(plane, namespace, name, { source: { image }, ...spec });
    expect((await pass(name)).action).toBe("added finalizer");
    expect((await pass(name)).action).toMatch(/^started apply \(NoState\)/);
    await runJobs();
    expect((await pass(name)).action).toBe("UpToDate");
    const cluster = await getCluster(name);
    expect(cluster.status.initialization).toEqual({ provisioned: true });
    return cluster;
  }

  it("backs up the state serial its first apply wrote, with a StateBackedUp event naming it", async () => {
    const cluster = await provisioned("backed");
    const serial = cluster.status.observedStateSerial!;
    expect(serial).toBeGreaterThanOrEqual(1);
    const suffix = stateSecretSuffix({ role: "cluster", namespace, name: "backed" });
    const backup = await plane.core.readNamespacedSecret({ namespace, name: backupSecretName(suffix, serial, 0) });
    expect(backup.data).toBeDefined();
    const backed = await eventsOnce("backed", "StateBackedUp");
    expect(backed.filter((event) => event.reason === "StateBackedUp").map((event) => event.note)).toEqual([
      expect.stringMatching(new RegExp(`^state serial ${serial} backed up \\(\\d+ bytes\\)$`)),
    ]);
    // The same serial is not backed up again.
    expect((await pass("backed")).action).toBe("UpToDate");
    expect((await eventsOnce("backed", "StateBackedUp")).filter((event) => event.reason === "StateBackedUp")).toHaveLength(1);
  }, 120_000);

  it("stops an apply that replaces a resource before it does (DestructivePlanBlocked), and applies it once its inputs hash is " +
    "approved, consuming the approval", async () => {
    await provisioned("guarded");
    await patchCluster("guarded", { spec: { variables: { generation: "2" } } });
    expect((await pass("guarded")).action).toMatch(/^started apply \(InputsChanged\)/);
    const guardedApply = await newestJob("guarded", "apply");
    expect(guardedApply.spec!.template.spec!.containers[0]!.args).toContain("--guard-deletes");
    await runJobs();
    expect((await pass("guarded")).action).toBe("DestructivePlanBlocked");
    let cluster = await getCluster("guarded");
    const blocked = condition(cluster, "ApplyJobSucceeded")!;
    expect(blocked).toMatchObject({ status: "False", reason: "DestructivePlanBlocked" });
    const approval = /captf\.io\/approve-destructive-plan=(h2:[0-9a-f]+)/.exec(blocked.message ?? "")?.[1];
    expect(approval).toBeDefined();
    const blockedEvents = await eventsOnce("guarded", "DestructivePlanBlocked");
    expect(blockedEvents.filter((event) => event.reason === "DestructivePlanBlocked").map((event) => event.note)).toEqual([
      expect.stringContaining(`Job ${guardedApply.metadata!.name} stopped before destroying or replacing resources`),
    ]);
    // Nothing was replaced, and the blocked apply is not retried while unapproved, however long it waits.
    expect((await pass("guarded", 11 * 60_000)).action).toBe("DestructivePlanBlocked");
    expect((await jobsOf("guarded")).filter((job) => job.metadata?.labels?.[opLabel] === "apply")).toHaveLength(2);

    await patchCluster("guarded", { metadata: { annotations: { "captf.io/approve-destructive-plan": approval } } });
    expect((await pass("guarded")).action).toMatch(/^started apply \(InputsChanged\)/);
    const approvedApply = await newestJob("guarded", "apply");
    expect(approvedApply.spec!.template.spec!.containers[0]!.args).toContain(`--allow-deletes-hash=${approval}`);
    await runJobs();
    expect((await pass("guarded")).action).toBe("UpToDate");
    cluster = await getCluster("guarded");
    expect(condition(cluster, "ApplyJobSucceeded")).toMatchObject({ status: "True", reason: "ApplySucceeded" });
    expect(condition(cluster, "InputsApplied")).toMatchObject({ status: "True", reason: "InputsApplied" });
    expect(cluster.metadata.annotations?.["captf.io/approve-destructive-plan"]).toBeUndefined();
    expect((await eventsOnce("guarded", "DestructivePlanApprovalConsumed")).map((event) => event.reason)).toContain(
      "DestructivePlanApprovalConsumed",
    );
  }, 180_000);

  it("shows the new plan of an approved apply that planned differently (PlanChanged, with its event) and waits for its " +
    "approval", async () => {
    await provisioned("changing", { applyPolicy: "Manual" });
    await patchCluster("changing", { spec: { variables: { size: "2" } } });
    expect((await pass("changing")).action).toMatch(/^started plan \(InputsChangedPlanNeeded\)/);
    await runJobs();
    expect((await pass("changing")).action).toBe("PlanAwaitingApproval");
    const approved = (await getCluster("changing")).status.plan!;
    expect(approved).toMatchObject({ add: 0, change: 1, destroy: 0 });
    // Between the plan and its apply, what the module reads changes: the apply plans one more change than was approved.
    writeFileSync(marker("marker", "changing"), "");
    try {
      await patchCluster("changing", { metadata: { annotations: { "captf.io/approve-plan": approved.planHash } } });
      expect((await pass("changing")).action).toMatch(/^started apply \(InputsChanged\)/);
      const apply = await newestJob("changing", "apply");
      expect(apply.spec!.template.spec!.containers[0]!.args).toContain(`--expect-plan=${approved.planHash}`);
      await runJobs();
      expect((await pass("changing")).action).toBe("PlanAwaitingApproval");
      const cluster = await getCluster("changing");
      const shown = cluster.status.plan!;
      expect(shown.planHash).not.toBe(approved.planHash);
      expect(shown).toMatchObject({ job: apply.metadata!.name, inputsHash: approved.inputsHash });
      expect(shown.change).toBeGreaterThan(approved.change!);
      expect(condition(cluster, "ApplyJobSucceeded")).toMatchObject({
        status: "Unknown",
        reason: "PlanAwaitingApproval",
        message: expect.stringContaining(shown.planHash),
      });
      const changing = await eventsOnce("changing", "PlanChanged");
      expect(changing.filter((event) => event.reason === "PlanChanged").map((event) => event.note)).toEqual([
        `the approved plan ${approved.planHash} no longer matches: the new plan ${shown.planHash} (${shown.add} to add, ` +
          `${shown.change} to change, ${shown.destroy} to destroy) waits for its own approval`,
      ]);
      // The old approval does not apply the new plan.
      expect((await pass("changing")).action).toBe("PlanAwaitingApproval");
      expect((await jobsOf("changing")).map((job) => job.metadata?.labels?.[opLabel]).sort()).toEqual(["apply", "apply", "plan"]);
    } finally {
      rmSync(marker("marker", "changing"), { force: true });
    }
  }, 180_000);

  it("starts no Job for inputs over 1,000,000 bytes: ApplyJobSucceeded=False/InputsTooLarge, with a Warning", async () => {
    await provisioned("oversized");
    await patchCluster("oversized", { spec: { variables: { note: "x".repeat(1_000_000) } } });
    // Its inputs cannot be hashed, so no apply is due; the condition says why (not the last apply's success).
    expect((await pass("oversized")).action).not.toMatch(/^started/);
    const cluster = await getCluster("oversized");
    expect(condition(cluster, "ApplyJobSucceeded")).toMatchObject({
      status: "False",
      reason: "InputsTooLarge",
      message: expect.stringMatching(/^the rendered inputs are \d+ bytes .*; at most 1000000 are allowed/),
    });
    expect((await jobsOf("oversized")).map((job) => job.metadata?.labels?.[opLabel])).toEqual(["apply"]);
    const oversized = await eventsOnce("oversized", "ConditionChanged");
    expect(oversized.filter((event) => event.reason === "ConditionChanged")).toEqual([
      expect.objectContaining({ type: "Warning", note: "ApplyJobSucceeded is False (InputsTooLarge), was True (ApplySucceeded)" }),
    ]);
    // A new cluster with such inputs waits the same way, without a Job.
    await createTerraformCluster(plane, namespace, "oversized-new", { source: { image }, variables: { note: "y".repeat(1_000_000) } });
    expect((await pass("oversized-new")).action).toBe("added finalizer");
    expect((await pass("oversized-new")).action).toBe("waiting: InputsTooLarge");
    expect(condition(await getCluster("oversized-new"), "ApplyJobSucceeded")).toMatchObject({ status: "False", reason: "InputsTooLarge" });
    expect(await jobsOf("oversized-new")).toEqual([]);
    // A smaller value applies again.
    await patchCluster("oversized", { spec: { variables: { note: "small" } } });
    expect((await pass("oversized")).action).toMatch(/^started apply \(InputsChanged\)/);
    await runJobs();
  }, 120_000);

  it("stops remediating drift once its remediation applies failed the failed-Job limit: DriftDetected stays " +
    "True/DriftPending", async () => {
    await provisioned("capped", { drift: { intervalSeconds: 60, action: "Remediate" }, jobs: { failedJobsHistoryLimit: 1 } });
    writeFileSync(marker("marker", "capped"), "");
    writeFileSync(marker("fail", "capped"), "");
    try {
      expect((await pass("capped", 70_000)).action).toMatch(/^started drift \(DriftDue\)/);
      await runJobs();
      expect((await pass("capped")).action).toMatch(/^started apply \(DriftRemediation\)/);
      expect(condition(await getCluster("capped"), "DriftDetected")).toMatchObject({ status: "True", reason: "DriftRemediating" });
      await runJobs();
      // The one remediation allowed failed: no other starts, now or later, until the next drift check.
      const after = await pass("capped");
      expect(after.action).toBe("UpToDate");
      let cluster = await getCluster("capped");
      expect(condition(cluster, "ApplyJobSucceeded")).toMatchObject({ status: "False", reason: "ApplyFailed" });
      expect(condition(cluster, "DriftDetected")).toMatchObject({ status: "True", reason: "DriftPending" });
      expect((await pass("capped", 30_000)).action).toBe("UpToDate");
      cluster = await getCluster("capped");
      expect(condition(cluster, "DriftDetected")).toMatchObject({ status: "True", reason: "DriftPending" });
      const ops = (await jobsOf("capped")).map((job) => job.metadata?.labels?.[opLabel]).sort();
      expect(ops).toEqual(["apply", "apply", "drift"]);
    } finally {
      rmSync(marker("marker", "capped"), { force: true });
      rmSync(marker("fail", "capped"), { force: true });
    }
  }, 180_000);

  it("retries a failed apply once its backoff passed when the inputs are back to those the state holds (LastApplyFailed)", async () => {
    await provisioned("retried", { variables: { fail: "no" } });
    await patchCluster("retried", { spec: { variables: { fail: "yes" } } });
    expect((await pass("retried")).action).toMatch(/^started apply \(InputsChanged\)/);
    await runJobs();
    expect((await pass("retried")).action).toBe("InputsChangedBackoff");
    // Back to the inputs the state was applied with: the failed apply may have changed something, so they are applied again.
    await patchCluster("retried", { spec: { variables: { fail: "no" } } });
    const backoff = await pass("retried");
    expect(backoff.action).toBe("LastApplyFailedBackoff");
    expect(backoff.requeueAfterMs).toBeLessThanOrEqual(60_000);
    expect((await pass("retried", 61_000)).action).toMatch(/^started apply \(LastApplyFailed\)/);
    await runJobs();
    expect((await pass("retried")).action).toBe("UpToDate");
    const cluster = await getCluster("retried");
    expect(condition(cluster, "ApplyJobSucceeded")).toMatchObject({ status: "True", reason: "ApplySucceeded" });
    expect(condition(cluster, "InputsApplied")).toMatchObject({ status: "True", reason: "InputsApplied" });
    expect((await jobsOf("retried")).filter((job) => job.metadata?.labels?.[opLabel] === "apply")).toHaveLength(3);
  }, 180_000);

  it("drops the pinned digest when spec.source.image changes, and pins the new image's after its apply succeeds", async () => {
    await provisioned("repinned");
    const durableName = durableInputsSecretName("cluster", "repinned");
    const durable = () => plane.core.readNamespacedSecret({ namespace, name: durableName });
    expect((await durable()).metadata!.annotations).toMatchObject({
      "captf.io/image": image,
      "captf.io/image-digest": `${image.replace(/:v1$/, "")}@sha256:${"0".repeat(64)}`,
    });
    await patchCluster("repinned", { spec: { source: { image: otherImage } } });
    expect((await pass("repinned")).action).toMatch(/^started apply \(InputsChanged\)/);
    // While the new image's apply runs, no digest is pinned: a destroy now would run the new reference, not the old digest.
    const running = (await durable()).metadata!.annotations!;
    expect(running["captf.io/image"]).toBe(otherImage);
    expect(running["captf.io/image-digest"]).toBeUndefined();
    await runJobs();
    expect((await pass("repinned")).action).toBe("UpToDate");
    const pinned = `${otherImage.replace(/:v2$/, "")}@sha256:${"0".repeat(64)}`;
    expect((await durable()).metadata!.annotations).toMatchObject({ "captf.io/image": otherImage, "captf.io/image-digest": pinned });
    const pins = await waitFor(async () => {
      const events = (await eventsOnce("repinned", "DigestPinned")).filter((event) => event.reason === "DigestPinned");
      return events.length === 2 ? events.map((event) => event.note) : undefined;
    });
    expect(pins).toEqual(expect.arrayContaining([expect.stringMatching(new RegExp(`^pinned ${otherImage} to ${pinned} after Job `))]));
  }, 180_000);
});
