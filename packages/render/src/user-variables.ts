import { moduleMetaArguments, reservedInputPrefix, roleTables, type Role } from "@captf/contract/roles";
import { parseJsonExact } from "@captf/contract/json";
import type { JsonValue } from "@captf/contract";

/** One user variable after merging: its value and whether it came from a Secret. */
export interface UserVariable {
  value: JsonValue;
  /** True when the winning value came from a Secret: the generated root declares it sensitive. */
  sensitive: boolean;
}

export type UserVariables = Record<string, UserVariable>;

/** A ConfigMap or Secret listed in `spec.variablesFrom`, already read (Secret data base64-decoded). */
export interface VariablesSource {
  kind: "ConfigMap" | "Secret";
  name: string;
  /** `String` (default): each key is a string variable. `JSON`: each key's value is parsed as JSON. */
  format?: "String" | "JSON";
  data: Readonly<Record<string, string>>;
}

/** At most this many inline variables (`spec.variables`). */
export const maxInlineVariables = 256;
/** At most this many entries in `spec.variablesFrom`. */
export const maxVariablesSources = 16;

const variableNamePattern = /^[a-zA-Z_][a-zA-Z0-9_-]*$/;

/** A user variable that cannot be used; the message names it and the fix, never its value. */
export class UserVariablesError extends Error {
  readonly variable: string | undefined;
  constructor(message: string, variable?: string) {
    super(message);
    this.name = "UserVariablesError";
    this.variable = variable;
  }
}

/** Why a variable name is refused for a role, or undefined when it may be used. */
export function reservedVariableReason(role: Role, name: string): string | undefined {
  if (!variableNamePattern.test(name)) {
    return (
      `variable name ${JSON.stringify(name)} is not a valid Terraform identifier ` +
      "(letters, digits, _ and -, not starting with a digit or -)"
    );
  }
  if (name.startsWith(reservedInputPrefix)) {
    return `variable name ${JSON.stringify(name)} is reserved: the ${reservedInputPrefix} prefix belongs to inputs captf injects`;
  }
  if (roleTables[role].inputs.some((spec) => spec.name === name)) {
    return `variable name ${JSON.stringify(name)} is reserved: it is a ${role} contract input, which captf sets itself`;
  }
  if ((moduleMetaArguments as readonly string[]).includes(name)) {
    return `variable name ${JSON.stringify(name)} is reserved: it is a module meta-argument`;
  }
  return undefined;
}

/**
 * Merges user variables: `variablesFrom` sources in list order (a later source wins),
 * then the inline `spec.variables` over all of them. A variable whose winning value
 * came from a Secret is sensitive. Throws {@link UserVariablesError} naming the
 * offending variable or source.
 */
export function mergeUserVariables(
  role: Role,
  inline: Readonly<Record<string, JsonValue>> | undefined,
  sources: readonly VariablesSource[] = [],
): UserVariables {
  if (sources.length > maxVariablesSources) {
    throw new UserVariablesError(`spec.variablesFrom lists ${sources.length} sources; at most ${maxVariablesSources} are allowed`);
  }
  const inlineNames = Object.keys(inline ?? {});
  if (inlineNames.length > maxInlineVariables) {
    throw new UserVariablesError(`spec.variables sets ${inlineNames.length} variables; at most ${maxInlineVariables} are allowed`);
  }
  const merged: UserVariables = {};
  for (const source of sources) {
    const format = source.format ?? "String";
    for (const [name, text] of Object.entries(source.data)) {
      const where = `key ${JSON.stringify(name)} of ${source.kind} ${source.name}`;
      const reason = reservedVariableReason(role, name);
      if (reason) throw new UserVariablesError(`${where}: ${reason}`, name);
      let value: JsonValue = text;
      if (format === "JSON") {
        try {
          value = parseJsonExact(text);
        } catch (error) {
          // The parser's message carries an offset only, never the value.
          throw new UserVariablesError(`${where} is not valid JSON (format: JSON): ${(error as Error).message}`, name);
        }
      }
      define(merged, name, { value, sensitive: source.kind === "Secret" });
    }
  }
  for (const name of inlineNames) {
    const reason = reservedVariableReason(role, name);
    if (reason) throw new UserVariablesError(`spec.variables: ${reason}`, name);
    define(merged, name, { value: inline![name] as JsonValue, sensitive: false });
  }
  return merged;
}

function define(target: UserVariables, name: string, variable: UserVariable): void {
  Object.defineProperty(target, name, { value: variable, enumerable: true, writable: true, configurable: true });
}
