import type { Role } from "@captf/contract";
import { annotations, negativePolarityConditions, type ConditionType, type DeclaredCondition } from "@captf/contract/api";
import type { V1Job } from "@kubernetes/client-node";
import { maxDriftResources } from "@captf/contract/run-result";
import { maxApproverLength, type PlanPreview } from "../api/workspace.js";
import type { StateReading } from "../state/decode-state.js";
import { stateLockedMessage, type StateLockFinding } from "../state/state-lock.js";
import { ConditionSet, type Condition, type ConditionValue } from "../conditions/conditions.js";
import type { Decision, Operation } from "./decide-operation.js";
import { driftDetectedCondition, type DriftPolicy } from "./drift-policy.js";
import { imagePullDeadlineMs, type ObservedJob } from "./observe-jobs.js";
import { heldExportsMessage, withdrawnExportsMessage, type PendingExports } from "./held-exports.js";
import { previewCounts } from "./plan-approval.js";
import type { DeletionPolicy } from "./retained-state.js";

/**
 * The status of a Terraform* object as one pass leaves it: a pure function of the facts the pass
 * gathered (its scope) and what it decided and started. One setter per condition, each typed against
 * the reasons `@captf/contract` declares for it; a setter that returns undefined leaves its condition
 * as the status has it (its facts were not gathered this pass, or it does not apply). Ready is the
 * summary docs/conditions.md describes.
 */

/** Inputs that can run an apply: rendered root, hash and the user variables in them. */
export type InputsOutcome<Rendered = unknown> =
  | { kind: "ready"; rendered: Rendered & { hash: string } }
  | { kind: "pending"; reason: string; message: string; condition: "DependenciesReady" | "ApplyJobSucceeded"; status: "Unknown" | "False" }
  | { kind: "none" };

/**
 * The facts of one pass that the status is computed from, each noted with the step that sets it (gatherScope, or a phase of
 * phases.ts); a phase that did not run leaves its fact undefined.
 */
