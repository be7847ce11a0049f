/**
 * A machine pool's change of its cluster's exports, held while it waits for approval (docs/lifecycle.md,
 * "A change of the cluster's exports"). A pool apply that renders changed exports is guarded; when its
 * plan deletes or replaces, the change is recorded as pending and the pool goes on applying everything
 * else with the exports of its last successful apply. A guarded apply that failed part-way is recorded as
 * partial: until an apply succeeds, nothing is held and every apply is guarded. Pure functions only: the
 * records live on the durable inputs Secret (durable-inputs.ts), the pass writes them (workspace-phases.ts).
 */
import { annotations } from "@captf/contract/api";
import type { RunResult } from "@captf/contract/run-result";

/** A change of the exports whose guarded apply was blocked before a destructive plan (`captf.io/pending-cluster-outputs`, as JSON). */
export interface PendingExports {
  /** The exports hash the blocked apply rendered: the change that waits. */
  exportsHash: string;
  /** The approval hash of the blocked apply's inputs: what `captf.io/approve-destructive-plan` must name. */
  approvalHash: string;
  /** The blocked apply Job. */
  job: string;
  /** What the plan would delete or replace (addresses and actions, never values). */
  summary?: string;
}

/** A change of the exports whose guarded apply failed after it started (`captf.io/partial-cluster-outputs`, as JSON). */
export interface PartialExports {
  exportsHash?: string;
  job?: string;
}

/** The pending record of an annotation value; undefined when absent or not one that names a change. Pure. */
export function parsePendingExports(raw: string | undefined): PendingExports | undefined {
  if (!raw) return undefined;
  try {
    const parsed = JSON.parse(raw) as Partial<PendingExports>;
    if (
      typeof parsed?.exportsHash !== "string" ||
      !parsed.exportsHash ||
      typeof parsed.approvalHash !== "string" ||
      typeof parsed.job !== "string"
    )
      return undefined;
    return {
      exportsHash: parsed.exportsHash,
      approvalHash: parsed.approvalHash,
      job: parsed.job,
      ...(typeof parsed.summary === "string" && parsed.summary ? { summary: parsed.summary } : {}),
    };
  } catch {
    return undefined;
  }
}

/** The partial record of an annotation value. A damaged value still counts: the record only makes the pool more careful. Pure. */
export function parsePartialExports(raw: string | undefined): PartialExports | undefined {
  if (!raw) return undefined;
  try {
    const parsed = JSON.parse(raw) as PartialExports | null;
    return {
      ...(typeof parsed?.exportsHash === "string" ? { exportsHash: parsed.exportsHash } : {}),
      ...(typeof parsed?.job === "string" ? { job: parsed.job } : {}),
    };
  } catch {
    return {};
  }
}

/** The facts about a finished pool apply Job that decide what it leaves on record. */
export interface FinishedPoolApply {
  name: string;
  outcome: "succeeded" | "failed" | "blocked" | "interrupted" | "plan-changed" | "state-save";
  /** `captf.io/cluster-outputs-hash`: the exports it rendered. */
  exportsHash?: string;
  /** The approval hash its guard compared; undefined for an unguarded apply. */
  approvalHash?: string;
  /** `captf.io/held-cluster-outputs`: it rendered the applied exports in place of a pending change. */
  held: boolean;
  /** Its image was never pulled: nothing ran. */
  imagePullFailed: boolean;
  result?: Pick<RunResult, "error">;
}

/** What bookkeeping records for a finished pool apply, given the exports hash of the last successful apply. Pure. */
export type ExportsRecord =
  | { kind: "applied"; exportsHash: string }
  | { kind: "pending"; pending: PendingExports }
  | { kind: "partial"; partial: PartialExports }
  | undefined;

