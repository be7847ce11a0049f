// The public surface of @captf/testkit: the plane (./plane) and the jest helpers.
export * from "./plane.js";
export { describeWithTools, recordSkippedSuite, skippedSuitesFile } from "./integration.js";
export { describeModuleRootSuites, describeWithProviders, defaultProviderMirror, findProviders, providerCliConfig, providerMirrorVariable, providerRegistryHost } from "./providers.js";
export type { ProviderSource } from "./providers.js";
