// The testkit without jest: tools, the local plane, images, the chroot kubelet (for the demo and benches).
export {
  debianTools,
  toolVariables,
  skipMissingToolsVariable,
  MissingToolError,
  toolsDirectory,
  findTool,
  requireTool,
  waitFor,
} from "./tools.js";
export type { ToolName } from "./tools.js";
export { startControlPlane, freeLoopbackPort, writeKubeconfig } from "./control-plane.js";
export type { ControlPlane, ControlPlaneConnection, ControlPlaneOptions } from "./control-plane.js";
export { sharedControlPlane, controlPlaneVariable } from "./shared-control-plane.js";
export { runCommand, tofuEnvironment, runTofuTest } from "./tofu.js";
export type { CommandRun, TofuTestRun } from "./tofu.js";
export { buildModuleImage, startLocalRegistry, pushImage, moduleImageUser, moduleImageScript } from "./oci.js";
export type { ModuleImage, LocalRegistry } from "./oci.js";
export { addIndex, buildImage, startTokenRegistry } from "./oci-fixtures.js";
export type { FileSpec, ImageSpec } from "./oci-fixtures.js";
export { lintPublishedModuleImages } from "./module-image-lint.js";
export type { LintMain, PublishedImageLint } from "./module-image-lint.js";
export { clusterApiVersion, clusterApiCrdFiles, clusterApiCrdPaths, clusterApiModuleDirectory } from "./capi.js";
export { startChrootKubelet, prepareRunnerImageRoot, parallelPodsFor, runsToCompletion } from "./kubelet.js";
export { bundleSourceMapDirectory, childCoverageMeasured, podCoverageDirectory } from "./child-coverage.js";
export type { ChrootKubelet, ChrootKubeletOptions, ImageResolver, ResolvedImage } from "./kubelet.js";
export { generateServingCertificate } from "./certificates.js";
export type { ServingCertificate } from "./certificates.js";
export { hostArchitecture, imageArchitectures, moduleRuntimes, runtimeBinaries, runtimeNames, runtimeVersion } from "./runtimes.js";
export type { RuntimeName } from "./runtimes.js";
