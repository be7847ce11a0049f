import { annotations } from "@captf/contract/api";
import { emptyPlanHash, planCounts, type PlanSummary } from "@captf/contract/run-result";
import type { PlanPreview } from "../api/workspace.js";
import type { ObservedPlan } from "./decide-operation.js";
import type { ObservedJob } from "./observe-jobs.js";

/**
 * Plan preview and approval (`applyPolicy: Manual`): a plan Job's plan becomes `status.plan`; the
 * apply waits until `captf.io/approve-plan` names its hash, then runs with `--expect-plan`; a
 * success clears both, a plan-changed apply shows its new plan for a new approval. Pure: the
 * reconciler writes what this returns.
 */

export interface PlanBookkeeping {
  /** The new status.plan: a preview, null to clear it, undefined to leave it. */
  plan?: PlanPreview | null;
  /** Remove these annotations from the object (consumed approvals). */
  removeAnnotations: string[];
  events: { reason: "PlanReady" | "PlanApplied" | "PlanChanged" | "DestructivePlanApprovalConsumed"; note: string }[];
  /** captf_plan_approvals_total results: a plan shown, applied as approved, changed under its apply, failed, superseded. */
  approvals: ("created" | "applied" | "changed" | "failed" | "superseded")[];
}

function preview(plan: PlanSummary, job: ObservedJob): PlanPreview {
  return {
    inputsHash: job.inputsHash ?? "",
    job: job.name,
    planHash: plan.hash,
    add: plan.add,
    change: plan.change,
    destroy: plan.destroy,
    ...(plan.import ? { import: plan.import } : {}),
    ...(plan.move ? { move: plan.move } : {}),
    ...(plan.outputs ? { outputChanges: plan.outputs } : {}),
    ...(plan.resources.length ? { resources: plan.resources } : {}),
    ...(plan.truncated ? { truncated: true } : {}),
    createdAt: new Date(job.finishedAt!).toISOString().replace(/\.\d+Z$/, "Z"),
  };
}

/** The counts of the plan shown in status.plan, as the runner words them. */
export function previewCounts(plan: PlanPreview): string {
  return planCounts({
    add: plan.add ?? 0,
    change: plan.change ?? 0,
    destroy: plan.destroy ?? 0,
    ...(plan.import ? { import: plan.import } : {}),
    ...(plan.move ? { move: plan.move } : {}),
    ...(plan.outputChanges ? { outputs: plan.outputChanges } : {}),
  });
}

/** What the newly finished plan and apply Jobs change about the plan shown and the approvals given. */
export function bookkeepPlans(finished: readonly ObservedJob[]): PlanBookkeeping {
  const outcome: PlanBookkeeping = { removeAnnotations: [], events: [], approvals: [] };
  const newestFirst = [...finished].filter((job) => job.op === "plan" || job.op === "apply").sort((a, b) => b.finishedAt! - a.finishedAt!);
  const newest = newestFirst[0];
  if (!newest) return outcome;
  const approvedPlan = newest.job.metadata?.annotations?.[annotations.approvedPlan];
  if (newest.op === "plan" && newest.outcome === "succeeded" && newest.result?.plan) {
    outcome.plan = preview(newest.result.plan, newest);
    outcome.events.push({
      reason: "PlanReady",
      note:
        `plan ${newest.result.plan.hash} (${planCounts(newest.result.plan)}) is ready: approve it with ` +
        `${annotations.approvePlan}=${newest.result.plan.hash}`,
    });
    outcome.approvals.push("created");
  } else if (newest.op === "apply" && newest.outcome === "plan-changed" && newest.result?.plan) {
    outcome.plan = preview(newest.result.plan, newest);
    outcome.events.push({
      reason: "PlanChanged",
      note:
        `the approved plan ${approvedPlan ?? ""} no longer matches: the new plan ${newest.result.plan.hash} ` +
        `(${planCounts(newest.result.plan)}) waits for its own approval`,
    });
    outcome.approvals.push("changed");
  } else if (newest.op === "apply" && newest.outcome !== "succeeded") {
    // The approved plan's apply failed: the approval stays, and the retry applies the same plan.
    if (approvedPlan && approvedPlan !== emptyPlanHash) outcome.approvals.push("failed");
  } else if (newest.op === "apply" && newest.outcome === "succeeded") {
    if (approvedPlan) {
      outcome.plan = null;
      // The approver stays on record on the Job and in status.lastRun.approvedBy.
      outcome.removeAnnotations.push(annotations.approvePlan, annotations.planApprovedBy);
      // An empty plan is applied without an approval: nothing was approved or applied.
      if (approvedPlan !== emptyPlanHash) {
        outcome.events.push({
          reason: "PlanApplied",
          note: `applied the approved plan ${approvedPlan}${approverNote(newest.job.metadata?.annotations?.[annotations.planApprovedBy])}`,
        });
        outcome.approvals.push("applied");
      }
    }
    if (newest.job.spec?.template.spec?.containers[0]?.args?.some((arg) => arg.startsWith("--allow-deletes-hash="))) {
      outcome.removeAnnotations.push(annotations.approveDestructivePlan);
      outcome.events.push({
        reason: "DestructivePlanApprovalConsumed",
        note: `the approved destructive apply succeeded; ${annotations.approveDestructivePlan} removed`,
      });
    }
  }
  return outcome;
}

