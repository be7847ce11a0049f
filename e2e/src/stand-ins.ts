// What the e2e plane stands in for, because captf is only an infrastructure provider:
// - a control plane provider (StandInControlPlane, and KubeadmControlPlane, whose CRD clusterctl
//   installs but whose controller does not run here: the ClusterClass flavor names it): once the
//   Cluster's infrastructure is provisioned it reports the control plane initialized and available
//   and writes the `<cluster>-kubeconfig` Secret, as KubeadmControlPlane would; the workload
//   cluster is the management plane itself;
// - kubeadm's bootstrap provider: each KubeadmConfig gets its bootstrap data Secret (an empty
//   cloud-config) and reports it created, as the kubeadm bootstrap controller would;
// - kubelets joining: for every providerID Cluster API learns from captf (a Machine's
//   spec.providerID, a MachinePool's spec.providerIDList) a Node with that providerID is
//   registered, and its Ready condition renewed, as a kubelet on the new instance would.
import * as k8s from "@kubernetes/client-node";
import { fileURLToPath } from "node:url";
import { errorText, loadManifest } from "./apply.js";
import type { BootstrapConfig, Cluster, ControlPlane, CustomObjectList, Machine, MachinePool } from "./objects.js";

export const standInGroup = "controlplane.e2e.captf.io";
export const standInKind = "StandInControlPlane";
/** Nodes registered by the stand-in kubelets carry this label. */
export const standInNodeLabel = "e2e.captf.io/stand-in-kubelet";

const capi = { group: "cluster.x-k8s.io", version: "v1beta2" };

/** The control plane kinds the stand-in reports ready. */
const controlPlaneKinds = [
  { group: standInGroup, version: "v1alpha1", plural: "standincontrolplanes", kind: standInKind },
  { group: "controlplane.cluster.x-k8s.io", version: "v1beta2", plural: "kubeadmcontrolplanes", kind: "KubeadmControlPlane" },
] as const;
/** The bootstrap kind the stand-in gives data. */
const bootstrapKind = { group: "bootstrap.cluster.x-k8s.io", version: "v1beta2", plural: "kubeadmconfigs" } as const;
const clusterNameLabel = "cluster.x-k8s.io/cluster-name";

/** A `.catch` for a create: AlreadyExists (made by an earlier tick) is done, anything else is thrown again. */
const ignoreAlreadyExists = (error: unknown) => ((error as { code?: number }).code === 409 ? undefined : Promise.reject(error));

/** The stand-in control plane's CRD (a manifest of the e2e), labelled with the Cluster API contract it implements. */
export function standInControlPlaneCrd(): k8s.KubernetesObject[] {
  return loadManifest(fileURLToPath(new URL("../manifests/stand-ins/standincontrolplane-crd.yaml", import.meta.url)), {});
}

/** The node name a stand-in kubelet registers for a providerID: its path, as a DNS label sequence. */
export function nodeNameFor(providerId: string): string {
  return providerId
    .replace(/^[a-z0-9-]+:\/\/\/?/, "")
    .toLowerCase()
    .replace(/[^a-z0-9.-]+/g, "-")
    .replace(/^[-.]+|[-.]+$/g, "")
    .slice(0, 253);
}

export interface StandIns {
  /** Providers IDs whose stand-in kubelet reports NotReady (the health scenario's broken instance). */
  readonly notReady: Set<string>;
  stop(): Promise<void>;
}

