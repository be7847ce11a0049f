import type { Options } from "yargs";

/**
 * A command's flags in the forms a Job writes them (`--flag=value`, `--flag value`, `--switch`),
 * parsed by hand: yargs takes tens of milliseconds to load and node:util's parser about half a
 * millisecond, both before every Job's first step. Only the common case: long flags of its table,
 * values that need no coercion beyond whole numbers, exactly `positionals` arguments. Anything
 * else (help, an unknown or negated flag, a repeated single-value flag, a missing or dash-led
 * separate value, a bad choice, a missing demanded flag) returns undefined and yargs parses it,
 * errors included.
 */
export function parseFast(flags: Record<string, Options>, argv: readonly string[], positionals = 0): Record<string, unknown> | undefined {
  const values = new Map<string, string | boolean | string[]>();
  const positional: string[] = [];
  for (let index = 0; index < argv.length; index++) {
    const arg = argv[index]!;
    if (!arg.startsWith("-")) {
      positional.push(arg);
      continue;
    }
    const equals = arg.indexOf("=");
    const flag = arg.startsWith("--") ? arg.slice(2, equals === -1 ? undefined : equals) : "";
    const spec = Object.hasOwn(flags, flag) ? flags[flag]! : undefined;
    if (!spec) return undefined;
    let value: string | boolean;
    if (spec.type === "boolean") {
      if (equals !== -1) return undefined;
      value = true;
    } else if (equals !== -1) {
      value = arg.slice(equals + 1);
    } else {
      const next = argv[index + 1];
      if (next === undefined || next.startsWith("-")) return undefined;
      value = next;
      index++;
    }
    const earlier = values.get(flag);
    // yargs turns a repeated single-value flag into an array; leave that case to yargs.
    if (earlier !== undefined && !spec.array) return undefined;
    values.set(flag, spec.array ? [...((earlier as string[] | undefined) ?? []), String(value)] : value);
  }
  if (positional.length !== positionals) return undefined;
  const args: Record<string, unknown> = { _: positional };
  for (const [flag, spec] of Object.entries(flags)) {
    const value = values.get(flag);
    if (value === undefined) {
      if (spec.demandOption) return undefined;
      if (spec.default !== undefined) args[flag] = Array.isArray(spec.default) ? [...(spec.default as unknown[])] : spec.default;
      continue;
    }
    if (spec.type === "number") {
      if (typeof value !== "string" || !/^(0|[1-9][0-9]{0,8})$/.test(value)) return undefined;
      args[flag] = Number(value);
    } else if (spec.choices && !(spec.choices as readonly unknown[]).includes(value)) {
      return undefined;
    } else {
      args[flag] = value;
    }
  }
  return args;
}
