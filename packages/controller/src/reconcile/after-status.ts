/**
 * What a pass does once its status is written, on the exit that ran every phase: the events of the transitions that status made,
 * the object's metrics, the finished Jobs marked bookkept (only after the status recorded them), the Job history pruned.
 */
import { generatedRootBytes } from "@captf/render";
import { identityDeniedReason } from "../identity/job-credentials.js";
import type { MetricKind } from "../metrics/captf-metrics.js";
import { previousReason, type Condition } from "../conditions/conditions.js";
import { ignoreNotFound } from "../runtime/api-errors.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import { historyLimits, jobsToPrune } from "./job-history.js";
import { bookkeepingAnnotations } from "./observe-jobs.js";
import { resourceChanges } from "./transition-events.js";
import type { PassResult, ReconcilePass } from "./types.js";

/** Provisioned, Paused, Resumed and IdentityNotAllowed, once each, on the pass that makes the transition. */
function recordTransitions(pass: ReconcilePass): void {
  const { deps, adapter, events, subject, scope, facts } = pass;
  const { previous, paused } = scope;
  if (scope.provisioned && !facts.wasProvisioned)
    void events.record(subject, "Provisioned", `the ${adapter.role} module's infrastructure is provisioned`);
  if (paused && previousReason(previous, "Paused") !== "Paused")
    void events.record(subject, "Paused", "reconciliation paused: no Job starts until it resumes");
  if (!paused && previousReason(previous, "Paused") === "Paused") void events.record(subject, "Resumed", "reconciliation resumed");
  const identity = scope.credentials.find(({ type }) => type === "IdentityAllowed")?.value;
  if (identity?.status === "False" && previousReason(previous, "IdentityAllowed") !== identity.reason) {
    void events.record(subject, "IdentityNotAllowed", identity.message ?? identity.reason);
    const denied = identityDeniedReason(identity.reason);
    if (denied) deps.metrics?.identityDenied.inc({ reason: denied });
  }
}

/** The object's metrics: what each finished Job changed (counted once), its Ready and health, its sizes against their limits. */
function recordObjectMetrics(pass: ReconcilePass): void {
  const { deps, adapter, namespace, name, scope, facts } = pass;
  const metricKind = adapter.kind as MetricKind;
  for (const job of facts.toMark)
    for (const { action, count } of resourceChanges(job.result?.changes))
      deps.metrics?.resourcesChanged.inc({ kind: adapter.kind, op: job.op, action }, count);
  const conditionGauge = (type: string) => {
    const status = (facts.written.conditions as Condition[]).find((condition) => condition.type === type)?.status;
    return status === "True" ? 1 : status === "False" ? 0 : -1;
  };
  deps.metrics?.objectStatus(metricKind, namespace, name, {
    ready: conditionGauge("Ready"),
    ...(scope.outputs ? { healthy: conditionGauge("InfrastructureHealthy") } : {}),
  });
  // Sizes against their limits: the state as its Secrets store it (compressed), the rendered inputs.
  const { state, inputs } = facts;
  deps.metrics?.objectSizes(metricKind, namespace, name, {
    ...(state.kind === "ok" ? { stateResources: state.state.managedResources, stateBytes: state.state.compressedBytes } : {}),
    ...(inputs.kind === "ready" ? { inputsBytes: generatedRootBytes(inputs.rendered.root) } : {}),
  });
}

/** The finished Jobs marked bookkept, then the history beyond its limits deleted. */
async function markAndPruneJobs(pass: ReconcilePass): Promise<void> {
  const { deps, namespace, facts } = pass;
  const { client } = deps;
  for (const job of facts.toMark) {
    await client
      .patch(builtinTypes.job, namespace, job.name, { metadata: { annotations: bookkeepingAnnotations(job.outcome!, job) } }, "merge")
      .catch(ignoreNotFound);
  }
  const history = facts.jobs
    .filter((job) => job.outcome !== undefined)
    .map((job) => ({ name: job.name, op: job.op, succeeded: job.outcome === "succeeded", finishedAt: job.finishedAt! }));
  for (const old of jobsToPrune(history, historyLimits(facts.jobPolicy)))
    await client.delete(builtinTypes.job, namespace, old, { propagationPolicy: "Background" }).catch(ignoreNotFound);
}

/** The after-status work, and the pass's result: what it did, and the sooner of its own requeue and the credentials'. */
export async function afterStatus(pass: ReconcilePass): Promise<PassResult> {
  recordTransitions(pass);
  recordObjectMetrics(pass);
  await markAndPruneJobs(pass);
  const { action, requeueAfterMs, credentials } = pass.facts;
  const requeue = [requeueAfterMs, credentials?.requeueAfterMs].filter((value): value is number => value !== undefined);
  return { action, ...(requeue.length ? { requeueAfterMs: Math.min(...requeue) } : {}) };
}