export interface StatusScope {
  /** gatherScope. */
  role: Role;
  /** gatherScope. */
  kind: string;
  /** gatherScope. */
  now: number;
  /** gatherScope (reconcileOutputs: the generation its spec patch made). */
  generation?: number;
  /** gatherScope: the conditions as read. */
  previous: readonly Condition[] | undefined;
  /** gatherScope. */
  paused: boolean;
  /** gatherScope: what pauses it, the Cluster's spec.paused or the object's own annotation. */
  pausedBy?: "Cluster" | "annotation";
  /** gatherScope. */
  deleting: boolean;
  /** reconcileDeletionFacts; undefined: inherited from a TerraformCluster that is not found. */
  deletionPolicy?: DeletionPolicy | undefined;
  /** reconcileDeletionFacts: a deleting cluster's machines and pools that still exist. */
  dependents?: number;
  /** gatherScope. */
  clusterName: string;
  /** gatherScope: a provisioned machine runs on the inputs its durable inputs pinned. */
  pinned: boolean;
  /** reconcileInputs (reconcileHeldExports: a pool's held inputs). */
  inputs: InputsOutcome;
  /** reconcileCredentials (reconcileOperation for a deleting object): IdentityAllowed, CredentialsMirrored, RunnerRBACReady. */
  credentials: { type: string; value: ConditionValue }[];
  /** reconcileCredentials: RunnerRBACReady of a ServiceAccount other than captf-runner named by the Job policy. */
  serviceAccount?: ConditionValue;
  /** reconcileJobs: a cluster or pool apply Job that disappeared while it ran, noticed this pass. */
  vanishedApply?: string;
  /** reconcileHeldExports: the change of the cluster's exports a pool holds for approval (it renders its last applied ones). */
  heldExports?: { pending: PendingExports; approvalHash: string };
  /**
   * reconcileHeldExports: a pool's blocked Job, still the newest apply, whose change of the exports was withdrawn, and the apply
   * before it (undefined: pruned).
   */
  withdrawnExports?: { job: string; applyBefore?: ObservedJob };
  /** recordDecision: an apply that may have applied part of its change is on record (`captf.io/interrupted-apply`). */
  interruptedApply?: boolean;
  /** reconcileJobs: restore Jobs bookkept this pass, oldest first. */
  restores: { job: string; serial: number; succeeded: boolean; summary?: string }[];
  /** reconcileState: `captf.io/restore-state` names no complete backup: its value. */
  restoreBackupNotFound?: string;
  /** reconcileState: the state as this object may use it (lineage checked); undefined before it was read. */
  state?: StateReading;
  /** reconcileState. */
  stateLost?: boolean;
  /** reconcileState. */
  lock?: StateLockFinding;
  /** reconcileRetainedState: UIDs of deleted objects whose retained state is in the way (not adopted). */
  retainedBy?: string[];
  /** reconcileDrift. */
  drift?: {
    action: DriftPolicy["action"];
    /** The newest drift or refresh Job bookkept this pass. */
    newestCheck?: ObservedJob;
    /** A remediation apply that succeeded after the newest finding. */
    remediatedBy?: string;
  };
  /** reconcileOutputs: OutputsValid (undefined: keep) and InfrastructureHealthy, when the state held outputs. */
  outputs?: { outputsValid?: ConditionValue; health: ConditionValue };
  /** reconcileOutputs: the newest Job that finished this pass (with a run result, or not bookkept yet). */
  newestJob?: ObservedJob;
  /** reconcilePlans. */
  planShown?: PlanPreview;
  /** reconcileInputs (reconcileHeldExports): the hash of the inputs rendered now; a pinned machine's is the one it applied. */
  currentHash?: string;
  /** reconcileOutputs: conditions the kind wrote back to its owner (pool autoscaling, machine remediation). */
  ownerConditions: { type: string; value: ConditionValue }[];
  /** gatherScope (as read), then reconcileOutputs. */
  provisioned: boolean;
  /** reconcileOutputs: a cluster's control-plane endpoint host after this pass (its spec, the module's, or the Cluster's). */
  endpointHost?: string;
  /** reconcileOperation: ImageVerified as the signature check left it (a refusal is the pass's wait); undefined: keep. */
  imageVerified?: ConditionValue;
  /** Status fields the phases gathered: state backups (reconcileState), plan (reconcilePlans), contract fields (reconcileOutputs), ... */
  fields: Record<string, unknown>;
}

/** What the pass decided and what its act step did. */
export interface PassOutcome {
  decision?: Decision;
  /** The Job running after the act step (started this pass or before). */
  active?: { name: string; op: Operation; attempt: number; remediation: boolean; startTime?: string };
  /** The condition explaining why no Job started. */
  wait?: { type: string; value: ConditionValue };
}

type Setter<T extends ConditionType> = (scope: StatusScope, outcome: PassOutcome) => DeclaredCondition<T> | undefined;

const setPaused: Setter<"Paused"> = ({ paused }) =>
  paused ? { status: "True", reason: "Paused" } : { status: "False", reason: "NotPaused" };

const setDependenciesReady: Setter<"DependenciesReady"> = ({ pinned, inputs, deleting, kind }) => {
  if (pinned) return { status: "True", reason: "DependenciesReady" };
  if (inputs.kind === "none")
    return deleting
      ? undefined
      : { status: "Unknown", reason: "WaitingForOwner", message: `waiting for a Cluster API owner of this ${kind}` };
  if (inputs.kind === "pending" && inputs.condition === "DependenciesReady")
    return { status: inputs.status, reason: inputs.reason, message: inputs.message } as DeclaredCondition<"DependenciesReady">;
  return { status: "True", reason: "DependenciesReady" };
};

