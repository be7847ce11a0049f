import type { V1Lease, V1Pod } from "@kubernetes/client-node";
import type { Role } from "@captf/contract";
import { stateLockLeaseName } from "@captf/render";
import { isOwnRunnerPod } from "../jobs/build-job.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import { isConflict, isNotFound, undefinedIfNotFound } from "../runtime/api-errors.js";
import type { KubeApi } from "../runtime/kube-client.js";
import type { ReadCache } from "../runtime/read-cache.js";
import { passClient } from "../runtime/pass-client.js";

/**
 * The kubernetes backend's state lock: a Lease `lock-tfstate-default-<suffix>` the backend creates
 * on first lock and only empties on unlock, so it outlives the state it locked unless captf deletes it.
 */

export type StateLockRemoval = { removed: true } | { removed: false; holder: string };

/**
 * Deletes the state lock Lease of a state that is gone (destroyed, or never written). A lock someone
 * still holds stays, deleting it would break their lock, unless it is the stale lock `staleLockId` of
 * the object's own dead runner. Read live, deleted with its uid and resourceVersion, so a lock taken
 * in between is never deleted.
 */
export async function deleteFreeStateLock(
  client: KubeApi,
  namespace: string,
  suffix: string,
  staleLockId?: string,
): Promise<StateLockRemoval> {
  const name = stateLockLeaseName(suffix);
  const lease = await undefinedIfNotFound(client.get<V1Lease>(builtinTypes.lease, namespace, name));
  if (!lease) return { removed: true };
  const holder = lease.spec?.holderIdentity;
  if (holder && holder !== staleLockId) return { removed: false, holder };
  const preconditions = { uid: lease.metadata?.uid, resourceVersion: lease.metadata?.resourceVersion };
  return client.delete(builtinTypes.lease, namespace, name, { preconditions }).then(
    () => ({ removed: true as const }),
    (error) => {
      if (isNotFound(error)) return { removed: true as const };
      // Changed since read: locked meanwhile, or deleted and re-created by someone else.
      if (isConflict(error)) return { removed: false as const, holder: "(taken while captf deleted it)" };
      throw error;
    },
  );
}

/** The annotation the backend writes the lock's details into. */
export const lockInfoAnnotation = "app.terraform.io/lock-info";

/** The parts of the backend's lock info captf reads. `Who` is `user@hostname`; in a Job the hostname is the pod's name. */
export interface LockInfo {
  ID?: string;
  Operation?: string;
  Who?: string;
  Created?: string;
}

/**
 * What the state lock means for an object with no Job running: free; held by one of its own runner
 * pods still alive (left alone); stale, left by its own runner that is gone (the next Job runs
 * `force-unlock` with `unlockId`); or foreign, held by anything else (reported, never released).
 */
export type StateLockFinding =
  | { kind: "free" }
  | { kind: "alive"; pod: string }
  | { kind: "stale"; unlockId: string; pod: string }
  | { kind: "foreign"; holder: string; operation?: string; since?: string };

function parseLockInfo(lease: V1Lease): LockInfo | undefined {
  const text = lease.metadata?.annotations?.[lockInfoAnnotation];
  if (!text) return undefined;
  try {
    const info = JSON.parse(text) as unknown;
    return info && typeof info === "object" && !Array.isArray(info) ? (info as LockInfo) : undefined;
  } catch {
    return undefined;
  }
}

/** The pod of this object's own runner that holds the lock, if its holder is one. Pure. */
export function lockHoldingRunnerPod(lease: V1Lease | undefined, owner: { role: Role; name: string }): string | undefined {
  if (!lease?.spec?.holderIdentity) return undefined;
  const info = parseLockInfo(lease);
  const host = info?.Who?.slice(info.Who.lastIndexOf("@") + 1);
  return host && isOwnRunnerPod(owner, host) ? host : undefined;
}

/** Classifies the lock, given its holder pod as read live when it is this object's runner. Pure. */
export function judgeStateLock(
  lease: V1Lease | undefined,
  owner: { role: Role; name: string },
  runnerPod: V1Pod | undefined,
): StateLockFinding {
  const holder = lease?.spec?.holderIdentity;
  if (!lease || !holder) return { kind: "free" };
  const info = parseLockInfo(lease);
  const pod = lockHoldingRunnerPod(lease, owner);
  if (!pod)
    return {
      kind: "foreign",
      holder: info?.Who || holder,
      ...(info?.Operation ? { operation: info.Operation } : {}),
      ...(info?.Created ? { since: info.Created } : {}),
    };
  // A terminating pod may still run the runtime inside its grace period: alive.
  const ended = !runnerPod || runnerPod.status?.phase === "Succeeded" || runnerPod.status?.phase === "Failed";
  return ended ? { kind: "stale", unlockId: info?.ID || holder, pod } : { kind: "alive", pod };
}

/**
 * Reads the lock Lease and, when its holder is this object's runner, that pod: from the manager's
 * caches when given (the pod from a Pod cache that has seen the lock's write, so a runner pod that
 * took the lock is never missed and judged gone), else live.
 */
export async function observeStateLock(
  clients: { client: KubeApi; cache?: ReadCache | undefined },
  namespace: string,
  suffix: string,
  owner: { role: Role; name: string },
): Promise<StateLockFinding> {
  const reads = passClient(clients);
  const name = stateLockLeaseName(suffix);
  const lease = await reads.get<V1Lease>(builtinTypes.lease, namespace, name, { inScope: true });
  const pod = lockHoldingRunnerPod(lease, owner);
  if (!pod) return judgeStateLock(lease, owner, undefined);
  const freshAsOf = lease?.metadata?.resourceVersion;
  // Without a cache, listed by name (a list answers for a pod that is gone without an error).
  const runnerPod = reads.cache
    ? await reads.get<V1Pod>(builtinTypes.pod, namespace, pod, { inScope: true, ...(freshAsOf ? { freshAsOf } : {}) })
    : (await reads.client.list<V1Pod>(builtinTypes.pod, namespace, { fieldSelector: `metadata.name=${pod}` })).items[0];
  return judgeStateLock(lease, owner, runnerPod);
}

/** The StateLocked message: who holds the lock, for what, since when, and what to do. */
export function stateLockedMessage(finding: Extract<StateLockFinding, { kind: "foreign" }>): string {
  const what = [finding.operation, finding.since ? `since ${finding.since}` : undefined].filter(Boolean).join(", ");
  return (
    `the state lock is held by ${finding.holder}${what ? ` (${what})` : ""}, not by this object's runner: captf never ` +
    `releases it; Jobs wait lockTimeoutSeconds for it, then fail and back off. Release it with force-unlock once its holder is done`
  );
}
