import { afterAll, beforeAll, expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { noopModuleDirectory } from "@captf/module-noop";
import { describeWithTools } from "@captf/testkit";
import { allJobsFinished, preparePlane, mergePatchOptions } from "./plane.test-support.js";
import { startJobExecutor, type JobExecutor } from "./job-executor.test-support.js";
import { machineAdapter } from "../kinds/adapters.js";
import { reconcileWorkspace, type ReconcilerDeps } from "./workspace-reconciler.js";
import type { ResourceType } from "../runtime/kube-client.js";
import type { TerraformMachine } from "../api/terraformmachine.js";
import type { ReadBack } from "./read-back.test-support.js";

type Machine = ReadBack<TerraformMachine>;

const image = "registry.invalid/captf/noop-machine:v0.1.0";

// A TerraformMachine from creation to provisioned and back to deleted, on the real API server with
// real Cluster API CRDs, real Jobs (kube-controller-manager) and the real runner applying the
// no-op machine module with its state in a Secret.
describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager", "tofu", "go"], "the TerraformMachine reconciler", () => {
  const namespace = `machine-${Date.now().toString(36)}`;
  let deps: ReconcilerDeps;
  let custom: k8s.CustomObjectsApi;
  let batch: k8s.BatchV1Api;
  let executor: JobExecutor;

  beforeAll(async () => {
    const plane = await preparePlane(namespace);
    const { core } = plane;
    ({ batch, custom } = plane);
    deps = { client: plane.client };
    executor = startJobExecutor({ kubeconfigPath: plane.kubeconfigPath, namespace, modules: { [image]: noopModuleDirectory("machine") } });

    const capi = { group: "cluster.x-k8s.io", version: "v1beta2", namespace };
    const infra = { group: "infrastructure.cluster.x-k8s.io", version: "v1alpha1", namespace };
    // The cluster's infrastructure is externally managed here: its machines receive {} as exports.
    await custom.createNamespacedCustomObject({
      ...infra,
      plural: "terraformclusters",
      body: {
        apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
        kind: "TerraformCluster",
        metadata: { name: "demo", annotations: { "cluster.x-k8s.io/managed-by": "external" } },
        spec: { source: { image: "registry.invalid/captf/noop-cluster:v0.1.0" }, identityRef: { name: "demo-identity" } },
      },
    });
    await custom.createNamespacedCustomObject({
      ...capi,
      plural: "clusters",
      body: {
        apiVersion: "cluster.x-k8s.io/v1beta2",
        kind: "Cluster",
        metadata: { name: "demo" },
        spec: { infrastructureRef: { apiGroup: "infrastructure.cluster.x-k8s.io", kind: "TerraformCluster", name: "demo" } },
      },
    });
    await core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: "m-0-bootstrap" }, stringData: { value: "#cloud-config\nruncmd: []\n", format: "cloud-config" } },
    });
    const machine = (await custom.createNamespacedCustomObject({
      ...capi,
      plural: "machines",
      body: {
        apiVersion: "cluster.x-k8s.io/v1beta2",
        kind: "Machine",
        metadata: { name: "m-0", labels: { "cluster.x-k8s.io/cluster-name": "demo" } },
        spec: {
          clusterName: "demo",
          bootstrap: { dataSecretName: "m-0-bootstrap" },
          infrastructureRef: { apiGroup: "infrastructure.cluster.x-k8s.io", kind: "TerraformMachine", name: "m-0" },
          version: "v1.36.2",
        },
      },
    })) as { metadata: { uid: string } };
    await custom.createNamespacedCustomObject({
      ...infra,
      plural: "terraformmachines",
      body: {
        apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
        kind: "TerraformMachine",
        metadata: {
          name: "m-0",
          labels: { "cluster.x-k8s.io/cluster-name": "demo" },
          ownerReferences: [
            { apiVersion: "cluster.x-k8s.io/v1beta2", kind: "Machine", name: "m-0", uid: machine.metadata.uid, controller: true },
          ],
        },
        spec: { source: { image } },
      },
    });
  }, 120_000);

  afterAll(() => executor?.close());

  async function drive(until: (machine: Machine) => boolean, maxPasses = 12): Promise<{ machine: Machine; actions: string[] }> {
    const actions: string[] = [];
    for (let pass = 0; pass < maxPasses; pass++) {
      const result = await reconcileWorkspace(deps, machineAdapter, namespace, "m-0");
      actions.push(result.action);
      if (result.action === "gone") return { machine: {} as Machine, actions };
      const machine = (await custom
        .getNamespacedCustomObject({
          group: "infrastructure.cluster.x-k8s.io",
          version: "v1alpha1",
          namespace,
          plural: "terraformmachines",
          name: "m-0",
        })
        .catch(() => ({}))) as Machine;
      if (until(machine)) return { machine, actions };
      if (await executor.runPending()) await allJobsFinished(batch, namespace);
    }
    const last: unknown = await custom
      .getNamespacedCustomObject({
        group: "infrastructure.cluster.x-k8s.io",
        version: "v1alpha1",
        namespace,
        plural: "terraformmachines",
        name: "m-0",
      })
      .catch(() => ({}));
    throw new Error(
      `not converged after ${maxPasses} passes: ${actions.join(" | ")}\nstatus: ${JSON.stringify((last as { status?: unknown }).status)}`,
    );
  }

  it("provisions the machine: one apply Job, providerID, addresses, Ready", async () => {
    const { machine, actions } = await drive((m) => m.status?.initialization?.provisioned === true);
    expect(machine.spec.providerID).toBe(`noop:///${namespace}/m-0`);
    expect(machine.status.addresses).toEqual([{ type: "InternalIP", address: "10.0.0.1" }]);
    expect(machine.status.conditions!.find((c: { type: string }) => c.type === "Ready")).toMatchObject({ status: "True", reason: "Ready" });
    expect(machine.status.lastRun).toMatchObject({ operation: "apply", steps: expect.any(Array) });
    const jobs = (await batch.listNamespacedJob({ namespace })).items;
    expect(jobs.map((job) => job.metadata?.labels?.["captf.infrastructure.cluster.x-k8s.io/op"])).toEqual(["apply"]);
    expect(jobs[0]!.metadata?.annotations?.["captf.io/bookkept"]).toBe("true");
    expect(actions[0]).toBe("added finalizer");
  }, 180_000);

  it("settles: another pass starts no Job", async () => {
    const result = await reconcileWorkspace(deps, machineAdapter, namespace, "m-0");
    expect(result.action).toBe("UpToDate");
    expect((await batch.listNamespacedJob({ namespace })).items).toHaveLength(1);
  }, 60_000);

  it("requeues quietly when its finalizer write loses a race with another writer, and adds it on the next pass", async () => {
    const infra = { group: "infrastructure.cluster.x-k8s.io", version: "v1alpha1", namespace, plural: "terraformmachines" };
    await custom.createNamespacedCustomObject({
      ...infra,
      body: {
        apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
        kind: "TerraformMachine",
        metadata: { name: "race" },
        spec: { source: { image } },
      },
    });
    // Another writer (Cluster API, on an object it just created) changes the object between the pass's read and its finalizer write.
    let raced = false;
    const racing = new Proxy(deps.client, {
      get(target, property) {
        if (property === "get") {
          return async (type: ResourceType, objectNamespace: string, name: string) => {
            const read = await target.get(type, objectNamespace, name);
            if (!raced && name === "race") {
              raced = true;
              await custom.patchNamespacedCustomObject(
                { ...infra, name, body: { metadata: { labels: { "cluster.x-k8s.io/cluster-name": "demo" } } } },
                mergePatchOptions(),
              );
            }
            return read;
          };
        }
        const value: unknown = Reflect.get(target, property);
        return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    const lost = await reconcileWorkspace({ ...deps, client: racing }, machineAdapter, namespace, "race");
    expect(raced).toBe(true);
    expect(lost).toEqual({ action: expect.stringContaining("conflict"), requeueAfterMs: 5_000 });
    expect(((await custom.getNamespacedCustomObject({ ...infra, name: "race" })) as Machine).metadata.finalizers).toBeUndefined();
    expect((await reconcileWorkspace(deps, machineAdapter, namespace, "race")).action).toBe("added finalizer");
    expect(((await custom.getNamespacedCustomObject({ ...infra, name: "race" })) as Machine).metadata.finalizers).toEqual([
      "terraformmachine.infrastructure.cluster.x-k8s.io",
    ]);
    await custom.patchNamespacedCustomObject({ ...infra, name: "race", body: { metadata: { finalizers: null } } }, mergePatchOptions());
    await custom.deleteNamespacedCustomObject({ ...infra, name: "race" });
  }, 60_000);

  it("destroys on deletion, then removes its finalizer", async () => {
    await custom.deleteNamespacedCustomObject({
      group: "infrastructure.cluster.x-k8s.io",
      version: "v1alpha1",
      namespace,
      plural: "terraformmachines",
      name: "m-0",
    });
    const { actions } = await drive((m) => !m.metadata, 12);
    expect(actions.some((action) => action.startsWith("started destroy"))).toBe(true);
    expect(actions).toContain("removed finalizer");
  }, 180_000);
});
