import type { CoreV1Api, V1OwnerReference } from "@kubernetes/client-node";
import type { Role } from "@captf/contract";
import { labels } from "@captf/contract/api";
import { backendSuffixLabel } from "../state/read-state.js";
import { durableInputsSecretName } from "./durable-inputs.js";
import { undefinedIfNotFound } from "../runtime/client-node-errors.js";

/**
 * `spec.deletionPolicy: Retain`: deleting the object leaves its infrastructure, and its state and
 * durable inputs stay behind, unowned and labelled with the deleted object's UID, until a new
 * object of the same name adopts them (`spec.adoptRetainedState`) or someone deletes them.
 */

export type DeletionPolicy = "Destroy" | "Retain";

/**
 * An object's own policy, else (machines and pools) its cluster's `spec.defaults.deletionPolicy`,
 * else the cluster's own, else Destroy. Undefined when it inherits and the cluster is unknown. Pure.
 */
export function resolveDeletionPolicy(
  role: Role,
  own: DeletionPolicy | undefined,
  cluster: { spec?: { deletionPolicy?: DeletionPolicy; defaults?: { deletionPolicy?: DeletionPolicy } } } | undefined,
): DeletionPolicy | undefined {
  if (own) return own;
  if (role === "cluster") return "Destroy";
  if (!cluster) return undefined;
  return cluster.spec?.defaults?.deletionPolicy ?? cluster.spec?.deletionPolicy ?? "Destroy";
}

function withoutOwner(references: V1OwnerReference[] | undefined, uid: string): V1OwnerReference[] {
  return (references ?? []).filter((reference) => reference.uid !== uid);
}

/** Leaves the state Secrets and the durable inputs behind for a later adoption; returns how many Secrets. */
export async function retainState(core: CoreV1Api, patchOptions: unknown, owner: { role: Role; namespace: string; name: string; uid: string; suffix: string }): Promise<number> {
  const state = await core.listNamespacedSecret({ namespace: owner.namespace, labelSelector: `${backendSuffixLabel}=${owner.suffix}` });
  const durable = await undefinedIfNotFound(core.readNamespacedSecret({ name: durableInputsSecretName(owner.role, owner.name), namespace: owner.namespace }));
  const secrets = [...state.items, ...(durable ? [durable] : [])];
  for (const secret of secrets) {
    await core.patchNamespacedSecret(
      { name: secret.metadata!.name!, namespace: owner.namespace, body: { metadata: { labels: { [labels.retainedFromUid]: owner.uid }, ownerReferences: withoutOwner(secret.metadata?.ownerReferences, owner.uid) } } },
      patchOptions as never,
    );
  }
  return secrets.length;
}

/** Takes retained Secrets over for a new object: the label goes, the durable inputs get their owner back. */
export async function adoptRetainedState(core: CoreV1Api, patchOptions: unknown, owner: { role: Role; namespace: string; name: string; uid: string; suffix: string; ownerReference: V1OwnerReference }): Promise<void> {
  const state = await core.listNamespacedSecret({ namespace: owner.namespace, labelSelector: `${backendSuffixLabel}=${owner.suffix},${labels.retainedFromUid}` });
  for (const secret of state.items) {
    await core.patchNamespacedSecret({ name: secret.metadata!.name!, namespace: owner.namespace, body: { metadata: { labels: { [labels.retainedFromUid]: null } } } }, patchOptions as never);
  }
  await undefinedIfNotFound(
    core.patchNamespacedSecret(
      { name: durableInputsSecretName(owner.role, owner.name), namespace: owner.namespace, body: { metadata: { labels: { [labels.retainedFromUid]: null }, ownerReferences: [owner.ownerReference] } } },
      patchOptions as never,
    ),
  );
}
