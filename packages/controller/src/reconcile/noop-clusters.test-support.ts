// bench/controller-fixtures.mjs's objects on a test's plane: an identity, externally managed clusters
// (no cluster Job) and machines of the no-op module, each a Machine owning its TerraformMachine, whose
// Jobs bench/lib/controller-jobs.mjs's stand-in kubelet completes.
import { apiGroup, apiVersion, labels } from "@captf/contract/api";
import { mergePatchOptions, type PlaneClients } from "./plane.test-support.js";
import type { CapiObject } from "./read-back.test-support.js";

export const capiGroup = { group: "cluster.x-k8s.io", version: "v1beta2" };
export const infraGroup = { group: apiGroup, version: apiVersion };

function creator(plane: PlaneClients, namespace: string) {
  return (group: typeof capiGroup | typeof infraGroup, plural: string, body: Record<string, unknown>) =>
    plane.custom.createNamespacedCustomObject({
      ...group,
      namespace,
      plural,
      body: { apiVersion: `${group.group}/${group.version}`, ...body },
    }) as Promise<CapiObject>;
}

/** The credentials Secret and a TerraformClusterIdentity `identityName` allowing `namespace` only. */
export async function createNoopIdentity(plane: PlaneClients, namespace: string, identityName: string): Promise<void> {
  await plane.core.createNamespacedSecret({ namespace, body: { metadata: { name: "credentials" }, stringData: { NOOP_TOKEN: "test" } } });
  await plane.custom.createClusterCustomObject({
    ...infraGroup,
    plural: "terraformclusteridentities",
    body: {
      apiVersion: `${infraGroup.group}/${infraGroup.version}`,
      kind: "TerraformClusterIdentity",
      metadata: { name: identityName },
      spec: { type: "Secret", secretRef: { name: "credentials", namespace }, allowedNamespaces: { list: [namespace] } },
    },
  });
}

/** An externally managed TerraformCluster `cluster` of `identityName` and its Cluster. */
export async function createNoopCluster(plane: PlaneClients, namespace: string, cluster: string, identityName: string): Promise<void> {
  const create = creator(plane, namespace);
  await create(infraGroup, "terraformclusters", {
    kind: "TerraformCluster",
    metadata: { name: cluster, annotations: { "cluster.x-k8s.io/managed-by": "external" } },
    spec: { source: { image: "registry.invalid/unused:v1" }, identityRef: { name: identityName } },
  });
  await create(capiGroup, "clusters", {
    kind: "Cluster",
    metadata: { name: cluster },
    spec: { infrastructureRef: { apiGroup: infraGroup.group, kind: "TerraformCluster", name: cluster } },
  });
}

/** Machine `machine` of `cluster` with its bootstrap Secret, owning TerraformMachine `machine`; resolves to the TerraformMachine's uid. */
export async function createNoopMachine(plane: PlaneClients, namespace: string, cluster: string, machine: string): Promise<string> {
  const create = creator(plane, namespace);
  const clusterLabel = { [labels.clusterName]: cluster };
  await plane.core.createNamespacedSecret({
    namespace,
    body: {
      metadata: { name: `${machine}-bootstrap`, labels: clusterLabel },
      stringData: { value: "#cloud-config\n", format: "cloud-config" },
    },
  });
  const owner = await create(capiGroup, "machines", {
    kind: "Machine",
    metadata: { name: machine, labels: clusterLabel },
    spec: {
      clusterName: cluster,
      bootstrap: { dataSecretName: `${machine}-bootstrap` },
      infrastructureRef: { apiGroup: infraGroup.group, kind: "TerraformMachine", name: machine },
    },
  });
  const ownerReference = {
    apiVersion: `${capiGroup.group}/${capiGroup.version}`,
    kind: "Machine",
    name: machine,
    uid: owner.metadata.uid!,
  };
  const created = await create(infraGroup, "terraformmachines", {
    kind: "TerraformMachine",
    metadata: { name: machine, labels: clusterLabel, ownerReferences: [{ ...ownerReference, controller: true, blockOwnerDeletion: true }] },
    spec: { source: { image: "registry.invalid/captf/noop-machine:v0.1.0" } },
  });
  return created.metadata.uid!;
}

/** Once no manager runs: the finalizers off the objects (so the namespace can go), the identity and the namespace deleted. */
export async function removeNoopObjects(
  plane: PlaneClients | undefined,
  namespace: string,
  names: { clusters: readonly string[]; machines: readonly string[]; identity: string },
): Promise<void> {
  for (const [plural, objects] of [
    ["terraformmachines", names.machines],
    ["terraformclusters", names.clusters],
  ] as const)
    for (const name of objects)
      await plane?.custom
        .patchNamespacedCustomObject(
          { ...infraGroup, namespace, plural, name, body: { metadata: { finalizers: null } } },
          mergePatchOptions(),
        )
        .catch(() => undefined);
  await plane?.custom
    .deleteClusterCustomObject({ ...infraGroup, plural: "terraformclusteridentities", name: names.identity })
    .catch(() => undefined);
  await plane?.core.deleteNamespace({ name: namespace }).catch(() => undefined);
}
