import { describe, expect, it } from "@jest/globals";
import { capiGroupVersion, capiTypes } from "../api/cluster-api.js";
import { passReads } from "../reconcile/pass-reads.js";
import { FakeObjects } from "../runtime/fake-client.test-support.js";
import type { ReconcilerDeps, WorkspaceObject } from "../reconcile/workspace-reconciler.js";
import { clusterAdapter, machineAdapter, poolAdapter } from "./adapters.js";

const namespace = "ns";

function objectOwnedBy(ownerReferences: WorkspaceObject["metadata"]["ownerReferences"]): WorkspaceObject {
  return {
    metadata: {
      name: "o",
      namespace,
      uid: "u",
      labels: { "cluster.x-k8s.io/cluster-name": "c1" },
      ...(ownerReferences ? { ownerReferences } : {}),
    },
    spec: { source: { image: "m:v1" } },
  };
}

/** The inputs an adapter observes with only the objects of `fake` around it. */
async function observe(
  adapter: typeof machineAdapter | typeof poolAdapter | typeof clusterAdapter,
  object: WorkspaceObject,
  fake = new FakeObjects(),
) {
  const deps = { client: fake.client } as ReconcilerDeps;
  return (adapter.observeInputs as (d: ReconcilerDeps, o: WorkspaceObject, c: unknown) => Promise<unknown>)(deps, object, {
    reads: passReads(fake.client, namespace),
    durable: undefined,
  });
}

describe("the owner waits of DependenciesReady", () => {
  const controlPlane = { apiVersion: "controlplane.cluster.x-k8s.io/v1beta2", kind: "KubeadmControlPlane", name: "cp" };

  it.each([
    ["a machine without any owner waits for one (WaitingForOwner)", machineAdapter, undefined, undefined],
    ["a machine held by its control plane before its Machine", machineAdapter, [controlPlane], "WaitingForOwnerMachine"],
    [
      "a machine whose Machine does not exist",
      machineAdapter,
      [{ apiVersion: capiGroupVersion, kind: "Machine", name: "gone" }],
      "OwnerNotFound",
    ],
    ["a pool held by another owner before its MachinePool", poolAdapter, [controlPlane], "WaitingForOwnerMachinePool"],
    [
      "a pool whose MachinePool does not exist",
      poolAdapter,
      [{ apiVersion: capiGroupVersion, kind: "MachinePool", name: "gone" }],
      "OwnerNotFound",
    ],
    [
      "a cluster whose owner Cluster does not exist",
      clusterAdapter,
      [{ apiVersion: capiGroupVersion, kind: "Cluster", name: "c1" }],
      "OwnerNotFound",
    ],
  ] as const)("%s", async (_name, adapter, ownerReferences, reason) => {
    const observed = (await observe(adapter, objectOwnedBy(ownerReferences ? [...ownerReferences] : undefined))) as
      | { clusterName: string; inputs: { reason: string } }
      | undefined;
    if (reason === undefined) return expect(observed).toBeUndefined();
    expect(observed).toMatchObject({ clusterName: "c1", inputs: { pending: true, reason } });
  });

  it("a cluster known only by its label waits for its Cluster without naming a missing owner", async () => {
    expect(await observe(clusterAdapter, objectOwnedBy(undefined))).toBeUndefined();
  });

  it("an owner that is there gives no owner wait", async () => {
    const fake = new FakeObjects().seed(capiTypes.machine, namespace, {
      metadata: { name: "m" },
      spec: { clusterName: "c1", infrastructureRef: { apiGroup: "infrastructure.cluster.x-k8s.io", kind: "TerraformMachine", name: "o" } },
    });
    const observed = (await observe(
      machineAdapter,
      objectOwnedBy([{ apiVersion: capiGroupVersion, kind: "Machine", name: "m" }]),
      fake,
    )) as { inputs: { reason?: string } };
    expect(observed.inputs.reason).not.toMatch(/^(OwnerNotFound|WaitingForOwner)/);
  });

  it("a cluster whose Cluster names another infrastructure kind runs nothing (ClusterNotTerraform)", async () => {
    const fake = new FakeObjects().seed(capiTypes.cluster, namespace, {
      metadata: { name: "c1" },
      spec: { infrastructureRef: { apiGroup: "infrastructure.cluster.x-k8s.io", kind: "DockerCluster", name: "c1" } },
    });
    const observed = await observe(clusterAdapter, objectOwnedBy([{ apiVersion: capiGroupVersion, kind: "Cluster", name: "c1" }]), fake);
    expect(observed).toMatchObject({
      clusterName: "c1",
      inputs: { pending: true, reason: "ClusterNotTerraform", message: expect.stringContaining("DockerCluster") },
    });
  });
});
