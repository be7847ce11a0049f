import { createHash } from "node:crypto";
import type { V1OwnerReference, V1Secret } from "@kubernetes/client-node";
import { annotations, labels } from "@captf/contract/api";
import { backendSuffixLabel } from "./read-state.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import type { KubeApi } from "../runtime/kube-client.js";
import type { ReadCache } from "../runtime/read-cache.js";
import { isConflict } from "../runtime/api-errors.js";
import { passClient } from "../runtime/pass-client.js";

/**
 * State backups: each serial of an object's state the manager reads for the first time is copied,
 * chunk for chunk, into `captf-state-backup-<suffix>-<serial>` Secrets, so a lost or damaged state
 * can be restored (`captf.io/restore-state=<serial>`). `--state-backups` complete sets are kept.
 */

/** The backend's own labels: a backup must never look like state to the backend or the reader. */
const backendOnlyLabels = new Set(["tfstate", backendSuffixLabel, "tfstateWorkspace", "app.kubernetes.io/managed-by"]);
const partPattern = /-part-(\d+)$/;

/** The Secret of chunk `chunk` of the backup set named `set` (its first Secret's name). */
function chunkSecretName(set: string, chunk: number): string {
  return chunk === 0 ? set : `${set}-part-${chunk}`;
}

export function backupSecretName(suffix: string, serial: number, chunk: number): string {
  return chunkSecretName(`captf-state-backup-${suffix}-${serial}`, chunk);
}

export interface BackupSet {
  /** The set's name: its first Secret's, `captf-state-backup-<suffix>-<serial>`, plus `-<digest8>` beside another state of that serial. */
  name: string;
  serial: number;
  /** Hex sha256 of the state as stored (the chunks' compressed payload, concatenated). */
  digest: string;
  /** Secret names in chunk order. */
  names: string[];
  complete: boolean;
  takenAt: string;
  bytes: number;
  resources: number;
  inputsHash?: string;
}

/** The backup sets among an object's backup Secrets, newest first (taken at, then serial, then name). Pure. */
export function backupSets(secrets: readonly V1Secret[]): BackupSet[] {
  const byName = new Map<string, V1Secret[]>();
  for (const secret of secrets) {
    const serial = Number(secret.metadata?.annotations?.[annotations.stateBackupSerial]);
    if (!Number.isSafeInteger(serial) || serial < 1) continue;
    const name = secret.metadata?.annotations?.[annotations.stateBackupSet] ?? (secret.metadata?.name ?? "").replace(partPattern, "");
    byName.set(name, [...(byName.get(name) ?? []), secret]);
  }
  const sets: BackupSet[] = [];
  for (const [name, members] of byName) {
    const serial = Number(members[0]!.metadata!.annotations![annotations.stateBackupSerial]);
    const chunkOf = (secret: V1Secret) =>
      Number(secret.metadata?.annotations?.[annotations.stateBackupChunk] ?? partPattern.exec(secret.metadata?.name ?? "")?.[1] ?? 0);
    const ordered = [...members].sort((a, b) => chunkOf(a) - chunkOf(b));
    const expected = Number(ordered[0]?.metadata?.annotations?.[annotations.stateBackupChunks] ?? 0);
    const complete =
      expected >= 1 &&
      expected <= 32 &&
      ordered.length === expected &&
      ordered.every((secret, index) => chunkOf(secret) === index && secret.data?.tfstate !== undefined);
    const first = ordered[0]!.metadata?.annotations ?? {};
    sets.push({
      name,
      serial,
      digest: first[annotations.stateBackupDigest] ?? "",
      names: ordered.map((secret) => secret.metadata!.name!),
      complete,
      takenAt: first[annotations.stateBackupTakenAt] ?? "",
      bytes: ordered.reduce((sum, secret) => sum + Buffer.from(secret.data?.tfstate ?? "", "base64").length, 0),
      resources: Number(first[annotations.stateBackupResources] ?? 0),
      ...(first[annotations.inputsHash] ? { inputsHash: first[annotations.inputsHash] } : {}),
    });
  }
  return sets.sort((a, b) => b.takenAt.localeCompare(a.takenAt) || b.serial - a.serial || a.name.localeCompare(b.name));
}

/** The hex sha256 of a state as its Secrets store it: the compressed chunks (base first, then parts) concatenated. Pure. */
export function stateDigest(stateSecrets: readonly V1Secret[]): string {
  const digest = createHash("sha256");
  for (const chunk of [...stateSecrets].sort((a, b) => chunkIndex(a) - chunkIndex(b)))
    digest.update(Buffer.from(chunk.data?.tfstate ?? "", "base64"));
  return digest.digest("hex");
}

/**
 * Where the state of `serial` with `digest` goes: nowhere when a complete set holds it already; else the serial's own set name,
 * or, when a set of that name holds another state of the serial (a restore makes serials repeat), that name plus
 * `-<digest8>`, beside it. Pure.
 */
