// Loading a module directory: its Terraform and OpenTofu file sets, parsed once each, and every
// local module it calls (./ or ../), recursively, inside the root directory.
import { lstatSync, readdirSync, readFileSync, realpathSync } from "node:fs";
import { isAbsolute, join, relative, resolve, sep } from "node:path";
import { checkIds } from "../checks/ids.js";
import { at, type Finding } from "../findings.js";
import { parseHclFile } from "./hcl-parser.js";
import { parseJsonFile } from "./json-parse.js";
import { bodySignature, collapseWhitespace, collectReferences, literalString } from "./expressions.js";
import { ModuleParseError, type Attribute, type Block, type Expr, type ParsedFile, type Position, type Traversal } from "./model.js";

const moduleSuffixes = [".tf", ".tf.json", ".tofu", ".tofu.json"];

/** Whether `name` is a module file: Terraform's and OpenTofu's suffixes, minus hidden, backup and lock files. */
export function isModuleFile(name: string): boolean {
  if (name.startsWith(".") || name.endsWith("~") || (name.startsWith("#") && name.endsWith("#"))) return false;
  return moduleSuffixes.some((suffix) => name.endsWith(suffix));
}

/** What each runtime loads: Terraform `.tf`/`.tf.json`; OpenTofu those plus `.tofu*`, where `x.tofu` hides `x.tf`. */
export function fileSets(files: readonly string[]): { tf: string[]; tofu: string[] } {
  const has = new Set(files);
  const tf: string[] = [];
  const tofu: string[] = [];
  for (const f of files) {
    if (f.endsWith(".tofu") || f.endsWith(".tofu.json")) tofu.push(f);
    else if (f.endsWith(".tf.json")) {
      tf.push(f);
      if (!has.has(f.slice(0, -".tf.json".length) + ".tofu.json")) tofu.push(f);
    } else if (f.endsWith(".tf")) {
      tf.push(f);
      if (!has.has(f.slice(0, -".tf".length) + ".tofu")) tofu.push(f);
    }
  }
  return { tf: tf.sort(), tofu: tofu.sort() };
}

export interface VariableDecl {
  readonly name: string;
  readonly at: Position;
  readonly type: Expr | undefined;
  readonly default: Expr | undefined;
  /** `sensitive = true` as a literal. */
  readonly sensitive: boolean;
  readonly description: string | undefined;
}

export interface OutputDecl {
  readonly name: string;
  readonly at: Position;
  readonly value: Expr | undefined;
}

export interface ModuleCall {
  readonly name: string;
  readonly at: Position;
  readonly source: string | undefined;
  readonly args: readonly Attribute[];
}

/** A declaration module/tofu-shadow compares: where it is and a whitespace-insensitive signature (computed when read). */
export interface Declaration {
  readonly at: Position;
  readonly signature: string;
}

/** What the checks read from one file set of one module. */
export interface FileSetModel {
  readonly files: readonly ParsedFile[];
  readonly variables: ReadonlyMap<string, VariableDecl>;
  readonly outputs: ReadonlyMap<string, OutputDecl>;
  readonly requiredVersion: Attribute | undefined;
  readonly requiredProviders: ReadonlyMap<string, { source: string | undefined; at: Position }>;
  readonly backends: readonly Block[];
  readonly clouds: readonly Block[];
  readonly providers: readonly Block[];
  readonly resources: readonly Block[];
  readonly dataSources: readonly Block[];
  readonly moduleCalls: ReadonlyMap<string, ModuleCall>;
  /** Every reference outside `module` blocks: forwarding a value into a module call is not using it. */
  readonly references: readonly Traversal[];
  readonly declarations: ReadonlyMap<string, Declaration>;
}

export interface LoadedModule {
  /** Absolute directory. */
  readonly dir: string;
  /** Relative to the root module, with `/` separators; `""` for the root. */
  readonly rel: string;
  /** Module files, relative to `dir`, sorted. */
  readonly files: readonly string[];
  readonly tf: FileSetModel;
  /** Present when the module ships a `.tofu` or `.tofu.json` file. */
  readonly tofu: FileSetModel | undefined;
  readonly hasTf: boolean;
  /** module/source-escape findings found while loading. */
  readonly escapes: readonly Finding[];
  readonly nested: readonly NestedModule[];
}

