// The public surface of @captf/runner: the CLI and the pure functions its decisions are made of.
export { main, runFromProcess, exitCodes } from "./cli.js";
export type { CliIo } from "./cli.js";
export { runOperation } from "./run.js";
export type { RunOptions, RunIo, RunOutcome } from "./run.js";
export {
  stepsFor,
  checksPlanBeforeApply,
} from "./steps.js";
export type {
  StepInvocation,
  StepOptions,
} from "./steps.js";
export {
  parsePlanDocument,
  planHash,
  planHashLines,
  summarizePlan,
  summarizeDrift,
  destructiveChanges,
  planSensitiveValues,
  blockedSummary,
  planChangedSummary,
  PlanUnreadableError,
} from "./plan.js";
export type { PlanDocument } from "./plan.js";
export { shrinkResult } from "./result.js";
export { redactor, redactedMarker, environmentSecrets, variableSecrets, planSecrets } from "./redact.js";
export type { Redactor, Secret } from "./redact.js";
export { failureSummary } from "./summary.js";
export { parseDuration } from "./durations.js";
export { parseObjectReference, createEventRecorder, resolveInClusterEndpoint } from "./events.js";
export type { EventRecorder, ObjectReference, ApiEndpoint } from "./events.js";
export { copyBundle } from "./copy.js";
export { runnerVersion } from "./version.js";
