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

/** The externally managed TerraformCluster `name` and its Cluster (both kept when already there): its machines and pools get exports {}. */
export async function createExternalCluster(
  plane: PlaneClients,
  namespace: string,
  clusterSpec: Record<string, unknown> = {},
  name = "ext",
): Promise<void> {
  await plane.custom
    .createNamespacedCustomObject({
      ...infra,
      namespace,
      plural: "terraformclusters",
      body: {
        apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
        kind: "TerraformCluster",
        metadata: { name, annotations: { "cluster.x-k8s.io/managed-by": "external" } },
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
        metadata: { name },
        spec: { infrastructureRef: { apiGroup: "infrastructure.cluster.x-k8s.io", kind: "TerraformCluster", name } },
      },
    })
    .catch(existingIsFine);
}

/**
 * A TerraformMachine of the cluster running `image`, owned by the Machine `owner` (as its controller unless `controller` is
 * false), or by none.
 */
export async function createTerraformMachine(
  plane: PlaneClients,
  namespace: string,
  name: string,
  image: string,
  options: {
    owner?: { name: string; uid: string };
    controller?: boolean;
    clusterName?: string;
    /** Over the metadata's name and label (ownerReferences stay the owner's). */
    metadata?: Record<string, unknown>;
    /** Over spec.source. */
    spec?: Record<string, unknown>;
  },
): Promise<void> {
  const { owner, controller = true, clusterName = "ext" } = options;
  await plane.custom.createNamespacedCustomObject({
    ...infra,
    namespace,
    plural: "terraformmachines",
    body: {
      apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
      kind: "TerraformMachine",
      metadata: {
        name,
        labels: { "cluster.x-k8s.io/cluster-name": clusterName },
        ...options.metadata,
        ...(owner && {
          ownerReferences: [{ apiVersion: "cluster.x-k8s.io/v1beta2", kind: "Machine", ...owner, ...(controller ? { controller } : {}) }],
        }),
      },
      spec: { source: { image }, ...options.spec },
    },
  });
}

/** A TerraformMachine of an externally managed cluster (shared by the namespace's machines), with its Machine and bootstrap data. */
export async function createMachine(
  plane: PlaneClients,
  namespace: string,
  name: string,
  image: string,
  extra: {
    /** The externally managed cluster's name; default "ext". */
    clusterName?: string;
    clusterSpec?: Record<string, unknown>;
    machineSpec?: Record<string, unknown>;
    /** Over the TerraformMachine's metadata (its name and cluster label). */
    metadata?: Record<string, unknown>;
    /** The Machine's spec.bootstrap; default: it names the bootstrap data Secret created here. */
    bootstrap?: Record<string, unknown>;
  } = {},
): Promise<void> {
  const clusterName = extra.clusterName ?? "ext";
  await createExternalCluster(plane, namespace, extra.clusterSpec, clusterName);
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
      metadata: { name, labels: { "cluster.x-k8s.io/cluster-name": clusterName } },
      spec: {
        clusterName,
        bootstrap: extra.bootstrap ?? { dataSecretName: `${name}-bootstrap` },
        infrastructureRef: { apiGroup: "infrastructure.cluster.x-k8s.io", kind: "TerraformMachine", name },
      },
    },
  })) as { metadata: { uid: string } };
  const owner = { name, uid: machine.metadata.uid };
  await createTerraformMachine(plane, namespace, name, image, { owner, clusterName, metadata: extra.metadata, spec: extra.machineSpec });
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
