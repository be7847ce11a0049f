import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { noopModuleDirectory } from "@captf/module-noop";
import { emptyPlanHash } from "@captf/contract/run-result";
import { describeWithTools } from "@captf/testkit";
import { clusterAdapter } from "../kinds/adapters.js";
import { startJobExecutor, type JobExecutor } from "./job-executor.test-support.js";
import { allJobsFinished, createTerraformCluster, extendedClusterModule, planeReconcilerDeps, preparePlane, type PlaneClients } from "./plane.test-support.js";
import { mergePatchOptions, reconcileWorkspace, type ReconcilerDeps } from "./workspace-reconciler.js";

const image = "registry.invalid/captf/noop-cluster:v0.1.0";
const movingImage = "registry.invalid/captf/moving-cluster:v0.1.0";
const infra = { group: "infrastructure.cluster.x-k8s.io", version: "v1alpha1" };
const capi = { group: "cluster.x-k8s.io", version: "v1beta2" };
type Json = Record<string, any>;

// applyPolicy Manual on the real API server: the first apply runs at once; a later change is
// planned, shown in status.plan, waits for captf.io/approve-plan, and is applied only as approved.
describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager", "tofu", "go"], "plan preview and approval", () => {
  const namespace = `approval-${Date.now().toString(36)}`;
  let plane: PlaneClients;
  let deps: ReconcilerDeps;
  let executor: JobExecutor;
  let eventsApi: k8s.EventsV1Api;
  let movingModule = "";

  beforeAll(async () => {
    plane = await preparePlane(namespace);
    ({ deps, eventsApi } = planeReconcilerDeps(plane, "approval-test"));
    // The no-op cluster module with one more resource, renamed by a moved block during the test.
    movingModule = extendedClusterModule("captf-moving-module-", { "user-variables.tf": 'variable "note" {\n  type    = string\n  default = ""\n}\n', "marker.tf": 'resource "terraform_data" "marker" {\n  input = "m"\n}\n' });
    executor = startJobExecutor({ kubeconfigPath: plane.kubeconfigPath, namespace, modules: { [image]: noopModuleDirectory("cluster"), [movingImage]: movingModule } });
    await createManualCluster("manual", { source: { image } });
  }, 120_000);
  afterAll(() => {
    executor?.close();
    if (movingModule) rmSync(movingModule, { recursive: true, force: true });
  });

  /** A Cluster and its TerraformCluster under applyPolicy Manual. */
  const createManualCluster = (name: string, spec: Json) => createTerraformCluster(plane, namespace, name, { applyPolicy: "Manual", ...spec });

  const get = () => plane.custom.getNamespacedCustomObject({ ...infra, namespace, plural: "terraformclusters", name: "manual" }) as Promise<Json>;
  const condition = (object: Json, type: string) => (object.status?.conditions ?? []).find((c: Json) => c.type === type);
  const ops = async () => (await plane.batch.listNamespacedJob({ namespace })).items.map((job) => job.metadata?.labels?.["captf.infrastructure.cluster.x-k8s.io/op"]).sort();
  async function pass(): Promise<string> {
    return (await reconcileWorkspace(deps, clusterAdapter, namespace, "manual")).action;
  }
  async function runJobs(): Promise<void> {
    await executor.runPending();
    await allJobsFinished(plane.batch, namespace);
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
    await plane.custom.patchNamespacedCustomObjectStatus({ ...capi, namespace, plural: "clusters", name: "manual", body: { status: { initialization: { controlPlaneInitialized: true } } } }, mergePatchOptions());
    expect(await pass()).toMatch(/^started plan \(InputsChangedPlanNeeded\)/);
    await runJobs();
    expect(await pass()).toBe("PlanAwaitingApproval");
    const cluster = await get();
    expect(cluster.status.plan).toMatchObject({ planHash: expect.stringMatching(/^p1:[0-9a-f]{64}$/), change: 1, add: 0, destroy: 0, resources: ["module.role.terraform_data.load_balancer (update)"] });
    expect(condition(cluster, "ApplyJobSucceeded")).toMatchObject({ status: "Unknown", reason: "PlanAwaitingApproval" });
    expect(condition(cluster, "ApplyJobSucceeded").message).toContain(cluster.status.plan.planHash);
    expect(await pass()).toBe("PlanAwaitingApproval");
    expect(await ops()).toEqual(["apply", "plan"]);
  }, 120_000);

  it("ignores an approval of another hash, applies exactly the approved plan, then clears the plan and the approval", async () => {
    await plane.custom.patchNamespacedCustomObject({ ...infra, namespace, plural: "terraformclusters", name: "manual", body: { metadata: { annotations: { "captf.io/approve-plan": "p1:not-this-one" } } } }, mergePatchOptions());
    expect(await pass()).toBe("PlanAwaitingApproval");

    const { planHash } = (await get()).status.plan;
    await plane.custom.patchNamespacedCustomObject({ ...infra, namespace, plural: "terraformclusters", name: "manual", body: { metadata: { annotations: { "captf.io/approve-plan": planHash } } } }, mergePatchOptions());
    expect(await pass()).toMatch(/^started apply \(InputsChanged\)/);
    const apply = (await plane.batch.listNamespacedJob({ namespace })).items.find((job) => job.metadata?.labels?.["captf.infrastructure.cluster.x-k8s.io/op"] === "apply" && job.metadata?.labels?.["captf.infrastructure.cluster.x-k8s.io/attempt"] === "2")!;
    expect(apply.spec?.template.spec?.containers[0]?.args).toContain(`--expect-plan=${planHash}`);
    expect(apply.metadata?.annotations?.["captf.io/approved-plan"]).toBe(planHash);
    await runJobs();
    expect(await pass()).toBe("UpToDate");
    const cluster = await get();
    expect(cluster.status.plan).toBeUndefined();
    expect(cluster.metadata.annotations?.["captf.io/approve-plan"]).toBeUndefined();
    expect(condition(cluster, "ApplyJobSucceeded")).toMatchObject({ status: "True", reason: "ApplySucceeded" });
    const reasons = (await eventsApi.listNamespacedEvent({ namespace })).items.map((event) => event.reason);
    expect(reasons).toEqual(expect.arrayContaining(["PlanReady", "PlanApproved", "PlanApplied"]));
  }, 120_000);

  it("holds a plan that only moves a resource for approval like any change, shows the move and applies it once approved", async () => {
    await createManualCluster("moving", { source: { image: movingImage }, variables: { note: "a" } });
    const movingPass = async () => (await reconcileWorkspace(deps, clusterAdapter, namespace, "moving")).action;
    const getMoving = () => plane.custom.getNamespacedCustomObject({ ...infra, namespace, plural: "terraformclusters", name: "moving" }) as Promise<Json>;
    expect(await movingPass()).toBe("added finalizer");
    expect(await movingPass()).toMatch(/^started apply \(NoState\)/);
    await runJobs();
    await movingPass();
    expect((await getMoving()).status.initialization).toEqual({ provisioned: true });

    // The next version of the module renames the marker; an unused variable's new value makes the apply due.
    writeFileSync(join(movingModule, "marker.tf"), 'resource "terraform_data" "marker_renamed" {\n  input = "m"\n}\n\nmoved {\n  from = terraform_data.marker\n  to   = terraform_data.marker_renamed\n}\n');
    await plane.custom.patchNamespacedCustomObject({ ...infra, namespace, plural: "terraformclusters", name: "moving", body: { spec: { variables: { note: "b" } } } }, mergePatchOptions());
    expect(await movingPass()).toMatch(/^started plan \(InputsChangedPlanNeeded\)/);
    await runJobs();
    expect(await movingPass()).toBe("PlanAwaitingApproval");
    const waiting = await getMoving();
    expect(waiting.status.plan).toMatchObject({ add: 0, change: 0, destroy: 0, move: 1, resources: ["module.role.terraform_data.marker_renamed (move)"] });
    expect(waiting.status.plan.planHash).not.toBe(emptyPlanHash);
    expect(waiting.status.plan.import).toBeUndefined();
    expect(condition(waiting, "ApplyJobSucceeded")).toMatchObject({ status: "Unknown", reason: "PlanAwaitingApproval" });
    expect(condition(waiting, "ApplyJobSucceeded").message).toContain("0 to add, 0 to change, 0 to destroy, 1 to move");
    const ready = (await eventsApi.listNamespacedEvent({ namespace })).items.find((event) => event.reason === "PlanReady" && event.regarding?.name === "moving");
    expect(ready?.note).toContain("1 to move");
    expect(await movingPass()).toBe("PlanAwaitingApproval");

    await plane.custom.patchNamespacedCustomObject({ ...infra, namespace, plural: "terraformclusters", name: "moving", body: { metadata: { annotations: { "captf.io/approve-plan": waiting.status.plan.planHash } } } }, mergePatchOptions());
    expect(await movingPass()).toMatch(/^started apply \(InputsChanged\)/);
    await runJobs();
    expect(await movingPass()).toBe("UpToDate");
    const applied = await getMoving();
    expect(applied.status.plan).toBeUndefined();
    expect(condition(applied, "ApplyJobSucceeded")).toMatchObject({ status: "True", reason: "ApplySucceeded" });
  }, 180_000);
});
