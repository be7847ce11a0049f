/**
 * The runner's RBAC in a namespace: the ServiceAccount `captf-runner` and the RoleBinding
 * `captf-runner` granting it the static ClusterRole `captf-runner` (state Secrets, leases, events),
 * both labelled `captf.io/managed=true`. A RoleBinding of that name captf did not make is never
 * taken over: if it binds something else, RunnerRBACReady=False/RBACFailed.
 */
import type { RbacV1Subject, V1RoleBinding, V1RoleRef, V1ServiceAccount } from "@kubernetes/client-node";
import { labels } from "@captf/contract/api";
import { runnerServiceAccount } from "../jobs/build-job.js";
import { apiErrorMessage, isConflict, isNotFound } from "../runtime/api-errors.js";
import { conditionReport, type ConditionReport } from "./condition-report.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import type { KubeApi } from "../runtime/kube-client.js";
import type { ReadCache } from "../runtime/read-cache.js";

// The ServiceAccount, the RoleBinding and the ClusterRole share the one name.
export const runnerRbacName = runnerServiceAccount;

export const runnerRoleRef: V1RoleRef = { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: runnerRbacName };

export function runnerSubject(namespace: string): RbacV1Subject {
  return { kind: "ServiceAccount", name: runnerServiceAccount, namespace };
}

export type RoleBindingPlan =
  | { action: "create"; roleBinding: V1RoleBinding }
  | { action: "replace"; roleBinding: V1RoleBinding }
  /** The roleRef of a RoleBinding cannot change: delete it, then create this one. */
  | { action: "recreate"; roleBinding: V1RoleBinding }
  | { action: "keep" }
  | { action: "conflict"; why: string };

function sameRoleRef(a: V1RoleRef | undefined, b: V1RoleRef): boolean {
  return a?.apiGroup === b.apiGroup && a.kind === b.kind && a.name === b.name;
}

function bindsRunner(subjects: readonly RbacV1Subject[] | undefined, namespace: string): boolean {
  return (subjects ?? []).some(
    (s) => s.kind === "ServiceAccount" && s.name === runnerServiceAccount && (s.namespace ?? namespace) === namespace,
  );
}

/** What to write so `captf-runner` in the namespace is bound to the ClusterRole; subjects others added to captf's binding are kept. */
export function planRunnerRoleBinding(existing: V1RoleBinding | undefined, namespace: string): RoleBindingPlan {
  const subject = runnerSubject(namespace);
  if (!existing) {
    return {
      action: "create",
      roleBinding: {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "RoleBinding",
        metadata: { name: runnerRbacName, namespace, labels: { [labels.managed]: "true" } },
        roleRef: runnerRoleRef,
        subjects: [subject],
      },
    };
  }
  const usable = sameRoleRef(existing.roleRef, runnerRoleRef) && bindsRunner(existing.subjects, namespace);
  if (existing.metadata?.labels?.[labels.managed] !== "true") {
    if (usable) return { action: "keep" };
    const bound = `${existing.roleRef?.kind ?? "?"} ${existing.roleRef?.name ?? "?"}`;
    return {
      action: "conflict",
      why:
        `RoleBinding ${namespace}/${runnerRbacName} exists, was not made by captf and binds ${bound} rather than ClusterRole ` +
        `${runnerRbacName} to ServiceAccount ${runnerServiceAccount}; captf never takes it over: delete or rename it`,
    };
  }
  if (usable) return { action: "keep" };
  const { managedFields: _managedFields, ...kept } = existing.metadata ?? {};
  const subjects = bindsRunner(existing.subjects, namespace) ? (existing.subjects ?? []) : [...(existing.subjects ?? []), subject];
  if (!sameRoleRef(existing.roleRef, runnerRoleRef)) {
    return {
      action: "recreate",
      roleBinding: {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "RoleBinding",
        metadata: { name: runnerRbacName, namespace, labels: kept.labels },
        roleRef: runnerRoleRef,
        subjects,
      },
    };
  }
  return { action: "replace", roleBinding: { ...existing, metadata: kept, subjects } };
}