/** A pass-through condition of the credentials resolver, when it computed one. */
function credentialsCondition<T extends "IdentityAllowed" | "CredentialsMirrored">(type: T): Setter<T> {
  return ({ credentials }) => credentials.find((entry) => entry.type === type)?.value as DeclaredCondition<T> | undefined;
}

const setRunnerRBACReady: Setter<"RunnerRBACReady"> = ({ credentials, serviceAccount }, { wait }) => {
  if (wait?.type === "RunnerRBACReady") return wait.value as DeclaredCondition<"RunnerRBACReady">;
  return (serviceAccount ?? credentials.find((entry) => entry.type === "RunnerRBACReady")?.value) as
    | DeclaredCondition<"RunnerRBACReady">
    | undefined;
};

const setApplyJobSucceeded: Setter<"ApplyJobSucceeded"> = (scope, { decision, wait, active }) => {
  if (wait?.type === "ApplyJobSucceeded") return wait.value as DeclaredCondition<"ApplyJobSucceeded">;
  const unappliable =
    scope.inputs.kind === "pending" && scope.inputs.condition === "ApplyJobSucceeded"
      ? ({
          status: scope.inputs.status,
          reason: scope.inputs.reason,
          message: scope.inputs.message,
        } as DeclaredCondition<"ApplyJobSucceeded">)
      : undefined;
  // Inputs no apply can take (too large) outrank the last apply's outcome, unless a destroy's is due.
  if (unappliable && !scope.deleting) return unappliable;
  const { newestJob: newest, planShown } = scope;
  // A held change reads as blocked until approved, whatever else the pool applied meanwhile; a failure shows first.
  const newestFailed =
    newest && (newest.op === "apply" || newest.op === "destroy") && newest.outcome !== "succeeded" && newest.outcome !== "blocked";
  if (scope.heldExports && !newestFailed)
    return {
      status: "False",
      reason: "DestructivePlanBlocked",
      message: heldExportsMessage(scope.heldExports.pending, scope.heldExports.approvalHash),
    };
  // A withdrawn change: the last apply's real outcome, naming the Job it stopped.
  if (scope.withdrawnExports) {
    const before: DeclaredCondition<"ApplyJobSucceeded"> = scope.withdrawnExports.applyBefore
      ? applyJobCondition(scope.withdrawnExports.applyBefore)
      : { status: "True", reason: "ApplySucceeded" };
    return {
      ...before,
      message: [withdrawnExportsMessage(scope.withdrawnExports.job), ...(before.message ? [before.message] : [])].join("; "),
    } as DeclaredCondition<"ApplyJobSucceeded">;
  }
  if (decision?.reason === "PlanAwaitingApproval" && planShown) {
    return {
      status: "Unknown",
      reason: "PlanAwaitingApproval",
      message: `plan ${planShown.planHash} (${previewCounts(planShown)}) waits for ${annotations.approvePlan}=${planShown.planHash}`,
    };
  }
  if (newest?.outcome === "plan-changed")
    return {
      status: "Unknown",
      reason: "PlanChanged",
      message: `Job ${newest.name} planned differently from the approved plan; the new plan waits for approval`,
    };
  const planShownOnly = newest?.op === "plan" && newest.result?.plan !== undefined && !newest.result.error;
  if (newest && (newest.op === "apply" || newest.op === "destroy" || newest.op === "plan") && !planShownOnly)
    return applyJobCondition(newest);
  if (scope.vanishedApply) return { status: "False", reason: "ApplyFailed", message: vanishedApplyMessage(scope.vanishedApply) };
  if (unappliable) return unappliable;
  // Nothing has run, and no apply runs yet (it reports its own outcome when it finishes).
  const before = scope.previous?.find((condition) => condition.type === "ApplyJobSucceeded");
  if (!before && active?.op !== "apply") return { status: "Unknown", reason: "NoApplyYet", message: "no apply has run yet" };
  // The Job a wait held back (a quota, a lease, a slot) runs now: the wait is over, though no apply has finished.
  if (before && startWaits.includes(before.reason) && (active?.op === "apply" || active?.op === "destroy"))
    return { status: "Unknown", reason: "NoApplyYet", message: `${active.op} Job ${active.name} runs; no apply has finished yet` };
  return undefined;
};

