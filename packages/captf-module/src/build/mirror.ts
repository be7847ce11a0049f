// The provider mirror an image ships at /captf/providers: exactly the locked providers, for one
// platform, taken from a filesystem mirror (`tofu providers mirror` writes one) and checked against
// the lock file's hashes.
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { sha256, sha256File } from "./layout.js";
import { lockFileName, type LockedProvider } from "./lockfile.js";
import type { RuntimeName } from "./runtime.js";

/** The registry each runtime resolves `namespace/type` to: the directory of a mirror its `init` reads. */
export const runtimeRegistryHosts: Record<RuntimeName, string> = { tofu: "registry.opentofu.org", terraform: "registry.terraform.io" };

/**
 * The host a provider is shipped under for `runtime`: a provider of either default registry is the
 * runtime's own (`hashicorp/google` means registry.opentofu.org to OpenTofu, registry.terraform.io to
 * Terraform), any other host stays.
 */
export function imageProviderHost(provider: LockedProvider, runtime: RuntimeName): string {
  return Object.values(runtimeRegistryHosts).includes(provider.host) ? runtimeRegistryHosts[runtime] : provider.host;
}

/** Go's dirhash Hash1 of a directory, the lock file's `h1:` of an unpacked provider package. */
export function packageHashV1(dir: string): string {
  const files = (readdirSync(dir, { recursive: true }) as string[]).filter((path) => statSync(join(dir, path)).isFile()).sort();
  const summary = files.map((path) => `${sha256File(join(dir, path))}  ${path.split("\\").join("/")}\n`).join("");
  return `h1:${Buffer.from(sha256(summary), "hex").toString("base64")}`;
}

/** One provider package of one platform, as found in a mirror and as it lands in the image. */
export interface MirroredPackage {
  address: string;
  version: string;
  /** `linux_amd64` or `linux_arm64`. */
  platform: string;
  layout: "packed" | "unpacked";
  /** The package in the mirror given: a zip, or a directory. */
  source: string;
  /** Its path under /captf/providers: always the unpacked package's directory (bench/module-init.mjs: init is faster). */
  target: string;
  /** The lock file hash it matched, absent when the lock file lists none of its kind for this platform. */
  matchedHash?: string;
}

/**
 * The locked providers' packages for linux/`arch` in `mirrorDir` (packed or unpacked, under the
 * runtime's registry host or the locked one). Throws naming every package that is missing, and any
 * packed package whose hash the lock file does not list.
 */
export function selectMirrorPackages(
  providers: readonly LockedProvider[],
  mirrorDir: string,
  runtime: RuntimeName,
  arch: string,
): MirroredPackage[] {
  const platform = `linux_${arch}`;
  const found: MirroredPackage[] = [];
  const missing: string[] = [];
  for (const provider of providers) {
    const host = imageProviderHost(provider, runtime);
    const hosts = [...new Set([host, provider.host])];
    const zipName = `terraform-provider-${provider.type}_${provider.version}_${platform}.zip`;
    const candidates = hosts.flatMap((from) => [
      {
        layout: "unpacked" as const,
        source: join(mirrorDir, from, provider.namespace, provider.type, provider.version, platform),
        target: join(host, provider.namespace, provider.type, provider.version, platform),
      },
      {
        layout: "packed" as const,
        source: join(mirrorDir, from, provider.namespace, provider.type, zipName),
        target: join(host, provider.namespace, provider.type, provider.version, platform),
      },
    ]);
    const hit = candidates.find((candidate) => existsSync(candidate.source));
    if (!hit) {
      missing.push(`${provider.address} ${provider.version} (${platform})`);
      continue;
    }
    const hash = hit.layout === "packed" ? `zh:${sha256File(hit.source)}` : packageHashV1(hit.source);
    const listed = provider.hashes.filter((entry) => entry.startsWith(hash.slice(0, 3)));
    if (listed.includes(hash)) found.push({ address: provider.address, version: provider.version, platform, ...hit, matchedHash: hash });
    // A lock file lists every platform's zh: (the registry's checksums) but h1: only of the platforms it was made on.
    else if (hit.layout === "packed" && listed.length > 0)
      throw new Error(
        `${relative(mirrorDir, hit.source)} in ${mirrorDir} has ${hash}, ` +
          `which ${lockFileName} does not list for ${provider.address} ${provider.version}: the mirror holds another build`,
      );
    else found.push({ address: provider.address, version: provider.version, platform, ...hit });
  }
  if (missing.length > 0)
    throw new Error(
      `the provider mirror ${mirrorDir} lacks ${missing.join(", ")}: ` +
        `fill it with \`tofu providers mirror -platform=${platform} ${mirrorDir}\` in the module`,
    );
  return found;
}

