import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { noopModuleDirectory } from "@captf/module-noop";
import { emptyPlanHash } from "@captf/contract/run-result";
import { describeWithTools, waitFor } from "@captf/testkit";
import { Registry } from "prom-client";
import { clusterAdapter } from "../kinds/adapters.js";
import { CaptfMetrics } from "../metrics/captf-metrics.js";
import { seriesValue } from "../metrics/series.test-support.js";
import { startJobExecutor, type JobExecutor } from "./job-executor.test-support.js";
import {
  allJobsFinished,
  createTerraformCluster,
  extendedClusterModule,
  planeReconcilerDeps,
  preparePlane,
  type PlaneClients,
  mergePatchOptions,
} from "./plane.test-support.js";
import { reconcileWorkspace, type ReconcilerDeps } from "./workspace-reconciler.js";
import type { TerraformCluster } from "../api/terraformcluster.js";
import type { ReadBack } from "./read-back.test-support.js";

const image = "registry.invalid/captf/noop-cluster:v0.1.0";
const movingImage = "registry.invalid/captf/moving-cluster:v0.1.0";
const sizedImage = "registry.invalid/captf/sized-cluster:v0.1.0";
const infra = { group: "infrastructure.cluster.x-k8s.io", version: "v1alpha1" };
const capi = { group: "cluster.x-k8s.io", version: "v1beta2" };
type Json = Record<string, unknown>;
type Cluster = ReadBack<TerraformCluster>;
/** The fields of a runner's result this suite rewrites. */
type ReportedResult = { version: unknown; op: unknown; plan: { hash: string; add: number; change: number; destroy: number } };

