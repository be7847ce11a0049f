import { apiGroup, labels } from "@captf/contract/api";
import type { InputsPending, NamespacedMeta } from "./render-inputs.js";

/**
 * A Cluster API owner must point back at the object it owns (its infrastructureRef), carry the
 * owner reference's UID and the object's cluster: otherwise any object could name any Machine
 * and receive its bootstrap data. Pure.
 */

export interface InfrastructureReference {
  apiGroup?: string;
  kind?: string;
  name?: string;
}

export interface OwnerFacts {
  owner: {
    kind: string;
    metadata: NamespacedMeta & { uid?: string };
    infrastructureRef: InfrastructureReference | undefined;
    clusterName: string;
  };
  /** The object's owner reference to it (its UID when set). */
  ownerReferenceUid?: string;
  object: { kind: string; metadata: NamespacedMeta };
}

export function ownerMismatch(facts: OwnerFacts): InputsPending | undefined {
  const { owner, object } = facts;
  const ref = owner.infrastructureRef;
  const what = `${owner.kind} ${owner.metadata.name}`;
  if (
    !ref?.name ||
    ref.kind !== object.kind ||
    (ref.apiGroup !== undefined && ref.apiGroup !== apiGroup) ||
    ref.name !== object.metadata.name
  ) {
    return {
      pending: true,
      reason: "OwnerMismatch",
      message:
        `${what} does not reference this ${object.kind} as its infrastructure (${ref?.kind ?? "none"} ` +
        `${ref?.name ?? ""}): nothing runs for it`,
    };
  }
  if (facts.ownerReferenceUid && owner.metadata.uid && facts.ownerReferenceUid !== owner.metadata.uid) {
    return {
      pending: true,
      reason: "OwnerMismatch",
      message: `the owner reference names ${what} with UID ${facts.ownerReferenceUid}, but ${what} has UID ${owner.metadata.uid}`,
    };
  }
  const objectCluster = object.metadata.labels?.[labels.clusterName];
  if (objectCluster !== undefined && owner.clusterName && objectCluster !== owner.clusterName) {
    return {
      pending: true,
      reason: "OwnerMismatch",
      message: `this ${object.kind} is labelled for cluster ${objectCluster}, but ${what} belongs to cluster ${owner.clusterName}`,
    };
  }
  return undefined;
}