/**
 * The waits of an operation's start (startOperation): each is also an event, once per wait (reference: "the Normal events of the same
 * names once per wait"), and each is over once the Job runs.
 */
export const startWaits: readonly string[] = [
  "WaitingForRunLease",
  "WaitingForClusterOperation",
  "WaitingForMachineOperations",
  "WaitingForJobSlot",
  "JobQuotaExceeded",
];

const setStateReadable: Setter<"StateReadable"> = ({ state, stateLost, lock, retainedBy, deleting, kind }) => {
  if (!state) return undefined;
  if (retainedBy?.length && !deleting) {
    const retainer = retainedBy.join(", ");
    return {
      status: "False",
      reason: "RetainedStateFound",
      message:
        `state retained by deleted object ${retainer} is in the way: set spec.adoptRetainedState: true to take it over, ` +
        `or delete the Secrets labelled captf.io/retained-from-uid=${retainer}`,
    };
  }
  if (state.kind === "unreadable") return { status: "False", reason: state.reason, message: state.message };
  if (stateLost)
    return {
      status: "False",
      reason: "StateLost",
      message:
        `the state Secrets are gone although this ${kind} applied before: restore a backup with ` + `${annotations.restoreState}=<serial>`,
    };
  if (lock?.kind === "foreign") return { status: "False", reason: "StateLocked", message: stateLockedMessage(lock) };
  if (state.kind === "ok") return { status: "True", reason: "StateRead" };
  return { status: "Unknown", reason: "StateNotFound", message: "no state Secret yet: the first apply creates it" };
};

const setRestoreJobSucceeded: Setter<"RestoreJobSucceeded"> = ({ restores, restoreBackupNotFound }, { wait }) => {
  if (wait?.type === "RestoreJobSucceeded") return wait.value as DeclaredCondition<"RestoreJobSucceeded">;
  if (restoreBackupNotFound !== undefined)
    return {
      status: "False",
      reason: "RestoreBackupNotFound",
      message: `${annotations.restoreState}=${restoreBackupNotFound} names no complete backup; status.stateBackups lists the serials kept`,
    };
  const restore = restores.at(-1);
  if (!restore) return undefined;
  if (restore.succeeded)
    return { status: "True", reason: "StateRestored", message: `backup serial ${restore.serial} restored by Job ${restore.job}` };
  return {
    status: "False",
    reason: "RestoreFailed",
    message: `Job ${restore.job} could not restore backup serial ${restore.serial}${restore.summary ? `: ${restore.summary}` : ""}`,
  };
};

const setOutputsValid: Setter<"OutputsValid"> = ({ outputs }) => outputs?.outputsValid as DeclaredCondition<"OutputsValid"> | undefined;
const setInfrastructureHealthy: Setter<"InfrastructureHealthy"> = ({ outputs }) =>
  outputs?.health as DeclaredCondition<"InfrastructureHealthy"> | undefined;

