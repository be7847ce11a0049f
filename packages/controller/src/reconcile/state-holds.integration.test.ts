import { rmSync } from "node:fs";
import { gunzipSync, gzipSync } from "node:zlib";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { stateSecretName, stateSecretSuffix } from "@captf/render";
import { describeWithTools } from "@captf/testkit";
import { durableInputsSecretName } from "./durable-inputs.js";
import { clusterAdapter } from "../kinds/adapters.js";
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

// The no-op cluster module with a blob of 100 sha512 digests per `blob_rows` in state: 100 rows
// make a state that compresses to more than the 1 MiB a Secret holds.
const image = "registry.invalid/captf/blob-cluster:v0.1.0";
const blobModule = `variable "blob_rows" {
  type    = number
  default = 0
}

resource "terraform_data" "blob" {
  input = join("", flatten([for i in range(var.blob_rows) : [for j in range(100) : sha512("\${i}-\${j}")]]))
}
`;
const infra = { group: "infrastructure.cluster.x-k8s.io", version: "v1alpha1" };
type Json = Record<string, unknown>;
type Cluster = ReadBack<TerraformCluster>;

// State holds on the real API server, with the real runner and OpenTofu: a state that outgrew its
// Secret, and a state whose lineage changed, each hold the object with a condition instead of an apply.
describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager", "tofu"], "state holds", () => {
  const namespace = `state-holds-${Date.now().toString(36)}`;
  let plane: PlaneClients;
  let deps: ReconcilerDeps;
  let executor: JobExecutor;
  let eventsApi: k8s.EventsV1Api;
  let moduleDir = "";

  beforeAll(async () => {
    plane = await preparePlane(namespace);
    ({ deps, eventsApi } = planeReconcilerDeps(plane, "state-holds-test"));
    moduleDir = extendedClusterModule("captf-blob-module-", { "blob.tf": blobModule });
    executor = startJobExecutor({ kubeconfigPath: plane.kubeconfigPath, namespace, modules: { [image]: moduleDir } });
  }, 120_000);
  afterAll(() => {
    executor?.close();
    if (moduleDir) rmSync(moduleDir, { recursive: true, force: true });
  });

  const createCluster = (name: string, blobRows = 0) =>
    createTerraformCluster(plane, namespace, name, { source: { image }, variables: { blob_rows: blobRows } });
  const get = (name: string) =>
    plane.custom.getNamespacedCustomObject({ ...infra, namespace, plural: "terraformclusters", name }) as Promise<Cluster>;
  const setVariables = (name: string, variables: Json) =>
    plane.custom.patchNamespacedCustomObject(
      { ...infra, namespace, plural: "terraformclusters", name, body: { spec: { variables } } },
      mergePatchOptions(),
    );
  const condition = (object: Cluster, type: string) => (object.status?.conditions ?? []).find((c) => c.type === type);
  const pass = async (name: string) => (await reconcileWorkspace(deps, clusterAdapter, namespace, name)).action;
  const jobCount = async () => (await plane.batch.listNamespacedJob({ namespace })).items.length;
  const events = async (name: string, reason: string) =>
    (await eventsApi.listNamespacedEvent({ namespace })).items.filter((event) => event.reason === reason && event.regarding?.name === name);
  async function runJobs(): Promise<void> {
    await executor.runPending();
    await allJobsFinished(plane.batch, namespace);
  }
  async function provision(name: string): Promise<void> {
    await createCluster(name);
    expect(await pass(name)).toBe("added finalizer");
    expect(await pass(name)).toMatch(/^started apply \(NoState\)/);
    await runJobs();
    await pass(name);
    expect((await get(name)).status.initialization).toEqual({ provisioned: true });
  }

  it("holds a cluster whose apply could not save a state larger than its Secret, instead of applying again blindly, until its " +
    "inputs change", async () => {
    await createCluster("big", 100);
    expect(await pass("big")).toBe("added finalizer");
    expect(await pass("big")).toMatch(/^started apply \(NoState\)/);
    await runJobs();

    expect(await pass("big")).toBe("StateNotSaved");
    const held = await get("big");
    expect(held.status.lastRun!.error).toMatchObject({ kind: "state-save", step: "apply" });
    expect(held.status.lastRun!.steps!.map((step) => step.name)).toEqual(["init", "validate", "plan", "show-json", "apply", "state-push"]);
    const applied = condition(held, "ApplyJobSucceeded");
    expect(applied).toMatchObject({ status: "False", reason: "StateNotSaved" });
    expect(applied!.message).toContain("1 MiB");
    expect(applied!.message).toContain("docs/reliability.md");
    expect(await events("big", "StateNotSaved")).toHaveLength(1);
    expect(await events("big", "JobFailed")).toHaveLength(0);

    // Held: no retry of the apply, whatever the backoff says, and the condition stays.
    const jobs = await jobCount();
    expect(await pass("big")).toBe("StateNotSaved");
    expect(await pass("big")).toBe("StateNotSaved");
    expect(await jobCount()).toBe(jobs);
    expect(condition(await get("big"), "ApplyJobSucceeded")).toMatchObject({ status: "False", reason: "StateNotSaved" });

    // The way out: inputs that fit (import blocks in a real module for what the lost apply created).
    await setVariables("big", { blob_rows: 1 });
    // The failed first apply left the state of before it (empty, without an inputs hash): the new inputs apply over it.
    expect(await pass("big")).toMatch(/^started apply \(StateWithoutInputsHash\)/);
  }, 180_000);

  it("holds a cluster whose state's lineage changed instead of applying over it, until the new state is accepted", async () => {
    await provision("lineage");
    const durableName = durableInputsSecretName("cluster", "lineage");
    const recorded = (await plane.core.readNamespacedSecret({ name: durableName, namespace })).metadata?.annotations?.[
      "captf.io/state-lineage"
    ];
    expect(recorded).toMatch(/^[0-9a-f-]{36}$/);

    // Another state pushed over this one: a new lineage, a higher serial, the same resources.
    const secretName = stateSecretName(stateSecretSuffix({ role: "cluster", namespace, name: "lineage" }));
    const secret = await plane.core.readNamespacedSecret({ name: secretName, namespace });
    const document = JSON.parse(gunzipSync(Buffer.from(secret.data!.tfstate!, "base64")).toString("utf8")) as Json & { serial: number };
    const foreign = "00000000-0000-4000-8000-000000000000";
    secret.data!.tfstate = gzipSync(JSON.stringify({ ...document, lineage: foreign, serial: document.serial + 1 })).toString("base64");
    await plane.core.replaceNamespacedSecret({ name: secretName, namespace, body: secret });
    await setVariables("lineage", { blob_rows: 1 });

    const jobs = await jobCount();
    expect(await pass("lineage")).toBe("StateUnreadable");
    const held = await get("lineage");
    const readable = condition(held, "StateReadable");
    expect(readable).toMatchObject({ status: "False", reason: "StateLineageChanged" });
    expect(readable!.message).toContain(foreign);
    expect(readable!.message).toContain(recorded);
    expect(await pass("lineage")).toBe("StateUnreadable");
    expect(await jobCount()).toBe(jobs);
    expect(await events("lineage", "StateLineageChanged")).toHaveLength(1);

    // Accepting the new state: the annotation goes, the next pass records the new lineage and applies.
    await plane.core.patchNamespacedSecret(
      { name: durableName, namespace, body: { metadata: { annotations: { "captf.io/state-lineage": null } } } },
      mergePatchOptions(),
    );
    expect(await pass("lineage")).toMatch(/^started apply \(InputsChanged\)/);
    expect(
      (await plane.core.readNamespacedSecret({ name: durableName, namespace })).metadata?.annotations?.["captf.io/state-lineage"],
    ).toBe(foreign);
    expect(condition(await get("lineage"), "StateReadable")).toMatchObject({ status: "True", reason: "StateRead" });

    // Other damage keeps its own reason beside the lineage check: a state that is not gzip is StateCorrupt.
    await executor.runPending();
    await allJobsFinished(plane.batch, namespace);
    const current = await plane.core.readNamespacedSecret({ name: secretName, namespace });
    current.data!.tfstate = Buffer.from("not gzip").toString("base64");
    await plane.core.replaceNamespacedSecret({ name: secretName, namespace, body: current });
    expect(await pass("lineage")).toBe("StateUnreadable");
    expect(condition(await get("lineage"), "StateReadable")).toMatchObject({ status: "False", reason: "StateCorrupt" });
    // One Warning StateUnreadable for the transition, none for the passes that find it unchanged, no generic ConditionChanged.
    expect(await pass("lineage")).toBe("StateUnreadable");
    expect((await events("lineage", "StateUnreadable")).map((event) => [event.type, event.note])).toEqual([
      ["Warning", expect.stringContaining("StateCorrupt")],
    ]);
    expect((await events("lineage", "ConditionChanged")).filter((event) => event.note?.includes("StateCorrupt"))).toHaveLength(0);
  }, 120_000);
});
