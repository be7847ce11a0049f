/**
 * The plans phase: a finished plan Job's plan is shown for approval, an approved apply consumes it, and a plan replaced by a newer
 * one, or no longer for these inputs, stops waiting for approval.
 */
import { annotations } from "@captf/contract/api";
import { bookkeepPlans, planSupersession } from "./plan-approval.js";
import { next, type Phase } from "./types.js";
import { patchObject } from "./pass-writes.js";

export const reconcilePlans: Phase = async (pass) => {
  const { deps, adapter, object, events, subject, scope, facts } = pass;
  const plans = bookkeepPlans(facts.toMark);
  const shownBefore = object.status?.plan;
  let planShown = shownBefore;
  if (plans.plan !== undefined) {
    scope.fields.plan = plans.plan;
    planShown = plans.plan ?? undefined;
  }
  const supersession = planSupersession({
    shownBefore,
    shown: planShown,
    ...(plans.events.some((event) => event.reason === "PlanReady") ? { replacedBy: plans.plan ?? undefined } : {}),
    currentHash: facts.currentHash,
    manual: object.spec.applyPolicy === "Manual",
    jobRuns: facts.active !== undefined,
    paused: scope.paused,
    deleting: scope.deleting,
    approvedPlanHash: object.metadata.annotations?.[annotations.approvePlan],
  });
  if (supersession?.drop) {
    scope.fields.plan = null;
    planShown = undefined;
  }
  if (supersession) {
    plans.removeAnnotations.push(...supersession.removeAnnotations);
    plans.approvals.push("superseded");
    void events.record(subject, supersession.event.reason, supersession.event.note, undefined, supersession.event.type);
  }
  facts.planShown = planShown;
  if (planShown) scope.planShown = planShown;
  for (const event of plans.events) {
    void events.record(subject, event.reason, event.note);
    if (event.reason === "DestructivePlanApprovalConsumed") deps.metrics?.destructivePlanApprovalsConsumed.inc({ kind: adapter.kind });
  }
  for (const result of plans.approvals) deps.metrics?.planApprovals.inc({ kind: adapter.kind, result });
  if (plans.removeAnnotations.length > 0) {
    await patchObject(pass, { metadata: { annotations: Object.fromEntries(plans.removeAnnotations.map((key) => [key, null])) } });
    for (const key of plans.removeAnnotations) delete object.metadata.annotations?.[key];
  }
  return next;
};