/** Whether the inputs rendered now are applied; untouched while deleting or paused, or before the state was read. */
const setInputsApplied: Setter<"InputsApplied"> = (scope, { decision, active }) => {
  const { state, deleting, paused, currentHash } = scope;
  if (deleting || paused || !state) return undefined;
  if (!currentHash)
    return {
      status: "Unknown",
      reason: "InputsUnavailable",
      message: scope.inputs.kind === "pending" ? scope.inputs.message : `the inputs of this ${scope.kind} cannot be built yet`,
    };
  const appliedHash = state.kind === "ok" ? state.state.inputsHash : undefined;
  if (appliedHash === currentHash && !scope.interruptedApply) return { status: "True", reason: "InputsApplied" };
  if (active?.op === "apply") return { status: "False", reason: "ApplyRunning", message: `Job ${active.name} applies the current inputs` };
  if (decision?.reason === "PlanAwaitingApproval" || decision?.reason === "DestructivePlanBlocked")
    return { status: "False", reason: "AwaitingApproval", message: `applying the current inputs waits for approval (${decision.reason})` };
  const newest = scope.newestJob;
  if (
    newest?.op === "apply" &&
    newest.outcome !== undefined &&
    newest.outcome !== "succeeded" &&
    newest.outcome !== "interrupted" &&
    newest.inputsHash === currentHash
  ) {
    return { status: "False", reason: "InputsApplyFailed", message: `Job ${newest.name} could not apply the current inputs` };
  }
  return {
    status: "False",
    reason: "ApplyPending",
    message: decision ? `an apply of the current inputs is due (${decision.reason})` : "an apply of the current inputs is due",
  };
};

const setDriftJobSucceeded: Setter<"DriftJobSucceeded"> = ({ drift, previous }, { wait, active }) => {
  if (wait?.type === "DriftJobSucceeded") return wait.value as DeclaredCondition<"DriftJobSucceeded">;
  const check = drift?.newestCheck;
  if (check?.outcome === "succeeded" && check.op === "drift" && check.result?.drift) return { status: "True", reason: "DriftChecked" };
  if (check && check.outcome !== "succeeded" && check.outcome !== "interrupted") {
    if (check.deadlineExceeded)
      return { status: "False", reason: "DriftJobDeadlineExceeded", message: `Job ${check.name} reached its deadline` };
    return {
      status: "False",
      reason: "DriftJobFailed",
      message: `Job ${check.name} (${check.op}) failed${check.result?.error?.summary ? `: ${check.result.error.summary}` : ""}`,
    };
  }
  if (!drift) return undefined;
  const before = previous?.find((condition) => condition.type === "DriftJobSucceeded");
  // Until a check has finished; afterwards the newest outcome stays while the next one runs.
  if (active?.op === "drift" && (!before || before.status === "Unknown"))
    return { status: "Unknown", reason: "DriftJobRunning", message: `Job ${active.name} checks for drift` };
  if (!before) return { status: "Unknown", reason: "DriftNotChecked", message: "no drift check has run yet" };
  return undefined;
};

/** DriftDetected as the newest finding (or the status) has it, before remediation: also what the decision reads. Pure. */
export function driftFinding({
  drift,
  role,
  previous,
}: Pick<StatusScope, "drift" | "role" | "previous">): DeclaredCondition<"DriftDetected"> | undefined {
  const before = previous?.find((condition) => condition.type === "DriftDetected") as DeclaredCondition<"DriftDetected"> | undefined;
  const check = drift?.newestCheck;
  const finding = check?.outcome === "succeeded" && check.op === "drift" ? check.result?.drift : undefined;
  const current = finding && drift ? (driftDetectedCondition(finding, drift.action, role) as DeclaredCondition<"DriftDetected">) : before;
  if (drift?.remediatedBy && current?.status === "True")
    return {
      status: "False",
      reason: "NoDrift",
      message: `remediation apply Job ${drift.remediatedBy} applied the current inputs over the drift`,
    };
  return current;
}

const setDriftDetected: Setter<"DriftDetected"> = (scope, { active }) => {
  if (!scope.drift) return undefined;
  const current = driftFinding(scope);
  if (!current) return { status: "Unknown", reason: "DriftNotChecked", message: "no drift check has run yet" };
  // Drift to remediate: remediating while its apply runs, pending until it starts.
  if (current.status === "True" && (current.reason === "DriftRemediating" || current.reason === "DriftPending")) {
    return {
      status: "True",
      reason: active?.op === "apply" && active.remediation ? "DriftRemediating" : "DriftPending",
      ...(current.message ? { message: current.message } : {}),
    };
  }
  return current;
};

