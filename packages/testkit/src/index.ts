// The public surface of @captf/testkit: the plane (./plane) and the jest helpers.
export * from "./plane.js";
export { describeWithTools, recordSkippedSuite, skippedSuitesFile } from "./integration.js";
export { describeModuleImages, describeModuleRootSuites, describeWithProviders } from "./providers.js";
export {
  defaultProviderMirror,
  findProviders,
  mirrorModuleProviders,
  platformProviderMirrors,
  providerCliConfig,
  providerMirrorVariable,
  providerRegistryHost,
  runtimeProviderHosts,
} from "./provider-sources.js";
export type { PlatformProviders, ProviderSource } from "./provider-sources.js";
export {
  escapeRegExp,
  eventRecordingLine,
  findNamesProduced,
  literalPattern,
  metricsDeclaredIn,
  metricUsePattern,
  propertyPattern,
  statementEnd,
  type DeclaredName,
  type FileCoverage,
  type NamesFinding,
} from "./names-produced.js";
export { copyModuleForRun } from "./tofu.js";
export { parseCollectedSpans, startCollector, type CollectedSpan, type Collector } from "./otel-collector.js";
export { cosignKeyPair, cosignSign, startReferrersRegistry, type CosignKeyPair } from "./cosign.js";
export { bundleCoverageFlags, childCoverageEnvironment, childCoverageMeasured } from "./child-coverage.js";
export { applyMergePatch } from "./fake-objects.js";
