// The common CI invocation, `module <dir> --role <r> [flags]`, read without loading yargs: yargs
// alone costs about a third of a cold run. Anything unusual (help, a bad or unknown flag, a missing
// value) returns undefined, and the full yargs parser handles it with its usage errors.
import { contractVersion, isRole, type Role } from "@captf/contract/roles";
import type { OutputFormat } from "./emit.js";

export interface FastModuleArgs {
  readonly dir: string;
  readonly role: Role;
  readonly contract: string;
  readonly strict: boolean;
  readonly allowWarning: readonly string[];
  readonly format: OutputFormat;
}

const formats: readonly string[] = ["text", "json", "sarif"];

export function fastModuleArgs(argv: readonly string[]): FastModuleArgs | undefined {
  if (argv[0] !== "module") return undefined;
  const positionals: string[] = [];
  let role: string | undefined;
  let contract = contractVersion as string;
  let strict = false;
  let json = false;
  let format = "text";
  const allow: string[] = [];
  for (let i = 1; i < argv.length; i++) {
    const token = argv[i]!;
    if (!token.startsWith("-") || token === "-") {
      positionals.push(token);
      continue;
    }
    const eq = token.indexOf("=");
    const flag = eq > 0 ? token.slice(0, eq) : token;
    const inline = eq > 0 ? token.slice(eq + 1) : undefined;
    const value = (): string | undefined => {
      if (inline !== undefined) return inline;
      const next = argv[i + 1];
      if (next === undefined || next.startsWith("-")) return undefined;
      i++;
      return next;
    };
    switch (flag) {
      case "--role":
        role = value();
        break;
      case "--contract":
        contract = value() ?? "";
        break;
      case "--format":
        format = value() ?? "";
        break;
      case "--allow-warning": {
        const v = value();
        if (v === undefined) return undefined;
        allow.push(
          ...v
            .split(",")
            .map((s) => s.trim())
            .filter(Boolean),
        );
        break;
      }
      case "--strict":
      case "--json":
        if (inline !== undefined && inline !== "true" && inline !== "false") return undefined;
        if (flag === "--strict") strict = inline !== "false";
        else json = inline !== "false";
        break;
      default:
        return undefined;
    }
  }
  if (positionals.length !== 1 || !isRole(role) || contract !== contractVersion || !formats.includes(format)) return undefined;
  return { dir: positionals[0]!, role, contract, strict, allowWarning: allow, format: json ? "json" : (format as OutputFormat) };
}
