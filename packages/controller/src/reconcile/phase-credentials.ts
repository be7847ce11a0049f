// The credentials phase: identity, credential mirror and runner RBAC for an object that may start a Job.
import type { V1ServiceAccount } from "@kubernetes/client-node";
import { serviceAccountOverrideCondition } from "../identity/runner-rbac.js";
import { runnerServiceAccount } from "../jobs/build-job.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import { next, type CredentialsResolver, type Phase, type ReconcilePass } from "./types.js";

/** Resolves the object's credentials onto the pass (its conditions onto the status). */
export async function resolveCredentials(pass: ReconcilePass, resolver: CredentialsResolver): Promise<void> {
  const credentials = await resolver({ role: pass.adapter.role, object: pass.object, terraformCluster: pass.facts.terraformCluster });
  pass.facts.credentials = credentials;
  pass.scope.credentials = credentials.conditions;
}

/**
 * The credentials, and whether the Job policy's ServiceAccount (other than captf-runner) is opted in. A deleting object makes them
 * only when its Job is about to start (reference: deletionCredentials), so a late pass over a stale cached copy never re-creates what
 * the namespace sweep removed after its finalizer went.
 */
export const reconcileCredentials: Phase = async (pass) => {
  const { deps, namespace, scope, facts } = pass;
  if (deps.credentials && !scope.paused && !scope.deleting) await resolveCredentials(pass, deps.credentials);
  const account = facts.jobPolicy.serviceAccountName;
  if (account && account !== runnerServiceAccount && !scope.paused) {
    const found = await pass.reads.live.get<V1ServiceAccount>(builtinTypes.serviceAccount, namespace, account);
    const runnerAccount = serviceAccountOverrideCondition(account, namespace, found);
    scope.serviceAccount = runnerAccount;
    if (runnerAccount.status !== "True") facts.serviceAccountRefusal = runnerAccount;
  }
  return next;
};
