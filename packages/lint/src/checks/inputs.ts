// The input/* checks: the module's variables against the role's contract inputs.
import { reservedInputPrefix } from "@captf/contract/roles";
import { reservedVariableReason } from "@captf/render/user-variables";
import { at, moduleWide, type Finding } from "../findings.js";
import { collapseWhitespace } from "../module/expressions.js";
import { referencesOf } from "../module/expressions.js";
import type { LoadedModule } from "../module/load.js";
import { configSet, expressionSet } from "../module/load.js";
import { config, contractInputs, type CheckContext } from "./context.js";
import { checkIds } from "./ids.js";
import { accepts, parseType, TypeSyntaxError } from "./type-match.js";

export const tagsInput = "captf_tags";
const bootstrapInput = "bootstrap_data";
/** May be declared with a default in any role: the cluster never receives it, machines read null like the default. */
const clusterOutputsInput = "captf_cluster_outputs";

function sortedNames<T>(map: ReadonlyMap<string, T>): string[] {
  return [...map.keys()].sort();
}

export function inputRequired(ctx: CheckContext): Finding[] {
  const variables = config(ctx).variables;
  return [...contractInputs(ctx.role).values()]
    .filter((spec) => spec.required && spec.name !== tagsInput && !variables.has(spec.name))
    .map((spec) =>
      moduleWide(
        checkIds.inputRequired,
        "error",
        `contract input ${spec.name} is not declared as a variable`,
        `add variable "${spec.name}" { type = ${spec.type} }`,
      ),
    );
}

export function inputTagsDeclared(ctx: CheckContext): Finding[] {
  if (config(ctx).variables.has(tagsInput)) return [];
  return [
    moduleWide(
      checkIds.inputTagsDeclared,
      "error",
      `variable ${tagsInput} is not declared: every module must accept the contract's tags`,
      `add variable "${tagsInput}" { type = map(string) } and apply it to every taggable resource`,
    ),
  ];
}

export function inputUserVariableDefault(ctx: CheckContext): Finding[] {
  const inputs = contractInputs(ctx.role);
  const out: Finding[] = [];
  for (const v of config(ctx).variables.values()) {
    if (inputs.has(v.name) || v.name.startsWith(reservedInputPrefix) || v.default !== undefined) continue;
    out.push(
      at(
        v.at,
        checkIds.inputUserVariableDefault,
        "warning",
        `variable ${v.name} is not a contract input and has no default: an object that does not set it in spec.variables or ` +
          `variablesFrom fails to apply`,
        `give variable ${v.name} a default, or allow this warning if every object must set it`,
      ),
    );
  }
  return out;
}

export function inputType(ctx: CheckContext): Finding[] {
  const variables = config(ctx).variables;
  const out: Finding[] = [];
  for (const [name, spec] of contractInputs(ctx.role)) {
    const v = variables.get(name);
    if (!v) continue;
    const fix = `declare type = ${spec.type}`;
    if (!v.type || v.type.text.trim() === "") {
      out.push(at(v.at, checkIds.inputType, "warning", `variable ${name} has no type; the contract passes ${spec.type}`, fix));
      continue;
    }
    const written = collapseWhitespace(v.type.text);
    try {
      if (accepts(parseType(v.type.text), parseType(spec.type))) continue;
      out.push(
        at(
          v.at,
          checkIds.inputType,
          "error",
          `variable ${name} is declared as ${written}, which does not accept the contract's ${spec.type}`,
          fix,
        ),
      );
    } catch (error) {
      if (!(error instanceof TypeSyntaxError)) throw error;
      out.push(
        at(
          v.at,
          checkIds.inputType,
          "warning",
          `variable ${name}: cannot check type ${written} against the contract's ${spec.type}: ${error.message}`,
          fix,
        ),
      );
    }
  }
  return out.sort((a, b) => a.message.localeCompare(b.message));
}

export function inputSensitive(ctx: CheckContext): Finding[] {
  if (!contractInputs(ctx.role).has(bootstrapInput)) return [];
  const v = config(ctx).variables.get(bootstrapInput);
  if (!v || v.sensitive) return [];
  return [
    at(
      v.at,
      checkIds.inputSensitive,
      "warning",
      `variable ${bootstrapInput} is not sensitive = true, though it carries the bootstrap payload`,
      `add sensitive = true to variable "${bootstrapInput}"`,
    ),
  ];
}

export function inputDefault(ctx: CheckContext): Finding[] {
  const variables = config(ctx).variables;
  const out: Finding[] = [];
  for (const name of sortedNames(contractInputs(ctx.role))) {
    const spec = contractInputs(ctx.role).get(name)!;
    const v = variables.get(name);
    if (!v || v.default === undefined || spec.nullable || name === clusterOutputsInput) continue;
    out.push(
      at(
        v.at,
        checkIds.inputDefault,
        "warning",
        `contract input ${name} has a default, but captf always sets it: a default only hides a missing value`,
        `remove the default from variable "${name}"`,
      ),
    );
  }
  return out;
}

export function inputReserved(ctx: CheckContext): Finding[] {
  const inputs = contractInputs(ctx.role);
  const out: Finding[] = [];
  for (const v of config(ctx).variables.values()) {
    if (inputs.has(v.name)) continue;
    if (v.name.startsWith(reservedInputPrefix)) {
      if (v.name === clusterOutputsInput && v.default !== undefined) continue;
      out.push(
        at(
          v.at,
          checkIds.inputReserved,
          "error",
          `variable ${v.name} uses the reserved ${reservedInputPrefix} prefix but is not a ${ctx.role} contract input`,
          `rename variable ${v.name} without the ${reservedInputPrefix} prefix`,
        ),
      );
      continue;
    }
    const reason = reservedVariableReason(ctx.role, v.name);
    if (reason)
      out.push(
        at(v.at, checkIds.inputReserved, "error", reason, `rename variable ${v.name}: captf passes user variables as module arguments`),
      );
  }
  return out;
}

/** Whether `name` (a variable of `m`) is referenced in `m`, or forwarded into a local module that references it. */
function variableUsed(m: LoadedModule, name: string): boolean {
  if (expressionSet(m).references.some((r) => r.root === "var" && r.attrs[0] === name)) return true;
  const calls = configSet(m).moduleCalls;
  return m.nested.some((n) => {
    const call = calls.get(n.name);
    return (
      call?.args.some(
        (arg) => referencesOf(arg.expr).some((r) => r.root === "var" && r.attrs[0] === name) && variableUsed(n.module, arg.name),
      ) ?? false
    );
  });
}

export function inputTagsUnused(ctx: CheckContext): Finding[] {
  const v = config(ctx).variables.get(tagsInput);
  if (!v || variableUsed(ctx.module, tagsInput)) return [];
  return [
    at(
      v.at,
      checkIds.inputTagsUnused,
      "warning",
      `variable ${tagsInput} is never referenced: the module should tag what it creates with it`,
      `pass var.${tagsInput} to the tags (or labels) of every taggable resource`,
    ),
  ];
}
