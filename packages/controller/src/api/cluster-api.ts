import type { ResourceType } from "./resource.js";

/** The Cluster API contract captf implements: the group and version of the objects it reads and writes, in one place. */
export const capiGroup = "cluster.x-k8s.io";
export const capiVersion = "v1beta2";
export const capiGroupVersion = `${capiGroup}/${capiVersion}`;
/** Cluster API's kubeadm bootstrap and control-plane providers, at the same version: what the generated flavors name. */
export const kubeadmBootstrapGroup = "bootstrap.cluster.x-k8s.io";
export const kubeadmControlPlaneGroup = "controlplane.cluster.x-k8s.io";
/** Where the Cluster API Machines and Clusters are read: the v1beta2 contract. */
export const clusterApiCoordinates = { group: capiGroup, version: capiVersion } as const;

const capiType = (kind: string, plural: string): ResourceType => ({
  group: capiGroup,
  version: capiVersion,
  kind,
  plural,
  namespaced: true,
});
/** The Cluster API resource types the manager watches. */
export const capiTypes = {
  cluster: capiType("Cluster", "clusters"),
  machine: capiType("Machine", "machines"),
  machinePool: capiType("MachinePool", "machinepools"),
} as const;
