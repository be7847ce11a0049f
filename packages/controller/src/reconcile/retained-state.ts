import type { V1OwnerReference, V1Secret } from "@kubernetes/client-node";
import type { Role } from "@captf/contract";
import { labels } from "@captf/contract/api";
import { backendSuffixLabel } from "../state/read-state.js";
import { durableInputsSecretName } from "./durable-inputs.js";
import { undefinedIfNotFound } from "../runtime/api-errors.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import type { KubeApi } from "../runtime/kube-client.js";

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
export async function retainState(
  client: KubeApi,
  owner: { role: Role; namespace: string; name: string; uid: string; suffix: string },
): Promise<number> {
  const state = await client.list<V1Secret>(builtinTypes.secret, owner.namespace, {
    labelSelector: `${backendSuffixLabel}=${owner.suffix}`,
  });
  const durable = await undefinedIfNotFound(
    client.get<V1Secret>(builtinTypes.secret, owner.namespace, durableInputsSecretName(owner.role, owner.name)),
  );
  const secrets = [...state.items, ...(durable ? [durable] : [])];
  for (const secret of secrets) {
    const metadata = {
      labels: { [labels.retainedFromUid]: owner.uid },
      ownerReferences: withoutOwner(secret.metadata?.ownerReferences, owner.uid),
    };
    await client.patch(builtinTypes.secret, owner.namespace, secret.metadata!.name!, { metadata }, "merge");
  }
  return secrets.length;
}

/** Takes retained Secrets over for a new object: the label goes, the durable inputs get their owner back. */
export async function adoptRetainedState(
  client: KubeApi,
  owner: { role: Role; namespace: string; name: string; uid: string; suffix: string; ownerReference: V1OwnerReference },
): Promise<void> {
  const state = await client.list<V1Secret>(builtinTypes.secret, owner.namespace, {
    labelSelector: `${backendSuffixLabel}=${owner.suffix},${labels.retainedFromUid}`,
  });
  for (const secret of state.items) {
    await client.patch(
      builtinTypes.secret,
      owner.namespace,
      secret.metadata!.name!,
      { metadata: { labels: { [labels.retainedFromUid]: null } } },
      "merge",
    );
  }
  const durableMetadata = { labels: { [labels.retainedFromUid]: null }, ownerReferences: [owner.ownerReference] };
  await undefinedIfNotFound(
    client.patch(
      builtinTypes.secret,
      owner.namespace,
      durableInputsSecretName(owner.role, owner.name),
      { metadata: durableMetadata },
      "merge",
    ),
  );
}
