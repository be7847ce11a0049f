import { createHash } from "node:crypto";
import type { V1OwnerReference, V1Secret } from "@kubernetes/client-node";
import { annotations, labels } from "@captf/contract/api";
import { backendSuffixLabel } from "./read-state.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import type { KubeApi } from "../runtime/kube-client.js";
import type { ReadCache } from "../runtime/read-cache.js";
import { isConflict } from "../runtime/api-errors.js";

/**
 * State backups: each serial of an object's state the manager reads for the first time is copied,
 * chunk for chunk, into `captf-state-backup-<suffix>-<serial>` Secrets, so a lost or damaged state
 * can be restored (`captf.io/restore-state=<serial>`). `--state-backups` complete sets are kept.
 */

/** The backend's own labels: a backup must never look like state to the backend or the reader. */
const backendOnlyLabels = new Set(["tfstate", backendSuffixLabel, "tfstateWorkspace", "app.kubernetes.io/managed-by"]);
const partPattern = /-part-(\d+)$/;

export function backupSecretName(suffix: string, serial: number, chunk: number): string {
  return `captf-state-backup-${suffix}-${serial}${chunk === 0 ? "" : `-part-${chunk}`}`;
}

export interface BackupSet {
  serial: number;
  /** Secret names in chunk order. */
  names: string[];
  complete: boolean;
  takenAt: string;
  bytes: number;
  resources: number;
  inputsHash?: string;
}

/** The backup sets among an object's backup Secrets, newest serial first. Pure. */
export function backupSets(secrets: readonly V1Secret[]): BackupSet[] {
  const bySerial = new Map<number, V1Secret[]>();
  for (const secret of secrets) {
    const serial = Number(secret.metadata?.annotations?.[annotations.stateBackupSerial]);
    if (!Number.isSafeInteger(serial) || serial < 1) continue;
    bySerial.set(serial, [...(bySerial.get(serial) ?? []), secret]);
  }
  const sets: BackupSet[] = [];
  for (const [serial, members] of bySerial) {
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
      serial,
      names: ordered.map((secret) => secret.metadata!.name!),
      complete,
      takenAt: first[annotations.stateBackupTakenAt] ?? "",
      bytes: ordered.reduce((sum, secret) => sum + Buffer.from(secret.data?.tfstate ?? "", "base64").length, 0),
      resources: Number(first[annotations.stateBackupResources] ?? 0),
      ...(first[annotations.inputsHash] ? { inputsHash: first[annotations.inputsHash] } : {}),
    });
  }
  return sets.sort((a, b) => b.serial - a.serial);
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
 * Copies the state Secrets verbatim into a backup set; returns its Secrets' total compressed bytes, and
 * the Secrets as created (undefined when one existed already: then only a list tells what the set holds).
 */
export async function takeStateBackup(
  client: KubeApi,
  request: BackupRequest,
): Promise<{ bytes: number; created: V1Secret[] | undefined }> {
  const chunks = [...request.stateSecrets].sort((a, b) => chunkIndex(a) - chunkIndex(b));
  const digest = createHash("sha256");
  for (const chunk of chunks) digest.update(chunk.data?.tfstate ?? "");
  let bytes = 0;
  let created: V1Secret[] | undefined = [];
  for (const [index, chunk] of chunks.entries()) {
    const keptLabels = Object.fromEntries(Object.entries(chunk.metadata?.labels ?? {}).filter(([key]) => !backendOnlyLabels.has(key)));
    const body: V1Secret = {
      metadata: {
        name: backupSecretName(request.suffix, request.serial, index),
        namespace: request.namespace,
        labels: { ...keptLabels, [labels.stateBackup]: "true", [labels.stateBackupSuffix]: request.suffix, [labels.managed]: "true" },
        annotations: {
          [annotations.stateBackupSerial]: String(request.serial),
          [annotations.stateBackupLineage]: request.lineage,
          [annotations.stateBackupTakenAt]: new Date(request.now).toISOString().replace(/\.\d+Z$/, "Z"),
          [annotations.stateBackupDigest]: digest.copy().digest("hex").slice(0, 16),
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
    const secret = await client
      .create(builtinTypes.secret, request.namespace, body)
      .catch((error) => (isConflict(error) ? undefined : Promise.reject(error)));
    created = secret && created ? [...created, secret] : undefined;
    bytes += Buffer.from(chunk.data?.tfstate ?? "", "base64").length;
  }
  return { bytes, created };
}

export async function listBackupSecrets(client: KubeApi, namespace: string, suffix: string, cache?: ReadCache): Promise<V1Secret[]> {
  const labelSelector = `${labels.stateBackup}=true,${labels.stateBackupSuffix}=${suffix}`;
  // Backups are labelled captf.io/managed and written only by this manager (expectations).
  if (cache) return cache.list<V1Secret>(builtinTypes.secret, namespace, labelSelector, { inScope: true });
  return (await client.list<V1Secret>(builtinTypes.secret, namespace, { labelSelector })).items;
}
