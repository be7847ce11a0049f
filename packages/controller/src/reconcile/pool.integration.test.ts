import { afterAll, beforeAll, expect, it } from "@jest/globals";
import type * as k8s from "@kubernetes/client-node";
import { noopModuleDirectory } from "@captf/module-noop";
import { describeWithTools } from "@captf/testkit";
import { poolAdapter } from "../kinds/adapters.js";
import { startJobExecutor, type JobExecutor } from "./job-executor.test-support.js";
import { allJobsFinished, preparePlane, mergePatchOptions } from "./plane.test-support.js";
import { reconcileWorkspace, type ReconcilerDeps } from "./workspace-reconciler.js";
import type { TerraformMachinePool } from "../api/terraformmachinepool.js";
import type { CapiObject, ReadBack } from "./read-back.test-support.js";

type Pool = ReadBack<TerraformMachinePool>;

const image = "registry.invalid/captf/noop-machinepool:v0.1.0";

// A TerraformMachinePool from creation to provisioned on the real API server with the real
// Cluster API MachinePool CRD, real Jobs (kube-controller-manager) and the real runner applying
// the no-op machinepool module with its state in a Secret.
describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager", "tofu", "go"], "the TerraformMachinePool reconciler", () => {
  const namespace = `pool-${Date.now().toString(36)}`;
  let deps: ReconcilerDeps;
  let custom: k8s.CustomObjectsApi;
  let batch: k8s.BatchV1Api;
  let executor: JobExecutor;
  const infra = { group: "infrastructure.cluster.x-k8s.io", version: "v1alpha1", namespace };
  const capi = { group: "cluster.x-k8s.io", version: "v1beta2", namespace };

  beforeAll(async () => {
    const plane = await preparePlane(namespace);
    ({ batch, custom } = plane);
    deps = { client: plane.client };
    executor = startJobExecutor({
      kubeconfigPath: plane.kubeconfigPath,
      namespace,
      modules: { [image]: noopModuleDirectory("machinepool") },
    });

    // The cluster's infrastructure is externally managed here: its pools receive {} as exports.
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
    // Its external manager publishes the failure domains; the pool's members are spread over them.
    await custom.patchNamespacedCustomObjectStatus(
      {
        ...infra,
        plural: "terraformclusters",
        name: "demo",
        body: {
          status: {
            failureDomains: [
              { name: "fd1", controlPlane: true },
              { name: "fd2", controlPlane: false },
            ],
          },
        },
      },
      mergePatchOptions(),
    );
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
    await plane.core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: "mp-0-bootstrap" }, stringData: { value: "#cloud-config\nruncmd: []\n", format: "cloud-config" } },
    });
    const machinePool = (await custom.createNamespacedCustomObject({
      ...capi,
      plural: "machinepools",
      body: {
        apiVersion: "cluster.x-k8s.io/v1beta2",
        kind: "MachinePool",
        metadata: { name: "mp-0", labels: { "cluster.x-k8s.io/cluster-name": "demo" } },
        spec: {
          clusterName: "demo",
          replicas: 3,
          template: {
            spec: {
              clusterName: "demo",
              version: "v1.36.2",
              bootstrap: { dataSecretName: "mp-0-bootstrap" },
              infrastructureRef: { apiGroup: "infrastructure.cluster.x-k8s.io", kind: "TerraformMachinePool", name: "mp-0" },
            },
          },
        },
      },
    })) as { metadata: { uid: string } };
    await custom.createNamespacedCustomObject({
      ...infra,
      plural: "terraformmachinepools",
      body: {
        apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
        kind: "TerraformMachinePool",
        metadata: {
          name: "mp-0",
          labels: { "cluster.x-k8s.io/cluster-name": "demo" },
          ownerReferences: [
            { apiVersion: "cluster.x-k8s.io/v1beta2", kind: "MachinePool", name: "mp-0", uid: machinePool.metadata.uid, controller: true },
          ],
        },
        spec: { source: { image } },
      },
    });
  }, 120_000);

  afterAll(() => executor?.close());

  const get = () =>
    custom.getNamespacedCustomObject({ ...infra, plural: "terraformmachinepools", name: "mp-0" }).catch(() => ({})) as Promise<Pool>;

  async function drive(until: (pool: Pool) => boolean, maxPasses = 12): Promise<{ pool: Pool; actions: string[] }> {
    const actions: string[] = [];
    for (let pass = 0; pass < maxPasses; pass++) {
      const result = await reconcileWorkspace(deps, poolAdapter, namespace, "mp-0");
      actions.push(result.action);
      const pool = await get();
      if (until(pool)) return { pool, actions };
      if (await executor.runPending()) await allJobsFinished(batch, namespace);
    }
    throw new Error(`not converged after ${maxPasses} passes: ${actions.join(" | ")}\nstatus: ${JSON.stringify((await get()).status)}`);
  }

  it("provisions the pool: one apply Job, providerIDList of three members, replicas 3, Ready", async () => {
    const { pool, actions } = await drive((p) => p.status?.initialization?.provisioned === true);
    expect(pool.spec.providerIDList).toEqual([0, 1, 2].map((i) => `noop:///${namespace}/mp-0/${i}`));
    expect(pool.status.replicas).toBe(3);
    expect(pool.status.conditions!.find((c: { type: string }) => c.type === "OutputsValid")).toMatchObject({ status: "True" });
    expect(pool.status.conditions!.find((c: { type: string }) => c.type === "Ready")).toMatchObject({ status: "True", reason: "Ready" });
    expect(pool.status.ready).toBe(true);
    // The apply's own reading already lists every member with a definite health: no refresh follows it (reference 2.4, rule 1).
    const jobs = (await batch.listNamespacedJob({ namespace })).items;
    expect(jobs.map((job) => job.metadata?.labels?.["captf.infrastructure.cluster.x-k8s.io/op"]).sort()).toEqual(["apply"]);
    expect(actions[0]).toBe("added finalizer");
    expect(actions.at(-1)).toBe("UpToDate");
  }, 180_000);

  it("settles after its apply: the next passes start no Job and leave providerIDList alone", async () => {
    const first = await reconcileWorkspace(deps, poolAdapter, namespace, "mp-0");
    expect(first.action).toBe("UpToDate");
    // The next membership refresh is due one interval (60 s, plus up to 10% jitter) after this one.
    expect(first.requeueAfterMs).toBeGreaterThan(50_000);
    expect(first.requeueAfterMs).toBeLessThanOrEqual(66_000);
    const before = await get();
    const second = await reconcileWorkspace(deps, poolAdapter, namespace, "mp-0");
    expect(second.action).toBe("UpToDate");
    expect((await batch.listNamespacedJob({ namespace })).items).toHaveLength(1);
    expect((await get()).metadata.generation).toBe(before.metadata.generation);
    expect((await get()).spec.providerIDList).toEqual(before.spec.providerIDList);
  }, 60_000);

  it("with autoscaler bounds on the MachinePool, claims its replicas and writes the observed count back", async () => {
    const machinePools = { group: "cluster.x-k8s.io", version: "v1beta2", namespace, plural: "machinepools", name: "mp-0" };
    await custom.patchNamespacedCustomObject(
      {
        ...machinePools,
        body: {
          metadata: {
            annotations: {
              "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size": "1",
              "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size": "5",
            },
          },
          spec: { replicas: 2 },
        },
      },
      mergePatchOptions(),
    );
    await reconcileWorkspace(deps, poolAdapter, namespace, "mp-0");
    const machinePool = (await custom.getNamespacedCustomObject(machinePools)) as CapiObject;
    expect(machinePool.metadata.annotations!["cluster.x-k8s.io/replicas-managed-by"]).toBe("captf");
    // The module observed 3 members; the autoscaler's 2 is overwritten by what exists.
    expect(machinePool.spec.replicas).toBe(3);
    const pool = await get();
    expect(pool.status.conditions!.find((c: { type: string }) => c.type === "AutoscalingActive")).toMatchObject({
      status: "True",
      reason: "ReplicasManagedByModule",
    });
  }, 60_000);

  it('claims replicas-managed-by when it says "false" (no owner), and leaves a foreign truthy "true" and the count alone', async () => {
    const machinePools = { group: "cluster.x-k8s.io", version: "v1beta2", namespace, plural: "machinepools", name: "mp-0" };
    const setOwner = (value: string) =>
      custom.patchNamespacedCustomObject(
        { ...machinePools, body: { metadata: { annotations: { "cluster.x-k8s.io/replicas-managed-by": value } }, spec: { replicas: 2 } } },
        mergePatchOptions(),
      );
    await setOwner("false");
    await reconcileWorkspace(deps, poolAdapter, namespace, "mp-0");
    let machinePool = (await custom.getNamespacedCustomObject(machinePools)) as CapiObject;
    expect(machinePool.metadata.annotations!["cluster.x-k8s.io/replicas-managed-by"]).toBe("captf");
    expect(machinePool.spec.replicas).toBe(3);

    await setOwner("true");
    await reconcileWorkspace(deps, poolAdapter, namespace, "mp-0");
    machinePool = (await custom.getNamespacedCustomObject(machinePools)) as CapiObject;
    expect(machinePool.metadata.annotations!["cluster.x-k8s.io/replicas-managed-by"]).toBe("true");
    expect(machinePool.spec.replicas).toBe(2);
    expect((await get()).status.conditions!.find((c: { type: string }) => c.type === "AutoscalingActive")).toMatchObject({
      status: "False",
      reason: "ReplicasManagedExternally",
    });
  }, 60_000);
});
