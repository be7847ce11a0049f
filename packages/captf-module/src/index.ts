// The public surface of captf-module: the CLI entry point and the pieces other tools reuse (the
// repository's own image builds, through scripts/lib/oci-layout.mjs and the manager's SBOM; push and the lifecycle for the e2e).
export { main } from "./cli.js";
export { exitCodes, CommandError, UsageError } from "./io.js";
export { moduleSkeleton, requiredVersion } from "./init/skeleton.js";
export type { SkeletonFile } from "./init/skeleton.js";
export { initModule } from "./init/init-command.js";
export type { InitReport } from "./init/init-command.js";
export { buildModuleImage, imageLabels, moduleImageUser, roleOfModule, sbomPath } from "./build/image.js";
export type { BuildOptions, BuildReport, PlatformReport, RuntimeBinary } from "./build/image.js";
export {
  assembleImage,
  platformDescriptor,
  sha256,
  sha256File,
  sourceDate,
  stampTimes,
  tagIndex,
} from "./build/layout.js";
export type { CommandRunner, Descriptor, ImageAssembly, ImageLayer } from "./build/layout.js";
export { cycloneDxBom, cycloneDxJson } from "./build/sbom.js";
export type { ComponentDescription, SbomDocument } from "./build/sbom.js";
export { hostArchitecture, imageArchitectures } from "./build/runtime.js";
export type { ImageArchitecture, RuntimeName } from "./build/runtime.js";
export { parseLockFile } from "./build/lockfile.js";
export type { LockedProvider } from "./build/lockfile.js";
export { pushLayout } from "./push/registry-push.js";
export type { PushOptions, PushReport } from "./push/registry-push.js";
export { findRegistryCredentials } from "./push/credentials.js";
export { parseDestination, parseLayoutSource } from "./push/reference.js";
export { kubernetesClient } from "./lifecycle/client.js";
export type { Clock, KubeObject, LifecycleClient, ObjectRef } from "./lifecycle/client.js";
export { runLifecycle } from "./lifecycle/driver.js";
export type { LifecycleReport, StepReport } from "./lifecycle/driver.js";
export { lifecyclePlan, stepNames } from "./lifecycle/steps.js";
export type { StepDefinition, StepName } from "./lifecycle/steps.js";
export type { LifecycleOptions } from "./lifecycle/objects.js";
export { lifecycleJunit, lifecycleText } from "./lifecycle/report.js";