export function backupPlacement(
  sets: readonly BackupSet[],
  suffix: string,
  serial: number,
  digest: string,
): { kind: "present"; set: BackupSet } | { kind: "new"; name: string } {
  const present = sets.find((set) => set.complete && set.serial === serial && set.digest === digest);
  if (present) return { kind: "present", set: present };
  const name = backupSecretName(suffix, serial, 0);
  return { kind: "new", name: sets.some((set) => set.name === name && set.digest !== digest) ? `${name}-${digest.slice(0, 8)}` : name };
}

/** A backup Secret of the name about to be written holds another state: it is left alone, and this backup is not taken. */
export class BackupConflictError extends Error {
  constructor(readonly secretName: string) {
    super(`the backup Secret ${secretName} exists with another state: it is left alone`);
    this.name = "BackupConflictError";
  }
}

/**
 * The backup Secrets to delete: complete sets beyond the newest `keep`, and incomplete sets but
 * the newest one. A set a pending restore names is never deleted nor counted. Pure.
 */
export function backupsToPrune(sets: readonly BackupSet[], keep: number, restoreSerial?: number): string[] {
  const prune: string[] = [];
  let kept = 0;
  let newestIncompleteSeen = false;
  for (const set of sets) {
    if (set.serial === restoreSerial) continue;
    if (set.complete) {
      if (++kept > keep) prune.push(...set.names);
    } else if (newestIncompleteSeen) prune.push(...set.names);
    else newestIncompleteSeen = true;
  }
  return prune;
}

export interface BackupRequest {
  namespace: string;
  suffix: string;
  /** The set's name, from {@link backupPlacement}. */
  setName: string;
  /** {@link stateDigest} of the state Secrets. */
  digest: string;
  owner: V1OwnerReference;
  /** The state Secrets as read: base first, then parts. */
  stateSecrets: readonly V1Secret[];
  serial: number;
  lineage: string;
  resources: number;
  inputsHash?: string;
  sourceJob?: string;
  now: number;
}

function chunkIndex(secret: V1Secret): number {
  return Number(partPattern.exec(secret.metadata?.name ?? "")?.[1] ?? 0);
}

/**
 * Copies the state Secrets verbatim into the backup set `request.setName`; returns its Secrets' total compressed bytes and
 * the Secrets as written. A Secret of the set that exists with the same digest is an interrupted earlier pass's, and kept;
 * one with another digest is a {@link BackupConflictError}.
 */
export async function takeStateBackup(client: KubeApi, request: BackupRequest): Promise<{ bytes: number; created: V1Secret[] }> {
  const chunks = [...request.stateSecrets].sort((a, b) => chunkIndex(a) - chunkIndex(b));
  let bytes = 0;
  const created: V1Secret[] = [];
  for (const [index, chunk] of chunks.entries()) {
    const keptLabels = Object.fromEntries(Object.entries(chunk.metadata?.labels ?? {}).filter(([key]) => !backendOnlyLabels.has(key)));
    const body: V1Secret = {
      metadata: {
        name: chunkSecretName(request.setName, index),
        namespace: request.namespace,
        labels: { ...keptLabels, [labels.stateBackup]: "true", [labels.stateBackupSuffix]: request.suffix, [labels.managed]: "true" },
        annotations: {
          [annotations.stateBackupSerial]: String(request.serial),
          [annotations.stateBackupLineage]: request.lineage,
          [annotations.stateBackupTakenAt]: new Date(request.now).toISOString().replace(/\.\d+Z$/, "Z"),
          [annotations.stateBackupDigest]: request.digest,
          [annotations.stateBackupSet]: request.setName,
          [annotations.stateBackupResources]: String(request.resources),
          [annotations.stateBackupChunk]: String(index),
          [annotations.stateBackupChunks]: String(chunks.length),
          ...(request.sourceJob ? { [annotations.stateBackupSourceJob]: request.sourceJob } : {}),
          ...(index === 0 && request.inputsHash ? { [annotations.inputsHash]: request.inputsHash } : {}),
        },
        ownerReferences: [{ ...request.owner, controller: false }],
      },
      type: "Opaque",
      data: { tfstate: chunk.data?.tfstate ?? "" },
    };
    const secret = await client.create(builtinTypes.secret, request.namespace, body).catch(async (error) => {
      if (!isConflict(error)) throw error;
      const existing = await client.get<V1Secret>(builtinTypes.secret, request.namespace, body.metadata!.name!);
      if (existing.metadata?.annotations?.[annotations.stateBackupDigest] !== request.digest)
        throw new BackupConflictError(body.metadata!.name!);
      return existing;
    });
    created.push(secret);
    bytes += Buffer.from(chunk.data?.tfstate ?? "", "base64").length;
  }
  return { bytes, created };
}

export async function listBackupSecrets(client: KubeApi, namespace: string, suffix: string, cache?: ReadCache): Promise<V1Secret[]> {
  const labelSelector = `${labels.stateBackup}=true,${labels.stateBackupSuffix}=${suffix}`;
  // Backups are labelled captf.io/managed and written only by this manager (expectations).
  return passClient({ client, cache }).list<V1Secret>(builtinTypes.secret, namespace, labelSelector, { inScope: true });
}
