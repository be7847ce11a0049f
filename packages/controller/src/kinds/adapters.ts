import { decodeOutputs, replacingMergePatch, type JsonValue } from "@captf/contract";
import { annotations, labels, replicasManagedByValue } from "@captf/contract/api";
import { stateSecretSuffix } from "@captf/render";
import { readStateEncryption } from "../state/encryption-secret.js";
import { readState } from "../state/read-state.js";
import { capiGroup, capiTypes } from "../api/cluster-api.js";
import { maxPublishedExportsBytes } from "../api/terraformcluster.js";
import type { StateEncryption } from "../api/workspace.js";
import { readBootstrapSecret, readObject, type PassReads, type TerraformClusterObject } from "../reconcile/pass-reads.js";
import type { KindAdapter, ReconcilerDeps, WorkspaceObject } from "../reconcile/types.js";
import { decideRemediation, effectiveRemediation, nextUnhealthySamples, type StoredRemediation } from "./machine-remediation.js";
import { ownerMismatch, type InfrastructureReference } from "./owner-check.js";
import { decideReplicasWriteBack, type MachinePoolReplicas } from "./pool-autoscaling.js";
import { clusterContractFields, machineContractFields, machinePoolContractFields } from "./map-outputs.js";
import { clusterInputs, machineInputs, machinePoolInputs, type InputsPending, type NamespacedMeta } from "./render-inputs.js";

/** How each kind builds its inputs from its Cluster API owners and maps its outputs back. */

/**
 * Why an object has no inputs while its Cluster API owner is missing: undefined (WaitingForOwner) while it has
 * no owner at all; WaitingForOwnerMachine(Pool) while another owner (a control plane) holds it before its
 * Machine (MachinePool) does; OwnerNotFound when the owner it references does not exist.
 */
function ownerWait(
  object: WorkspaceObject,
  owner: "Machine" | "MachinePool" | "Cluster",
  referenced: string | undefined,
  clusterName = object.metadata.labels?.[labels.clusterName] ?? "",
): { clusterName: string; inputs: InputsPending } | undefined {
  if (referenced !== undefined)
    return {
      clusterName,
      inputs: {
        pending: true,
        reason: "OwnerNotFound",
        message: `${owner} ${referenced}, named in this object's ownerReferences, does not exist`,
      },
    };
  if (owner === "Cluster" || !object.metadata.ownerReferences?.length) return undefined;
  const others = object.metadata.ownerReferences.map((ref) => `${ref.kind} ${ref.name}`).join(", ");
  return {
    clusterName,
    inputs: {
      pending: true,
      reason: owner === "Machine" ? "WaitingForOwnerMachine" : "WaitingForOwnerMachinePool",
      message: `owned by ${others}, not by a ${owner} yet: waiting for Cluster API to set its ${owner} as owner`,
    },
  };
}

function getCapi<T>(deps: ReconcilerDeps, namespace: string, plural: "machines" | "machinepools", name: string): Promise<T | undefined> {
  return readObject<T>(deps.cache, deps.client, plural === "machines" ? capiTypes.machine : capiTypes.machinePool, namespace, name);
}

/** What a cluster's applied state gives its machines and pools: `exports`, and the names of its failure domains. */
interface ClusterStateOutputs {
  exports: JsonValue;
  failureDomainNames: string[];
}

/**
 * The cluster's outputs as its machines and pools receive them, from one read of its state (reference:
 * `cluster_failure_domains` comes from the state, never status, so it cannot lag the exports); undefined
 * until the cluster has applied. An externally managed TerraformCluster runs no module: `{}` and the
 * failure domains its manager publishes in status.
 */
