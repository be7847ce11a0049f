// node:fs's synchronous calls, not node:fs/promises: these few local files do not need it, and it loads readline and more at start.
import { accessSync, chmodSync, constants as fsConstants, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { delimiter, join } from "node:path";
import { restoreStateFile } from "./steps.js";
import { stepUser } from "./tracing.js";

/** The image does not follow the image contract; the message names what is missing and where. */
export class ImageLayoutError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ImageLayoutError";
  }
}

const moduleFile = /\.(tf|tofu)(\.json)?$/;

async function isExecutableFile(path: string): Promise<boolean> {
  try {
    const info = statSync(path);
    if (!info.isFile()) return false;
    accessSync(path, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Checks the image layout before anything runs: the module directory holds a top-level
 * configuration file, and the runtime command names an executable file (a bare name is looked
 * up on PATH).
 */
export async function checkImageLayout(options: { moduleDir: string; bin: readonly string[]; path: string | undefined }): Promise<void> {
  let names: string[];
  try {
    names = readdirSync(options.moduleDir);
  } catch {
    throw new ImageLayoutError(
      `the image has no module directory at ${options.moduleDir}: copy the module's .tf files there (image contract, "Fixed paths")`,
    );
  }
  if (!names.some((name) => moduleFile.test(name))) {
    throw new ImageLayoutError(
      `the module directory ${options.moduleDir} has no top-level .tf, .tf.json, .tofu or .tofu.json file: copy the module's ` +
        `root files there, not a folder holding them`,
    );
  }
  const command = options.bin[0];
  if (!command)
    throw new ImageLayoutError("the runtime command is empty: pass --bin with the path of tofu or terraform (default /captf/runtime)");
  if (command.includes("/")) {
    if (!(await isExecutableFile(command))) {
      throw new ImageLayoutError(
        `the runtime ${command} is missing, not a regular file or not executable: ship tofu or terraform there, executable by ` +
          `the image's USER`,
      );
    }
    return;
  }
  for (const dir of (options.path ?? "").split(delimiter)) {
    if (dir && (await isExecutableFile(join(dir, command)))) return;
  }
  throw new ImageLayoutError(`the runtime command ${command} is not on PATH: pass --bin with its absolute path`);
}

export type Environment = Record<string, string>;

/** TF_* and KUBE_* names the Job sets itself; every other one would change what the runner runs. */
const keptRuntimeNames = new Set(["TF_IN_AUTOMATION", "TF_INPUT", "KUBE_NAMESPACE"]);

/**
 * The environment of every step: HOME and every TF_* and KUBE_* entry of `base` are dropped
 * (TF_VAR_* would override the rendered inputs, TF_CLI_ARGS* rewrite the steps, TF_LOG log
 * provider traffic, KUBE_* redirect the backend), except the three the Job sets. TF_DATA_DIR and
 * HOME are forced under the work directory, TMPDIR defaults there, and TF_CLI_CONFIG_FILE is set
 * only for a provider mirror. With `stateEncryption`, TF_ENCRYPTION is kept too. With OTEL_TRACES_EXPORTER, USER is set
 * when the Pod has none (see stepUser).
 */
export function stepEnvironment(
  base: Readonly<Record<string, string | undefined>>,
  workdir: string,
  cliConfigFile?: string,
  stateEncryption = false,
): { env: Environment; dropped: string[] } {
  const env: Environment = {};
  const dropped: string[] = [];
  for (const [name, value] of Object.entries(base)) {
    if (value === undefined) continue;
    if (name === "HOME") continue;
    // TF_ENCRYPTION only for an object that encrypts (--state-encryption): no credentials Secret turns encryption on unseen.
    const kept = keptRuntimeNames.has(name) || (stateEncryption && name === "TF_ENCRYPTION");
    if ((name.startsWith("TF_") || name.startsWith("KUBE_")) && !kept) {
      dropped.push(name);
      continue;
    }
    env[name] = value;
  }
  env.TF_DATA_DIR = join(workdir, ".terraform");
  env.HOME = workdir;
  env.TMPDIR ??= join(workdir, "tmp");
  if (cliConfigFile) env.TF_CLI_CONFIG_FILE = cliConfigFile;
  // OpenTofu traces whenever OTEL_TRACES_EXPORTER is set, in every command the runner starts (version, state push), not only steps.
  if (env.OTEL_TRACES_EXPORTER) Object.assign(env, stepUser(env));
  return { env, dropped: dropped.sort() };
}

export interface PreparedWorkspace {
  /** The working directory of every step. */
  rootDir: string;
  env: Environment;
  /** TF_* and KUBE_* names left out of the step environment (names only, never values). */
  dropped: string[];
  providersMirror: boolean;
}

/** A regular file (symlinks followed); false for anything that cannot be read. */
function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/**
 * Copies the generated root from the config directory (a Secret mount) into `<workdir>/root`:
 * top-level regular files only, symlinks followed, dot-files (the kubelet's `..data`) skipped.
 * Writes the provider-mirror CLI config when the image has a mirror, and builds the step environment.
 */
export async function prepareWorkspace(options: {
  configDir: string;
  workdir: string;
  providersDir: string;
  baseEnv: Readonly<Record<string, string | undefined>>;
  stateEncryption?: boolean;
}): Promise<PreparedWorkspace> {
  const rootDir = join(options.workdir, "root");
  mkdirSync(rootDir, { recursive: true, mode: 0o700 });
  chmodSync(rootDir, 0o700);
  let names: string[];
  try {
    names = readdirSync(options.configDir);
  } catch (error) {
    throw new Error(
      `cannot read the config directory ${options.configDir} (${(error as Error).message}): it must hold the generated root ` +
        `(main.tf.json, terraform.tfvars.json)`,
    );
  }
  for (const name of names.sort()) {
    if (name.startsWith(".")) continue;
    const source = join(options.configDir, name);
    if (!isFile(source)) continue;
    const target = join(rootDir, name);
    writeFileSync(target, readFileSync(source), { mode: 0o600 });
    chmodSync(target, 0o600);
  }
  if (options.baseEnv.TMPDIR === undefined) mkdirSync(join(options.workdir, "tmp"), { recursive: true, mode: 0o700 });
  let cliConfigFile: string | undefined;
  const providersMirror = await isDirectory(options.providersDir);
  if (providersMirror) {
    // Loaded only here: most images without a mirror never pay for it.
    const { renderCliConfig } = await import("@captf/render/cli-config");
    cliConfigFile = join(options.workdir, "cli.tfrc");
    writeFileSync(cliConfigFile, renderCliConfig({ providersDir: options.providersDir }), { mode: 0o600 });
  }
  const { env, dropped } = stepEnvironment(options.baseEnv, options.workdir, cliConfigFile, options.stateEncryption);
  return { rootDir, env, dropped, providersMirror };
}

/** The controller's state reader limits, so the runner never restores what the manager cannot read back. */
export const maxRestoreChunks = 32;
export const maxRestoreBytes = 64 * 1024 * 1024;

/**
 * Joins the gzip chunks `<configDir>/restore/0` … `<n-1>` of a state backup (the backend Secret's
 * payloads, verbatim), decompresses them and writes the state JSON to `<workdir>/restore.tfstate`.
 */
export async function assembleRestoreState(options: {
  configDir: string;
  workdir: string;
  chunks: number;
  maxBytes?: number;
}): Promise<string> {
  const { chunks } = options;
  const maxBytes = options.maxBytes ?? maxRestoreBytes;
  if (!Number.isInteger(chunks) || chunks < 1 || chunks > maxRestoreChunks) {
    throw new Error(`a restore needs --restore-chunks between 1 and ${maxRestoreChunks}, got ${chunks}`);
  }
  const parts: Buffer[] = [];
  for (let index = 0; index < chunks; index++) {
    const path = join(options.configDir, "restore", String(index));
    try {
      parts.push(readFileSync(path));
    } catch (error) {
      throw new Error(
        `backup chunk ${path} cannot be read (${(error as Error).message}): the run Secret must hold restore/0 … restore/${chunks - 1}`,
      );
    }
  }
  let state: Buffer;
  try {
    // zlib only for a restore: the other operations start without it.
    state = process.getBuiltinModule("node:zlib").gunzipSync(Buffer.concat(parts), { maxOutputLength: maxBytes });
  } catch (error) {
    const tooLarge = error instanceof RangeError || /larger than|maxOutputLength/i.test((error as Error).message);
    throw new Error(
      tooLarge ? `the backup decompresses to more than ${maxBytes} bytes` : `the backup is not gzip data (${(error as Error).message})`,
    );
  }
  try {
    JSON.parse(state.toString("utf8"));
  } catch {
    throw new Error("the decompressed backup is not a JSON state document");
  }
  const target = join(options.workdir, restoreStateFile);
  writeFileSync(target, state, { mode: 0o600 });
  return target;
}

/** `addr` without its `module.<name>[<key>].` prefixes; a key may hold quoted dots and brackets. */
function resourcePart(address: string): string {
  let rest = address;
  while (rest.startsWith("module.")) {
    let index = "module.".length;
    while (index < rest.length && rest[index] !== "." && rest[index] !== "[") index++;
    if (rest[index] === "[") {
      let quoted = false;
      for (index++; index < rest.length; index++) {
        const char = rest[index];
        if (quoted && char === "\\") index++;
        else if (char === '"') quoted = !quoted;
        else if (char === "]" && !quoted) break;
      }
      index++;
    }
    if (rest[index] !== ".") return rest;
    rest = rest.slice(index + 1);
  }
  return rest;
}

/** Managed resource instances in `state list` output (one address a line; data sources left out). */
export function countManagedAddresses(stateList: string): number {
  return stateList
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "" && !resourcePart(line).startsWith("data.")).length;
}