export interface NestedModule {
  /** The module call's label. */
  readonly name: string;
  readonly module: LoadedModule;
}

/** The set the contract checks read: Terraform's, or OpenTofu's for a `.tofu`-only module. */
export function configSet(m: LoadedModule): FileSetModel {
  return m.hasTf || !m.tofu ? m.tf : m.tofu;
}

/** The set the expression checks read: OpenTofu's when the module ships `.tofu` files, else Terraform's. */
export function expressionSet(m: LoadedModule): FileSetModel {
  return m.tofu ?? m.tf;
}

/** Which runtime's files the expression checks read, as the output names it. */
export function fileSetName(m: LoadedModule): "terraform" | "opentofu" {
  return m.tofu ? "opentofu" : "terraform";
}

/** Every file of the tree, with its path relative to the root: for suppressions. */
export function allParsedFiles(m: LoadedModule): ParsedFile[] {
  const byName = new Map<string, ParsedFile>();
  const visit = (mod: LoadedModule): void => {
    for (const f of [...mod.tf.files, ...(mod.tofu?.files ?? [])]) byName.set(f.name, f);
    for (const n of mod.nested) visit(n.module);
  };
  visit(m);
  return [...byName.values()];
}

/**
 * Loads `dir` and its local module tree. A file that does not parse anywhere in the tree throws
 * {@link ModuleParseError} with the file's path relative to the root.
 */
export async function loadModule(dir: string): Promise<LoadedModule> {
  const root = resolve(dir);
  const rootReal = tryRealpath(root);
  if (rootReal === undefined)
    throw new ModuleParseError({ file: "", line: 0, column: 0, message: `module directory ${dir} does not exist` });
  if (!lstatSync(rootReal).isDirectory())
    throw new ModuleParseError({ file: "", line: 0, column: 0, message: `${dir} is not a directory` });
  return loadTree(root, rootReal, root, new Set());
}

/** Synchronous on purpose: a CLI reading a few files gains nothing from the thread pool but latency. */
function tryRealpath(path: string): string | undefined {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}

function within(dir: string, path: string): boolean {
  const rel = relative(dir, path);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

function toSlash(path: string): string {
  return path.split(sep).join("/");
}

async function loadTree(root: string, rootReal: string, dir: string, visiting: Set<string>): Promise<LoadedModule> {
  const rel = toSlash(relative(root, dir));
  const prefix = rel === "" ? "" : `${rel}/`;
  const escapes: Finding[] = [];
  const files: string[] = [];
  const sources = new Map<string, string>();
  for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
    if (entry.isDirectory() || !isModuleFile(entry.name)) continue;
    const path = join(dir, entry.name);
    const display = prefix + entry.name;
    const fileAt = { file: display, line: 0, column: 0 };
    if (entry.isSymbolicLink()) {
      const target = tryRealpath(path);
      if (target === undefined) {
        escapes.push(
          at(
            fileAt,
            checkIds.moduleSourceEscape,
            "error",
            `module file ${display} is a symlink that cannot be resolved`,
            "point the link at a file inside the module directory, or copy the file in",
          ),
        );
        continue;
      }
      if (lstatSync(target).isDirectory()) continue;
      if (!within(rootReal, target)) {
        escapes.push(
          at(
            fileAt,
            checkIds.moduleSourceEscape,
            "error",
            `module file ${display} is a symlink to a file outside the module directory; it would not ship with the module`,
            "copy the file into the module directory instead of linking it",
          ),
        );
      }
    }
    files.push(entry.name);
    sources.set(entry.name, readFileSync(path, "utf8"));
  }
  const sets = fileSets(files);
  const parsed = new Map<string, ParsedFile>();
  const parse = (name: string): ParsedFile => {
    let file = parsed.get(name);
    if (!file) {
      const text = sources.get(name)!;
      file = name.endsWith(".json") ? parseJsonFile(prefix + name, text) : parseHclFile(prefix + name, text);
      validateBlocks(file);
      parsed.set(name, file);
    }
    return file;
  };
  const tf = buildSet(sets.tf.map(parse));
  const hasTofu = files.some((f) => f.endsWith(".tofu") || f.endsWith(".tofu.json"));
  const tofu = hasTofu ? buildSet(sets.tofu.map(parse)) : undefined;
  const hasTf = sets.tf.length > 0;
  const module: Omit<LoadedModule, "nested"> & { nested: NestedModule[] } = { dir, rel, files, tf, tofu, hasTf, escapes, nested: [] };

  const key = tryRealpath(dir) ?? dir;
  visiting.add(key);
  try {
    const config = hasTf || !tofu ? tf : tofu;
    for (const name of [...config.moduleCalls.keys()].sort()) {
      const call = config.moduleCalls.get(name)!;
      const source = call.source;
      if (source === undefined || !isLocalSource(source)) continue;
      const escape = (what: string): void => {
        escapes.push(
          at(
            call.at,
            checkIds.moduleSourceEscape,
            "error",
            `module ${name} source ${JSON.stringify(source)} ${what}`,
            "keep local modules inside the module directory, or use a registry or git source",
          ),
        );
      };
      const childAbs = resolve(dir, source);
      if (!within(root, childAbs)) {
        escape("escapes the module directory; it is never linted and would not ship with the module");
        continue;
      }
      const childReal = tryRealpath(childAbs);
      if (childReal === undefined) {
        escape("cannot be resolved: the directory does not exist");
        continue;
      }
      if (!within(rootReal, childReal)) {
        escape("is a symlink to a directory outside the module directory; it is never linted and would not ship with the module");
        continue;
      }
      if (!lstatSync(childReal).isDirectory()) {
        escape("is not a directory");
        continue;
      }
      if (visiting.has(childReal)) continue; // a cycle: that module is being linted already
      module.nested.push({ name, module: await loadTree(root, rootReal, childAbs, visiting) });
    }
  } finally {
    visiting.delete(key);
  }
  return module;
}

