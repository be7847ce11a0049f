import { createHash } from "node:crypto";
import type { HealthState, Role } from "@captf/contract";
import type { Operation } from "@captf/contract/run-result";
import { exponentialBackoffMillis } from "../runtime/backoff.js";

/**
 * Deciding the next operation of a TerraformCluster, TerraformMachine or TerraformMachinePool:
 * a pure function of what one reconcile pass observed. The reconciler does the I/O around
 * it (reads before, Job creation and the one status patch after). Every branch is a row of
 * a table test; new operations grow the table, not the I/O.
 */

/** The operations a Job runs: the contract's. */
export type { Operation };

/** How a finished Job of this object ended, as bookkeeping recorded it. */
export type JobOutcome =
  | "succeeded"
  | "failed" // a step failed, image-layout, image pull, deadline: counts toward backoff
  | "interrupted" // stopped from outside (eviction, deletion): retried without backoff
  | "blocked" // the destructive guard stopped it: waits for approval, not a failure
  | "plan-changed" // the approved plan no longer matched: waits for a new approval
  | "state-save"; // ran, but its new state was lost (past a Secret's size): held until the inputs change

export interface FinishedJob {
  op: Operation;
  outcome: JobOutcome;
  finishedAt: number;
  /** The inputs hash the Job rendered (apply, plan, restore). */
  inputsHash?: string;
  /** A drift-remediation apply. */
  remediation?: boolean;
  /** A guarded apply: the approval hash its guard compared (a pool's survives bootstrap rotations). */
  approvalHash?: string;
}

export type ObservedState =
  | { kind: "absent" }
  /** Present but lost, corrupt, encrypted or too large: nothing may run on it but a restore. */
  | { kind: "unreadable" }
  | {
      kind: "present";
      inputsHash?: string;
      health?: HealthState /** Managed resources in the state; 0: nothing a destroy could remove. */;
      managedResources?: number;
    };

export interface ObservedPlan {
  /** The inputs hash the plan was made for. */
  inputsHash: string;
  planHash: string;
  /** A plan without changes never waits for approval. */
  empty: boolean;
}

/** Everything decideOperation needs, as one reconcile pass observed it. */
export interface Observed {
  role: Role;
  uid: string;
  now: number;
  createdAt: number;
  deleting: boolean;
  /** A Job of this object is running (from the Job cache, confirmed live when in doubt). */
  activeJob?: { name: string; op: Operation };
  state: ObservedState;
  /** The hash of the inputs rendered now; undefined when they cannot be built (machine past provisioning). */
  currentInputsHash?: string;
  /** Finished Jobs of this object, any order. */
  jobs: readonly FinishedJob[];
  /** `captf.io/restore-state` names a complete backup not restored yet. */
  restoreRequested?: boolean;
  /** Cluster only: Manual applies wait for a plan approval (`captf.io/approve-plan`). */
  applyPolicy?: "Automatic" | "Manual";
  /** `status.plan`: the newest plan of this object. */
  plan?: ObservedPlan;
  /** The plan hash the `captf.io/approve-plan` annotation names. */
  approvedPlanHash?: string;
  /** The hash `captf.io/approve-destructive-plan` names (guarded cluster and pool applies). */
  approvedDestructiveHash?: string;
  /** The hash a destructive-plan approval must name: the inputs hash, for a pool without its bootstrap data. Default currentInputsHash. */
  approvalHash?: string;
  /** Pool only: the cluster exports it renders differ from those of its last successful apply (its apply is guarded). */
  exportsChanged?: boolean;
  /**
   * Pool: a change of the exports may be partly applied (`captf.io/partial-cluster-outputs`): every apply is guarded until one succeeds.
   */
  exportsPartlyApplied?: boolean;
  drift: {
    intervalSeconds: number;
    /** Remediate re-applies current inputs on drift (cluster and pool); machines always report. */
    action: "Report" | "Remediate";
    detected: boolean;
    lastCheckAt?: number;
  };
  health: {
    /** The newest health reading; undefined before any. */
    state?: HealthState;
    /** Consecutive pending samples since the last other reading or apply. */
    pendingRefreshes: number;
    lastRefreshAt?: number;
    /** The newest successful apply's own outputs gave a definite (not pending/unknown) health. */
    appliedReadingDefinite?: boolean;
    /** Machines with remediation.annotateMachine sample health at this interval. */
    checkIntervalSeconds?: number;
  };
  pool?: {
    membershipRefreshIntervalSeconds: number;
    providerIDCount: number;
    statusReplicas: number;
  };
  /** Cluster only: machines and pools of the cluster that still exist; a deleting cluster waits for them. */
  dependents?: number;
  /** Cluster and pool: an apply Job vanished while it ran (`captf.io/interrupted-apply`); an apply of the current inputs stays due. */
  interruptedApply?: boolean;
  /** Failed Jobs before backoff reaches its ceiling (jobs.failedJobsLimit, at least 1). Default 3. */
  failedLimit?: number;
}