export async function clusterStateOutputs(
  deps: ReconcilerDeps,
  reads: PassReads,
  namespace: string,
  clusterName: string,
): Promise<ClusterStateOutputs | undefined> {
  if (!clusterName) return undefined;
  const terraformCluster = await reads.terraformCluster(clusterName);
  if (!terraformCluster) return undefined;
  if (terraformCluster.metadata.annotations?.[annotations.managedBy] !== undefined) {
    return {
      exports: {},
      failureDomainNames: (terraformCluster.status?.failureDomains ?? [])
        .map((domain) => domain.name)
        .filter((name): name is string => Boolean(name)),
    };
  }
  // A cluster whose state is encrypted is read with its own key; without a usable key its machines wait, as the cluster does.
  const encryption = await readStateEncryption(deps.client, namespace, clusterStateEncryption(terraformCluster));
  if (encryption.kind === "unavailable") return undefined;
  const state = await readState(
    deps.client,
    namespace,
    stateSecretSuffix({ role: "cluster", namespace, name: terraformCluster.metadata.name }),
    undefined,
    encryption.kind === "ready" ? encryption.decryption : undefined,
  );
  if (state.kind !== "ok" || !state.state.inputsHash) return undefined;
  const failureDomains = decodeOutputs("cluster", state.state.outputs).outputs.failure_domains;
  return {
    exports: (state.state.outputs.exports as JsonValue | undefined) ?? {},
    failureDomainNames: failureDomains.state === "ok" ? failureDomains.value.map((domain) => domain.name) : [],
  };
}

/** The TerraformCluster's spec.stateEncryption (the pass reads only the spec fields it uses). */
function clusterStateEncryption(terraformCluster: TerraformClusterObject): StateEncryption | undefined {
  return (terraformCluster.spec as { stateEncryption?: StateEncryption } | undefined)?.stateEncryption;
}

