// What bench/controller.mjs puts on the plane before the manager starts: the CRDs, and a
// workload cluster of N machines modelled on manager-e2e.integration.test.ts. Everything a
// cluster needs (namespace, identity, Cluster, TerraformCluster) is made in createClusterFixtures
// and everything a machine needs in createMachineFixtures: the one place to add a fixture when
// the reconciler starts to need more (durable inputs, run leases, runner RBAC, …).
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { loadDependency, repo } from "./controller-packages.mjs";

const { parseAllDocuments } = await loadDependency("yaml");

export const infra = { group: "infrastructure.cluster.x-k8s.io", version: "v1alpha1" };
const capi = { group: "cluster.x-k8s.io", version: "v1beta2" };
const type = (group, version, plural, kind, namespaced = true) => ({ group, version, plural, kind, namespaced });
export const types = {
  crd: type("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", false),
  namespace: type("", "v1", "namespaces", "Namespace", false),
  secret: type("", "v1", "secrets", "Secret"),
  event: type("", "v1", "events", "Event"),
  pod: type("", "v1", "pods", "Pod"),
  job: type("batch", "v1", "jobs", "Job"),
  cluster: type(capi.group, capi.version, "clusters", "Cluster"),
  machine: type(capi.group, capi.version, "machines", "Machine"),
  terraformCluster: type(infra.group, infra.version, "terraformclusters", "TerraformCluster"),
  terraformMachine: type(infra.group, infra.version, "terraformmachines", "TerraformMachine"),
  identity: type(infra.group, infra.version, "terraformclusteridentities", "TerraformClusterIdentity", false),
  clusterRole: type("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", false),
};

/**
 * kube-controller-manager's client rate limit on the benches' planes: its default (20 requests/s, burst
 * 30) lets its Job controller mark only about 5 Jobs Complete per second, so it, not the manager, would
 * set the pace (measured: Pod Succeeded -> Job Complete p50 38 s at 300 machines, 72 s at 1,000).
 */
export const benchControllerManagerFlags = ["--kube-api-qps=300", "--kube-api-burst=600", "--concurrent-job-syncs=20"];

/** The module image the TerraformMachines name; never pulled (no kubelet runs the Pods). */
export const moduleImage = "registry.invalid/captf/noop-machine:v0.1.0";
export const clusterName = "bench";
export const identityName = "bench";
export const machineName = (index, total) => `m-${String(index).padStart(String(total - 1).length, "0")}`;

/** Runs `fn` over `items` with at most `limit` at once; rejects on the first failure. */
export async function inParallel(items, limit, fn) {
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const item = items[next++];
      await fn(item);
    }
  });
  await Promise.all(workers);
}

async function until(what, timeoutMillis, check) {
  const deadline = Date.now() + timeoutMillis;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMillis / 1000}s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** captf's CRDs (packages/controller/config/crd) and the Cluster API ones, each Established. */
export async function installCrds(client, capiCrdPaths) {
  const crdDir = join(repo, "packages/controller/config/crd");
  const files = [
    ...readdirSync(crdDir)
      .filter((file) => file.endsWith(".yaml"))
      .map((file) => join(crdDir, file)),
    ...capiCrdPaths,
  ];
  const bodies = files
    .flatMap((file) => parseAllDocuments(readFileSync(file, "utf8")).map((document) => document.toJS()))
    .filter((body) => body?.kind === "CustomResourceDefinition");
  await Promise.all(bodies.map((body) => client.create(types.crd, undefined, body)));
  const names = bodies.map((body) => body.metadata.name);
  await Promise.all(
    names.map((name) =>
      until(`CRD ${name} Established`, 60_000, async () => {
        const crd = await client.get(types.crd, undefined, name);
        return crd.status?.conditions?.some((c) => c.type === "Established" && c.status === "True") ? true : undefined;
      }),
    ),
  );
  return names.length;
}

/**
 * What the install puts cluster-wide (the runner's ClusterRole, which the manager binds in each
 * namespace), the namespace and the cluster every machine belongs to: a credentials Secret and the
 * TerraformClusterIdentity `bench` allowing the namespace, a Cluster, and its TerraformCluster
 * managed externally (annotation cluster.x-k8s.io/managed-by) so machines get `{}` exports and
 * no cluster Job runs, with spec.identityRef naming the identity.
 */
export async function createClusterFixtures(client, namespace, runnerRole) {
  if (runnerRole)
    await client.create(types.clusterRole, undefined, { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", ...runnerRole });
  await client.create(types.namespace, undefined, { apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } });
  await client.create(types.secret, namespace, {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "bench-credentials" },
    stringData: { NOOP_TOKEN: "bench" },
  });
  await client.create(types.identity, undefined, {
    apiVersion: `${infra.group}/${infra.version}`,
    kind: "TerraformClusterIdentity",
    metadata: { name: identityName },
    spec: { type: "Secret", secretRef: { name: "bench-credentials", namespace }, allowedNamespaces: { list: [namespace] } },
  });
  await client.create(types.terraformCluster, namespace, {
    apiVersion: `${infra.group}/${infra.version}`,
    kind: "TerraformCluster",
    metadata: { name: clusterName, annotations: { "cluster.x-k8s.io/managed-by": "external" } },
    spec: { source: { image: "registry.invalid/unused:v1" }, identityRef: { name: identityName } },
  });
  await client.create(types.cluster, namespace, {
    apiVersion: `${capi.group}/${capi.version}`,
    kind: "Cluster",
    metadata: { name: clusterName },
    spec: { infrastructureRef: { apiGroup: infra.group, kind: "TerraformCluster", name: clusterName } },
  });
}

/** One machine: its bootstrap Secret, its Machine, and the TerraformMachine the Machine owns. */
export async function createMachineFixtures(client, namespace, name) {
  await client.create(types.secret, namespace, {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: `${name}-bootstrap`, labels: { "cluster.x-k8s.io/cluster-name": clusterName } },
    stringData: { value: "#cloud-config\n", format: "cloud-config" },
  });
  const machine = await client.create(types.machine, namespace, {
    apiVersion: `${capi.group}/${capi.version}`,
    kind: "Machine",
    metadata: { name, labels: { "cluster.x-k8s.io/cluster-name": clusterName } },
    spec: {
      clusterName,
      bootstrap: { dataSecretName: `${name}-bootstrap` },
      infrastructureRef: { apiGroup: infra.group, kind: "TerraformMachine", name },
    },
  });
  await client.create(types.terraformMachine, namespace, {
    apiVersion: `${infra.group}/${infra.version}`,
    kind: "TerraformMachine",
    metadata: {
      name,
      labels: { "cluster.x-k8s.io/cluster-name": clusterName },
      ownerReferences: [
        {
          apiVersion: `${capi.group}/${capi.version}`,
          kind: "Machine",
          name,
          uid: machine.metadata.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: { source: { image: moduleImage } },
  });
}