const setDeletionBlocked: Setter<"DeletionBlocked"> = ({ role, deleting, dependents, clusterName }) => {
  if (role !== "cluster" || !deleting || dependents === undefined) return undefined;
  return dependents > 0
    ? {
        status: "True",
        reason: "DependentsExist",
        message: `${dependents} TerraformMachine(s) or TerraformMachinePool(s) of cluster ${clusterName} still exist`,
      }
    : { status: "False", reason: "NotBlocked" };
};

const setDeleting: Setter<"Deleting"> = ({ deleting, deletionPolicy, paused, pausedBy, clusterName }) => {
  if (!deleting) return { status: "False", reason: "NotDeleting" };
  // A paused object runs no destroy and keeps its finalizer: it says why its deletion does not progress.
  if (paused) {
    const pause =
      pausedBy === "annotation"
        ? `the object is paused (annotation ${annotations.paused})`
        : `the Cluster ${clusterName} is paused (spec.paused)`;
    return { status: "True", reason: "DeletionPaused", message: `deletion waits: ${pause}; it goes on once reconciliation resumes` };
  }
  if (deletionPolicy) return { status: "True", reason: "Deleting", message: `deletionPolicy ${deletionPolicy}` };
  return {
    status: "True",
    reason: "DeletionPolicyUnresolved",
    message: "deletionPolicy is inherited from the TerraformCluster, which is not found: set spec.deletionPolicy",
  };
};

/** A cluster's control-plane endpoint, once it is provisioned. */
const setEndpointAvailable: Setter<"EndpointAvailable"> = ({ role, provisioned, endpointHost }) => {
  if (role !== "cluster" || !provisioned) return undefined;
  return endpointHost
    ? { status: "True", reason: "EndpointAvailable", message: `control-plane endpoint ${endpointHost}` }
    : {
        status: "False",
        reason: "WaitingForEndpoint",
        message: "neither the module's control_plane_endpoint output nor the Cluster gives a control-plane endpoint yet",
      };
};

const setImageVerified: Setter<"ImageVerified"> = ({ imageVerified }, { wait }) =>
  (wait?.type === "ImageVerified" ? wait.value : imageVerified) as DeclaredCondition<"ImageVerified"> | undefined;

/** The setters in the order their conditions appear on a new status. */
const setters: { [T in ConditionType]?: Setter<T> } = {
  Paused: setPaused,
  DependenciesReady: setDependenciesReady,
  IdentityAllowed: credentialsCondition("IdentityAllowed"),
  CredentialsMirrored: credentialsCondition("CredentialsMirrored"),
  RunnerRBACReady: setRunnerRBACReady,
  ImageVerified: setImageVerified,
  ApplyJobSucceeded: setApplyJobSucceeded,
  StateReadable: setStateReadable,
  RestoreJobSucceeded: setRestoreJobSucceeded,
  OutputsValid: setOutputsValid,
  InfrastructureHealthy: setInfrastructureHealthy,
  InputsApplied: setInputsApplied,
  DriftJobSucceeded: setDriftJobSucceeded,
  DriftDetected: setDriftDetected,
  DeletionBlocked: setDeletionBlocked,
  EndpointAvailable: setEndpointAvailable,
  Deleting: setDeleting,
};

/**
 * The inputs of the Ready summary: everything until provisioned; then health (and a pool's re-applies), so a failed re-apply does not turn
 * the infrastructure unready.
 */
export function readyInputs(role: Role, provisioned: boolean): ConditionType[] {
  if (!provisioned)
    return [
      "DependenciesReady",
      "IdentityAllowed",
      "CredentialsMirrored",
      "RunnerRBACReady",
      "ApplyJobSucceeded",
      "StateReadable",
      "OutputsValid",
      "InfrastructureHealthy",
      "Deleting",
    ];
  return role === "machinepool" ? ["InfrastructureHealthy", "ApplyJobSucceeded", "Deleting"] : ["InfrastructureHealthy", "Deleting"];
}

