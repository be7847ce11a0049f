// The public surface of @captf/render.
export { hashScheme, inputsHash, approvalHash, exportsHash, hashedInputsView, canonicalVariables, InputsHashError } from "./inputs-hash.js";
export type { Hashable } from "./inputs-hash.js";
export {
  renderGeneratedRoot,
  renderBackendRoot,
  maxGeneratedRootBytes,
  generatedRootBytes,
  moduleSource,
  InputsTooLargeError,
} from "./generated-root.js";
export type { GeneratedRoot } from "./generated-root.js";
export { renderCliConfig } from "./cli-config.js";
export {
  mergeUserVariables,
  reservedVariableReason,
  maxInlineVariables,
  maxVariablesSources,
  UserVariablesError,
} from "./user-variables.js";
export type { UserVariable, UserVariables, VariablesSource } from "./user-variables.js";
export { redactRenderedInputs, redactionFailed } from "./redact.js";
export {
  stateWorkspace,
  stateSecretSuffix,
  stateSecretName,
  stateLockLeaseName,
  stateSecretLabels,
  backendConfigValues,
} from "./backend.js";
export type { StateOwner } from "./backend.js";
