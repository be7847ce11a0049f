import { rmSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { noopModuleDirectory } from "@captf/module-noop";
import { stateSecretName, stateSecretSuffix } from "@captf/render";
import { describeWithTools, waitFor } from "@captf/testkit";
import { clusterAdapter } from "../kinds/adapters.js";
import { CaptfMetrics } from "../metrics/captf-metrics.js";
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
const gateImage = "registry.invalid/captf/gate-cluster:v0.1.0";
// The no-op cluster module with a resource whose apply fails while `fail` is true.
const gateModule = `variable "fail" {
  type    = bool
  default = false
}

resource "terraform_data" "gate" {
  input = var.fail
  lifecycle {
    precondition {
      condition     = !var.fail
      error_message = "asked to fail"
    }
  }
}
`;
const infra = { group: "infrastructure.cluster.x-k8s.io", version: "v1alpha1" };
type Cluster = ReadBack<TerraformCluster>;

// The state Secrets the runner writes through the kubernetes backend (real OpenTofu) on the real API
// server: adopted by the object after its apply, re-owned when someone strips them, and a state that
// stops reading counted once in captf_state_read_errors_total.
describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager", "tofu"], "state ownership", () => {
  const namespace = `state-owner-${Date.now().toString(36)}`;
  let plane: PlaneClients;
  let deps: ReconcilerDeps;
  let executor: JobExecutor;
  let eventsApi: k8s.EventsV1Api;
  let metrics: CaptfMetrics;
  let gateDir = "";
  // Moves the reconciler's clock past a backoff.
  let skew = 0;

  beforeAll(async () => {
    plane = await preparePlane(namespace);
    ({ deps, eventsApi } = planeReconcilerDeps(plane, "state-ownership-test"));
    metrics = new CaptfMetrics(new Registry());
    deps = { ...deps, metrics, now: () => Date.now() + skew };
    gateDir = extendedClusterModule("captf-gate-module-", { "gate.tf": gateModule });
    executor = startJobExecutor({
      kubeconfigPath: plane.kubeconfigPath,
      namespace,
      modules: { [image]: noopModuleDirectory("cluster"), [gateImage]: gateDir },
    });
  }, 120_000);
  afterAll(() => {
    executor?.close();
    if (gateDir) rmSync(gateDir, { recursive: true, force: true });
  });

  const get = (name: string) =>
    plane.custom.getNamespacedCustomObject({ ...infra, namespace, plural: "terraformclusters", name }) as Promise<Cluster>;
  const condition = (object: Cluster, type: string) => (object.status?.conditions ?? []).find((c) => c.type === type);
  const pass = async (name: string) => (await reconcileWorkspace(deps, clusterAdapter, namespace, name)).action;
  const events = async (name: string, reason: string) =>
    (await eventsApi.listNamespacedEvent({ namespace })).items.filter((event) => event.reason === reason && event.regarding?.name === name);
  const stateSecret = (name: string) =>
    plane.core.readNamespacedSecret({ name: stateSecretName(stateSecretSuffix({ role: "cluster", namespace, name })), namespace });
  async function provision(name: string): Promise<void> {
    await createTerraformCluster(plane, namespace, name, { source: { image } });
    expect(await pass(name)).toBe("added finalizer");
    expect(await pass(name)).toMatch(/^started apply \(NoState\)/);
    await executor.runPending();
    await allJobsFinished(plane.batch, namespace);
    await pass(name);
    expect((await get(name)).status.initialization).toEqual({ provisioned: true });
  }

  it("adopts the state after the apply: owned by the object (not as controller, blocking nothing) and annotated with the " +
    "apply's inputs hash, once", async () => {
    await provision("owned");
    const cluster = await get("owned");
    const secret = await stateSecret("owned");
    expect(secret.metadata?.ownerReferences).toEqual([
      {
        apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
        kind: "TerraformCluster",
        name: "owned",
        uid: cluster.metadata.uid,
        controller: false,
      },
    ]);
    const apply = (await plane.batch.listNamespacedJob({ namespace })).items.find((job) => job.metadata?.name?.includes("owned"))!;
    expect(secret.metadata?.annotations?.["captf.io/inputs-hash"]).toBe(apply.metadata?.annotations?.["captf.io/inputs-hash"]);
    expect(secret.metadata?.annotations?.["captf.io/inputs-hash"]).toMatch(/^h2:/);
    await waitFor(async () => ((await events("owned", "StateAdopted")).length > 0 ? true : undefined));

    // Nothing changes on later passes: no second adoption, nothing to repair.
    expect(await pass("owned")).toBe("UpToDate");
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(await events("owned", "StateAdopted")).toHaveLength(1);
    expect(await events("owned", "OwnerReferencesRepaired")).toHaveLength(0);
  }, 180_000);

  it("re-owns a state Secret whose owner reference someone stripped, and a chunk written later, with one event per repair", async () => {
    const name = stateSecretName(stateSecretSuffix({ role: "cluster", namespace, name: "owned" }));
    await plane.core.patchNamespacedSecret({ name, namespace, body: { metadata: { ownerReferences: null } } }, mergePatchOptions());
    expect((await stateSecret("owned")).metadata?.ownerReferences).toBeUndefined();
    // A chunk as Terraform's backend writes one: the gzip stream goes on in it (here an empty second member, so the state reads the same).
    const labels = (await stateSecret("owned")).metadata?.labels;
    await plane.core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: `${name}-part-1`, labels }, data: { tfstate: gzipSync(Buffer.alloc(0)).toString("base64") } },
    });

    expect(await pass("owned")).toBe("UpToDate");
    const uid = (await get("owned")).metadata.uid;
    expect(condition(await get("owned"), "StateReadable")).toMatchObject({ status: "True" });
    for (const secret of [name, `${name}-part-1`]) {
      const owners = (await plane.core.readNamespacedSecret({ name: secret, namespace })).metadata?.ownerReferences;
      expect(owners).toEqual([expect.objectContaining({ kind: "TerraformCluster", name: "owned", uid, controller: false })]);
      expect(owners?.[0]?.blockOwnerDeletion).toBeUndefined();
    }
    await waitFor(async () => ((await events("owned", "OwnerReferencesRepaired")).length > 0 ? true : undefined));
    expect((await events("owned", "OwnerReferencesRepaired"))[0]!.note).toContain(`${name}, ${name}-part-1`);

    expect(await pass("owned")).toBe("UpToDate");
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(await events("owned", "OwnerReferencesRepaired")).toHaveLength(1);
  }, 120_000);

  it("counts a state that stops reading once in captf_state_read_errors_total, not once per pass", async () => {
    await provision("corrupt");
    const name = stateSecretName(stateSecretSuffix({ role: "cluster", namespace, name: "corrupt" }));
    await plane.core.patchNamespacedSecret(
      { name, namespace, body: { data: { tfstate: Buffer.from("not gzip at all").toString("base64") } } },
      mergePatchOptions(),
    );
    await pass("corrupt");
    expect(condition(await get("corrupt"), "StateReadable")).toMatchObject({ status: "False", reason: "StateCorrupt" });
    await pass("corrupt");
    expect(await metrics.stateReadErrors.get()).toMatchObject({
      name: "captf_state_read_errors_total",
      values: [expect.objectContaining({ labels: { kind: "TerraformCluster", reason: "corrupt" }, value: 1 })],
    });
  }, 180_000);

  it("annotates the apply that follows a failed apply with the failed Job's name", async () => {
    await createTerraformCluster(plane, namespace, "retried", { source: { image: gateImage }, variables: { fail: true } });
    expect(await pass("retried")).toBe("added finalizer");
    expect(await pass("retried")).toMatch(/^started apply \(NoState\)/);
    await executor.runPending();
    await allJobsFinished(plane.batch, namespace);
    // The failed apply saved a state without resources (and no inputs hash): the retry waits out its backoff.
    expect(await pass("retried")).toBe("StateWithoutInputsHashBackoff");
    const applies = async () =>
      (await plane.batch.listNamespacedJob({ namespace })).items
        .filter((job) => job.metadata?.name?.includes("retried"))
        .sort(
          (a, b) =>
            Number(a.metadata?.labels?.["captf.infrastructure.cluster.x-k8s.io/attempt"]) -
            Number(b.metadata?.labels?.["captf.infrastructure.cluster.x-k8s.io/attempt"]),
        );
    const [failed] = await applies();
    expect(failed!.metadata?.annotations?.["captf.io/after-failed-apply"]).toBeUndefined();

    await plane.custom.patchNamespacedCustomObject(
      { ...infra, namespace, plural: "terraformclusters", name: "retried", body: { spec: { variables: { fail: false } } } },
      mergePatchOptions(),
    );
    skew = 2 * 60_000;
    expect(await pass("retried")).toMatch(/^started apply \(StateWithoutInputsHash\)/);
    const retry = (await applies())[1]!;
    expect(retry.metadata?.annotations?.["captf.io/after-failed-apply"]).toBe(failed!.metadata!.name);
    await executor.runPending();
    await allJobsFinished(plane.batch, namespace);
    await pass("retried");
    expect((await get("retried")).status.initialization).toEqual({ provisioned: true });
  }, 240_000);
});
