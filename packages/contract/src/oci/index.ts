// Reading module images over the OCI distribution API, and the image labels the contract defines:
// shared by tfcapi-lint and the manager's TerraformMachineTemplate controller.
export * from "./documents.js";
export * from "./labels.js";
export * from "./reference.js";
export * from "./registry-client.js";
export * from "./source.js";
