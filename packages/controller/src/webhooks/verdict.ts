/**
 * What every validator returns and receives. Validators are pure: whatever needs the API server
 * (who references an object, whether the requester may read a Secret) is looked up by the
 * admission server and handed in as a fact.
 */

/** The outcome of one admission review. Reasons name the field and the fix; they never carry a variable value. */
export type Verdict = { allowed: true; warnings?: string[] } | { allowed: false; reasons: string[]; warnings?: string[] };

/** Who sent the request, from the AdmissionReview's userInfo. */
export interface Requester {
  username: string;
  groups?: readonly string[];
}

export interface AdmissionContext {
  requester: Requester;
  /** Username of the manager's ServiceAccount (system:serviceaccount:<namespace>:<name>): the only writer of a providerID. */
  managerUsername: string;
  /** The request is a dry run; with the topology dry-run annotation it is a ClusterClass dry-run. */
  dryRun?: boolean;
}

/** Allowed when there are no reasons; warnings ride along either way. */
export function verdict(reasons: readonly string[], warnings: readonly string[] = []): Verdict {
  const extra = warnings.length > 0 ? { warnings: [...warnings] } : {};
  return reasons.length === 0 ? { allowed: true, ...extra } : { allowed: false, reasons: [...reasons], ...extra };
}

/** Whether an object's deletion has started: rules on policies are then skipped, so its finalizer stays removable. */
export function isDeleting(object: { metadata?: { deletionTimestamp?: unknown } }): boolean {
  return object.metadata?.deletionTimestamp !== undefined && object.metadata.deletionTimestamp !== null;
}
