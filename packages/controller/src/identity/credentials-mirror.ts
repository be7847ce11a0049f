/**
 * The credentials mirror: an Opaque copy of an identity's Secret in each allowed namespace that
 * uses it, named `captf-creds-<identity>`, labelled `captf.io/mirrored=true` and
 * `captf.io/managed=true`, annotated with the identity and the SHA-256 of the copied data, and
 * owned (non-controller, no blockOwnerDeletion) by every object there that uses it. Pure plans of
 * what to write; {@link ensureCredentials} carries them out.
 */
import { createHash } from "node:crypto";
import type { V1OwnerReference, V1Secret } from "@kubernetes/client-node";
import { annotations, apiGroup, groupVersion, labels } from "@captf/contract/api";

export const credentialsMirrorPrefix = "captf-creds-";
const maxSecretNameLength = 253;

/** `captf-creds-<identity>`, or `captf-creds-` and the first 16 hex digits of the name's SHA-256 when that would exceed 253 characters. */
export function credentialsMirrorName(identity: string): string {
  const name = `${credentialsMirrorPrefix}${identity}`;
  return name.length <= maxSecretNameLength ? name : `${credentialsMirrorPrefix}${sha256Hex(identity).slice(0, 16)}`;
}

/** SHA-256 (hex) of a Secret's data: keys sorted, values as the API returns them (base64). */
export function credentialsHash(data: Readonly<Record<string, string>> | undefined): string {
  const entries = Object.entries(data ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return sha256Hex(JSON.stringify(entries));
}

/** An object that uses an identity: a TerraformCluster, TerraformMachine or TerraformMachinePool. */
export interface CredentialsUser {
  kind: string;
  namespace: string;
  name: string;
  uid: string;
  /** The TerraformClusterIdentity it resolves to. */
  identity: string;
}

export function userOwnerReference(user: CredentialsUser): V1OwnerReference {
  return { apiVersion: groupVersion, kind: user.kind, name: user.name, uid: user.uid };
}

/** A mirror captf made for this identity: only those are ever rewritten or deleted. */
export function isCredentialsMirror(secret: V1Secret, identity: string): boolean {
  const meta = secret.metadata;
  return (
    meta?.labels?.[labels.mirrored] === "true" &&
    meta.labels[labels.managed] === "true" &&
    meta.annotations?.[annotations.identity] === identity
  );
}

function refersToUser(ref: V1OwnerReference, user: CredentialsUser): boolean {
  return ref.uid === user.uid || (ref.kind === user.kind && ref.name === user.name && ref.apiVersion.split("/")[0] === apiGroup);
}

/** The refs with the user's own, replacing a ref of an earlier object of the same kind and name. */
export function ownerReferencesWithUser(refs: readonly V1OwnerReference[], user: CredentialsUser): V1OwnerReference[] {
  return [...refs.filter((ref) => !refersToUser(ref, user)), userOwnerReference(user)];
}

export function ownerReferencesWithoutUser(refs: readonly V1OwnerReference[], user: CredentialsUser): V1OwnerReference[] {
  return refs.filter((ref) => !refersToUser(ref, user));
}

/**
 * At most this many users own a mirror: enough that it outlives the deletion of a few, few enough that
 * the mirror (written once per new owner, and by the garbage collector for each owner deleted) stays small
 * with thousands of users; unbounded, 10,000 users would make it larger than etcd takes. A mirror whose
 * owners are all gone while other users remain is made again by the next pass of any of them.
 */
export const mirrorOwnersLimit = 10;

export type MirrorPlan =
  | { action: "create"; secret: V1Secret }
  | { action: "replace"; secret: V1Secret; rewritesData: boolean }
  /**
   * Only the user's ref is missing: added by a strategic merge patch (merged by uid), which never conflicts with other users adding theirs.
   */
  | { action: "addOwner"; ownerReference: V1OwnerReference; order: string[] }
  | { action: "keep" }
  | { action: "foreign"; why: string };

/** What to write so the user's namespace holds an up-to-date mirror owned by the user. */
export function planMirror(
  existing: V1Secret | undefined,
  sourceData: Readonly<Record<string, string>>,
  user: CredentialsUser,
): MirrorPlan {
  const name = credentialsMirrorName(user.identity);
  const hash = credentialsHash(sourceData);
  const ourLabels = { [labels.mirrored]: "true", [labels.managed]: "true" };
  const ourAnnotations = { [annotations.sourceHash]: hash, [annotations.identity]: user.identity };
  if (!existing) {
    return {
      action: "create",
      secret: {
        apiVersion: "v1",
        kind: "Secret",
        metadata: {
          name,
          namespace: user.namespace,
          labels: ourLabels,
          annotations: ourAnnotations,
          ownerReferences: [userOwnerReference(user)],
        },
        type: "Opaque",
        data: { ...sourceData },
      },
    };
  }
  if (!isCredentialsMirror(existing, user.identity)) {
    return {
      action: "foreign",
      why:
        `Secret ${user.namespace}/${name} exists and is not a captf mirror of TerraformClusterIdentity ${user.identity} ` +
        `(labels ${labels.mirrored}=true, ${labels.managed}=true and annotation ${annotations.identity}=${user.identity}); ` +
        `captf never overwrites it: rename or delete that Secret`,
    };
  }
  const meta = existing.metadata ?? {};
  const rewritesData = credentialsHash(existing.data) !== hash;
  const refs = meta.ownerReferences ?? [];
  const ownedAlready =
    refs.some((ref) => ref.uid === user.uid && ref.controller !== true && ref.blockOwnerDeletion !== true) &&
    refs.filter((ref) => refersToUser(ref, user)).length === 1;
  const current = meta.annotations ?? {};
  // A user not listed on a mirror that already has its fill of owners uses it without owning it.
  const full = !refs.some((ref) => refersToUser(ref, user)) && refs.length >= mirrorOwnersLimit;
  if (!rewritesData && (ownedAlready || full) && current[annotations.sourceHash] === hash) return { action: "keep" };
  if (!rewritesData && current[annotations.sourceHash] === hash && !refs.some((ref) => refersToUser(ref, user)))
    return { action: "addOwner", ownerReference: userOwnerReference(user), order: [...refs.map((ref) => ref.uid), user.uid] };
  const { managedFields: _managedFields, ...kept } = meta;
  return {
    action: "replace",
    rewritesData,
    secret: {
      ...existing,
      metadata: {
        ...kept,
        labels: { ...meta.labels, ...ourLabels },
        annotations: { ...current, ...ourAnnotations },
        ownerReferences: ownedAlready || full ? refs : ownerReferencesWithUser(refs, user),
      },
      data: rewritesData ? { ...sourceData } : existing.data,
    },
  };
}

export type RevocationPlan =
  | { action: "none" }
  | { action: "replace"; secret: V1Secret }
  | { action: "delete"; resourceVersion: string | undefined };

/** The user's namespace may no longer use the identity: drop the user's ref, and the mirror once no user is left. */
export function planRevocation(existing: V1Secret | undefined, user: CredentialsUser): RevocationPlan {
  if (!existing || !isCredentialsMirror(existing, user.identity)) return { action: "none" };
  const meta = existing.metadata ?? {};
  const refs = meta.ownerReferences ?? [];
  const remaining = ownerReferencesWithoutUser(refs, user);
  if (remaining.length === 0) return { action: "delete", resourceVersion: meta.resourceVersion };
  if (remaining.length === refs.length) return { action: "none" };
  const { managedFields: _managedFields, ...kept } = meta;
  return { action: "replace", secret: { ...existing, metadata: { ...kept, ownerReferences: remaining } } };
}

function sha256Hex(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}
