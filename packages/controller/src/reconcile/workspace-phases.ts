// The phases' helpers under the names the pass's earlier cut gave them: each lives with its phase now (phases.ts lists them).
export type { DriftFacts, Pass } from "./types.js";
export { gateRequeueMs, lagRequeueMs, longRequeueMs } from "./requeue.js";
export { createRunSecret, patchObject, rootForOperation, writeDurableNotes } from "./pass-writes.js";
export { bookkeepFinishedJobs, noticeVanishedApply } from "./phase-jobs.js";
export { lineageCheck, observeStateAndBackups, type StatePhase } from "./phase-state.js";
export { podRefusalAfterMs, recoverActiveJob } from "./phase-active-job.js";
export { observeDrift } from "./phase-drift.js";
export { decide, type DecisionFacts } from "./phase-decision.js";