export interface Decision {
  /** The Job to start now, or none. */
  op?: Operation;
  /** Remove the finalizer: a deleting object with nothing (left) to destroy. */
  dropFinalizer?: boolean;
  /** Before dropping the finalizer, delete the (now empty) state Secrets: the destroy succeeded. */
  cleanupState?: boolean;
  /** A PascalCase reason for conditions and logs, e.g. InputsChanged, InputsChangedBackoff, UpToDate. */
  reason: string;
  /** Look again after this long (the Job's watch may wake the object sooner). */
  requeueAfterMs?: number;
  /** Apply only: run the destructive guard with this approval (the inputs hash approved), if any. */
  guard?: { allowDeletesHash?: string };
  /** Apply only: apply only the approved plan with this hash (`--expect-plan`). */
  expectPlan?: string;
  /** Remediation apply after drift. */
  remediation?: boolean;
}

const second = 1000;
const minute = 60 * second;
export const retryBaseMs = minute;
export const retryMaxMs = 10 * minute;
export const activeJobRequeueMs = minute;
export const stateRequeueMs = minute;
export const approvalRequeueMs = retryMaxMs;
const pendingSteps = [30 * second, minute, 2 * minute, 4 * minute, 5 * minute];
const membershipConvergingMs = 30 * second;
export const dependentsRequeueMs = 30 * second;

const mutableRoles: readonly Role[] = ["cluster", "machinepool"];

function newestFirst(jobs: readonly FinishedJob[], op?: Operation): FinishedJob[] {
  return jobs.filter((job) => op === undefined || job.op === op).sort((a, b) => b.finishedAt - a.finishedAt);
}

/** Failures of `op` since its newest success; interruptions, blocks and plan changes do not count. */
export function consecutiveFailures(jobs: readonly FinishedJob[], op: Operation): { count: number; newestFinishedAt?: number } {
  let count = 0;
  let newestFinishedAt: number | undefined;
  for (const job of newestFirst(jobs, op)) {
    if (job.outcome === "succeeded") break;
    if (job.outcome !== "failed") continue;
    count++;
    newestFinishedAt ??= job.finishedAt;
  }
  return { count, newestFinishedAt };
}

/** The backoff after n consecutive failures: 1m·2^(n-1) capped at 10m, and 10m straight once n reaches the limit. */
export function backoffMs(failures: number, failedLimit: number): number {
  if (failures <= 0) return 0;
  if (failures >= Math.max(1, failedLimit)) return retryMaxMs;
  return exponentialBackoffMillis(failures - 1, retryBaseMs, retryMaxMs);
}

/** A deterministic per-object jitter of up to a tenth of the interval, so objects created together spread out. */
export function jitterMs(uid: string, intervalMs: number): number {
  const fraction = createHash("sha256").update(uid).digest().readUInt32BE(0) / 0x1_0000_0000;
  return Math.floor((intervalMs / 10) * fraction);
}

/**
 * `status.pendingRefreshes` after this pass: consecutive refresh or drift samples that read pending
 * since the last apply or other reading. A new apply restarts it; a reading that is not pending clears it.
 */
export function nextPendingRefreshes(
  previous: number,
  reading: HealthState | undefined,
  finished: { applied: boolean; sampled: boolean },
): number {
  if (reading !== "pending") return 0;
  if (finished.sampled) return (finished.applied ? 0 : previous) + 1;
  return finished.applied ? 0 : previous;
}

