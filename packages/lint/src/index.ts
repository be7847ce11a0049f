// The public surface of tfcapi-lint: the CLI entry point and the pieces other tools may reuse.
export { main } from "./cli.js";
export type { CliIo, OutputStream } from "./commands/io.js";
export { exitCodes } from "./commands/io.js";
export { lintModule } from "./lint-module.js";
export type { ModuleLint, FileSetName } from "./lint-module.js";
export { moduleChecks, checksFor } from "./checks/registry.js";
export type { ModuleCheck, Scope } from "./checks/registry.js";
export { ruleCatalog } from "./checks/catalog.js";
export { checkIds } from "./checks/ids.js";
export type { CheckId } from "./checks/ids.js";
export type { Finding, Severity, Summary } from "./findings.js";
export { parseType, accepts } from "./checks/type-match.js";
export type { TypeExpr } from "./checks/type-match.js";
export { variablesSchema, maxSchemaLabelBytes } from "./schema/variables-schema.js";
export { renderContractInputs, runtimes } from "./inputs/contract-inputs.js";
export type { Runtime } from "./inputs/contract-inputs.js";
