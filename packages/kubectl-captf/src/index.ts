// kubectl captf as a library: the CLI's entry point and its pure pieces.
export { main, exitCodes } from "./cli.js";
export type { CliIo } from "./cli.js";
export { buildClusterTree, formatClusterTree, readyFirst, age, describeLastRun } from "./describe.js";
export type { ClusterTree, TreeNode, JobSummary } from "./describe.js";
export { approvalDecision, restoreDecision, pendingPlan, planCounts, formatPlan, lastJob, lastPod } from "./decisions.js";
export { parseObjectReference, jobKinds, UsageError, Refusal } from "./objects.js";
export type { CaptfObject, ObjectReference, PlanPreview } from "./objects.js";