function lastSuccess(jobs: readonly FinishedJob[], op: Operation): FinishedJob | undefined {
  return newestFirst(jobs, op).find((job) => job.outcome === "succeeded");
}

/** Decides the next operation. Pure: the same observation always gives the same decision. */
export function decideOperation(observed: Observed): Decision {
  if (observed.activeJob) return { reason: "JobActive", requeueAfterMs: activeJobRequeueMs };

  if (observed.deleting) {
    if (observed.state.kind === "unreadable") {
      // A restore may bring back the state a held deletion needs; otherwise deletion wins over a restore.
      if (observed.restoreRequested) return withBackoff(observed, { op: "restore", reason: "RestoreRequested" });
      return { reason: "DeletionHeld", requeueAfterMs: stateRequeueMs };
    }
    // A cluster's infrastructure outlives its machines and pools: they are destroyed first.
    if (observed.role === "cluster" && (observed.dependents ?? 0) > 0)
      return { reason: "DependentsExist", requeueAfterMs: dependentsRequeueMs };
    if (observed.state.kind === "absent") return { dropFinalizer: true, reason: "DeletingWithoutState" };
    // A state without resources (an apply that failed before creating any) has nothing to destroy:
    // a destroy of it could only fail the same way, and would hold the deletion forever.
    if (observed.state.managedResources === 0) return { dropFinalizer: true, cleanupState: true, reason: "DeletingWithoutState" };
    const destroyed = lastSuccess(observed.jobs, "destroy");
    const newestApply = newestFirst(observed.jobs, "apply")[0];
    if (destroyed && (!newestApply || destroyed.finishedAt >= newestApply.finishedAt))
      return { dropFinalizer: true, cleanupState: true, reason: "Destroyed" };
    return withBackoff(observed, { op: "destroy", reason: "Deleting" });
  }

  // A restore precedes apply, drift and refresh, but never deletion.
  if (observed.restoreRequested && observed.state.kind !== "absent") {
    return withBackoff(observed, { op: "restore", reason: "RestoreRequested" });
  }

  if (observed.state.kind === "unreadable") return { reason: "StateUnreadable", requeueAfterMs: stateRequeueMs };

  // The newest apply changed infrastructure the state does not record: any run on that state (a
  // retry, a remediation, a refresh) would be blind. Changed inputs (a smaller state, a chunking runtime, import blocks) end the hold.
  const newestApply = newestFirst(observed.jobs, "apply")[0];
  if (newestApply?.outcome === "state-save" && !inputsChangedSince(observed, newestApply)) {
    return { reason: "StateNotSaved", requeueAfterMs: approvalRequeueMs };
  }

  const applyReason = dueApplyReason(observed);
  if (applyReason) return decideApply(observed, applyReason);

  return decideSchedule(observed);
}

/**
 * The inputs changed since `job` rendered them (a pool's rotated bootstrap data alone does not count when the Job recorded its approval
 * hash).
 */
function inputsChangedSince(observed: Observed, job: FinishedJob): boolean {
  if (observed.currentInputsHash === undefined || job.inputsHash === observed.currentInputsHash) return false;
  return job.approvalHash === undefined || job.approvalHash !== (observed.approvalHash ?? observed.currentInputsHash);
}

function dueApplyReason(observed: Observed): { reason: string; remediation?: boolean } | undefined {
  const { state } = observed;
  if (state.kind === "absent") return { reason: "NoState" };
  if (state.kind !== "present") return undefined;
  if (!state.inputsHash) return { reason: "StateWithoutInputsHash" };
  const mutable = mutableRoles.includes(observed.role);
  if (!mutable) return undefined;
  if (observed.currentInputsHash && observed.currentInputsHash !== state.inputsHash) return { reason: "InputsChanged" };
  const newestApply = newestFirst(observed.jobs, "apply")[0];
  if (newestApply?.outcome === "failed" && !newestApply.remediation) return { reason: "LastApplyFailed" };
  if (observed.interruptedApply) return { reason: "ApplyInterrupted" };
  if (observed.drift.detected && observed.drift.action === "Remediate") {
    const failedSinceCheck = newestFirst(observed.jobs, "apply").filter(
      (job) => job.remediation && job.outcome === "failed" && job.finishedAt > (observed.drift.lastCheckAt ?? 0),
    ).length;
    if (failedSinceCheck < Math.max(1, observed.failedLimit ?? 3)) return { reason: "DriftRemediation", remediation: true };
  }
  return undefined;
}