/** Starts both stand-ins; they act once a second and renew Node heartbeats every 10 s. */
export function startStandIns(options: { kubeConfig: k8s.KubeConfig; workloadKubeconfig: string; log: (line: string) => void }): StandIns {
  const custom = options.kubeConfig.makeApiClient(k8s.CustomObjectsApi);
  const core = options.kubeConfig.makeApiClient(k8s.CoreV1Api);
  const notReady = new Set<string>();
  const heartbeats = new Map<string, number>();
  let stopped = false;
  let lastError = "";

  const tick = async () => {
    for (const kind of controlPlaneKinds) await reconcileControlPlanes(kind);
    await reconcileBootstrapConfigs();
    await reconcileNodes();
  };

  const reconcileControlPlanes = async (kind: (typeof controlPlaneKinds)[number]) => {
    const planes = (await custom.listClusterCustomObject({
      group: kind.group,
      version: kind.version,
      plural: kind.plural,
    })) as CustomObjectList<ControlPlane>;
    for (const plane of planes.items) {
      const { namespace, name } = plane.metadata;
      if (plane.metadata.deletionTimestamp || plane.status?.initialization?.controlPlaneInitialized) continue;
      const clusters = (await custom.listNamespacedCustomObject({ ...capi, namespace, plural: "clusters" })) as CustomObjectList<Cluster>;
      const cluster = clusters.items.find(
        (candidate) => candidate.spec?.controlPlaneRef?.name === name && candidate.spec?.controlPlaneRef?.kind === kind.kind,
      );
      if (!cluster?.status?.initialization?.infrastructureProvisioned) continue;
      const owner = {
        apiVersion: `${capi.group}/${capi.version}`,
        kind: "Cluster",
        name: cluster.metadata.name,
        uid: cluster.metadata.uid,
      };
      await core
        .createNamespacedSecret({
          namespace,
          body: {
            metadata: {
              name: `${cluster.metadata.name}-kubeconfig`,
              labels: { [clusterNameLabel]: cluster.metadata.name },
              ownerReferences: [owner],
            },
            type: "cluster.x-k8s.io/secret",
            stringData: { value: options.workloadKubeconfig },
          },
        })
        .catch(ignoreAlreadyExists);
      const now = new Date().toISOString();
      await custom.patchNamespacedCustomObjectStatus(
        {
          group: kind.group,
          version: kind.version,
          namespace,
          plural: kind.plural,
          name,
          body: {
            status: {
              initialization: { controlPlaneInitialized: true },
              version: plane.spec?.version,
              conditions: [
                {
                  type: "Available",
                  status: "True",
                  reason: "Available",
                  message: "",
                  lastTransitionTime: now,
                  observedGeneration: plane.metadata.generation,
                },
              ],
            },
          },
        },
        k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
      );
      options.log(`stand-in control plane ${kind.kind} ${namespace}/${name}: initialized, ${cluster.metadata.name}-kubeconfig written`);
    }
  };

  const reconcileBootstrapConfigs = async () => {
    const configs = (await custom.listClusterCustomObject({ ...bootstrapKind })) as CustomObjectList<BootstrapConfig>;
    for (const config of configs.items) {
      const { namespace, name, uid } = config.metadata;
      if (config.metadata.deletionTimestamp || config.status?.initialization?.dataSecretCreated) continue;
      const clusterName = config.metadata.labels?.[clusterNameLabel];
      await core
        .createNamespacedSecret({
          namespace,
          body: {
            metadata: {
              name,
              labels: clusterName ? { [clusterNameLabel]: clusterName } : {},
              ownerReferences: [{ apiVersion: config.apiVersion, kind: config.kind, name, uid, controller: true }],
            },
            type: "cluster.x-k8s.io/secret",
            stringData: { format: "cloud-config", value: "#cloud-config\n" },
          },
        })
        .catch(ignoreAlreadyExists);
      await custom.patchNamespacedCustomObjectStatus(
        { ...bootstrapKind, namespace, name, body: { status: { initialization: { dataSecretCreated: true }, dataSecretName: name } } },
        k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
      );
      options.log(`stand-in bootstrap ${namespace}/${name}: data Secret written`);
    }
  };

  const reconcileNodes = async () => {
    const wanted = new Set<string>();
    const machines = (await custom.listClusterCustomObject({ ...capi, plural: "machines" })) as CustomObjectList<Machine>;
    for (const machine of machines.items)
      if (machine.spec?.providerID && !machine.metadata.deletionTimestamp) wanted.add(machine.spec.providerID);
    const pools = (await custom.listClusterCustomObject({ ...capi, plural: "machinepools" })) as CustomObjectList<MachinePool>;
    for (const pool of pools.items) if (!pool.metadata.deletionTimestamp) for (const id of pool.spec?.providerIDList ?? []) wanted.add(id);

    const nodes = await core.listNode({ labelSelector: standInNodeLabel });
    const existing = new Map(nodes.items.map((node) => [node.spec?.providerID ?? "", node]));
    const now = Date.now();
    for (const providerId of wanted) {
      const name = nodeNameFor(providerId);
      if (!existing.has(providerId)) {
        await core
          .createNode({ body: { metadata: { name, labels: { [standInNodeLabel]: "true" } }, spec: { providerID: providerId } } })
          .catch(ignoreAlreadyExists);
        options.log(`stand-in kubelet: node ${name} joined (${providerId})`);
        heartbeats.delete(name);
      }
      const ready = !notReady.has(providerId);
      const last = heartbeats.get(name);
      const reported = existing.get(providerId)?.status?.conditions?.find((condition) => condition.type === "Ready")?.status;
      if (last !== undefined && now - last < 10_000 && reported === (ready ? "True" : "False")) continue;
      await patchNodeReady(core, name, ready);
      heartbeats.set(name, now);
    }
  };

  const loop = (async () => {
    while (!stopped) {
      try {
        await tick();
        lastError = "";
      } catch (error) {
        const text = errorText(error);
        if (text !== lastError) options.log(`stand-ins: ${text}`);
        lastError = text;
      }
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  })();

  return {
    notReady,
    async stop() {
      stopped = true;
      await loop;
    },
  };
}

async function patchNodeReady(core: k8s.CoreV1Api, name: string, ready: boolean): Promise<void> {
  const now = new Date().toISOString();
  await core.patchNodeStatus(
    {
      name,
      body: {
        status: {
          conditions: [
            {
              type: "Ready",
              status: ready ? "True" : "False",
              reason: ready ? "KubeletReady" : "KubeletNotReady",
              message: ready ? "stand-in kubelet is posting ready status" : "stand-in kubelet reports the instance unhealthy",
              lastHeartbeatTime: now,
              lastTransitionTime: now,
            },
            ...(["MemoryPressure", "DiskPressure", "PIDPressure"] as const).map((type) => ({
              type,
              status: "False",
              reason: `KubeletHasNo${type}`,
              message: `stand-in kubelet has no ${type}`,
              lastHeartbeatTime: now,
              lastTransitionTime: now,
            })),
          ],
          nodeInfo: {
            architecture: "amd64",
            bootID: "",
            containerRuntimeVersion: "stand-in://1",
            kernelVersion: "",
            kubeProxyVersion: "",
            kubeletVersion: "v1.36.3",
            machineID: "",
            operatingSystem: "linux",
            osImage: "captf e2e stand-in",
            systemUUID: "",
          },
        },
      },
    },
    k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.StrategicMergePatch),
  );
}