/** Terraform's rule for a local module source. */
export function isLocalSource(source: string): boolean {
  return source === "." || source === ".." || source.startsWith("./") || source.startsWith("../");
}

const labelCounts: Record<string, number> = {
  variable: 1,
  output: 1,
  provider: 1,
  module: 1,
  resource: 2,
  data: 2,
  terraform: 0,
  locals: 0,
};

/** Terraform's own decode errors for the blocks the checks read: wrong label counts. */
function validateBlocks(file: ParsedFile): void {
  for (const block of file.body.blocks) {
    const want = labelCounts[block.type];
    if (want !== undefined && block.labels.length !== want) {
      const what = want === 0 ? "no labels" : want === 1 ? "exactly one label" : `exactly ${want} labels`;
      throw new ModuleParseError({ ...block.at, message: `a ${block.type} block takes ${what}, this one has ${block.labels.length}` });
    }
  }
}

function attr(block: Block, name: string): Attribute | undefined {
  return block.body.attributes.find((a) => a.name === name);
}

/** Records a declaration under its key; `unique` ones declared twice are a load error. */
type Declare = (key: string, at: Position, signature: () => string, unique: boolean) => void;

function declarer(declarations: Map<string, Declaration>): Declare {
  return (key, at, signature, unique) => {
    // Only module/tofu-shadow reads a signature, and only for a module with .tofu files: computed when read.
    const d: Declaration = {
      at,
      get signature() {
        return signature();
      },
    };
    const previous = declarations.get(key);
    if (previous && unique) {
      throw new ModuleParseError({ ...d.at, message: `${key} is declared twice (first at ${previous.at.file}:${previous.at.line})` });
    }
    declarations.set(key, d);
  };
}