/**
 * Copies the packages into `target` (a staging directory that becomes /captf/providers), links resolved, a packed one
 * unpacked: a Job's init links an unpacked package and extracts a packed one (5 times slower for a large provider).
 */
export function stageMirror(packages: readonly MirroredPackage[], target: string): void {
  for (const entry of packages) {
    if (entry.layout === "unpacked") cpSync(entry.source, join(target, entry.target), { recursive: true, dereference: true });
    else unzip(entry.source, join(target, entry.target));
  }
}

function unzip(zip: string, into: string): void {
  mkdirSync(into, { recursive: true });
  try {
    execFileSync("unzip", ["-q", "-o", zip, "-d", into], { stdio: ["ignore", "ignore", "pipe"] });
  } catch (error) {
    const failure = error as NodeJS.ErrnoException & { stderr?: Buffer };
    if (failure.code === "ENOENT")
      throw new Error(
        `unzip is required to ship the packed provider ${zip} unpacked, and is not on PATH (Debian: apt-get install -y unzip)`,
      );
    throw new Error(`unzip ${zip} failed: ${failure.stderr?.toString().trim() || failure.message}`);
  }
}

/**
 * A mirror of the module's locked providers for `architectures`, downloaded from their registries by
 * `runtimeBinary providers mirror` (which follows the lock file) into a new temporary directory;
 * `remove` deletes it.
 */
export function mirrorFromRegistries(
  runtimeBinary: string,
  moduleDir: string,
  architectures: readonly string[],
): { mirror: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), "captf-module-mirror-"));
  const copy = join(dir, "module");
  cpSync(moduleDir, copy, { recursive: true, filter: (path) => !/(^|\/)\.terraform$/.test(path) });
  try {
    execFileSync(runtimeBinary, ["providers", "mirror", ...architectures.map((arch) => `-platform=linux_${arch}`), join(dir, "mirror")], {
      cwd: copy,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      env: { PATH: process.env.PATH ?? "", HOME: dir, CHECKPOINT_DISABLE: "1" },
    });
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    const stderr = (error as { stderr?: string }).stderr?.trim();
    throw new Error(
      `${runtimeBinary} providers mirror could not fetch the module's providers (${stderr || (error as Error).message}): ` +
        "without a registry, pass --providers <a filesystem mirror>",
    );
  }
  return { mirror: join(dir, "mirror"), remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Every provider package of linux/`arch` in a mirror that holds exactly what an image ships, as it lies
 * there: unpacked `<host>/<namespace>/<type>/<version>/linux_<arch>/` or packed
 * `<host>/<namespace>/<type>/terraform-provider-<type>_<version>_linux_<arch>.zip`, sorted by path.
 */
export function platformMirrorPackages(mirrorDir: string, arch: string): MirroredPackage[] {
  const platform = `linux_${arch}`;
  const isDir = (path: string) => existsSync(join(mirrorDir, path)) && statSync(join(mirrorDir, path)).isDirectory();
  const below = (path: string) => (isDir(path) ? readdirSync(join(mirrorDir, path)).map((name) => (path ? `${path}/${name}` : name)) : []);
  const types = below("").flatMap(below).flatMap(below).filter(isDir);
  const found: MirroredPackage[] = [];
  for (const typePath of types.sort()) {
    const [host, namespace, type] = typePath.split("/") as [string, string, string];
    for (const entry of below(typePath).sort()) {
      const name = entry.slice(typePath.length + 1);
      const packed = new RegExp(`^terraform-provider-${type}_(.+)_${platform}\\.zip$`).exec(name);
      const unpacked = isDir(`${entry}/${platform}`);
      const version = packed?.[1] ?? (unpacked ? name : undefined);
      if (version === undefined) continue;
      const target = packed ? `${typePath}/${version}/${platform}` : `${entry}/${platform}`;
      const layout = packed ? "packed" : "unpacked";
      found.push({
        address: `${host}/${namespace}/${type}`,
        version,
        platform,
        layout,
        source: join(mirrorDir, packed ? entry : target),
        target,
      });
    }
  }
  return found;
}