/** Ready as the summary of its inputs: True when each is good; an absent input counts as not good, except Deleting. Pure. */
export function readySummary(
  conditions: readonly Pick<Condition, "type" | "status" | "reason">[],
  inputs: readonly ConditionType[],
  wrote: { optional?: readonly ConditionType[] } = {},
): DeclaredCondition<"Ready"> {
  const notGood: string[] = [];
  for (const type of inputs) {
    const condition = conditions.find((entry) => entry.type === type);
    const good = negativePolarityConditions.includes(type) ? "False" : "True";
    if (!condition) {
      if (type !== "Deleting" && !wrote.optional?.includes(type)) notGood.push(`${type} not reported yet`);
      continue;
    }
    if (condition.status !== good) notGood.push(`${type} is ${condition.status} (${condition.reason})`);
  }
  return notGood.length === 0 ? { status: "True", reason: "Ready" } : { status: "False", reason: "NotReady", message: notGood.join("; ") };
}

/** The object's status after this pass: the gathered fields, the running Job, the last run, provisioning and every condition. Pure. */
export function computeStatus(scope: StatusScope, outcome: PassOutcome): Record<string, unknown> {
  const conditions = new ConditionSet();
  for (const [type, setter] of Object.entries(setters) as [ConditionType, Setter<ConditionType>][]) {
    const value = setter(scope, outcome);
    if (value) conditions.set(type, value);
  }
  for (const { type, value } of scope.ownerConditions) conditions.set(type, value);
  const merged = conditions.toStatus(scope.previous, scope.now, scope.generation);
  // Without a credentials resolver (no identity wired) the credential conditions are never reported: not inputs then.
  const optional: ConditionType[] = scope.credentials.length === 0 ? ["IdentityAllowed", "CredentialsMirrored", "RunnerRBACReady"] : [];
  conditions.set("Ready", readySummary(merged, readyInputs(scope.role, scope.provisioned), { optional }));
  const status: Record<string, unknown> = { ...scope.fields };
  const lastRun = lastRunOf(scope.newestJob);
  if (lastRun) status.lastRun = lastRun;
  // A merge patch keeps a field unless it is nulled.
  status.activeJob = outcome.active
    ? {
        name: outcome.active.name,
        operation: outcome.active.op,
        attempt: outcome.active.attempt,
        ...(outcome.active.startTime ? { startTime: outcome.active.startTime } : {}),
      }
    : null;
  if (scope.provisioned) status.initialization = { provisioned: true };
  status.conditions = conditions.toStatus(scope.previous, scope.now, scope.generation);
  return status;
}

/**
 * `status.lastRun` of a Job that reported a run result: every field written, null when absent, so no older run's error or approver stays.
 */
function lastRunOf(job: ObservedJob | undefined): Record<string, unknown> | undefined {
  const result = job?.result;
  if (!job || !result) return undefined;
  const approvedBy = job.job.metadata?.annotations?.[annotations.planApprovedBy];
  return {
    job: job.name,
    operation: job.op,
    steps: result.steps.length
      ? result.steps
          .slice(0, 16)
          .map((step) => ({ name: step.name, exitCode: step.exit, durationMilliseconds: Math.round(step.seconds * 1000) }))
      : null,
    error: result.error
      ? {
          kind: result.error.kind,
          ...(result.error.step ? { step: result.error.step } : {}),
          ...(result.error.summary ? { summary: result.error.summary } : {}),
        }
      : null,
    drift: result.drift
      ? {
          add: result.drift.add,
          change: result.drift.change,
          destroy: result.drift.destroy,
          ...(result.drift.resources.length ? { resources: result.drift.resources.slice(0, maxDriftResources) } : {}),
        }
      : null,
    approvedBy: approvedBy ? approvedBy.slice(0, maxApproverLength) : null,
  };
}

/** Why a cluster or pool apply Job that disappeared while it ran makes an apply due. */
export function vanishedApplyMessage(job: string): string {
  return `Job ${job}: disappeared while it ran and may have applied part of its change; an apply of the current inputs is due`;
}