/** A `terraform` block's settings: backend, cloud and required_providers blocks; returns its last required_version. */
function collectTerraformSettings(
  block: Block,
  into: { requiredProviders: Map<string, { source: string | undefined; at: Position }>; backends: Block[]; clouds: Block[] },
  declare: Declare,
): Attribute | undefined {
  let requiredVersion: Attribute | undefined;
  for (const a of block.body.attributes) {
    if (a.name === "required_version") {
      requiredVersion = a;
      declare("required_version", a.at, () => collapseWhitespace(a.expr.text), false);
    }
  }
  for (const nested of block.body.blocks) {
    if (nested.type === "backend") {
      into.backends.push(nested);
      declare(`backend.${nested.labels[0] ?? ""}`, nested.at, () => bodySignature(nested.body), false);
    } else if (nested.type === "cloud") {
      into.clouds.push(nested);
      declare("cloud", nested.at, () => bodySignature(nested.body), false);
    } else if (nested.type === "required_providers") {
      for (const a of nested.body.attributes) {
        const source =
          a.expr.kind === "object" ? literalString(a.expr.items.find((i) => i.keyName === "source")?.value) : literalString(a.expr);
        into.requiredProviders.set(a.name, { source, at: a.at });
        declare(`required_providers.${a.name}`, a.at, () => collapseWhitespace(a.expr.text), false);
      }
    }
  }
  return requiredVersion;
}

/** Builds the model of one file set; duplicate declarations are Terraform load errors. */
export function buildSet(files: readonly ParsedFile[]): FileSetModel {
  const variables = new Map<string, VariableDecl>();
  const outputs = new Map<string, OutputDecl>();
  const requiredProviders = new Map<string, { source: string | undefined; at: Position }>();
  const moduleCalls = new Map<string, ModuleCall>();
  const declarations = new Map<string, Declaration>();
  const backends: Block[] = [];
  const clouds: Block[] = [];
  const providers: Block[] = [];
  const resources: Block[] = [];
  const dataSources: Block[] = [];
  const references: Traversal[] = [];
  let requiredVersion: Attribute | undefined;

  const declare = declarer(declarations);

  for (const file of files) {
    for (const block of file.body.blocks) {
      if (block.type !== "module") {
        for (const a of allAttrs(block)) collectReferences(a.expr, references);
      }
      const signature = (): string => bodySignature(block.body);
      switch (block.type) {
        case "variable": {
          const name = block.labels[0]!;
          declare(`variable.${name}`, block.at, signature, true);
          const sensitive = attr(block, "sensitive")?.expr;
          variables.set(name, {
            name,
            at: block.at,
            type: attr(block, "type")?.expr,
            default: attr(block, "default")?.expr,
            sensitive: sensitive?.kind === "literal" && sensitive.value === true,
            description: literalString(attr(block, "description")?.expr),
          });
          break;
        }
        case "output": {
          const name = block.labels[0]!;
          declare(`output.${name}`, block.at, signature, true);
          outputs.set(name, { name, at: block.at, value: attr(block, "value")?.expr });
          break;
        }
        case "provider": {
          const alias = attr(block, "alias");
          declare(`provider.${block.labels[0]}${alias ? `.${collapseWhitespace(alias.expr.text)}` : ""}`, block.at, signature, true);
          providers.push(block);
          break;
        }
        case "resource":
          declare(`resource.${block.labels[0]}.${block.labels[1]}`, block.at, signature, true);
          resources.push(block);
          break;
        case "data":
          declare(`data.${block.labels[0]}.${block.labels[1]}`, block.at, signature, true);
          dataSources.push(block);
          break;
        case "locals":
          for (const a of block.body.attributes) declare(`local.${a.name}`, a.at, () => collapseWhitespace(a.expr.text), true);
          break;
        case "module": {
          const name = block.labels[0]!;
          declare(`module.${name}`, block.at, signature, true);
          moduleCalls.set(name, { name, at: block.at, source: literalString(attr(block, "source")?.expr), args: block.body.attributes });
          break;
        }
        case "terraform":
          requiredVersion = collectTerraformSettings(block, { requiredProviders, backends, clouds }, declare) ?? requiredVersion;
          break;
      }
    }
  }
  return {
    files,
    variables,
    outputs,
    requiredVersion,
    requiredProviders,
    backends,
    clouds,
    providers,
    resources,
    dataSources,
    moduleCalls,
    references,
    declarations,
  };
}

function allAttrs(block: Block): Attribute[] {
  const out: Attribute[] = [...block.body.attributes];
  for (const nested of block.body.blocks) out.push(...allAttrs(nested));
  return out;
}
