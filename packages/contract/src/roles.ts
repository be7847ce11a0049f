// A light entry point: the roles and their tables without the JSON Schema validator (ajv), for CLIs that start often.
export { contractVersion, roles, kindOfRole, reservedInputPrefix, isRole, assertRole } from "./version.js";
export type { ContractVersion, Role, RoleKind } from "./version.js";
export { roleTables, inputNames, outputNames, moduleMetaArguments } from "./role-table.js";
export type { InputSpec, OutputSpec, RoleTable } from "./role-table.js";
