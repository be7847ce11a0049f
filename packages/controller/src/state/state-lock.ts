import type { CoordinationV1Api } from "@kubernetes/client-node";
import { stateLockLeaseName } from "@captf/render";
import { isConflict, isNotFound, undefinedIfNotFound } from "../runtime/client-node-errors.js";

/**
 * The kubernetes backend's state lock: a Lease `lock-tfstate-default-<suffix>` the backend creates
 * on first lock and only empties on unlock, so it outlives the state it locked unless captf deletes it.
 */

export type StateLockRemoval = { removed: true } | { removed: false; holder: string };

/**
 * Deletes the state lock Lease of a state that is gone (destroyed, or never written). A lock someone
 * still holds stays: deleting it would break their lock. Read live, deleted with its uid and
 * resourceVersion, so a lock taken in between is never deleted.
 */
export async function deleteFreeStateLock(coordination: CoordinationV1Api, namespace: string, suffix: string): Promise<StateLockRemoval> {
  const name = stateLockLeaseName(suffix);
  const lease = await undefinedIfNotFound(coordination.readNamespacedLease({ name, namespace }));
  if (!lease) return { removed: true };
  const holder = lease.spec?.holderIdentity;
  if (holder) return { removed: false, holder };
  const preconditions = { uid: lease.metadata?.uid, resourceVersion: lease.metadata?.resourceVersion };
  return coordination.deleteNamespacedLease({ name, namespace, body: { preconditions } }).then(
    () => ({ removed: true as const }),
    (error) => {
      if (isNotFound(error)) return { removed: true as const };
      // Changed since read: locked meanwhile, or deleted and re-created by someone else.
      if (isConflict(error)) return { removed: false as const, holder: "(taken while captf deleted it)" };
      throw error;
    },
  );
}
