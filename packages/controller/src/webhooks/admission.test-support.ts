// Admission contexts for validator tests: a user, the manager, a ClusterClass dry-run.
import type { AdmissionContext, Verdict } from "./verdict.js";

export const managerUsername = "system:serviceaccount:captf-system:captf-controller-manager";

export function asUser(username = "alice", extra: Partial<AdmissionContext> = {}): AdmissionContext {
  return { requester: { username, groups: ["system:authenticated"] }, managerUsername, ...extra };
}

export function asManager(): AdmissionContext {
  return asUser(managerUsername);
}

/** The reasons of a denied verdict; [] when allowed. */
export function reasonsOf(result: Verdict): string[] {
  return result.allowed ? [] : result.reasons;
}
