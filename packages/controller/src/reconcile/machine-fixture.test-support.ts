// A TerraformMachine of an externally managed cluster on the test plane, for reconcile tests of one machine.
import type { PlaneClients } from "./plane.test-support.js";

const infra = { group: "infrastructure.cluster.x-k8s.io", version: "v1alpha1" };
const capi = { group: "cluster.x-k8s.io", version: "v1beta2" };

export type Machine = {
  metadata: { annotations?: Record<string, string> };
  status?: { conditions?: { type: string; status: string; reason: string; message: string }[]; activeJob?: { name: string } | null };
};
export const condition = (machine: Machine, type: string) => machine.status?.conditions?.find((c) => c.type === type);

/** Creating what an earlier machine of the namespace already created is fine. */
const existingIsFine = (error: unknown) => ((error as { code?: number }).code === 409 ? undefined : Promise.reject(error));

/** The externally managed TerraformCluster "ext" and its Cluster (both kept when already there): its machines and pools get exports {}. */
export async function createExternalCluster(
  plane: PlaneClients,
  namespace: string,
  clusterSpec: Record<string, unknown> = {},
): Promise<void> {
  await plane.custom
    .createNamespacedCustomObject({
      ...infra,
      namespace,
      plural: "terraformclusters",
      body: {
        apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
        kind: "TerraformCluster",
        metadata: { name: "ext", annotations: { "cluster.x-k8s.io/managed-by": "external" } },
        spec: { source: { image: "registry.invalid/captf/noop-cluster:v0.1.0" }, identityRef: { name: "id" }, ...clusterSpec },
      },
    })
    .catch(existingIsFine);
  await plane.custom
    .createNamespacedCustomObject({
      ...capi,
      namespace,
      plural: "clusters",
      body: {
        apiVersion: "cluster.x-k8s.io/v1beta2",
        kind: "Cluster",
        metadata: { name: "ext" },
        spec: { infrastructureRef: { apiGroup: "infrastructure.cluster.x-k8s.io", kind: "TerraformCluster", name: "ext" } },
      },
    })
    .catch(existingIsFine);
}

/** A TerraformMachine of an externally managed cluster (shared by the namespace's machines), with its Machine and bootstrap data. */
export async function createMachine(
  plane: PlaneClients,
  namespace: string,
  name: string,
  image: string,
  extra: { clusterSpec?: Record<string, unknown>; machineSpec?: Record<string, unknown> } = {},
): Promise<void> {
  await createExternalCluster(plane, namespace, extra.clusterSpec);
  await plane.core.createNamespacedSecret({
    namespace,
    body: { metadata: { name: `${name}-bootstrap` }, stringData: { value: "#cloud-config\n" } },
  });
  const machine = (await plane.custom.createNamespacedCustomObject({
    ...capi,
    namespace,
    plural: "machines",
    body: {
      apiVersion: "cluster.x-k8s.io/v1beta2",
      kind: "Machine",
      metadata: { name, labels: { "cluster.x-k8s.io/cluster-name": "ext" } },
      spec: {
        clusterName: "ext",
        bootstrap: { dataSecretName: `${name}-bootstrap` },
        infrastructureRef: { apiGroup: "infrastructure.cluster.x-k8s.io", kind: "TerraformMachine", name },
      },
    },
  })) as { metadata: { uid: string } };
  await plane.custom.createNamespacedCustomObject({
    ...infra,
    namespace,
    plural: "terraformmachines",
    body: {
      apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
      kind: "TerraformMachine",
      metadata: {
        name,
        labels: { "cluster.x-k8s.io/cluster-name": "ext" },
        ownerReferences: [{ apiVersion: "cluster.x-k8s.io/v1beta2", kind: "Machine", name, uid: machine.metadata.uid, controller: true }],
      },
      spec: { source: { image }, ...extra.machineSpec },
    },
  });
}

export const readMachine = (plane: PlaneClients, namespace: string, name: string) =>
  plane.custom.getNamespacedCustomObject({ ...infra, namespace, plural: "terraformmachines", name }) as Promise<Machine>;

/** A MachinePool of the cluster with its bootstrap data Secret, and its TerraformMachinePool running the module image. */
export async function createMachinePool(
  plane: PlaneClients,
  namespace: string,
  name: string,
  pool: { clusterName: string; image: string; replicas?: number },
): Promise<void> {
  const { clusterName, image, replicas = 1 } = pool;
  await plane.core.createNamespacedSecret({
    namespace,
    body: { metadata: { name: `${name}-bootstrap` }, stringData: { value: "#cloud-config\n" } },
  });
  const machinePool = (await plane.custom.createNamespacedCustomObject({
    ...capi,
    namespace,
    plural: "machinepools",
    body: {
      apiVersion: "cluster.x-k8s.io/v1beta2",
      kind: "MachinePool",
      metadata: { name, labels: { "cluster.x-k8s.io/cluster-name": clusterName } },
      spec: {
        clusterName,
        replicas,
        template: {
          spec: {
            clusterName,
            bootstrap: { dataSecretName: `${name}-bootstrap` },
            infrastructureRef: { apiGroup: "infrastructure.cluster.x-k8s.io", kind: "TerraformMachinePool", name },
          },
        },
      },
    },
  })) as { metadata: { uid: string } };
  await plane.custom.createNamespacedCustomObject({
    ...infra,
    namespace,
    plural: "terraformmachinepools",
    body: {
      apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
      kind: "TerraformMachinePool",
      metadata: {
        name,
        labels: { "cluster.x-k8s.io/cluster-name": clusterName },
        ownerReferences: [
          { apiVersion: "cluster.x-k8s.io/v1beta2", kind: "MachinePool", name, uid: machinePool.metadata.uid, controller: true },
        ],
      },
      spec: { source: { image } },
    },
  });
}
