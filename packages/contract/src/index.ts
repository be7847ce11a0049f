// The public surface of @captf/contract. API kind constants live in "@captf/contract/api".
export { contractVersion, roles, kindOfRole, reservedInputPrefix, isRole, assertRole } from "./version.js";
export type { ContractVersion, Role, RoleKind } from "./version.js";
export { roleTables, inputNames, outputNames, moduleMetaArguments } from "./role-table.js";
export type { InputSpec, OutputSpec, RoleTable } from "./role-table.js";
export { JsonNumber, captfTagKeys, captfTags, commonInputs, managedByValue } from "./inputs.js";
export type {
  JsonValue,
  CaptfCluster,
  CaptfObject,
  CaptfTagKey,
  CaptfTags,
  Endpoint,
  ClusterNetwork,
  ClusterInputs,
  MachineInputs,
  MachinePoolInputs,
  Autoscaling,
  BootstrapFormat,
  RoleInputs,
} from "./inputs.js";
export {
  encodeJson,
  canonicalJson,
  compareCodePoints,
  quoteJsonString,
  escapePointer,
  parseJsonExact,
  NonIntegerNumberError,
  UnencodableValueError,
  JsonSyntaxError,
} from "./json-encoding.js";
export type { JsonEncodingOptions } from "./json-encoding.js";
export { applyMergePatch, mergePatchChanges, replacingMergePatch, sameJsonValue } from "./merge-patch.js";
export { validateDocument, validateAgainstLabelSchema, schemaId, maxReportedErrors } from "./validate.js";
export type { DocumentKind, DocumentError, DocumentValidation, LabelSchemaValidation } from "./validate.js";
export {
  decodeOutputs,
  outputValuesFromState,
  healthStates,
  addressTypeOrder,
  maxInstances,
  maxAddresses,
} from "./decode-outputs.js";
export type {
  OutputState,
  OutputsDecoding,
  DecodeOptions,
  OutputsReason,
  DecodedOutputs,
  Health,
  HealthState,
  FailureDomain,
  MachineAddress,
  AddressType,
  PoolInstance,
} from "./decode-outputs.js";
export { nameLabelValue, boundedObjectName, maxLabelValueLength, maxObjectNameLength } from "./object-names.js";
