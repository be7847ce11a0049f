// The Jobs phase: the object's Jobs observed; those finished since the last pass bookkept (marked only after the status patch).
import { observeJobs } from "./observe-jobs.js";
import { next, type Phase } from "./types.js";
import { bookkeepFinishedJobs, noticeVanishedApply } from "./workspace-phases.js";

export const reconcileJobs: Phase = async (pass) => {
  const { adapter, object, namespace, name, now, facts } = pass;
  facts.jobs = await observeJobs(pass.reads, namespace, { kind: adapter.kind, name, uid: object.metadata.uid }, now);
  facts.toMark = await bookkeepFinishedJobs(pass, facts.jobs);
  await noticeVanishedApply(pass, facts.jobs);
  return next;
};