/** What the pass knows when it checks whether the plan shown still waits for approval. */
export interface SupersessionFacts {
  /** status.plan as the pass read it, before this pass's bookkeeping. */
  shownBefore: PlanPreview | undefined;
  /** status.plan after this pass's bookkeeping. */
  shown: PlanPreview | undefined;
  /** The plan bookkeeping showed in its place (a newer plan Job's). */
  replacedBy?: PlanPreview | undefined;
  /** The inputs hash rendered now; undefined while dependencies gate the inputs. */
  currentHash: string | undefined;
  manual: boolean;
  jobRuns: boolean;
  paused: boolean;
  deleting: boolean;
  /** The hash `captf.io/approve-plan` names. */
  approvedPlanHash: string | undefined;
}

export interface Supersession {
  /** Clear status.plan (the plan is dropped, not replaced). */
  drop: boolean;
  /** Remove the approval of the superseded plan from the object: a later plan of the same hash was not what was approved. */
  removeAnnotations: string[];
  event: { reason: "PlanSuperseded"; type: "Normal" | "Warning"; note: string };
}

/**
 * The plan shown stops waiting for approval: a newer plan replaced it, or (no Job running, the object neither
 * paused nor deleting, its inputs rendered) the inputs no longer hash to it or applyPolicy is no longer Manual.
 * A Warning when it had been approved. Pure.
 */
export function planSupersession(facts: SupersessionFacts): Supersession | undefined {
  const { shownBefore, shown, replacedBy, currentHash, approvedPlanHash } = facts;
  const superseded = (plan: PlanPreview, drop: boolean, why: string): Supersession => {
    const approved = approvedPlanHash !== undefined && approvedPlanHash === plan.planHash;
    return {
      drop,
      removeAnnotations: approved ? [annotations.approvePlan, annotations.planApprovedBy] : [],
      event: {
        reason: "PlanSuperseded",
        type: approved ? "Warning" : "Normal",
        note:
          `plan ${plan.planHash}${approved ? ", approved," : ""} is superseded: ` +
          `${why}${approved ? `; its approval (${annotations.approvePlan}) is removed` : ""}`,
      },
    };
  };
  if (shownBefore && replacedBy && replacedBy.planHash !== shownBefore.planHash)
    return superseded(shownBefore, false, `the newer plan ${replacedBy.planHash} of Job ${replacedBy.job} replaces it`);
  if (!shown || facts.jobRuns || facts.paused || facts.deleting || currentHash === undefined) return undefined;
  if (!facts.manual) return superseded(shown, true, "applyPolicy is no longer Manual");
  if (shown.inputsHash !== currentHash)
    return superseded(shown, true, `the inputs changed (${shown.inputsHash} planned, ${currentHash} now): a new plan is made for them`);
  return undefined;
}

/** " (approved by <user>)", or why no approver is on record (captf's mutating webhook records it). */
export function approverNote(approver: string | undefined): string {
  return approver
    ? ` (approved by ${approver})`
    : ` (no approver recorded: ${annotations.planApprovedBy} is set by captf's mutating webhook)`;
}

/** The plan decideOperation compares the inputs and the approval with. */
export function observedPlan(plan: PlanPreview | undefined): ObservedPlan | undefined {
  if (!plan) return undefined;
  // The hash covers every change, imports and moves included: only the empty plan's hash is no change.
  return { inputsHash: plan.inputsHash, planHash: plan.planHash, empty: plan.planHash === emptyPlanHash };
}
