import type { V1OwnerReference, V1Secret } from "@kubernetes/client-node";
import { annotations } from "@captf/contract/api";
import { stateSecretName } from "@captf/render";
import { builtinTypes } from "../runtime/builtin-types.js";
import { isConflict, isNotFound } from "../runtime/api-errors.js";
import type { KubeApi } from "../runtime/kube-client.js";
import { backendSuffixLabel } from "./read-state.js";

/**
 * Ownership of an object's state Secrets: after a successful apply or restore every chunk gets a
 * non-controller owner reference to the object (the backend, not captf, writes their content) and the
 * base Secret the inputs hash it now holds; chunks written later (or stripped by someone) are re-owned
 * on a pass with no Job running. Every write carries the resourceVersion it read: a Secret that changed
 * meanwhile is left for the next pass.
 */

export interface StateOwner {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
}

/** The reference every chunk carries: not the controller, and it blocks nothing (no blockOwnerDeletion). */
export function stateOwnerReference(owner: StateOwner): V1OwnerReference {
  return { apiVersion: owner.apiVersion, kind: owner.kind, name: owner.name, uid: owner.uid, controller: false };
}

/** The Secrets of one state among those listed: the base and its `-part-N` chunks. Pure. */
export function stateChunks<S extends Pick<V1Secret, "metadata">>(suffix: string, secrets: readonly S[]): S[] {
  const base = stateSecretName(suffix);
  return secrets.filter((secret) => {
    const name = secret.metadata?.name ?? "";
    return name === base || (name.startsWith(`${base}-part-`) && /^\d+$/.test(name.slice(base.length + "-part-".length)));
  });
}

/** The chunks of a state that do not reference the owner (by UID). Pure. */
export function chunksMissingOwner<S extends Pick<V1Secret, "metadata">>(suffix: string, secrets: readonly S[], ownerUid: string): S[] {
  return stateChunks(suffix, secrets).filter((secret) => !secret.metadata?.ownerReferences?.some((ref) => ref.uid === ownerUid));
}

/** Whether adopting the state for this hash changes anything: the Job carried a hash and the base Secret holds another. Pure. */
export function adoptionDue(jobInputsHash: string | undefined, baseInputsHash: string | undefined): jobInputsHash is string {
  return jobInputsHash !== undefined && jobInputsHash !== "" && jobInputsHash !== baseInputsHash;
}

/** Merge-patches one Secret's owner references (and annotations) as read; false when it changed meanwhile or is gone. */
async function writeOwnership(
  client: KubeApi,
  namespace: string,
  secret: V1Secret,
  owner: StateOwner,
  notes?: Record<string, string>,
): Promise<boolean> {
  const references = secret.metadata?.ownerReferences ?? [];
  const owned = references.some((ref) => ref.uid === owner.uid);
  if (owned && !notes) return true;
  const metadata = {
    resourceVersion: secret.metadata!.resourceVersion!,
    ...(owned ? {} : { ownerReferences: [...references, stateOwnerReference(owner)] }),
    ...(notes ? { annotations: notes } : {}),
  };
  return client.patch(builtinTypes.secret, namespace, secret.metadata!.name!, { metadata }, "merge").then(
    () => true,
    (error) => (isConflict(error) || isNotFound(error) ? false : Promise.reject(error)),
  );
}

function listState(client: KubeApi, namespace: string, suffix: string): Promise<V1Secret[]> {
  return client
    .list<V1Secret>(builtinTypes.secret, namespace, { labelSelector: `${backendSuffixLabel}=${suffix}` })
    .then((list) => stateChunks(suffix, list.items));
}

/**
 * Adopts the state a successful apply or restore left: every chunk owned, the base Secret annotated with
 * `inputsHash` (read live; a Secret changed meanwhile is read again, three times at most). Returns whether
 * it adopted anything: false when there is no state or the base Secret already holds that hash.
 */
export async function adoptState(
  client: KubeApi,
  namespace: string,
  suffix: string,
  owner: StateOwner,
  inputsHash: string,
): Promise<boolean> {
  const baseName = stateSecretName(suffix);
  for (let attempt = 0; attempt < 3; attempt++) {
    const chunks = await listState(client, namespace, suffix);
    const base = chunks.find((secret) => secret.metadata?.name === baseName);
    if (!base || !adoptionDue(inputsHash, base.metadata?.annotations?.[annotations.inputsHash])) return false;
    let written = true;
    for (const chunk of chunks) if (chunk !== base) written = (await writeOwnership(client, namespace, chunk, owner)) && written;
    // The hash last: once it is on the base Secret, adoption is done.
    written = (await writeOwnership(client, namespace, base, owner, { [annotations.inputsHash]: inputsHash })) && written;
    if (written) return true;
  }
  throw new Error(`the state Secrets of ${owner.kind} ${owner.name} kept changing while captf adopted them`);
}

/**
 * Re-owns the listed chunks that miss the owner's reference; returns the names written (a changed or deleted Secret waits for the next
 * pass).
 */
export async function repairStateOwnership(
  client: KubeApi,
  namespace: string,
  suffix: string,
  secrets: readonly V1Secret[],
  owner: StateOwner,
): Promise<string[]> {
  const repaired: string[] = [];
  for (const secret of chunksMissingOwner(suffix, secrets, owner.uid)) {
    if (await writeOwnership(client, namespace, secret, owner)) repaired.push(secret.metadata!.name!);
  }
  return repaired;
}
