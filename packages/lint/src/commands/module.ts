// `tfcapi-lint module <dir>`: lint a module directory against the role's contract.
import { resolve } from "node:path";
import type { Role } from "@captf/contract/roles";
import { lintModule } from "../lint-module.js";
import { emitReport, type OutputFormat } from "./emit.js";
import type { CliIo } from "./io.js";

export interface ModuleCommandOptions {
  readonly dir: string;
  readonly role: Role;
  readonly contract: string;
  readonly strict: boolean;
  readonly allowWarning: readonly string[];
  readonly format: OutputFormat;
}

export async function runModuleCommand(io: CliIo, o: ModuleCommandOptions): Promise<number> {
  const absolute = resolve(io.cwd ?? process.cwd(), o.dir);
  const result = await lintModule(absolute, o.role);
  const head = { target: { module: o.dir }, contract: o.contract, role: o.role, fileSet: result.ok ? result.fileSet : ("" as const) };
  return emitReport(
    io,
    head,
    result.findings,
    { format: o.format, strict: o.strict, allowWarning: o.allowWarning, moduleRoot: absolute },
    !result.ok,
  );
}
