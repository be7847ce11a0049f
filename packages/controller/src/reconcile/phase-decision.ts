// The decision of the pass, pure: what runs next (decideOperation's, or held), made from the facts the earlier phases gathered.
import type { DecodedOutputs, HealthState, OutputsDecoding, Role } from "@captf/contract";
import { annotations } from "@captf/contract/api";
import type { PlanPreview } from "../api/workspace.js";
import type { StoredJobPolicy } from "../jobs/merge-job-policy.js";
import { poolMembershipConverged } from "../kinds/map-outputs.js";
import type { MetricKind } from "../metrics/captf-metrics.js";
import type { StateReading } from "../state/decode-state.js";
import type { BackupSet } from "../state/state-backups.js";
import { guardedApprovalHash, type InputsOutcome } from "./compute-status.js";
import { decideOperation, type Decision, type Observed } from "./decide-operation.js";
import { historyLimits } from "./job-history.js";
import type { ObservedJob } from "./observe-jobs.js";
import type { TerraformClusterObject } from "./pass-reads.js";
import { observedPlan } from "./plan-approval.js";
import { gateRequeueMs } from "./requeue.js";
import type { DeletionPolicy } from "./retained-state.js";
import { type DriftFacts, type Pass, type ReconcilePass, next, type Phase } from "./types.js";
import { appliedExportsHash } from "./durable-inputs.js";

const defaultMembershipRefreshSeconds = 60;

/** What the decision reads beyond the pass itself. */
export interface DecisionFacts {
  active: ObservedJob | undefined;
  state: StateReading;
  stateLost: boolean;
  restoreSet: BackupSet | undefined;
  currentHash: string | undefined;
  planShown: PlanPreview | undefined;
  inputs: InputsOutcome<{ approvalHash: string; exportsHash?: string }>;
  jobs: readonly ObservedJob[];
  retainedBy: readonly string[];
  dependents: number;
  deletionPolicy: DeletionPolicy | undefined;
  terraformCluster: TerraformClusterObject | undefined;
  drift: DriftFacts;
  health: {
    healthReading: HealthState | undefined;
    pendingRefreshes: number;
    decoding: OutputsDecoding<Role> | undefined;
    healthCheckIntervalSeconds: number | undefined;
  };
  /** The effective Job policy: own `spec.jobs` over the cluster's `spec.defaults.jobs` (machines and pools). */
  jobPolicy: StoredJobPolicy;
}

type DecidingPass = Pick<Pass, "adapter" | "object" | "now" | "durable" | "scope">;

/** The state as decideOperation reads it: lost or unreadable alike, absent, or present with its resources and hash. Pure. */
function observedState(state: StateReading, stateLost: boolean): Observed["state"] {
  if (stateLost || state.kind === "unreadable") return { kind: "unreadable" };
  if (state.kind === "absent") return { kind: "absent" };
  return {
    kind: "present",
    managedResources: state.state.managedResources,
    ...(state.state.inputsHash ? { inputsHash: state.state.inputsHash } : {}),
  };
}

/** The finished Jobs as decideOperation reads them: outcome, time, hashes, remediation. Pure. */
function finishedJobs(jobs: readonly ObservedJob[]): Observed["jobs"] {
  return jobs
    .filter((job) => job.outcome !== undefined)
    .map((job) => {
      const guardedHash = guardedApprovalHash(job.job);
      return {
        op: job.op,
        outcome: job.outcome!,
        finishedAt: job.finishedAt!,
        ...(job.inputsHash ? { inputsHash: job.inputsHash } : {}),
        ...(guardedHash ? { approvalHash: guardedHash } : {}),
        ...(job.remediation ? { remediation: true } : {}),
      };
    });
}

/** The health reading, the refreshes it asks for and the newest one. Pure. */
function observedHealth(pass: DecidingPass, facts: DecisionFacts): Observed["health"] {
  const { healthReading, pendingRefreshes, decoding, healthCheckIntervalSeconds } = facts.health;
  const refreshes = facts.jobs.filter((job) => job.op === "refresh" && job.outcome === "succeeded").map((job) => job.finishedAt!);
  return {
    ...(healthReading ? { state: healthReading } : {}),
    pendingRefreshes,
    // Until a refresh follows the newest apply, the state's reading is that apply's own.
    appliedReadingDefinite:
      healthReading !== undefined &&
      healthReading !== "pending" &&
      healthReading !== "unknown" &&
      (pass.adapter.role !== "machinepool" || poolMembershipConverged(decoding!.outputs as DecodedOutputs["machinepool"])),
    ...(refreshes.length ? { lastRefreshAt: Math.max(...refreshes) } : {}),
    ...(healthCheckIntervalSeconds ? { checkIntervalSeconds: healthCheckIntervalSeconds } : {}),
  };
}

