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
import { decideOperation, type Decision } from "./decide-operation.js";
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

/** The whole decision of the pass: held while paused, by retained state or an unresolved deletion policy; else decideOperation's. Pure. */
export function decide(pass: Pick<Pass, "adapter" | "object" | "now" | "durable" | "scope">, facts: DecisionFacts): Decision {
  const { adapter, object, now, durable } = pass;
  const { paused, deleting } = pass.scope;
  const {
    active,
    state,
    stateLost,
    restoreSet,
    currentHash,
    planShown,
    inputs,
    jobs,
    retainedBy,
    dependents,
    deletionPolicy,
    terraformCluster,
    drift,
  } = facts;
  const { healthReading, pendingRefreshes, decoding, healthCheckIntervalSeconds } = facts.health;
  const refreshes = jobs.filter((job) => job.op === "refresh" && job.outcome === "succeeded").map((job) => job.finishedAt!);
  return paused
    ? { reason: "Paused" }
    : retainedBy.length > 0
      ? { reason: "RetainedStateFound", requeueAfterMs: 60_000 }
      : deleting && !deletionPolicy
        ? { reason: "DeletionPolicyUnresolved", requeueAfterMs: gateRequeueMs }
        : decideOperation({
            role: adapter.role,
            uid: object.metadata.uid,
            now,
            createdAt: Date.parse(object.metadata.creationTimestamp ?? new Date(now).toISOString()),
            deleting,
            ...(active ? { activeJob: { name: active.name, op: active.op } } : {}),
            state:
              stateLost || state.kind === "unreadable"
                ? { kind: "unreadable" }
                : state.kind === "absent"
                  ? { kind: "absent" }
                  : {
                      kind: "present",
                      managedResources: state.state.managedResources,
                      ...(state.state.inputsHash ? { inputsHash: state.state.inputsHash } : {}),
                    },
            ...(restoreSet ? { restoreRequested: true } : {}),
            ...(currentHash ? { currentInputsHash: currentHash } : {}),
            ...(object.spec.applyPolicy ? { applyPolicy: object.spec.applyPolicy } : {}),
            ...(planShown ? { plan: observedPlan(planShown)! } : {}),
            ...(object.metadata.annotations?.[annotations.approvePlan]
              ? { approvedPlanHash: object.metadata.annotations[annotations.approvePlan] }
              : {}),
            ...(object.metadata.annotations?.[annotations.approveDestructivePlan]
              ? { approvedDestructiveHash: object.metadata.annotations[annotations.approveDestructivePlan] }
              : {}),
            ...(inputs.kind === "ready" ? { approvalHash: inputs.rendered.approvalHash } : {}),
            ...(inputs.kind === "ready" && inputs.rendered.exportsHash && durable?.applied
              ? { exportsChanged: inputs.rendered.exportsHash !== appliedExportsHash(durable) }
              : {}),
            ...(adapter.role === "machinepool" && durable?.partialClusterOutputs ? { exportsPartlyApplied: true } : {}),
            jobs: jobs
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
              }),
            drift: {
              intervalSeconds: drift.policy.intervalSeconds,
              action: drift.policy.action,
              detected: drift.detected,
              ...(drift.lastCheckAt !== undefined ? { lastCheckAt: drift.lastCheckAt } : {}),
            },
            health: {
              ...(healthReading ? { state: healthReading } : {}),
              pendingRefreshes,
              // Until a refresh follows the newest apply, the state's reading is that apply's own.
              appliedReadingDefinite:
                healthReading !== undefined &&
                healthReading !== "pending" &&
                healthReading !== "unknown" &&
                (adapter.role !== "machinepool" || poolMembershipConverged(decoding!.outputs as DecodedOutputs["machinepool"])),
              ...(refreshes.length ? { lastRefreshAt: Math.max(...refreshes) } : {}),
              ...(healthCheckIntervalSeconds ? { checkIntervalSeconds: healthCheckIntervalSeconds } : {}),
            },
            ...(adapter.role === "machinepool"
              ? {
                  pool: {
                    membershipRefreshIntervalSeconds:
                      object.spec.membershipRefreshIntervalSeconds ??
                      terraformCluster?.spec?.defaults?.membershipRefreshIntervalSeconds ??
                      defaultMembershipRefreshSeconds,
                    providerIDCount: (object.spec.providerIDList ?? []).length,
                    statusReplicas: object.status?.replicas ?? 0,
                  },
                }
              : {}),
            ...(adapter.role !== "machine" && durable?.interruptedApply ? { interruptedApply: true } : {}),
            failedLimit: Math.max(1, historyLimits(facts.jobPolicy).failedJobsHistoryLimit),
            dependents,
          });
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
