import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { hostArchitecture, type RuntimeName } from "./runtimes.js";
import { copyModuleForRun, runCommand, tofuEnvironment } from "./tofu.js";
import { requireTool } from "./tools.js";

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
  const probe = spawnSync(
    process.execPath,
    [
      "-e",
      `fetch(${JSON.stringify(url)}, { signal: AbortSignal.timeout(5000) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))`,
    ],
    { stdio: "ignore", timeout: 10_000 },
  );
  return probe.status === 0;
}

/**
 * Where `providers` (namespace/type, e.g. hashicorp/google) can be installed from by every one of
 * `runtimes`: the mirror named by CAPTF_PROVIDER_MIRROR (else the default mirror, when it exists)
 * when it holds every one under each runtime's host, else the registries when they answer.
 */
export function findProviders(
  providers: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  runtimes: readonly RuntimeName[] = ["tofu"],
): ProviderSource | { kind: "none"; reason: string } {
  const hosts = [...new Set(runtimes.map((runtime) => runtimeProviderHosts[runtime]))];
  const wanted = hosts.flatMap((host) => providers.map((provider) => ({ host, provider })));
  const named = (found: typeof wanted) => found.map(({ host, provider }) => `${host}/${provider}`).join(", ");
  const variable = env[providerMirrorVariable];
  const mirror = variable || (existsSync(defaultProviderMirror(env)) ? defaultProviderMirror(env) : undefined);
  if (mirror) {
    // A runtime's init reads only its own host's directory: the other host's copy does not serve it.
    const missing = wanted.filter(({ host, provider }) => !existsSync(join(mirror, host, provider)));
    if (missing.length === 0) return { kind: "mirror", dir: mirror };
    return {
      kind: "none",
      reason: `${variable ? `${providerMirrorVariable}=${mirror}` : `the provider mirror ${mirror}`} lacks ${named(missing)}`,
    };
  }
  const unserved = wanted.filter(({ host, provider }) => !registryServes(host, provider));
  if (unserved.length === 0) return { kind: "registry" };
  return {
    kind: "none",
    reason: `no provider mirror (${providerMirrorVariable}) and the registry cannot be reached or does not serve ${named(unserved)}`,
  };
}

/** The CLI configuration that installs from the source: the mirror only, or the registry as usual. */
export function providerCliConfig(source: ProviderSource): string {
  return source.kind === "mirror"
    ? `provider_installation {\n  filesystem_mirror {\n    path = ${JSON.stringify(source.dir)}\n  }\n}\n`
    : "";
}

/**
 * Fills `target` with the providers `moduleDir` requires, as an unpacked mirror for this machine's
 * platform (`<host>/<namespace>/<type>/<version>/linux_<arch>/`), installed by `runtime init` from
 * `source`; a module that requires none leaves `target` absent.
 */
export async function mirrorModuleProviders(moduleDir: string, runtime: string, source: ProviderSource, target: string): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "captf-providers-"));
  try {
    const copy = join(dir, "module");
    copyModuleForRun(moduleDir, copy);
    writeFileSync(join(dir, "cli.tfrc"), providerCliConfig(source));
    // `providers mirror` always downloads from the origin registry; init honours the CLI configuration.
    const run = await runCommand(runtime, ["init", "-backend=false", "-input=false", "-no-color"], {
      cwd: copy,
      env: tofuEnvironment(join(dir, "cli.tfrc")),
    });
    if (run.code !== 0) throw new Error(`${runtime} init exited ${run.code}: ${run.stderr}`);
    // init's cache has the unpacked mirror layout (plus OpenTofu's install locks); its packages may be links into the source mirror.
    if (existsSync(join(copy, ".terraform", "providers")))
      cpSync(join(copy, ".terraform", "providers"), target, {
        recursive: true,
        dereference: true,
        filter: (path) => !path.endsWith(".lock"),
      });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The providers one platform's module image carries at /captf/providers. */
export interface PlatformProviders {
  /** The mirror to ship (packages copied, links resolved), absent when the platform gets none. */
  dir?: string;
  /** Each package in it, `<host>/<namespace>/<type> <version>`. */
  packages: string[];
  /** Why the platform gets none of the providers the module requires. */
  missing?: string;
}

/** The `[host, namespace, type, version]` of each package of an unpacked mirror. */
function unpackedPackages(mirror: string): string[][] {
  const below = (path: string[]) =>
    readdirSync(join(mirror, ...path), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => [...path, entry.name]);
  return below([]).flatMap(below).flatMap(below).flatMap(below).sort();
}

/**
 * The providers `moduleDir` requires, per platform of `architectures`, from the filesystem mirror
 * `mirror` (none when undefined): `runtime init` on this machine picks them (the required_providers,
 * their versions) and installs this platform's; another platform gets the same packages from the
 * mirror, unpacked (`<version>/linux_<arch>/`) or packed (`..._linux_<arch>.zip`), when it has all of them.
 */
export async function platformProviderMirrors(
  moduleDir: string,
  runtime: RuntimeName,
  mirror: string | undefined,
  architectures: readonly string[],
  target: string,
): Promise<Record<string, PlatformProviders>> {
  const everywhere = (providers: PlatformProviders) => Object.fromEntries(architectures.map((arch) => [arch, providers]));
  const host = join(target, hostArchitecture);
  const empty = mkdtempSync(join(tmpdir(), "captf-no-mirror-"));
  try {
    // Without a mirror, init from an empty one still tells whether the module requires any provider.
    await mirrorModuleProviders(moduleDir, requireTool(runtime), { kind: "mirror", dir: mirror ?? empty }, host);
  } catch (error) {
    const message = (error as Error).message;
    if (!/Failed to (query available provider packages|install provider)/.test(message)) throw error;
    const lacking = [...message.matchAll(/provider (\S+) was not\s+found/g)].map((match) => match[1]);
    return everywhere({
      packages: [],
      missing:
        mirror === undefined
          ? `${providerMirrorVariable} is unset`
          : `${providerMirrorVariable}=${mirror} does not serve ` +
            `${runtime} init${lacking.length > 0 ? `: it lacks ${lacking.join(", ")}` : ""}`,
    });
  } finally {
    rmSync(empty, { recursive: true, force: true });
  }
  if (!existsSync(host)) return everywhere({ packages: [] });
  const installed = unpackedPackages(host);
  const packages = installed.map(([registry, namespace, type, version]) => `${registry}/${namespace}/${type} ${version}`);
  return Object.fromEntries(
    architectures.map((arch): [string, PlatformProviders] => {
      if (arch === hostArchitecture) return [arch, { dir: host, packages }];
      const found = installed.map(([registry, namespace, type, version]) => {
        const unpacked = [registry!, namespace!, type!, version!, `linux_${arch}`].join("/");
        const packed = [registry!, namespace!, type!, `terraform-provider-${type}_${version}_linux_${arch}.zip`].join("/");
        return [unpacked, packed].find((path) => existsSync(join(mirror!, path)));
      });
      const lacking = packages.filter((_, index) => found[index] === undefined);
      if (lacking.length > 0)
        return [
          arch,
          { packages: [], missing: `${providerMirrorVariable}=${mirror} has no linux_${arch} package of ${lacking.join(", ")}` },
        ];
      for (const path of found) cpSync(join(mirror!, path!), join(target, arch, path!), { recursive: true, dereference: true });
      return [arch, { dir: join(target, arch), packages }];
    }),
  );
}
