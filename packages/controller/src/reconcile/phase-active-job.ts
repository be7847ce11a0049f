/**
 * The running Job, when it cannot go on by itself (its per-run Secret missing, its Pod refused by a quota, its image not pulled):
 * recovered, and the pass ends there with its status.
 */
import { podRefusalMessage } from "./quota-refusal.js";
import { activeJobOf, recordWaitEvent } from "./pass-status.js";
import { waitConditionType } from "./start-operation.js";
import { next, type Phase } from "./types.js";
import { recoverActiveJob } from "./workspace-phases.js";

export const reconcileActiveJob: Phase = async (pass) => {
  const { facts, outcome } = pass;
  const active = facts.active;
  const stuck = active && (await recoverActiveJob(pass, active, facts.inputs, facts.currentHash));
  if (!active || !stuck) return next;
  if (stuck.jobRuns) outcome.active = activeJobOf(active);
  if (stuck.podRefusal) {
    const message = podRefusalMessage(stuck.podRefusal, active.name);
    outcome.wait = { type: waitConditionType(active.op), value: { status: "Unknown", reason: "JobQuotaExceeded", message } };
    recordWaitEvent(pass, outcome.wait);
  }
  return { kind: "end", result: stuck.result };
};