function decideApply(observed: Observed, due: { reason: string; remediation?: boolean }): Decision {
  const inputsHash = observed.currentInputsHash;
  const manual = observed.role === "cluster" && observed.applyPolicy === "Manual" && due.reason !== "NoState";
  const extra = due.remediation ? { remediation: true } : {};
  if (manual) {
    if (!observed.plan || observed.plan.inputsHash !== inputsHash)
      return withBackoff(observed, { op: "plan", reason: `${due.reason}PlanNeeded`, ...extra }, "plan");
    if (observed.plan.empty || observed.approvedPlanHash === observed.plan.planHash) {
      return withBackoff(observed, { op: "apply", reason: due.reason, expectPlan: observed.plan.planHash, ...extra });
    }
    return { reason: "PlanAwaitingApproval", requeueAfterMs: approvalRequeueMs };
  }
  // Every cluster apply is guarded; a pool's only while it renders changed cluster exports, or one may be partly applied.
  const guarded =
    observed.role === "cluster" ||
    (observed.role === "machinepool" && (observed.exportsChanged === true || observed.exportsPartlyApplied === true));
  const newestApply = newestFirst(observed.jobs, "apply")[0];
  const approvalHash = observed.approvalHash ?? inputsHash;
  const approved = observed.approvedDestructiveHash !== undefined && observed.approvedDestructiveHash === approvalHash;
  // A blocked apply waits for its approval; a pool's rotated bootstrap data does not make it new inputs.
  const blockedHash = newestApply?.approvalHash ?? newestApply?.inputsHash;
  if (newestApply?.outcome === "blocked" && (blockedHash === approvalHash || newestApply.inputsHash === inputsHash) && !approved) {
    return { reason: "DestructivePlanBlocked", requeueAfterMs: approvalRequeueMs };
  }
  const decision: Decision = { op: "apply", reason: due.reason, ...extra };
  if (guarded) decision.guard = approved ? { allowDeletesHash: approvalHash } : {};
  return withBackoff(observed, decision);
}

function withBackoff(observed: Observed, decision: Decision, op: Operation = decision.op!): Decision {
  const { count, newestFinishedAt } = consecutiveFailures(observed.jobs, op);
  if (count === 0 || newestFinishedAt === undefined) return decision;
  const due = newestFinishedAt + backoffMs(count, observed.failedLimit ?? 3);
  if (observed.now >= due) return decision;
  return { reason: `${decision.reason}Backoff`, requeueAfterMs: due - observed.now };
}