// applyPolicy Manual on the real API server: the first apply runs at once; a later change is
// planned, shown in status.plan, waits for captf.io/approve-plan, and is applied only as approved.
describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager", "tofu", "go"], "plan preview and approval", () => {
  const namespace = `approval-${Date.now().toString(36)}`;
  let plane: PlaneClients;
  let deps: ReconcilerDeps;
  let executor: JobExecutor;
  let eventsApi: k8s.EventsV1Api;
  let movingModule = "";
  let sizedModule = "";
  /** How plan Jobs report their result while a test asks for it: as the runner wrote it, without the plan, or shrunk. */
  let planReports: "as-written" | "dropped" | "shrunk" = "as-written";
  // The manager's metrics, read by their exposed names.
  const registry = new Registry();

  beforeAll(async () => {
    plane = await preparePlane(namespace);
    ({ deps, eventsApi } = planeReconcilerDeps(plane, "approval-test"));
    deps = { ...deps, metrics: new CaptfMetrics(registry) };
    // The no-op cluster module with one more resource, renamed by a moved block during the test.
    movingModule = extendedClusterModule("captf-moving-module-", {
      "user-variables.tf": 'variable "note" {\n  type    = string\n  default = ""\n}\n',
      "marker.tf": 'resource "terraform_data" "marker" {\n  input = "m"\n}\n',
    });
    // The no-op cluster module with a resource its `size` variable changes.
    sizedModule = extendedClusterModule("captf-sized-module-", {
      "sized.tf":
        'variable "size" {\n  type    = string\n  default = "1"\n}\n\nresource "terraform_data" "sized" {\n  input = var.size\n}\n',
    });
    executor = startJobExecutor({
      kubeconfigPath: plane.kubeconfigPath,
      namespace,
      modules: { [image]: noopModuleDirectory("cluster"), [movingImage]: movingModule, [sizedImage]: sizedModule },
      // While a test asks for it, a plan Job reports its runner's result without the plan (as a runner that lost it would).
      // Or the shrunk form a runner falls back to when its result does not fit: no steps, the plan without its entries.
      rewriteResult: (pod, message) => {
        if (pod.metadata?.labels?.["captf.infrastructure.cluster.x-k8s.io/op"] !== "plan") return message;
        const { plan, ...result } = JSON.parse(message) as ReportedResult;
        if (planReports === "dropped") return JSON.stringify(result);
        if (planReports === "shrunk")
          return JSON.stringify({
            version: result.version,
            op: result.op,
            error: null,
            plan: { hash: plan.hash, add: plan.add, change: plan.change, destroy: plan.destroy },
          });
        return message;
      },
    });
    await createManualCluster("manual", { source: { image } });
  }, 120_000);
  afterAll(() => {
    executor?.close();
    if (movingModule) rmSync(movingModule, { recursive: true, force: true });
    if (sizedModule) rmSync(sizedModule, { recursive: true, force: true });
  });

  /** A Cluster and its TerraformCluster under applyPolicy Manual. */
  const createManualCluster = (name: string, spec: Json) =>
    createTerraformCluster(plane, namespace, name, { applyPolicy: "Manual", ...spec });

  const get = () =>
    plane.custom.getNamespacedCustomObject({ ...infra, namespace, plural: "terraformclusters", name: "manual" }) as Promise<Cluster>;
  const condition = (object: Cluster, type: string) => (object.status?.conditions ?? []).find((c) => c.type === type);
  const ops = async () =>
    (await plane.batch.listNamespacedJob({ namespace })).items
      .map((job) => job.metadata?.labels?.["captf.infrastructure.cluster.x-k8s.io/op"])
      .sort();
  async function pass(): Promise<string> {
    return (await reconcileWorkspace(deps, clusterAdapter, namespace, "manual")).action;
  }
  async function runJobs(): Promise<void> {
    await allJobsFinished(plane.batch, namespace, executor);
  }

  it("applies the first time without a plan", async () => {
    expect(await pass()).toBe("added finalizer");
    expect(await pass()).toMatch(/^started apply \(NoState\)/);
    await runJobs();
    await pass();
    expect((await get()).status.initialization).toEqual({ provisioned: true });
    expect(await ops()).toEqual(["apply"]);
  }, 120_000);

  it("plans a later change, shows the plan and waits for its approval", async () => {
    await plane.custom.patchNamespacedCustomObjectStatus(
      { ...capi, namespace, plural: "clusters", name: "manual", body: { status: { initialization: { controlPlaneInitialized: true } } } },
      mergePatchOptions(),
    );
    expect(await pass()).toMatch(/^started plan \(InputsChangedPlanNeeded\)/);
    const planCreated = { kind: "TerraformCluster", result: "created" };
    const createdBefore = await seriesValue(registry, "captf_plan_approvals_total", planCreated);
    await runJobs();
    expect(await pass()).toBe("PlanAwaitingApproval");
    // Counted when the plan Job is recorded, once.
    expect(await seriesValue(registry, "captf_plan_approvals_total", planCreated)).toBe(createdBefore + 1);
    const cluster = await get();
    expect(cluster.status.plan).toMatchObject({
      planHash: expect.stringMatching(/^p1:[0-9a-f]{64}$/),
      change: 1,
      add: 0,
      destroy: 0,
      resources: ["module.role.terraform_data.load_balancer (update)"],
    });
    expect(condition(cluster, "ApplyJobSucceeded")).toMatchObject({ status: "Unknown", reason: "PlanAwaitingApproval" });
    expect(condition(cluster, "ApplyJobSucceeded")!.message).toContain(cluster.status.plan!.planHash);
    expect(condition(cluster, "InputsApplied")).toMatchObject({
      status: "False",
      reason: "AwaitingApproval",
      message: "applying the current inputs waits for approval (PlanAwaitingApproval)",
    });
    expect(await pass()).toBe("PlanAwaitingApproval");
    expect(await seriesValue(registry, "captf_plan_approvals_total", planCreated)).toBe(createdBefore + 1);
    expect(await ops()).toEqual(["apply", "plan"]);
  }, 120_000);

  it("ignores an approval of another hash, applies exactly the approved plan, then clears the plan and the approval", async () => {
    const approved = { kind: "TerraformCluster", result: "approved" };
    const applied = { kind: "TerraformCluster", result: "applied" };
    const approvedBefore = await seriesValue(registry, "captf_plan_approvals_total", approved);
    const appliedBefore = await seriesValue(registry, "captf_plan_approvals_total", applied);
    await plane.custom.patchNamespacedCustomObject(
      {
        ...infra,
        namespace,
        plural: "terraformclusters",
        name: "manual",
        body: { metadata: { annotations: { "captf.io/approve-plan": "p1:not-this-one" } } },
      },
      mergePatchOptions(),
    );
    expect(await pass()).toBe("PlanAwaitingApproval");

    const { planHash } = (await get()).status.plan!;
    // As captf's mutating webhook records it from the approving request's user.
    await plane.custom.patchNamespacedCustomObject(
      {
        ...infra,
        namespace,
        plural: "terraformclusters",
        name: "manual",
        body: { metadata: { annotations: { "captf.io/approve-plan": planHash, "captf.io/plan-approved-by": "alice@example.com" } } },
      },
      mergePatchOptions(),
    );
    expect(await pass()).toMatch(/^started apply \(InputsChanged\)/);
    const apply = (await plane.batch.listNamespacedJob({ namespace })).items.find(
      (job) =>
        job.metadata?.labels?.["captf.infrastructure.cluster.x-k8s.io/op"] === "apply" &&
        job.metadata?.labels?.["captf.infrastructure.cluster.x-k8s.io/attempt"] === "2",
    )!;
    expect(apply.spec?.template.spec?.containers[0]?.args).toContain(`--expect-plan=${planHash}`);
    expect(apply.metadata?.annotations?.["captf.io/approved-plan"]).toBe(planHash);
    expect(apply.metadata?.annotations?.["captf.io/plan-approved-by"]).toBe("alice@example.com");
    await runJobs();
    expect(await pass()).toBe("UpToDate");
    const cluster = await get();
    expect(cluster.status.plan).toBeUndefined();
    expect(condition(cluster, "InputsApplied")).toMatchObject({ status: "True", reason: "InputsApplied" });
    expect(cluster.metadata.annotations?.["captf.io/approve-plan"]).toBeUndefined();
    expect(cluster.metadata.annotations?.["captf.io/plan-approved-by"]).toBeUndefined();
    // The approver stays on record once the approval is consumed.
    expect(cluster.status.lastRun).toMatchObject({ job: apply.metadata!.name, operation: "apply", approvedBy: "alice@example.com" });
    expect(condition(cluster, "ApplyJobSucceeded")).toMatchObject({ status: "True", reason: "ApplySucceeded" });
    const events = (await eventsApi.listNamespacedEvent({ namespace })).items.filter((event) => event.regarding?.name === "manual");
    expect(events.map((event) => event.reason)).toEqual(expect.arrayContaining(["PlanReady", "PlanApproved", "PlanApplied"]));
    expect(events.find((event) => event.reason === "PlanApproved")?.note).toBe(
      `plan ${planHash} (approved by alice@example.com): applying it`,
    );
    expect(events.find((event) => event.reason === "PlanApplied")?.note).toBe(
      `applied the approved plan ${planHash} (approved by alice@example.com)`,
    );
    // The approval taken once, its plan applied once; the approval of another hash counted as neither.
    expect(await seriesValue(registry, "captf_plan_approvals_total", approved)).toBe(approvedBefore + 1);
    expect(await seriesValue(registry, "captf_plan_approvals_total", applied)).toBe(appliedBefore + 1);
  }, 120_000);

  it("holds a plan that only moves a resource for approval like any change, shows the move and applies it once approved", async () => {
    await createManualCluster("moving", { source: { image: movingImage }, variables: { note: "a" } });
    const movingPass = async () => (await reconcileWorkspace(deps, clusterAdapter, namespace, "moving")).action;
    const getMoving = () =>
      plane.custom.getNamespacedCustomObject({ ...infra, namespace, plural: "terraformclusters", name: "moving" }) as Promise<Cluster>;
    expect(await movingPass()).toBe("added finalizer");
    expect(await movingPass()).toMatch(/^started apply \(NoState\)/);
    await runJobs();
    await movingPass();
    expect((await getMoving()).status.initialization).toEqual({ provisioned: true });

    // The next version of the module renames the marker; an unused variable's new value makes the apply due.
    writeFileSync(
      join(movingModule, "marker.tf"),
      'resource "terraform_data" "marker_renamed" {\n  input = "m"\n}\n\nmoved {\n  from = terraform_data.marker\n  to   = ' +
        "terraform_data.marker_renamed\n}\n",
    );
    await plane.custom.patchNamespacedCustomObject(
      { ...infra, namespace, plural: "terraformclusters", name: "moving", body: { spec: { variables: { note: "b" } } } },
      mergePatchOptions(),
    );
    expect(await movingPass()).toMatch(/^started plan \(InputsChangedPlanNeeded\)/);
    await runJobs();
    expect(await movingPass()).toBe("PlanAwaitingApproval");
    const waiting = await getMoving();
    expect(waiting.status.plan).toMatchObject({
      add: 0,
      change: 0,
      destroy: 0,
      move: 1,
      resources: ["module.role.terraform_data.marker_renamed (move)"],
    });
    expect(waiting.status.plan!.planHash).not.toBe(emptyPlanHash);
    expect(waiting.status.plan!.import).toBeUndefined();
    expect(condition(waiting, "ApplyJobSucceeded")).toMatchObject({ status: "Unknown", reason: "PlanAwaitingApproval" });
    expect(condition(waiting, "ApplyJobSucceeded")!.message).toContain("0 to add, 0 to change, 0 to destroy, 1 to move");
    const ready = (await eventsApi.listNamespacedEvent({ namespace })).items.find(
      (event) => event.reason === "PlanReady" && event.regarding?.name === "moving",
    );
    expect(ready?.note).toContain("1 to move");
    expect(await movingPass()).toBe("PlanAwaitingApproval");

    await plane.custom.patchNamespacedCustomObject(
      {
        ...infra,
        namespace,
        plural: "terraformclusters",
        name: "moving",
        body: { metadata: { annotations: { "captf.io/approve-plan": waiting.status.plan!.planHash } } },
      },
      mergePatchOptions(),
    );
    expect(await movingPass()).toMatch(/^started apply \(InputsChanged\)/);
    await runJobs();
    expect(await movingPass()).toBe("UpToDate");
    const applied = await getMoving();
    expect(applied.status.plan).toBeUndefined();
    expect(condition(applied, "ApplyJobSucceeded")).toMatchObject({ status: "True", reason: "ApplySucceeded" });
    expect(applied.status.lastRun!.approvedBy).toBeUndefined();

    // A change the module does not use plans empty: applied at once with --expect-plan of the empty plan,
    // which the runner ends after the plan step, changing nothing; nobody approved it, nothing is announced as approved.
    const movingEvents = async (reason: string) =>
      (await eventsApi.listNamespacedEvent({ namespace })).items.filter(
        (event) => event.reason === reason && event.regarding?.name === "moving",
      ).length;
    const approvedBefore = await movingEvents("PlanApproved");
    const appliedBefore = await movingEvents("PlanApplied");
    await plane.custom.patchNamespacedCustomObject(
      { ...infra, namespace, plural: "terraformclusters", name: "moving", body: { spec: { variables: { note: "c" } } } },
      mergePatchOptions(),
    );
    expect(await movingPass()).toMatch(/^started plan \(InputsChangedPlanNeeded\)/);
    await runJobs();
    expect(await movingPass()).toMatch(/^started apply \(InputsChanged\)/);
    const emptyApply = (await plane.batch.listNamespacedJob({ namespace })).items
      .filter(
        (job) => job.metadata?.labels?.["captf.infrastructure.cluster.x-k8s.io/op"] === "apply" && job.metadata?.name?.includes("moving"),
      )
      .sort(
        (a, b) =>
          Number(b.metadata?.labels?.["captf.infrastructure.cluster.x-k8s.io/attempt"]) -
          Number(a.metadata?.labels?.["captf.infrastructure.cluster.x-k8s.io/attempt"]),
      )[0]!;
    expect(emptyApply.spec?.template.spec?.containers[0]?.args).toContain(`--expect-plan=${emptyPlanHash}`);
    await runJobs();
    expect(await movingPass()).toBe("UpToDate");
    const unchanged = await getMoving();
    expect(unchanged.status.lastRun).toMatchObject({ job: emptyApply.metadata!.name, operation: "apply" });
    expect(unchanged.status.lastRun!.steps!.map((step) => step.name)).toEqual(["init", "validate", "plan"]);
    expect(unchanged.status.lastRun!.error).toBeUndefined();
    expect(unchanged.status.plan).toBeUndefined();
    expect(condition(unchanged, "ApplyJobSucceeded")).toMatchObject({ status: "True", reason: "ApplySucceeded" });
    expect(await movingEvents("PlanApproved")).toBe(approvedBefore);
    expect(await movingEvents("PlanApplied")).toBe(appliedBefore);
  }, 180_000);

  it("supersedes an approved plan the inputs no longer hash to (a Warning), records each plan's hash on its Job, and plans the " +
    "new inputs", async () => {
    await createManualCluster("superseded", { source: { image: sizedImage }, variables: { size: "1" } });
    const supersededPass = async () => (await reconcileWorkspace(deps, clusterAdapter, namespace, "superseded")).action;
    const getSuperseded = () =>
      plane.custom.getNamespacedCustomObject({ ...infra, namespace, plural: "terraformclusters", name: "superseded" }) as Promise<Cluster>;
    const setSize = (size: string, annotations: Json = {}) =>
      plane.custom.patchNamespacedCustomObject(
        {
          ...infra,
          namespace,
          plural: "terraformclusters",
          name: "superseded",
          body: { metadata: { annotations }, spec: { variables: { size } } },
        },
        mergePatchOptions(),
      );
    const planJobs = async () =>
      (await plane.batch.listNamespacedJob({ namespace })).items
        .filter(
          (job) =>
            job.metadata?.labels?.["captf.infrastructure.cluster.x-k8s.io/op"] === "plan" && job.metadata?.name?.includes("superseded"),
        )
        .sort(
          (a, b) =>
            Number(a.metadata?.labels?.["captf.infrastructure.cluster.x-k8s.io/attempt"]) -
            Number(b.metadata?.labels?.["captf.infrastructure.cluster.x-k8s.io/attempt"]),
        );
    const supersededEvents = async () =>
      (await eventsApi.listNamespacedEvent({ namespace })).items.filter(
        (event) => event.reason === "PlanSuperseded" && event.regarding?.name === "superseded",
      );
    expect(await supersededPass()).toBe("added finalizer");
    expect(await supersededPass()).toMatch(/^started apply \(NoState\)/);
    await runJobs();
    await supersededPass();
    expect((await getSuperseded()).status.initialization).toEqual({ provisioned: true });

    await setSize("2");
    expect(await supersededPass()).toMatch(/^started plan \(InputsChangedPlanNeeded\)/);
    await runJobs();
    expect(await supersededPass()).toBe("PlanAwaitingApproval");
    const first = (await getSuperseded()).status.plan!;
    expect(first).toMatchObject({ change: 1 });
    expect((await planJobs())[0]!.metadata?.annotations?.["captf.io/plan-hash"]).toBe(first.planHash);

    // Approved, but the inputs changed before the apply: the approved plan is not what these inputs would apply.
    const planSuperseded = { kind: "TerraformCluster", result: "superseded" };
    const supersededBefore = await seriesValue(registry, "captf_plan_approvals_total", planSuperseded);
    await setSize("3", { "captf.io/approve-plan": first.planHash });
    expect(await supersededPass()).toMatch(/^started plan \(InputsChangedPlanNeeded\)/);
    expect((await getSuperseded()).status.plan).toBeUndefined();
    await waitFor(async () => ((await supersededEvents()).length > 0 ? true : undefined));
    expect((await supersededEvents()).map((event) => [event.type, event.note])).toEqual([
      ["Warning", expect.stringContaining(`plan ${first.planHash}, approved, is superseded: the inputs changed`)],
    ]);
    expect(await seriesValue(registry, "captf_plan_approvals_total", planSuperseded)).toBe(supersededBefore + 1);
    // The approval went with it: the new plan (here of the same hash: one update of the same address) waits for its own.
    expect((await getSuperseded()).metadata.annotations?.["captf.io/approve-plan"]).toBeUndefined();

    await runJobs();
    expect(await supersededPass()).toBe("PlanAwaitingApproval");
    const second = (await getSuperseded()).status.plan!;
    expect(second.job).not.toBe(first.job);
    expect((await planJobs())[1]!.metadata?.annotations?.["captf.io/plan-hash"]).toBe(second.planHash);
    expect(await supersededPass()).toBe("PlanAwaitingApproval");
    expect(await supersededEvents()).toHaveLength(1);
  }, 240_000);
  async function runJobsReportingPlans(reports: typeof planReports): Promise<void> {
    planReports = reports;
    try {
      await runJobs();
    } finally {
      planReports = "as-written";
    }
  }

  it("fails a plan Job that completes without a readable plan: captf.io/plan-unreadable, ApplyFailed, nothing shown, and " +
    "backoff before the next plan", async () => {
    await createManualCluster("unreadable", { source: { image: sizedImage }, variables: { size: "1" } });
    const unreadablePass = async (passDeps: ReconcilerDeps = deps) =>
      (await reconcileWorkspace(passDeps, clusterAdapter, namespace, "unreadable")).action;
    const getUnreadable = () =>
      plane.custom.getNamespacedCustomObject({ ...infra, namespace, plural: "terraformclusters", name: "unreadable" }) as Promise<Cluster>;
    const planJobs = async () =>
      (
        await plane.batch.listNamespacedJob({
          namespace,
          labelSelector: "captf.infrastructure.cluster.x-k8s.io/owner-name=unreadable,captf.infrastructure.cluster.x-k8s.io/op=plan",
        })
      ).items;
    expect(await unreadablePass()).toBe("added finalizer");
    expect(await unreadablePass()).toMatch(/^started apply \(NoState\)/);
    await runJobs();
    await unreadablePass();
    expect((await getUnreadable()).status.initialization).toEqual({ provisioned: true });

    await plane.custom.patchNamespacedCustomObject(
      { ...infra, namespace, plural: "terraformclusters", name: "unreadable", body: { spec: { variables: { size: "2" } } } },
      mergePatchOptions(),
    );
    expect(await unreadablePass()).toMatch(/^started plan \(InputsChangedPlanNeeded\)/);
    await runJobsReportingPlans("dropped");
    expect(await unreadablePass()).toBe("InputsChangedPlanNeededBackoff");
    const [plan] = await planJobs();
    // The Job itself completed: only the missing plan makes it a failure.
    expect(plan!.status?.conditions).toContainEqual(expect.objectContaining({ type: "Complete", status: "True" }));
    expect(plan!.metadata?.annotations).toMatchObject({ "captf.io/bookkept": "true", "captf.io/plan-unreadable": "true" });
    expect(plan!.metadata?.annotations?.["captf.io/plan-hash"]).toBeUndefined();
    const failed = await getUnreadable();
    expect(failed.status.plan).toBeUndefined();
    expect(condition(failed, "ApplyJobSucceeded")).toMatchObject({
      status: "False",
      reason: "ApplyFailed",
      message:
        `Job ${plan!.metadata!.name} finished without a readable plan (captf.io/plan-unreadable): there is nothing to ` + `show or approve`,
    });
    expect(condition(failed, "InputsApplied")).toMatchObject({ status: "False", reason: "ApplyPending" });

    // Backoff: no second plan within a minute of the failure; after it, a new plan, which is shown.
    expect(await unreadablePass()).toBe("InputsChangedPlanNeededBackoff");
    expect(await planJobs()).toHaveLength(1);
    expect(await unreadablePass({ ...deps, now: () => Date.now() + 70_000 })).toMatch(/^started plan \(InputsChangedPlanNeeded\)/);
    expect(await planJobs()).toHaveLength(2);
    await runJobs();
    expect(await unreadablePass()).toBe("PlanAwaitingApproval");
    expect((await getUnreadable()).status.plan).toMatchObject({ change: 1 });

    // A plan reported in the runner's shrunk form is a plan: its hash is shown and kept for the approval.
    await plane.custom.patchNamespacedCustomObject(
      { ...infra, namespace, plural: "terraformclusters", name: "unreadable", body: { spec: { variables: { size: "3" } } } },
      mergePatchOptions(),
    );
    expect(await unreadablePass()).toMatch(/^started plan \(InputsChangedPlanNeeded\)/);
    await runJobsReportingPlans("shrunk");
    expect(await unreadablePass()).toBe("PlanAwaitingApproval");
    const shrunk = (await planJobs()).sort(
      (a, b) => Date.parse(String(b.metadata!.creationTimestamp)) - Date.parse(String(a.metadata!.creationTimestamp)),
    )[0]!;
    expect(shrunk.metadata?.annotations?.["captf.io/plan-unreadable"]).toBeUndefined();
    const shown = (await getUnreadable()).status.plan;
    expect(shown).toMatchObject({ change: 1, planHash: shrunk.metadata?.annotations?.["captf.io/plan-hash"] });
  }, 180_000);
});