/** A pool's membership refresh interval and the members the spec and the status count. Pure. */
function observedPool(object: DecidingPass["object"], terraformCluster: TerraformClusterObject | undefined): Observed["pool"] {
  return {
    membershipRefreshIntervalSeconds:
      object.spec.membershipRefreshIntervalSeconds ??
      terraformCluster?.spec?.defaults?.membershipRefreshIntervalSeconds ??
      defaultMembershipRefreshSeconds,
    providerIDCount: (object.spec.providerIDList ?? []).length,
    statusReplicas: object.status?.replicas ?? 0,
  };
}

/** The approvals and inputs a plan or a guarded apply is decided on: the plan shown, the approvals given, the exports' change. Pure. */
function observedApprovals(pass: DecidingPass, facts: DecisionFacts): Partial<Observed> {
  const { adapter, object, durable } = pass;
  const { inputs, planShown } = facts;
  const notes = object.metadata.annotations;
  return {
    ...(object.spec.applyPolicy ? { applyPolicy: object.spec.applyPolicy } : {}),
    ...(planShown ? { plan: observedPlan(planShown)! } : {}),
    ...(notes?.[annotations.approvePlan] ? { approvedPlanHash: notes[annotations.approvePlan] } : {}),
    ...(notes?.[annotations.approveDestructivePlan] ? { approvedDestructiveHash: notes[annotations.approveDestructivePlan] } : {}),
    ...(inputs.kind === "ready" ? { approvalHash: inputs.rendered.approvalHash } : {}),
    ...(inputs.kind === "ready" && inputs.rendered.exportsHash && durable?.applied
      ? { exportsChanged: inputs.rendered.exportsHash !== appliedExportsHash(durable) }
      : {}),
    ...(adapter.role === "machinepool" && durable?.partialClusterOutputs ? { exportsPartlyApplied: true } : {}),
  };
}

/** What decideOperation observes of this pass. Pure. */
function observedFor(pass: DecidingPass, facts: DecisionFacts): Observed {
  const { adapter, object, now, durable } = pass;
  const { active, restoreSet, currentHash, drift } = facts;
  return {
    role: adapter.role,
    uid: object.metadata.uid,
    now,
    createdAt: Date.parse(object.metadata.creationTimestamp ?? new Date(now).toISOString()),
    deleting: pass.scope.deleting,
    ...(active ? { activeJob: { name: active.name, op: active.op } } : {}),
    state: observedState(facts.state, facts.stateLost),
    ...(restoreSet ? { restoreRequested: true } : {}),
    ...(currentHash ? { currentInputsHash: currentHash } : {}),
    ...observedApprovals(pass, facts),
    jobs: finishedJobs(facts.jobs),
    drift: {
      intervalSeconds: drift.policy.intervalSeconds,
      action: drift.policy.action,
      detected: drift.detected,
      ...(drift.lastCheckAt !== undefined ? { lastCheckAt: drift.lastCheckAt } : {}),
    },
    health: observedHealth(pass, facts),
    ...(adapter.role === "machinepool" ? { pool: observedPool(object, facts.terraformCluster) } : {}),
    ...(adapter.role !== "machine" && durable?.interruptedApply ? { interruptedApply: true } : {}),
    failedLimit: Math.max(1, historyLimits(facts.jobPolicy).failedJobsHistoryLimit),
    dependents: facts.dependents,
  };
}

/** The whole decision of the pass: held while paused, by retained state or an unresolved deletion policy; else decideOperation's. Pure. */
export function decide(pass: DecidingPass, facts: DecisionFacts): Decision {
  if (pass.scope.paused) return { reason: "Paused" };
  if (facts.retainedBy.length > 0) return { reason: "RetainedStateFound", requeueAfterMs: 60_000 };
  if (pass.scope.deleting && !facts.deletionPolicy) return { reason: "DeletionPolicyUnresolved", requeueAfterMs: gateRequeueMs };
  return decideOperation(observedFor(pass, facts));
}

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