/**
 * The outcome of a finished apply, plan or destroy Job on ApplyJobSucceeded; a pull failure and the deadline before the runner's result.
 */
export function applyJobCondition(job: ObservedJob): DeclaredCondition<"ApplyJobSucceeded"> {
  const destroy = job.op === "destroy";
  if (job.imagePullFailed) {
    const images = [...(job.job.spec?.template.spec?.initContainers ?? []), ...(job.job.spec?.template.spec?.containers ?? [])]
      .map((container) => container.image)
      .join(", ");
    return {
      status: "False",
      reason: "ImagePullFailed",
      message: `Job ${job.name}: an image (${images}) was not pulled within ${imagePullDeadlineMs / 60_000} minutes; retried with backoff`,
    };
  }
  if (job.deadlineExceeded) return { status: "False", reason: "JobDeadlineExceeded", message: `Job ${job.name} reached its deadline` };
  if (!job.result && job.outcome !== "succeeded") {
    const why =
      job.outcome === "interrupted"
        ? "was stopped from outside (its Pod deleted or evicted) before it reported; it runs again at once"
        : "failed without reporting a result (its runner did not finish)";
    return { status: "False", reason: destroy ? "DestroyFailed" : "ApplyFailed", message: `Job ${job.name} ${why}` };
  }
  const error = job.result?.error;
  if (!error && job.op === "plan" && !job.result?.plan) {
    return {
      status: "False",
      reason: "ApplyFailed",
      message: `Job ${job.name} finished without a readable plan (${annotations.planUnreadable}): there is nothing to show or approve`,
    };
  }
  if (!error) return { status: "True", reason: destroy ? "DestroySucceeded" : "ApplySucceeded" };
  if (error.kind === "blocked")
    return { status: "False", reason: "DestructivePlanBlocked", message: blockedMessage(job.job, error.summary) };
  if (error.kind === "state-save") return { status: "False", reason: "StateNotSaved", message: stateNotSavedMessage(job.name, job.op) };
  if (error.kind === "image-layout")
    return {
      status: "False",
      reason: "ImageInvalid",
      message:
        `the image ${String(job.job.spec?.template.spec?.containers[0]?.image)} breaks the image ` +
        `contract${error.summary ? `: ${error.summary}` : ""}`,
    };
  return { status: "False", reason: destroy ? "DestroyFailed" : "ApplyFailed", ...(error.summary ? { message: error.summary } : {}) };
}

/** Why an object whose apply or destroy lost its new state is held, the limit, and the documented way out (docs/reliability.md). */
export function stateNotSavedMessage(job: string, op: string): string {
  return (
    `Job ${job}: the ${op} ran but its new state could not be saved: the state is larger than the 1 MiB a Secret holds ` +
    `(OpenTofu's kubernetes backend keeps one Secret). ` +
    "The state Secret still holds the state from before, so nothing runs until the inputs change: change the module or its " +
    "inputs so the state compresses below 1 MiB, " +
    'with import blocks for what the lost run created (docs/reliability.md, "State larger than a Secret")'
  );
}

/** The approval hash a guarded apply Job compared (its `--inputs-hash`); undefined for an unguarded Job. */
export function guardedApprovalHash(job: V1Job): string | undefined {
  return job.spec?.template.spec?.containers[0]?.args?.find((arg) => arg.startsWith("--inputs-hash="))?.slice("--inputs-hash=".length);
}

/** What a blocked apply stopped before, and the approval that lets it through (the hash its guard compared). */
function blockedMessage(job: V1Job, summary: string | undefined): string {
  const guarded = guardedApprovalHash(job);
  return [
    summary ?? "the plan deletes or replaces resources",
    ...(guarded ? [`approve it with ${annotations.approveDestructivePlan}=${guarded}`] : []),
  ].join("; ");
}
