// The registry of every module check: an explicit list, as tflint and typescript-eslint keep theirs.
// The docs, the SARIF rules and the tests all read it.
import { roles, type Role } from "@captf/contract/roles";
import type { Finding, Severity } from "../findings.js";
import type { CheckContext, CheckRun } from "./context.js";
import { checkIds, type CheckId } from "./ids.js";
import {
  inputDefault,
  inputRequired,
  inputReserved,
  inputSensitive,
  inputTagsDeclared,
  inputTagsUnused,
  inputType,
  inputUserVariableDefault,
} from "./inputs.js";
import {
  moduleBackend,
  moduleCloud,
  moduleProviderConfig,
  moduleSourceEscape,
  moduleTofuShadow,
  moduleVersion,
  poolAutoscalingIgnoreChanges,
} from "./module-blocks.js";
import {
  outputEndpointNeverSet,
  outputHealth,
  outputProviderIdListDeclared,
  outputProviderIdListShape,
  outputRequired,
  outputReserved,
} from "./outputs.js";

export type Scope = "root" | "root and nested";

export interface ModuleCheck {
  readonly id: CheckId;
  /** The usual severity; a finding's own severity is authoritative (input/type warns when it cannot read a type). */
  readonly severity: Severity;
  readonly roles: readonly Role[];
  readonly scope: Scope;
  /** One line: what the check requires. */
  readonly description: string;
  readonly run: CheckRun;
}

const all = roles;
const pool: readonly Role[] = ["machinepool"];

/** Every module check, in report order of the reference's registry. */
export const moduleChecks: readonly ModuleCheck[] = [
  {
    id: checkIds.inputRequired,
    severity: "error",
    roles: all,
    scope: "root",
    description: "every contract input of the role is declared as a variable",
    run: inputRequired,
  },
  {
    id: checkIds.inputUserVariableDefault,
    severity: "warning",
    roles: all,
    scope: "root",
    description: "a variable outside the contract (a user variable) has a default",
    run: inputUserVariableDefault,
  },
  {
    id: checkIds.inputType,
    severity: "error",
    roles: all,
    scope: "root",
    description: "a contract input's declared type accepts what captf passes (a missing or unreadable type warns)",
    run: inputType,
  },
  {
    id: checkIds.inputSensitive,
    severity: "warning",
    roles: ["machine", "machinepool"],
    scope: "root",
    description: "bootstrap_data is declared sensitive = true",
    run: inputSensitive,
  },
  {
    id: checkIds.inputDefault,
    severity: "warning",
    roles: all,
    scope: "root",
    description: "a contract input captf always sets has no default",
    run: inputDefault,
  },
  {
    id: checkIds.inputReserved,
    severity: "error",
    roles: all,
    scope: "root",
    description: "no variable takes a reserved name: the captf_ prefix outside the contract, or a module meta-argument",
    run: inputReserved,
  },
  {
    id: checkIds.inputTagsDeclared,
    severity: "error",
    roles: all,
    scope: "root",
    description: "captf_tags is declared",
    run: inputTagsDeclared,
  },
  {
    id: checkIds.outputRequired,
    severity: "error",
    roles: all,
    scope: "root",
    description: "every contract output of the role is declared",
    run: outputRequired,
  },
  {
    id: checkIds.outputReserved,
    severity: "warning",
    roles: all,
    scope: "root",
    description: "no output uses the captf_ prefix",
    run: outputReserved,
  },
  {
    id: checkIds.outputHealth,
    severity: "error",
    roles: all,
    scope: "root",
    description: "the health output is declared",
    run: outputHealth,
  },
  {
    id: checkIds.moduleVersion,
    severity: "info",
    roles: all,
    scope: "root",
    description: "terraform { required_version } is declared",
    run: moduleVersion,
  },
  {
    id: checkIds.moduleBackend,
    severity: "error",
    roles: all,
    scope: "root and nested",
    description: "no terraform { backend } block",
    run: moduleBackend,
  },
  {
    id: checkIds.moduleSourceEscape,
    severity: "error",
    roles: all,
    scope: "root and nested",
    description: "local module sources and module files stay inside the module directory",
    run: moduleSourceEscape,
  },
  {
    id: checkIds.moduleCloud,
    severity: "error",
    roles: all,
    scope: "root and nested",
    description: "no terraform { cloud } block",
    run: moduleCloud,
  },
  {
    id: checkIds.moduleProviderConfig,
    severity: "warning",
    roles: all,
    scope: "root and nested",
    description: "no provider argument named like a credential is a string literal",
    run: moduleProviderConfig,
  },
  {
    id: checkIds.moduleTofuShadow,
    severity: "warning",
    roles: all,
    scope: "root",
    description: ".tofu files hiding .tf files declare the same things",
    run: moduleTofuShadow,
  },
  {
    id: checkIds.inputTagsUnused,
    severity: "warning",
    roles: all,
    scope: "root and nested",
    description: "captf_tags is referenced, directly or through a local module",
    run: inputTagsUnused,
  },
  {
    id: checkIds.outputEndpointNeverSet,
    severity: "warning",
    roles: ["cluster"],
    scope: "root",
    description: "control_plane_endpoint is not a literal null",
    run: outputEndpointNeverSet,
  },
  {
    id: checkIds.outputProviderIdListShape,
    severity: "error",
    roles: pool,
    scope: "root",
    description: "provider_id_list is declared (error), sorted and not filtered on health or state (warnings)",
    run: (ctx: CheckContext): Finding[] => [...outputProviderIdListDeclared(ctx), ...outputProviderIdListShape(ctx)],
  },
  {
    id: checkIds.poolAutoscalingIgnoreChanges,
    severity: "warning",
    roles: pool,
    scope: "root and nested",
    description: "a scaling group that uses var.autoscaling ignores changes to its desired count",
    run: poolAutoscalingIgnoreChanges,
  },
];

/** The checks that run for `role`. */
export function checksFor(role: Role): ModuleCheck[] {
  return moduleChecks.filter((c) => c.roles.includes(role));
}

/** Runs every check of the role over the loaded module. */
export function runModuleChecks(ctx: CheckContext): Finding[] {
  return checksFor(ctx.role).flatMap((check) => check.run(ctx));
}