export const machineAdapter: KindAdapter<"machine"> = {
  role: "machine",
  kind: "TerraformMachine",
  plural: "terraformmachines",
  async observeInputs(deps, object, { reads }) {
    const ownerRef = object.metadata.ownerReferences?.find((ref) => ref.kind === "Machine" && ref.apiVersion.startsWith(`${capiGroup}/`));
    if (!ownerRef) return ownerWait(object, "Machine", undefined);
    const namespace = object.metadata.namespace;
    const machine = await getCapi<{
      metadata: NamespacedMeta & { uid?: string };
      spec?: {
        clusterName?: string;
        failureDomain?: string;
        version?: string;
        bootstrap?: { dataSecretName?: string };
        infrastructureRef?: InfrastructureReference;
      };
    }>(deps, namespace, "machines", ownerRef.name);
    if (!machine) return ownerWait(object, "Machine", ownerRef.name);
    const clusterName = machine.spec?.clusterName ?? machine.metadata.labels?.[labels.clusterName] ?? "";
    const mismatch = ownerMismatch({
      owner: { kind: "Machine", metadata: machine.metadata, infrastructureRef: machine.spec?.infrastructureRef, clusterName },
      ...(ownerRef.uid ? { ownerReferenceUid: ownerRef.uid } : {}),
      object: { kind: "TerraformMachine", metadata: object.metadata },
    });
    if (mismatch) return { clusterName, inputs: mismatch };
    const exports = (await clusterStateOutputs(deps, reads, namespace, clusterName))?.exports;
    const secretName = machine.spec?.bootstrap?.dataSecretName;
    const bootstrap = secretName ? await readBootstrapSecret(deps, namespace, secretName) : undefined;
    return {
      clusterName,
      inputs: machineInputs({ cluster: { name: clusterName, namespace }, machine, terraformMachine: object }, exports, bootstrap),
    };
  },
  async ownerWriteBack(deps, object, { status, events, subject, health, sampled, provisioned, terraformCluster }) {
    if (!health || !provisioned) return [];
    const previous = object.status?.unhealthySamples ?? 0;
    const samples = sampled ? nextUnhealthySamples(previous, health.reason) : previous;
    status.unhealthySamples = samples > 0 ? samples : null;
    deps.metrics?.unhealthySamples.set({ namespace: object.metadata.namespace, name: object.metadata.name }, samples);
    const policy = effectiveRemediation(
      object.spec.remediation as StoredRemediation | undefined,
      terraformCluster?.spec?.defaults?.remediation,
    );
    if (!policy.annotateMachine && previous === 0) return [];
    const ownerRef = object.metadata.ownerReferences?.find((ref) => ref.kind === "Machine" && ref.apiVersion.startsWith(`${capiGroup}/`));
    if (!ownerRef) return [];
    const machine = await getCapi<{ metadata: NamespacedMeta & { deletionTimestamp?: string } }>(
      deps,
      object.metadata.namespace,
      "machines",
      ownerRef.name,
    );
    if (!machine || machine.metadata.deletionTimestamp) return [];
    const change = decideRemediation(policy, samples, health.reason, machine.metadata.annotations);
    if (!change) return [];
    const machineAnnotations =
      "request" in change
        ? { [annotations.remediateMachine]: "", [annotations.remediationRequested]: change.request }
        : { [annotations.remediateMachine]: null, [annotations.remediationRequested]: null };
    await deps.client.patch(
      capiTypes.machine,
      object.metadata.namespace,
      ownerRef.name,
      { metadata: { annotations: machineAnnotations } },
      "merge",
    );
    if ("request" in change) {
      void events.record(
        subject,
        "RemediationRequested",
        `asked Cluster API to replace Machine ${ownerRef.name}: ${change.request} after ${samples} unhealthy sample(s)`,
      );
      deps.metrics?.remediationRequests.inc({ action: "requested" });
    } else {
      void events.record(
        subject,
        "RemediationWithdrawn",
        `the instance is healthy again: withdrew the remediation request on Machine ${ownerRef.name}`,
      );
      deps.metrics?.remediationRequests.inc({ action: "withdrawn" });
    }
    return [];
  },
  contractFields(object, decoding) {
    const fields = machineContractFields(decoding.outputs);
    const status: Record<string, unknown> = {};
    if (fields.addresses?.length) status.addresses = fields.addresses;
    if (fields.failureDomain) status.failureDomain = fields.failureDomain;
    if (fields.interruptible !== undefined) status.interruptible = fields.interruptible;
    // providerID is written once: a later different value is ProviderIDChanged, never an overwrite.
    const spec = fields.providerID && !object.spec.providerID ? { providerID: fields.providerID } : undefined;
    return { status, ...(spec ? { spec } : {}) };
  },
};

/**
 * status.exports as published: the module's exports, or null (cleared) with their size when their compact JSON exceeds
 * {@link maxPublishedExportsBytes}. Pure.
 */
export function publishedExports(exports: JsonValue): { exports: JsonValue | null; bytes?: number } {
  const bytes = Buffer.byteLength(JSON.stringify(exports));
  return bytes > maxPublishedExportsBytes ? { exports: null, bytes } : { exports };
}