function decideSchedule(observed: Observed): Decision {
  const { now, health, pool } = observed;
  const lastApply = lastSuccess(observed.jobs, "apply");
  const lastApplyAt = lastApply?.finishedAt;
  const lastRefreshAt = health.lastRefreshAt ?? lastSuccess(observed.jobs, "refresh")?.finishedAt;
  const candidates: { dueAt: number; op?: Operation; reason: string }[] = [];

  // 1. Read health right after an apply whose own outputs did not give a definite reading.
  if (
    observed.role !== "cluster" &&
    lastApplyAt !== undefined &&
    !(lastRefreshAt !== undefined && lastRefreshAt >= lastApplyAt) &&
    !health.appliedReadingDefinite
  ) {
    candidates.push({ dueAt: lastApplyAt, op: "refresh", reason: "RefreshAfterApply" });
  }
  // 2. A pool whose members do not match its replicas yet is read every 30 s.
  if (pool && pool.providerIDCount !== pool.statusReplicas) {
    const interval = Math.min(membershipConvergingMs, pool.membershipRefreshIntervalSeconds * second);
    candidates.push({
      dueAt: (lastRefreshAt ?? lastApplyAt ?? observed.createdAt) + interval,
      op: "refresh",
      reason: "MembershipConverging",
    });
  }
  // 3. Pending health backs off 30 s, 1 m, 2 m, 4 m, then every 5 m after the first pending refresh (pools: 30 s flat).
  if (health.state === "pending") {
    const step = pool ? pendingSteps[0]! : pendingSteps[Math.min(Math.max(0, health.pendingRefreshes - 1), pendingSteps.length - 1)]!;
    candidates.push({
      dueAt: (lastRefreshAt ?? lastApplyAt ?? now) + step + jitterMs(observed.uid, step),
      op: "refresh",
      reason: "HealthPending",
    });
  }
  // 4. Pool membership on its interval.
  if (pool) {
    const interval = pool.membershipRefreshIntervalSeconds * second;
    candidates.push({
      dueAt: (lastRefreshAt ?? lastApplyAt ?? observed.createdAt) + interval + jitterMs(observed.uid, interval),
      op: "refresh",
      reason: "MembershipRefreshDue",
    });
  }
  // 5. Machine health sampling for remediation.
  if (health.checkIntervalSeconds) {
    const interval = health.checkIntervalSeconds * second;
    candidates.push({
      dueAt: (lastRefreshAt ?? lastApplyAt ?? observed.createdAt) + interval + jitterMs(observed.uid, interval),
      op: "refresh",
      reason: "HealthCheckDue",
    });
  }
  // 6. Drift, one interval after the last check (or the last successful apply).
  if (observed.drift.intervalSeconds > 0) {
    const interval = observed.drift.intervalSeconds * second;
    const base = observed.drift.lastCheckAt ?? lastApplyAt ?? observed.createdAt;
    candidates.push({ dueAt: base + interval + jitterMs(observed.uid, interval), op: "drift", reason: "DriftDue" });
  }

  const due = candidates.filter((candidate) => candidate.dueAt <= now);
  for (const candidate of due) {
    const op = candidate.op!;
    const backedOff = withBackoff(observed, { op, reason: candidate.reason });
    if (backedOff.op) return backedOff;
  }
  const future = candidates.filter((candidate) => candidate.dueAt > now).map((candidate) => candidate.dueAt - now);
  const backoffWaits = due.map(
    (candidate) => withBackoff(observed, { op: candidate.op!, reason: candidate.reason }).requeueAfterMs ?? Infinity,
  );
  const soonest = Math.min(...future, ...backoffWaits);
  return Number.isFinite(soonest) ? { reason: "UpToDate", requeueAfterMs: soonest } : { reason: "UpToDate" };
}

/** What a Job of the decided operation runs with, the rest of the whole decision. */
export interface JobRun {
  op: Operation;
  /** One more than the newest Job of this operation. */
  attempt: number;
  /**
   * The inputs hash the Job carries: apply and plan the current one; restore its backup's; the others what the state (or the last apply)
   * recorded.
   */
  inputsHash: string;
  /** Apply and plan run the spec's image; the others the applied one, by digest once pinned. */
  image: string;
  /** A reference without a pinned digest (an event says so). */
  digestUnknown: boolean;
  /** The images of the applied chain before `image` that could not be pulled: the Job falls back from them. */
  fallbackFrom?: string[];
  /** What makes the Job's name new for a repeated operation (a refresh, drift check, remediation or restore). */
  tick?: string;
  /** A destroy rendering inputs whose hash is not the one the state records (none recorded: `state` absent). */
  destroyInputsMismatch?: { rendered: string; state?: string };
}

export interface RunFacts {
  /** Every Job of the object, running or finished. */
  jobs: readonly { op: Operation; attempt: number; outcome?: JobOutcome; finishedAt?: number }[];
  /** `spec.source.image`. */
  image: string;
  currentInputsHash?: string;
  stateInputsHash?: string;
  /** What the durable inputs recorded of the last apply, and the images its Jobs could not pull. */
  applied?: { inputsHash?: string; image?: string; imageDigest?: string; unpullableImages?: readonly string[] };
  /** The backup a restore runs from. */
  restore?: { inputsHash?: string; firstSecret: string };
}

