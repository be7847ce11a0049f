// The public surface of @captf/runner: the CLI and the pure functions its decisions are made of.
export { main, runFromProcess, exitCodes } from "./cli.js";
export type { CliIo } from "./cli.js";
export { runOperation } from "./run.js";
export type { RunOptions, RunIo, RunOutcome } from "./run.js";
export { operations, stepNames, stepsFor, checksPlanBeforeApply, isOperation } from "./steps.js";
export type { Operation, StepName, StepInvocation, StepOptions, FailurePoint } from "./steps.js";
export {
  parsePlanDocument,
  planHash,
  planHashLines,
  planHashPrefix,
  emptyPlanHash,
  summarizePlan,
  summarizeDrift,
  destructiveChanges,
  planSensitiveValues,
  blockedSummary,
  planChangedSummary,
  maxPlanResources,
  maxSummaryBytes,
  PlanUnreadableError,
} from "./plan.js";
export type { PlanDocument, PlanSummary, DriftSummary } from "./plan.js";
export { shrinkResult, maxResultBytes, resultVersion, errorKinds } from "./result.js";
export type { RunResult, RunError, ErrorKind, StepRecord } from "./result.js";
export { redactor, redactedMarker, environmentSecrets, variableSecrets, planSecrets } from "./redact.js";
export type { Redactor, Secret } from "./redact.js";
export { failureSummary } from "./summary.js";
export { parseDuration } from "./durations.js";
export { parseObjectReference, createEventRecorder, resolveEventsEndpoint } from "./events.js";
export type { EventRecorder, ObjectReference, EventsEndpoint } from "./events.js";
export { copyBundle } from "./copy.js";
export { runnerVersion } from "./version.js";
