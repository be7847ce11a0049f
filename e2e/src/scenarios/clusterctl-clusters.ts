// What the clusterctl scenarios share: the clusters they generate (each in a namespace of its own),
// the identity those run under, and a snapshot of everything of a namespace that clusterctl move
// carries. clusterctl-generate.ts brings the clusters up; clusterctl-move.ts moves two of them.
import { gunzipSync } from "node:zlib";
import * as k8s from "@kubernetes/client-node";
import { waitFor } from "@captf/testkit";
import { applyObjects } from "../apply.js";
import { managerNamespace } from "../captf-install.js";
import { clusterctl } from "../clusterctl.js";
import type { CustomObject, CustomObjectList, TerraformStatus } from "../objects.js";
import { formatProgress, readProgress } from "../progress.js";
import type { SharedPlane } from "./shared-plane.js";

/** An object of any kind clusterctl move carries, with the spec fields read here (a Terraform object's source, a Cluster's paused). */
type Moved = CustomObject<{ source?: { image: string }; paused?: boolean; [field: string]: unknown }, TerraformStatus>;

export const kubernetesVersion = "v1.36.3";
export const capiApi = { group: "cluster.x-k8s.io", version: "v1beta2" };
export const infraApi = { group: "infrastructure.cluster.x-k8s.io", version: "v1alpha1" };
const infraPlurals = ["terraformclusters", "terraformmachines", "terraformmachinepools"] as const;
const capiPlurals = ["clusters", "machinedeployments", "machinesets", "machines", "machinepools"] as const;
const stateSelector = "tfstateSecretSuffix";

// Two clusters of the default flavor, each in a namespace of its own: one moved idle, one moved while a Job runs.
export const idle = { namespace: "move-idle", cluster: "idle" };
export const busy = { namespace: "move-busy", cluster: "busy" };
export const flavorsNamespace = "clusterctl-flavors";
// A cluster of the ClusterClass flavor, brought to Ready and deleted.
export const ofClass = { namespace: "clusterclass-ready", cluster: "of-class" };
// The identity the generated clusters run under: a credential the no-op modules never read, usable from the e2e's namespaces.
export const identityName = "clusterctl-e2e";

/** The state's lineage and serial, from a kubernetes-backend Secret's data (gzip, base64). */
export function decodedState(tfstate: string): { lineage: string; serial: number } {
  const { lineage, serial } = JSON.parse(gunzipSync(Buffer.from(tfstate, "base64")).toString()) as { lineage: string; serial: number };
  return { lineage, serial };
}

/** A Secret captf keeps for an object (durable inputs, state backups, credential mirrors): owned by a Terraform object. */
const ownedByTerraformObject = (secret: k8s.V1Secret) =>
  secret.metadata?.ownerReferences?.some((reference) => reference.apiVersion.startsWith(`${infraApi.group}/`)) ?? false;

/**
 * Everything of one namespace clusterctl move carries: the objects by kind and name (spec and status), the state Secrets' data, and the
 * data of every other Secret a Terraform object owns.
 */
export async function snapshot(kubeConfig: k8s.KubeConfig, namespace: string) {
  const custom = kubeConfig.makeApiClient(k8s.CustomObjectsApi);
  const objects: Record<string, { spec: Moved["spec"]; status?: Moved["status"]; annotations: Record<string, string> }> = {};
  for (const [api, plurals] of [
    [infraApi, infraPlurals],
    [capiApi, capiPlurals],
  ] as const) {
    for (const plural of plurals) {
      // A plane whose CRDs clusterctl just made answers 429 "storage is (re)initializing" for a moment.
      const listed = await waitFor(
        async () =>
          (await custom
            .listNamespacedCustomObject({ ...api, namespace, plural })
            .catch((error: { code?: number }) => (error.code === 429 ? undefined : Promise.reject(error)))) as
            | CustomObjectList<Moved>
            | undefined,
        30_000,
        `listing ${plural}`,
      );
      for (const object of listed.items) {
        objects[`${object.kind}/${object.metadata.name}`] = {
          spec: object.spec,
          status: object.status,
          annotations: object.metadata.annotations ?? {},
        };
      }
    }
  }
  const secrets = (await kubeConfig.makeApiClient(k8s.CoreV1Api).listNamespacedSecret({ namespace })).items;
  const states = Object.fromEntries(
    secrets
      .filter((secret) => secret.metadata?.labels?.[stateSelector] !== undefined)
      .map((secret) => [secret.metadata!.name!, secret.data!.tfstate!]),
  );
  const owned = Object.fromEntries(
    secrets
      .filter((secret) => secret.metadata?.labels?.[stateSelector] === undefined && ownedByTerraformObject(secret))
      .map((secret) => [secret.metadata!.name!, secret.data ?? {}]),
  );
  return { objects, states, owned };
}

/** The plane's side of the clusterctl scenarios: waits, `clusterctl generate cluster` and the identity, all on the shared plane. */
export function clusterctlClusters(shared: SharedPlane) {
  const plane = () => shared.plane;
  const progressTable = async (at: { namespace: string; cluster: string }) =>
    formatProgress((await readProgress(plane().kubeConfig, at.namespace, at.cluster)).rows);
  const waitReady = async (at: { namespace: string; cluster: string }) => {
    await waitFor(
      async () => ((await readProgress(plane().kubeConfig, at.namespace, at.cluster)).ready ? true : undefined),
      300_000,
      `${at.namespace}/${at.cluster} Ready`,
    ).catch(async (error) => {
      throw new Error(
        `${(error as Error).message}\nnow:\n${await progressTable(at)}\nplane:\n${shared.planeLog.slice(-30).join("\n")}\n` +
          `manager:\n${(await plane().managerLog()).split("\n").slice(-30).join("\n")}`,
      );
    });
  };
  const registry = () => plane().images.modules.cluster.slice(0, plane().images.modules.cluster.indexOf("/"));
  const generate = async (flavor: string, name: string, targetNamespace: string, env: Record<string, string>, workers = 1) => {
    const run = await clusterctl(
      plane().clusterctlRepository,
      plane().kubeconfigPath,
      [
        "generate",
        "cluster",
        name,
        "--target-namespace",
        targetNamespace,
        "--kubernetes-version",
        kubernetesVersion,
        "--worker-machine-count",
        String(workers),
        ...(flavor ? ["--flavor", flavor] : []),
      ],
      env,
    );
    return k8s.loadAllYaml(run.stdout).filter(Boolean) as k8s.KubernetesObject[];
  };
  const applyIdentity = () =>
    applyObjects(plane().applier, [
      {
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: identityName, namespace: managerNamespace },
        stringData: { NOOP_API_TOKEN: "unused" },
      } as k8s.KubernetesObject,
      {
        apiVersion: `${infraApi.group}/${infraApi.version}`,
        kind: "TerraformClusterIdentity",
        metadata: { name: identityName },
        spec: {
          secretRef: { name: identityName, namespace: managerNamespace },
          requiredKeys: ["NOOP_API_TOKEN"],
          allowedNamespaces: { list: [idle.namespace, busy.namespace, flavorsNamespace, ofClass.namespace] },
        },
      } as k8s.KubernetesObject,
    ]);
  return { plane, progressTable, waitReady, registry, generate, applyIdentity };
}
