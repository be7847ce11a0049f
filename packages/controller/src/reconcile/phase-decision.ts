// The decision of the pass, pure: what runs next (decideOperation's, or held), made from the facts the earlier phases gathered.
import type { MetricKind } from "../metrics/captf-metrics.js";
import { next, type Phase, type ReconcilePass } from "./types.js";
import { decide, type DecisionFacts } from "./workspace-phases.js";

/** The facts the decision reads, as the phases left them. Pure. */
export function decisionFacts(pass: ReconcilePass): DecisionFacts {
  const { facts } = pass;
  return {
    active: facts.active,
    state: facts.state,
    stateLost: facts.stateLost,
    restoreSet: facts.restoreSet,
    currentHash: facts.currentHash,
    planShown: facts.planShown,
    inputs: facts.inputs,
    jobs: facts.jobs,
    retainedBy: facts.retainedBy,
    dependents: facts.dependents,
    deletionPolicy: facts.deletionPolicy,
    terraformCluster: facts.terraformCluster,
    drift: facts.drift!,
    health: {
      healthReading: facts.healthReading,
      pendingRefreshes: facts.pendingRefreshes,
      decoding: facts.decoding,
      healthCheckIntervalSeconds: facts.healthCheckIntervalSeconds,
    },
    jobPolicy: facts.jobPolicy,
  };
}

/** Decides (pure); the decision is recorded (status, metric) by the step that acts on it. */
export const reconcileDecision: Phase = async (pass) => {
  pass.facts.decision = decide(pass, decisionFacts(pass));
  return next;
};

/** The decision as the status and the metrics see it, once a step acts on it. */
export function recordDecision(pass: ReconcilePass): void {
  const decision = pass.facts.decision!;
  pass.outcome.decision = decision;
  if (pass.durable?.interruptedApply && pass.adapter.role !== "machine") pass.scope.interruptedApply = true;
  pass.deps.metrics?.decided(pass.adapter.kind as MetricKind, decision.op ?? "none", decision.reason);
}
