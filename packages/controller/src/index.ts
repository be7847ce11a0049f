// Public surface of @captf/controller: the API, the webhooks, the runtime and the reconcile core.
export * from "./api/index.js";
export * from "./webhooks/index.js";
export { KubeClient, resourcePath, apiVersionOf } from "./runtime/kube-client.js";
export { KubeApiError, isConflict, isAlreadyExists, isGone } from "./runtime/api-errors.js";
export type {
  KubeApi,
  ResourceType,
  KubeObject,
  ObjectMeta,
  KubeList,
  WatchEvent,
  PatchType,
  DeleteOptions,
  KubeRequestOptions,
} from "./runtime/kube-client.js";
export type { KubeStatus } from "./runtime/api-errors.js";
export { builtinTypes } from "./runtime/builtin-types.js";
export { Informer, objectKey, splitKey, labelIndex, controllerOwnerIndex } from "./runtime/informer.js";
export type { InformerOptions, InformerHandlers, IndexFunction } from "./runtime/informer.js";
export { parseLabelSelector, structuredSelectorRequirements, matchesLabels } from "./runtime/label-selector.js";
export { WorkQueue, lowPriority } from "./runtime/work-queue.js";
export { controllerRateLimiter } from "./runtime/rate-limiter.js";
export type { RateLimiter } from "./runtime/rate-limiter.js";
export { LeaderElector } from "./runtime/leader-election.js";
export { Manager, shutdownSignal } from "./runtime/manager.js";
export type { ManagerOptions, ManagerExit } from "./runtime/manager.js";
export { TerminalError, watchSelf, watchControllerOwner, generationOrMetadataChanged, watchFilterSelector } from "./runtime/controller.js";
export type { Controller, ReconcileContext, ReconcileOutcome, WatchSpec } from "./runtime/controller.js";
export { bootstrapManager } from "./bootstrap.js";
export { createLogger } from "./runtime/logging.js";
export type { Clock } from "./runtime/clock.js";
export { createManagerMetrics } from "./metrics/manager-metrics.js";
export type { ManagerMetrics } from "./metrics/manager-metrics.js";
export type { MetricKind, MetricOp, JobResult, BuildInfo, MetricLabelValues } from "./metrics/captf-metrics.js";
export { metricLabelValues } from "./metrics/captf-metrics.js";
export { reconcileResults } from "./metrics/runtime-metrics.js";
export { parseManagerFlags, managerFlags } from "./flags.js";
export type { ManagerSettings, ParsedFlags, FlagDefinition } from "./flags.js";
export { alertRules, runbookUrl, renderAlertTable } from "./monitoring/alerts.js";
export type { AlertRule } from "./monitoring/alerts.js";
export { decideOperation, backoffMs, consecutiveFailures, jitterMs } from "./reconcile/decide-operation.js";
export type { Observed, Decision, FinishedJob, JobOutcome } from "./reconcile/decide-operation.js";
export { reconcileWorkspace } from "./reconcile/workspace-reconciler.js";
export { workspaceController, workspaceResourceType } from "./reconcile/workspace-controller.js";
export type { ReconcilerDeps, KindAdapter, PassResult, WorkspaceObject } from "./reconcile/types.js";
export { machineAdapter, clusterAdapter, poolAdapter } from "./kinds/adapters.js";
export { buildJob, jobName, runSecretName } from "./jobs/build-job.js";
export type { JobRequest, JobPolicy, JobEnvironment } from "./jobs/build-job.js";
export { readState } from "./state/read-state.js";
export { decodeStateSecrets } from "./state/decode-state.js";
export type { StateReading, DecodedState } from "./state/decode-state.js";
