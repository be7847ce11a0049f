// The module images a release holds: image name, module directory, role. scripts/release.mjs builds
// them; its test (manager-image.integration.test.ts) reads them from here.
export const releaseModules = [
  { name: "noop-cluster", dir: "packages/module-noop/cluster", role: "cluster" },
  { name: "noop-machine", dir: "packages/module-noop/machine", role: "machine" },
  { name: "noop-machinepool", dir: "packages/module-noop/machinepool", role: "machinepool" },
  { name: "gcp-machinepool", dir: "packages/module-gcp-machinepool", role: "machinepool" },
  { name: "azure-machinepool", dir: "packages/module-azure-machinepool", role: "machinepool" },
];