/** Makes the runner's ServiceAccount and RoleBinding exist in the namespace; never throws for an API failure. */
export async function ensureRunnerRbac(
  clients: { client: KubeApi; cache?: ReadCache | undefined },
  namespace: string,
): Promise<ConditionReport> {
  const { client, cache } = clients;
  const failed = (message: string) => conditionReport("RunnerRBACReady", "False", "RBACFailed", message);
  const ready = conditionReport(
    "RunnerRBACReady",
    "True",
    "RBACReady",
    `ServiceAccount ${runnerServiceAccount} is bound to ClusterRole ${runnerRbacName} in namespace ${namespace}`,
  );
  // Settled (both in the caches as planned): no request at all. Anything else is planned on live reads.
  if (cache) {
    const inScope = { inScope: true };
    const [account, binding] = await Promise.all([
      cache.get(builtinTypes.serviceAccount, namespace, runnerServiceAccount, inScope),
      cache.get<V1RoleBinding>(builtinTypes.roleBinding, namespace, runnerRbacName, inScope),
    ]).catch(() => [undefined, undefined]);
    if (account && binding && planRunnerRoleBinding(binding, namespace).action === "keep") return ready;
  }
  try {
    await client.get(builtinTypes.serviceAccount, namespace, runnerServiceAccount).catch(async (error: unknown) => {
      if (!isNotFound(error)) throw error;
      await client
        .create(builtinTypes.serviceAccount, namespace, {
          metadata: { name: runnerServiceAccount, namespace, labels: { [labels.managed]: "true" } },
        })
        .catch((createError: unknown) => (isConflict(createError) ? undefined : Promise.reject(createError)));
    });
  } catch (error) {
    return failed(`ServiceAccount ${namespace}/${runnerServiceAccount}: ${apiErrorMessage(error)}`);
  }
  const what = `RoleBinding ${namespace}/${runnerRbacName}`;
  // A conflict is another writer getting there first (the pass of another object in the namespace, another manager): plan once more on what
  // it wrote.
  for (let attempt = 1; ; attempt++) {
    try {
      const existing = await client
        .get<V1RoleBinding>(builtinTypes.roleBinding, namespace, runnerRbacName)
        .catch((error: unknown) => (isNotFound(error) ? undefined : Promise.reject(error)));
      const plan = planRunnerRoleBinding(existing, namespace);
      switch (plan.action) {
        case "conflict":
          return failed(plan.why);
        case "keep":
          break;
        case "create":
          await client.create(builtinTypes.roleBinding, namespace, plan.roleBinding);
          break;
        case "replace":
          await client.replace(builtinTypes.roleBinding, namespace, runnerRbacName, plan.roleBinding);
          break;
        case "recreate":
          await client.delete(builtinTypes.roleBinding, namespace, runnerRbacName);
          await client.create(builtinTypes.roleBinding, namespace, plan.roleBinding);
          break;
      }
      return ready;
    } catch (error) {
      if (isConflict(error) && attempt < 2) continue;
      if (isConflict(error)) return failed(`${what} changed while it was being written, will retry`);
      return failed(`${what}: ${apiErrorMessage(error)}`);
    }
  }
}

/**
 * RunnerRBACReady for a Job policy's `serviceAccountName` override: Jobs run as another
 * ServiceAccount of the namespace only when it exists and is opted in with `captf.io/runner=true`,
 * so an object's author cannot borrow whatever a ServiceAccount of the namespace may do. Pure.
 */
export function serviceAccountOverrideCondition(name: string, namespace: string, account: V1ServiceAccount | undefined): ConditionReport {
  const optIn = `${labels.runnerServiceAccount}=true`;
  if (!account)
    return conditionReport(
      "RunnerRBACReady",
      "False",
      "ServiceAccountNotOptedIn",
      `spec.jobs.serviceAccountName names ServiceAccount ${namespace}/${name}, which does not exist: create it labelled ` +
        `${optIn}, or drop the override`,
    );
  if (account.metadata?.labels?.[labels.runnerServiceAccount] !== "true") {
    return conditionReport(
      "RunnerRBACReady",
      "False",
      "ServiceAccountNotOptedIn",
      `ServiceAccount ${namespace}/${name} (spec.jobs.serviceAccountName) is not labelled ${optIn}: no Job runs as it until it is`,
    );
  }
  return conditionReport(
    "RunnerRBACReady",
    "True",
    "RBACReady",
    `Jobs run as ServiceAccount ${namespace}/${name}, opted in with ${optIn}; its permissions are its owner's`,
  );
}
