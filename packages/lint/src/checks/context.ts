// What a module check receives, and the helpers several checks share.
import { roleTables, type InputSpec, type Role } from "@captf/contract/roles";
import type { Finding } from "../findings.js";
import { configSet, expressionSet, type FileSetModel, type LoadedModule } from "../module/load.js";

export interface CheckContext {
  readonly module: LoadedModule;
  readonly role: Role;
}

export type CheckRun = (ctx: CheckContext) => Finding[];

/** The contract inputs of the context's role, by name. */
export function contractInputs(role: Role): ReadonlyMap<string, InputSpec> {
  return new Map(roleTables[role].inputs.map((spec) => [spec.name, spec]));
}

export function config(ctx: CheckContext): FileSetModel {
  return configSet(ctx.module);
}

export function expressions(ctx: CheckContext): FileSetModel {
  return expressionSet(ctx.module);
}

/** Runs `check` on the root module and on every local module it calls; nested module-wide findings name the module's directory. */
export function inEveryModule(check: (m: LoadedModule, ctx: CheckContext) => Finding[]): CheckRun {
  return (ctx) => {
    const out: Finding[] = [];
    const visit = (m: LoadedModule): void => {
      for (const f of check(m, ctx)) out.push(f.file === "" && m.rel !== "" ? { ...f, file: m.rel } : f);
      for (const n of m.nested) visit(n.module);
    };
    visit(ctx.module);
    return out;
  };
}