export const clusterAdapter: KindAdapter<"cluster"> = {
  role: "cluster",
  kind: "TerraformCluster",
  plural: "terraformclusters",
  async observeInputs(_deps, object: WorkspaceObject, { reads, durable }) {
    const ownerRef = object.metadata.ownerReferences?.find((ref) => ref.kind === "Cluster" && ref.apiVersion.startsWith(`${capiGroup}/`));
    const clusterName = ownerRef?.name ?? object.metadata.labels?.[labels.clusterName];
    if (!clusterName) return undefined;
    const cluster = await reads.capiCluster(clusterName);
    if (!cluster) return ownerRef ? ownerWait(object, "Cluster", clusterName, clusterName) : undefined;
    const ref = cluster.spec?.infrastructureRef;
    if (ref?.kind && ref.kind !== "TerraformCluster") {
      return {
        clusterName,
        inputs: {
          pending: true,
          reason: "ClusterNotTerraform",
          message: `Cluster ${clusterName}'s infrastructure is a ${ref.kind}, not a TerraformCluster: nothing runs for this one`,
        },
      };
    }
    const mismatch = ownerMismatch({
      owner: { kind: "Cluster", metadata: cluster.metadata, infrastructureRef: ref, clusterName },
      ...(ownerRef?.uid ? { ownerReferenceUid: ownerRef.uid } : {}),
      object: { kind: "TerraformCluster", metadata: object.metadata },
    });
    if (mismatch) return { clusterName, inputs: mismatch };
    // control_plane_initialized latches: once an apply started with it true, it stays true.
    const latched = durable?.variables.control_plane_initialized === true;
    return {
      clusterName,
      inputs: {
        pending: false,
        inputs: clusterInputs(cluster as Parameters<typeof clusterInputs>[0], object as Parameters<typeof clusterInputs>[1], latched),
      },
    };
  },
  contractFields(object, decoding) {
    const fields = clusterContractFields(decoding.outputs);
    const status: Record<string, unknown> = {};
    // Cluster API's failureDomains holds 1-100 entries: none (null or [], or no outputs yet) removes the field.
    if (fields.failureDomains) status.failureDomains = fields.failureDomains.length > 0 ? fields.failureDomains : null;
    let exportsNotPublished: { bytes: number } | undefined;
    if (
      decoding.outputs.exports.state === "ok" &&
      decoding.outputs.exports.value &&
      typeof decoding.outputs.exports.value === "object" &&
      !Array.isArray(decoding.outputs.exports.value)
    ) {
      const published = publishedExports(decoding.outputs.exports.value);
      // A merge patch merges objects: exports the module dropped must be nulled, not left behind.
      status.exports = replacingMergePatch(object.status?.exports, published.exports);
      if (published.bytes !== undefined) exportsNotPublished = { bytes: published.bytes };
    }
    const notPublished = exportsNotPublished ? { exportsNotPublished } : {};
    const current = object.spec.controlPlaneEndpoint;
    // The module's endpoint is copied once, only when nobody set one; from then on the module owns
    // it (endpoint-source: module) and the input stays null, so the copy never re-applies the cluster.
    if (fields.moduleEndpoint && !current?.host) {
      return {
        status,
        spec: { controlPlaneEndpoint: fields.moduleEndpoint },
        annotations: { [annotations.endpointSource]: "module" },
        ...notPublished,
      };
    }
    return { status, ...notPublished };
  },
};

type CapiMachinePool = Parameters<typeof machinePoolInputs>[0]["machinePool"] & {
  metadata: NamespacedMeta & { uid?: string };
  spec?: {
    clusterName?: string;
    template?: { spec?: { bootstrap?: { dataSecretName?: string }; infrastructureRef?: InfrastructureReference } };
  };
};