export function exportsRecordOf(job: FinishedPoolApply, appliedExportsHash: string | undefined): ExportsRecord {
  if (!job.exportsHash) return undefined;
  // A held apply rendered the applied exports: its success settles nothing of the pending change.
  if (job.outcome === "succeeded") return job.held ? undefined : { kind: "applied", exportsHash: job.exportsHash };
  const change = job.exportsHash !== appliedExportsHash;
  if (!change || job.held) return undefined;
  if (job.outcome === "blocked" && job.approvalHash) {
    const summary = job.result?.error?.summary;
    return {
      kind: "pending",
      pending: { exportsHash: job.exportsHash, approvalHash: job.approvalHash, job: job.name, ...(summary ? { summary } : {}) },
    };
  }
  if (mayHaveAppliedPart(job)) return { kind: "partial", partial: { exportsHash: job.exportsHash, job: job.name } };
  return undefined;
}

/** A failed apply may have changed the state when it failed in its apply step, or its runner gave no result to say how far it got. */
function mayHaveAppliedPart(job: FinishedPoolApply): boolean {
  if (job.outcome !== "failed" && job.outcome !== "interrupted" && job.outcome !== "state-save") return false;
  if (job.imagePullFailed) return false;
  const error = job.result?.error;
  if (!job.result || !error) return true;
  return (
    error.kind === "interrupted" ||
    error.kind === "state-save" ||
    (error.kind === "step" && (error.step === "apply" || error.step === "state-push"))
  );
}

/** What the pass knows when it decides whether a pool holds its exports. */
export interface HoldFacts {
  pending: PendingExports | undefined;
  partial: PartialExports | undefined;
  /** The exports the current inputs render, and those inputs' approval hash. */
  current: { exportsHash: string; approvalHash: string };
  /** The hash of the last successful apply's exports, and whether their value is on record to render. */
  applied: { exportsHash: string | undefined; recorded: boolean };
  /** `captf.io/approve-destructive-plan` on the pool. */
  approvedHash: string | undefined;
}

/**
 * Whether the pool renders its last successful apply's exports in place of the current ones: only while
 * the current exports are the pending change, unapproved, nothing is partly applied and the applied
 * exports are on record (a record dropped for size cannot be rendered: the pool then waits, like a cluster). Pure.
 */
export function holdsExports(facts: HoldFacts): boolean {
  const { pending, partial, current, applied } = facts;
  if (!pending || partial || !applied.recorded || applied.exportsHash === undefined) return false;
  if (pending.exportsHash !== current.exportsHash || current.exportsHash === applied.exportsHash) return false;
  // The approval names the current inputs with the change (another edit of the pool changes it, a bootstrap rotation does not).
  return facts.approvedHash !== current.approvalHash;
}

/**
 * A pending change the current exports no longer are: withdrawn when they are back at the applied ones (the
 * record stays, so a return to the change holds it again), superseded by another change. Either way an approval
 * of that change is removed: an approval is for one change. Undefined while the change is current. Pure.
 */
export function pendingChangeGone(
  pending: PendingExports,
  current: { exportsHash: string },
  appliedExportsHash: string | undefined,
  approvedHash: string | undefined,
): { withdrawn: boolean; removeApproval: boolean } | undefined {
  if (pending.exportsHash === current.exportsHash) return undefined;
  return {
    withdrawn: current.exportsHash === appliedExportsHash,
    removeApproval: approvedHash !== undefined && approvedHash === pending.approvalHash,
  };
}

/** The ApplyJobSucceeded message while a change is held, with the approval hash of the current inputs with the change. Pure. */
export function heldExportsMessage(pending: PendingExports, approvalHash: string): string {
  return [
    `Job ${pending.job} stopped before a change of the cluster's exports: ${pending.summary ?? "its plan deletes or replaces resources"}`,
    `approve it with ${annotations.approveDestructivePlan}=${approvalHash}`,
    "until then the pool applies the exports of its last successful apply",
  ].join("; ");
}

/** Said of the blocked Job once its change of the exports was withdrawn. Pure. */
export function withdrawnExportsMessage(job: string): string {
  return (
    `the change of the cluster's exports Job ${job} stopped before was withdrawn: the exports are back at those of the ` +
    `last successful apply`
  );
}