/** The run of a decided operation. Pure. */
export function jobRun(decision: Decision & { op: Operation }, facts: RunFacts): JobRun {
  const { op } = decision;
  const attempt = 1 + Math.max(0, ...facts.jobs.filter((job) => job.op === op).map((job) => job.attempt));
  const fresh = op === "apply" || op === "plan";
  const inputsHash = fresh
    ? facts.currentInputsHash!
    : op === "restore"
      ? (facts.restore?.inputsHash ?? "h2:none")
      : (facts.stateInputsHash ?? facts.applied?.inputsHash ?? facts.currentInputsHash ?? "h2:none");
  const lastSuccessAt = (of: Operation) =>
    String(Math.max(0, ...facts.jobs.filter((job) => job.op === of && job.outcome === "succeeded").map((job) => job.finishedAt!)));
  const tick =
    op === "refresh" || op === "drift"
      ? lastSuccessAt(op)
      : decision.remediation
        ? `remediate/${lastSuccessAt("drift")}`
        : op === "restore" && facts.restore
          ? `restore/${facts.restore.firstSecret}`
          : undefined;
  const image = fresh ? facts.image : appliedImage(facts);
  const chain = appliedImageChain(facts.applied, facts.image);
  const fallbackFrom = fresh
    ? []
    : chain.slice(0, Math.max(0, chain.indexOf(image))).filter((skipped) => unpullableOf(facts).includes(skipped));
  // A destroy renders the durable inputs (a cluster's or pool's without them, the current ones).
  const rendered = op === "destroy" ? (facts.applied ? facts.applied.inputsHash : facts.currentInputsHash) : undefined;
  const mismatch =
    rendered !== undefined && rendered !== facts.stateInputsHash
      ? { rendered, ...(facts.stateInputsHash ? { state: facts.stateInputsHash } : {}) }
      : undefined;
  return {
    op,
    attempt,
    inputsHash,
    image,
    digestUnknown: !fresh && facts.applied?.imageDigest === undefined,
    ...(tick ? { tick } : {}),
    ...(fallbackFrom.length > 0 ? { fallbackFrom } : {}),
    ...(mismatch ? { destroyInputsMismatch: mismatch } : {}),
  };
}

function unpullableOf(facts: RunFacts): readonly string[] {
  return facts.applied?.unpullableImages ?? [];
}

/**
 * The images a Job that runs what was applied (destroy, refresh, drift, restore) may run, in order: the pinned digest, the
 * reference the apply ran, then `spec.source.image` as it is now (an operator may have fixed it since); each once. Pure.
 */
export function appliedImageChain(applied: { image?: string; imageDigest?: string } | undefined, specImage: string): string[] {
  return [...new Set([applied?.imageDigest, applied?.image, specImage].filter((image): image is string => Boolean(image)))];
}

/** The images left to fall back to after `image` could not be pulled: the chain's others not known unpullable. Pure. */
export function imageFallbacks(chain: readonly string[], image: string, unpullable: readonly string[]): string[] {
  return chain.filter((candidate) => candidate !== image && !unpullable.includes(candidate));
}

/**
 * The DestroyInputsMismatch note: which inputs the destroy Job renders (those of the failed apply it follows, which may have changed
 * resources, else the last ones applied) against the hash the state records. Pure.
 */
export function destroyInputsMismatchNote(
  job: string,
  mismatch: { rendered: string; state?: string },
  failedApply: string | undefined,
): string {
  const which = failedApply ? `of apply Job ${failedApply}, which failed and may have changed resources` : "last applied";
  const recorded = mismatch.state ? `the state records ${mismatch.state}` : "the state records no inputs hash";
  return `destroy Job ${job} renders the inputs ${which} (${mismatch.rendered}); ${recorded}`;
}

/** The first image of the applied chain not known unpullable; when every one is, the spec's (only the operator can fix it). Pure. */
function appliedImage(facts: RunFacts): string {
  const unpullable = unpullableOf(facts);
  return appliedImageChain(facts.applied, facts.image).find((image) => !unpullable.includes(image)) ?? facts.image;
}