export const poolAdapter: KindAdapter<"machinepool"> = {
  role: "machinepool",
  kind: "TerraformMachinePool",
  plural: "terraformmachinepools",
  publishesReady: true,
  async observeInputs(deps, object, { reads }) {
    const ownerRef = object.metadata.ownerReferences?.find(
      (ref) => ref.kind === "MachinePool" && ref.apiVersion.startsWith(`${capiGroup}/`),
    );
    if (!ownerRef) return ownerWait(object, "MachinePool", undefined);
    const namespace = object.metadata.namespace;
    const machinePool = await getCapi<CapiMachinePool>(deps, namespace, "machinepools", ownerRef.name);
    if (!machinePool) return ownerWait(object, "MachinePool", ownerRef.name);
    const clusterName = machinePool.spec?.clusterName ?? machinePool.metadata.labels?.[labels.clusterName] ?? "";
    const mismatch = ownerMismatch({
      owner: {
        kind: "MachinePool",
        metadata: machinePool.metadata,
        infrastructureRef: machinePool.spec?.template?.spec?.infrastructureRef,
        clusterName,
      },
      ...(ownerRef.uid ? { ownerReferenceUid: ownerRef.uid } : {}),
      object: { kind: "TerraformMachinePool", metadata: object.metadata },
    });
    if (mismatch) return { clusterName, inputs: mismatch };
    const cluster = await clusterStateOutputs(deps, reads, namespace, clusterName);
    const secretName = machinePool.spec?.template?.spec?.bootstrap?.dataSecretName;
    const bootstrap = secretName ? await readBootstrapSecret(deps, namespace, secretName) : undefined;
    const terraformMachinePool = object as WorkspaceObject & { status?: { replicas?: number } };
    return {
      clusterName,
      inputs: machinePoolInputs(
        { cluster: { name: clusterName, namespace }, machinePool, terraformMachinePool },
        cluster?.exports,
        cluster?.failureDomainNames ?? [],
        bootstrap,
      ),
    };
  },
  async ownerWriteBack(deps, object, { status, events, subject }) {
    const ownerRef = object.metadata.ownerReferences?.find(
      (ref) => ref.kind === "MachinePool" && ref.apiVersion.startsWith(`${capiGroup}/`),
    );
    if (!ownerRef) return [];
    const namespace = object.metadata.namespace;
    const machinePool = await getCapi<MachinePoolReplicas>(deps, namespace, "machinepools", ownerRef.name);
    if (!machinePool) return [];
    const observedReplicas = typeof status.replicas === "number" ? status.replicas : object.status?.replicas;
    const plan = decideReplicasWriteBack(machinePool, observedReplicas);
    const patch: { metadata?: { annotations: Record<string, string | null> }; spec?: { replicas: number } } = {};
    if (plan.claim !== undefined)
      patch.metadata = { annotations: { [annotations.replicasManagedBy]: plan.claim ? replicasManagedByValue : null } };
    if (plan.replicas !== undefined) patch.spec = { replicas: plan.replicas };
    if (patch.metadata || patch.spec) {
      await deps.client.patch(capiTypes.machinePool, namespace, ownerRef.name, patch, "merge");
    }
    if (plan.replicas !== undefined)
      void events.record(
        subject,
        "ReplicasWrittenBack",
        `MachinePool ${ownerRef.name} spec.replicas ${machinePool.spec?.replicas ?? "unset"} -> ${plan.replicas}, as the module observed`,
      );
    const previous = (object.status?.conditions ?? []).find((condition) => condition.type === "AutoscalingActive");
    if (plan.foreignManager !== undefined && previous?.reason !== "ReplicasManagedExternally")
      void events.record(subject, "ReplicasManagedExternally", plan.condition.message ?? "");
    return [{ type: "AutoscalingActive", value: plan.condition }];
  },
  contractFields(object, decoding) {
    const fields = machinePoolContractFields(decoding.outputs);
    const status: Record<string, unknown> = {};
    if (fields.replicas !== undefined) status.replicas = fields.replicas;
    // status.instances holds 1-1000 entries: none ([], a pool scaled to zero) removes the field.
    if (fields.instances) status.instances = fields.instances.length > 0 ? fields.instances : null;
    const spec: { providerID?: string; providerIDList?: string[] } = {};
    // The group's ID follows the module (a new scaling group is a new ID); a null reading keeps the last one.
    if (fields.providerID && fields.providerID !== object.spec.providerID) spec.providerID = fields.providerID;
    // providerIDList lives in spec (Cluster API copies it to MachinePool.spec.providerIDList);
    // it follows the module's members, sorted and de-duplicated, and is written only when it changes.
    if (fields.providerIDList) {
      const providerIDList = [...new Set(fields.providerIDList)].sort();
      const current = object.spec.providerIDList;
      const same =
        current !== undefined && current.length === providerIDList.length && current.every((id, index) => id === providerIDList[index]);
      if (!same) spec.providerIDList = providerIDList;
    }
    return Object.keys(spec).length > 0 ? { status, spec } : { status };
  },
};
