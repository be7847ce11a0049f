import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import type { RuntimeName } from "./runtimes.js";
import { copyModuleForRun, runCommand, tofuEnvironment } from "./tofu.js";

/** A filesystem provider mirror (`tofu providers mirror <dir>`) the provider suites install from. */
export const providerMirrorVariable = "CAPTF_PROVIDER_MIRROR";
/** Where the provider suites look for a mirror when CAPTF_PROVIDER_MIRROR is unset, beside the tools cache. */
export function defaultProviderMirror(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.XDG_CACHE_HOME || join(homedir(), ".cache"), "captf", "provider-mirror");
}
/** The registry the provider suites install from when no mirror is named (OpenTofu's default). */
export const providerRegistryHost = "registry.opentofu.org";
/** The host each runtime resolves `namespace/type` to: the mirror directory its `init` reads, and its registry. */
export const runtimeProviderHosts: Record<RuntimeName, string> = { tofu: providerRegistryHost, terraform: "registry.terraform.io" };

/** Where a suite's providers come from: a mirror directory, or the registry (direct installation). */
export type ProviderSource = { kind: "mirror"; dir: string } | { kind: "registry" };

/** Whether `host` answers for `provider` (namespace/type) within a few seconds. */
function registryServes(host: string, provider: string): boolean {
  const url = `https://${host}/v1/providers/${provider}/versions`;
  const probe = spawnSync(process.execPath, ["-e", `fetch(${JSON.stringify(url)}, { signal: AbortSignal.timeout(5000) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))`], { stdio: "ignore", timeout: 10_000 });
  return probe.status === 0;
}

/**
 * Where `providers` (namespace/type, e.g. hashicorp/google) can be installed from by every one of
 * `runtimes`: the mirror named by CAPTF_PROVIDER_MIRROR (else the default mirror, when it exists)
 * when it holds every one under each runtime's host, else the registries when they answer.
 */
export function findProviders(providers: readonly string[], env: NodeJS.ProcessEnv = process.env, runtimes: readonly RuntimeName[] = ["tofu"]): ProviderSource | { kind: "none"; reason: string } {
  const hosts = [...new Set(runtimes.map((runtime) => runtimeProviderHosts[runtime]))];
  const wanted = hosts.flatMap((host) => providers.map((provider) => ({ host, provider })));
  const named = (found: typeof wanted) => found.map(({ host, provider }) => `${host}/${provider}`).join(", ");
  const variable = env[providerMirrorVariable];
  const mirror = variable || (existsSync(defaultProviderMirror(env)) ? defaultProviderMirror(env) : undefined);
  if (mirror) {
    // A runtime's init reads only its own host's directory: the other host's copy does not serve it.
    const missing = wanted.filter(({ host, provider }) => !existsSync(join(mirror, host, provider)));
    if (missing.length === 0) return { kind: "mirror", dir: mirror };
    return { kind: "none", reason: `${variable ? `${providerMirrorVariable}=${mirror}` : `the provider mirror ${mirror}`} lacks ${named(missing)}` };
  }
  const unserved = wanted.filter(({ host, provider }) => !registryServes(host, provider));
  if (unserved.length === 0) return { kind: "registry" };
  return { kind: "none", reason: `no provider mirror (${providerMirrorVariable}) and the registry cannot be reached or does not serve ${named(unserved)}` };
}

/** The CLI configuration that installs from the source: the mirror only, or the registry as usual. */
export function providerCliConfig(source: ProviderSource): string {
  return source.kind === "mirror" ? `provider_installation {\n  filesystem_mirror {\n    path = ${JSON.stringify(source.dir)}\n  }\n}\n` : "";
}

/**
 * Fills `target` with the providers `moduleDir` requires, as an unpacked mirror for linux_amd64
 * (`<host>/<namespace>/<type>/<version>/linux_amd64/`), installed by `runtime init` from `source`.
 */
export async function mirrorModuleProviders(moduleDir: string, runtime: string, source: ProviderSource, target: string): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "captf-providers-"));
  try {
    const copy = join(dir, "module");
    copyModuleForRun(moduleDir, copy);
    writeFileSync(join(dir, "cli.tfrc"), providerCliConfig(source));
    // `providers mirror` always downloads from the origin registry; init honours the CLI configuration.
    const run = await runCommand(runtime, ["init", "-backend=false", "-input=false", "-no-color"], { cwd: copy, env: tofuEnvironment(join(dir, "cli.tfrc")) });
    if (run.code !== 0) throw new Error(`${runtime} init exited ${run.code}: ${run.stderr}`);
    // init's cache has the unpacked mirror layout (plus OpenTofu's install locks); its packages may be links into the source mirror.
    cpSync(join(copy, ".terraform", "providers"), target, { recursive: true, dereference: true, filter: (path) => !path.endsWith(".lock") });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
