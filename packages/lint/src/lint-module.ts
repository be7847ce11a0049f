// Linting one module directory: load, run the role's checks, apply inline suppressions.
import type { Role } from "@captf/contract/roles";
import { runModuleChecks } from "./checks/registry.js";
import { checkIds } from "./checks/ids.js";
import { at, sortFindings, type Finding } from "./findings.js";
import { allParsedFiles, fileSetName, loadModule, type LoadedModule } from "./module/load.js";
import { ModuleParseError } from "./module/model.js";
import { applySuppressions, readSuppressions } from "./module/suppressions.js";

export type FileSetName = "terraform" | "opentofu";

export type ModuleLint =
  | { readonly ok: true; readonly findings: Finding[]; readonly fileSet: FileSetName; readonly module: LoadedModule }
  /** The module does not parse: one module/parse finding at the parser's position. */
  | { readonly ok: false; readonly findings: Finding[] };

/** Lints the module in `dir` for `role`. Never throws for a module that does not parse; I/O errors propagate. */
export async function lintModule(dir: string, role: Role): Promise<ModuleLint> {
  let module: LoadedModule;
  try {
    module = await loadModule(dir);
  } catch (error) {
    if (!(error instanceof ModuleParseError)) throw error;
    const f = error.failure;
    return {
      ok: false,
      findings: [at(f, checkIds.moduleParse, "error", f.message, "fix the syntax error; terraform validate shows the same place")],
    };
  }
  const raw = runModuleChecks({ module, role });
  const { suppressions, problems } = readSuppressions(allParsedFiles(module));
  const findings = sortFindings([...applySuppressions(raw, suppressions), ...problems]);
  return { ok: true, findings, fileSet: fileSetName(module), module };
}
