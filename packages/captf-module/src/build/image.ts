// `captf-module build`: a module, a runtime binary per platform and the locked providers, into an
// OCI layout with umoci (no container engine). `<tag>` names an OCI index of one image per
// platform, `<tag>-<arch>` each image. Layers of each:
//   1. /captf/runtime: the OpenTofu or Terraform binary for that platform
//   2. /captf/module (the module's files) and the SBOM (CycloneDX: the runtime, each provider
//      package, each module file, with hashes) at /usr/share/doc/captf/sbom.cdx.json
//   3. /captf/providers: the locked providers for that platform, when the module has any
// and the config: user 65532:65532, no entrypoint (the runner replaces it), the io.captf.* and
// org.opencontainers.image.* labels. Every time in it is one (SOURCE_DATE_EPOCH, else the module's
// last commit, else the epoch), so two builds of the same inputs give one index digest.
import { execFileSync } from "node:child_process";
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, relative, resolve, sep } from "node:path";
import { contractVersion, type Role } from "@captf/contract/roles";
import { CommandError } from "../io.js";
import { assembleImage, platformDescriptor, sha256File, sourceDate, stampTimes, tagIndex, type Descriptor } from "./layout.js";
import { moduleProviders, type LockedProvider } from "./lockfile.js";
import { mirrorFromRegistries, platformMirrorPackages, selectMirrorPackages, stageMirror, type MirroredPackage } from "./mirror.js";
import { binaryArchitecture, hostArchitecture, probeRuntime, runtimeModules, type RuntimeName } from "./runtime.js";
import { cycloneDxJson, type ComponentDescription } from "./sbom.js";

/** The user module images run as: the module and the mirror are readable by it, nothing is its own. */
export const moduleImageUser = "65532:65532";
/** Where the SBOM lies in every image. */
export const sbomPath = "/usr/share/doc/captf/sbom.cdx.json";

export interface RuntimeBinary {
  /** `amd64` or `arm64`. */
  arch: string;
  path: string;
}

export interface BuildOptions {
  moduleDir: string;
  /** The role; read from the module's contract inputs when absent. */
  role?: Role;
  runtimes: readonly RuntimeBinary[];
  /** Which runtime and release the binaries are, for when none of them runs on this machine. */
  runtimeName?: RuntimeName;
  runtimeVersion?: string;
  /** false: `runtimeName` and `runtimeVersion` are taken as given and no binary is run (a wrapper, a stand-in). */
  probe?: boolean;
  /** A filesystem mirror holding the locked providers; absent: `providers mirror` from the registries. */
  providersDir?: string;
  /**
   * Instead of `providersDir`: a mirror per platform (`arch` to directory) that holds exactly what that
   * platform's image ships, shipped as it is (no lock file needed); a platform without one ships no providers
   * and nothing is fetched. The repository's release picks them with the runtime's own `init`.
   */
  platformProviders?: Readonly<Record<string, string | undefined>>;
  /** Module files left out besides the author's working files: matched against the path inside the module. */
  exclude?: RegExp;
  out: string;
  tag: string;
  title?: string;
  version?: string;
  source?: string;
  revision?: string;
  labels?: Readonly<Record<string, string>>;
  /** SOURCE_DATE_EPOCH: the one time of every file, layer and config. */
  sourceDateEpoch?: string;
}

export interface PlatformReport {
  platform: string;
  ref: string;
  digest: string;
  runtime: string;
  providers: { address: string; version: string; layout: MirroredPackage["layout"]; path: string; verified: boolean }[];
}

export interface BuildReport {
  layout: string;
  tag: string;
  digest: string;
  role: Role;
  runtime: { name: RuntimeName; version: string };
  created: string;
  user: string;
  labels: Record<string, string>;
  sbom: string;
  platforms: PlatformReport[];
}

/** The role whose identifying contract input the module declares: machinepool_name, machine_name or control_plane_initialized. */
export function roleOfModule(texts: readonly string[]): Role | undefined {
  const declares = (name: string) => texts.some((text) => new RegExp(`^\\s*variable\\s+"${name}"`, "m").test(text));
  const found = (["machinepool", "machine", "cluster"] as const).filter((role) =>
    declares({ machinepool: "machinepool_name", machine: "machine_name", cluster: "control_plane_initialized" }[role]),
  );
  return found.length === 1 ? found[0] : undefined;
}

/** The module's top-level .tf/.tofu texts. */
function moduleTexts(moduleDir: string): string[] {
  return readdirSync(moduleDir)
    .filter((name) => /\.(tf|tofu)(\.json)?$/.test(name))
    .map((name) => readFileSync(join(moduleDir, name), "utf8"));
}

// A working directory (anywhere in the path), a state file or its backup, the lock OpenTofu leaves next to local state.
const workingFilePatterns = [
  /(^|\/)(\.git|\.terraform|terraform\.tfstate\.d)(\/|$)/,
  /(^|\/)[^/]*\.tfstate(\.[^/]*)?$/,
  /(^|\/)\.terraform\.tfstate\.lock\.info$/,
];

/** Entries of a module directory that are the author's working files, never the module's. */
export function isWorkingFile(relativePath: string): boolean {
  return workingFilePatterns.some((pattern) => pattern.test(relativePath));
}

/** The image's labels: the contract's, the OCI annotations' and the caller's (which win). */
export function imageLabels(options: {
  role: Role;
  runtime: RuntimeName;
  runtimeVersion: string;
  title: string;
  version: string;
  created: string;
  source?: string;
  revision?: string;
  extra?: Readonly<Record<string, string>>;
}): Record<string, string> {
  return {
    "io.captf.contract": contractVersion,
    "io.captf.role": options.role,
    "io.captf.runtime": options.runtime,
    "io.captf.runtime.version": options.runtimeVersion,
    "org.opencontainers.image.title": options.title,
    "org.opencontainers.image.version": options.version,
    ...(options.revision ? { "org.opencontainers.image.revision": options.revision } : {}),
    ...(options.source ? { "org.opencontainers.image.source": options.source } : {}),
    "org.opencontainers.image.created": options.created,
    "org.opencontainers.image.base.name": "scratch",
    ...options.extra,
  };
}

/** Every regular file under `dir`, relative and sorted. */
function filesUnder(dir: string): string[] {
  return (readdirSync(dir, { recursive: true }) as string[])
    .filter((path) => statSync(join(dir, path)).isFile())
    .map((path) => path.split(sep).join("/"))
    .sort();
}

/** The SBOM components of one platform: the runtime, each provider package file, each module file. */
export function imageComponents(
  runtime: { name: RuntimeName; version: string; arch: string; sha256: string },
  providers: readonly { path: string; address: string; version: string; sha256: string }[],
  moduleFiles: readonly { path: string; sha256: string }[],
): ComponentDescription[] {
  const purl = `pkg:golang/${runtimeModules[runtime.name]}@v${runtime.version}`;
  return [
    {
      type: "application",
      bomRef: `${purl}?arch=${runtime.arch}`,
      name: runtime.name,
      version: runtime.version,
      purl,
      hashes: { "SHA-256": runtime.sha256 },
    },
    ...providers.map((file) => {
      const [, namespace, type] = file.address.split("/");
      return {
        type: "application" as const,
        bomRef: `provider:${file.path}`,
        name: file.address,
        version: file.version,
        purl: `pkg:terraform/${namespace}/${type}@${file.version}`,
        hashes: { "SHA-256": file.sha256 },
      };
    }),
    ...moduleFiles.map((file) => ({
      type: "file" as const,
      bomRef: `file:/captf/module/${file.path}`,
      name: `/captf/module/${file.path}`,
      hashes: { "SHA-256": file.sha256 },
    })),
  ];
}

function run(command: string, args: readonly string[]): string {
  try {
    return execFileSync(command, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], maxBuffer: 64 << 20 });
  } catch (error) {
    const failure = error as NodeJS.ErrnoException & { stderr?: string };
    if (failure.code === "ENOENT")
      throw new CommandError(
        `${command} is required to build images and is not on PATH (Debian: apt-get install -y ${command})`,
        "ToolMissing",
      );
    throw new CommandError(`${command} ${args.join(" ")} failed: ${failure.stderr?.trim() || failure.message}`, "ToolFailed", {
      cause: error,
    });
  }
}

/** Which runtime the binaries are: asked of one that runs here, else as the options say. */
function identifyRuntime(options: BuildOptions): { name: RuntimeName; version: string } {
  if (options.probe === false) {
    if (options.runtimeName && options.runtimeVersion) return { name: options.runtimeName, version: options.runtimeVersion };
    throw new CommandError("without probing the runtime binaries, say which they are (runtimeName and runtimeVersion)", "RuntimeUnknown");
  }
  const runnable = options.runtimes.find((binary) => binary.arch === hostArchitecture);
  if (runnable) {
    const probed = probeRuntime(runnable.path);
    if (options.runtimeName && options.runtimeName !== probed.name)
      throw new CommandError(`--runtime-name ${options.runtimeName}, but ${runnable.path} is ${probed.name}`, "RuntimeMismatch");
    if (options.runtimeVersion && options.runtimeVersion !== probed.version)
      throw new CommandError(`--runtime-version ${options.runtimeVersion}, but ${runnable.path} is ${probed.version}`, "RuntimeMismatch");
    return probed;
  }
  if (options.runtimeName && options.runtimeVersion) return { name: options.runtimeName, version: options.runtimeVersion };
  throw new CommandError(
    `no runtime binary for this machine (linux/${hostArchitecture}) to ask its version: ` +
      "add one, or say which the binaries are with --runtime-name and --runtime-version",
    "RuntimeUnknown",
  );
}

/** Checks each binary's platform and that no platform is given twice. */
export function checkRuntimeBinaries(runtimes: readonly RuntimeBinary[]): void {
  if (runtimes.length === 0)
    throw new CommandError("no runtime: pass --runtime <path to tofu or terraform> (once per platform)", "RuntimeMissing");
  const seen = new Set<string>();
  for (const binary of runtimes) {
    if (seen.has(binary.arch))
      throw new CommandError(`two runtime binaries for linux/${binary.arch}: pass one per platform`, "RuntimeTwice");
    seen.add(binary.arch);
  }
}

export function buildModuleImage(options: BuildOptions): BuildReport {
  const moduleDir = realpathSync(resolve(options.moduleDir));
  const layout = resolve(options.out);
  checkRuntimeBinaries(options.runtimes);
  const role = options.role ?? roleOfModule(moduleTexts(moduleDir));
  if (!role)
    throw new CommandError(
      `${options.moduleDir}: cannot tell the module's role from its contract inputs ` +
        "(machinepool_name, machine_name or control_plane_initialized): pass --role",
      "RoleUnknown",
    );
  const runtime = identifyRuntime(options);
  const perPlatform = options.platformProviders;
  if (perPlatform && options.providersDir) {
    throw new CommandError("one mirror for every platform or one per platform, not both", "ProvidersTwice");
  }
  let providers: LockedProvider[] = [];
  try {
    if (!perPlatform) providers = moduleProviders(moduleDir);
  } catch (error) {
    throw new CommandError((error as Error).message, "LockFileMissing");
  }
  const created = sourceDate(moduleDir, options.sourceDateEpoch);
  const createdIso = created.toISOString();
  const title = options.title ?? basename(moduleDir);
  const version = options.version ?? options.tag;
  const labels = imageLabels({
    role,
    runtime: runtime.name,
    runtimeVersion: runtime.version,
    title,
    version,
    created: createdIso,
    source: options.source,
    revision: options.revision,
    extra: options.labels,
  });

  const work = mkdtempSync(join(tmpdir(), "captf-module-build-"));
  const fetchWith = options.runtimes.find((binary) => binary.arch === hostArchitecture)?.path ?? options.runtimes[0]!.path;
  const fromRegistries = providers.length > 0 && !options.providersDir && !perPlatform;
  const fetched = fromRegistries
    ? mirrorFromRegistries(
        fetchWith,
        moduleDir,
        options.runtimes.map((binary) => binary.arch),
      )
    : undefined;
  try {
    const mirrorDir = options.providersDir ? resolve(options.providersDir) : fetched?.mirror;
    const existed = existsSync(join(layout, "index.json"));
    if (!existed) run("umoci", ["init", "--layout", layout]);
    const platforms: PlatformReport[] = [];
    const manifests: Descriptor[] = [];
    for (const binary of options.runtimes) {
      let packages: MirroredPackage[] = [];
      try {
        const platformMirror = perPlatform?.[binary.arch];
        if (platformMirror) packages = platformMirrorPackages(resolve(platformMirror), binary.arch);
        else if (mirrorDir && providers.length > 0) packages = selectMirrorPackages(providers, mirrorDir, runtime.name, binary.arch);
      } catch (error) {
        throw new CommandError((error as Error).message, "ProvidersMissing");
      }
      const ref = `${options.tag}-${binary.arch}`;
      const outside = realpathSync(layout);
      const platformOptions = { ref, arch: binary.arch, binary: binary.path, packages, outside, exclude: options.exclude };
      buildPlatform({ work, layout, moduleDir, runtime, role, title, version, created, labels, ...platformOptions });
      const descriptor = platformDescriptor(layout, ref, binary.arch);
      manifests.push(descriptor);
      platforms.push({
        platform: `linux/${binary.arch}`,
        ref,
        digest: descriptor.digest,
        runtime: binary.path,
        providers: packages.map((entry) => ({
          address: entry.address,
          version: entry.version,
          layout: entry.layout,
          path: `/captf/providers/${entry.target}`,
          verified: entry.matchedHash !== undefined,
        })),
      });
    }
    const digest = tagIndex(layout, options.tag, manifests, createdIso);
    // Blobs of the images this build replaced.
    if (existed) run("umoci", ["gc", "--layout", layout]);
    return {
      layout,
      tag: options.tag,
      digest,
      role,
      runtime,
      created: createdIso,
      user: moduleImageUser,
      labels,
      sbom: sbomPath,
      platforms,
    };
  } finally {
    fetched?.remove();
    rmSync(work, { recursive: true, force: true });
  }
}

interface PlatformBuild {
  work: string;
  layout: string;
  ref: string;
  arch: string;
  binary: string;
  moduleDir: string;
  packages: readonly MirroredPackage[];
  runtime: { name: RuntimeName; version: string };
  role: Role;
  title: string;
  version: string;
  created: Date;
  labels: Record<string, string>;
  /** A path the module copy leaves out (the layout, when it lies inside the module). */
  outside: string;
  exclude?: RegExp;
}

function buildPlatform(build: PlatformBuild): void {
  const { work, arch, created } = build;
  const createdIso = created.toISOString();

  const runtimeRoot = join(work, `runtime-${arch}`);
  mkdirSync(join(runtimeRoot, "captf"), { recursive: true });
  cpSync(build.binary, join(runtimeRoot, "captf/runtime"), { dereference: true });
  chmodSync(join(runtimeRoot, "captf/runtime"), 0o755);

  const moduleRoot = join(work, `module-${arch}`);
  const stagedModule = join(moduleRoot, "captf/module");
  cpSync(build.moduleDir, stagedModule, {
    recursive: true,
    dereference: true,
    filter: (path) => {
      const inside = relative(build.moduleDir, path).split(sep).join("/");
      return !isWorkingFile(inside) && !build.exclude?.test(inside) && path !== build.outside && !path.startsWith(`${build.outside}${sep}`);
    },
  });
  // Readable by the image's user whatever the author's umask: files 0644, directories 0755.
  for (const path of ["", ...(readdirSync(stagedModule, { recursive: true }) as string[])])
    chmodSync(join(stagedModule, path), statSync(join(stagedModule, path)).isDirectory() ? 0o755 : 0o644);

  const providersRoot = join(work, `providers-${arch}`);
  if (build.packages.length > 0) {
    stageMirror(build.packages, providersRoot);
    for (const path of ["", ...(readdirSync(providersRoot, { recursive: true }) as string[])]) {
      const full = join(providersRoot, path);
      chmodSync(full, statSync(full).isDirectory() || /terraform-provider-[^/]*$/.test(path) ? 0o755 : 0o644);
    }
  }
  const providerFiles = build.packages.length > 0 ? filesUnder(providersRoot).filter((path) => !path.endsWith(".json")) : [];
  const addressOf = (path: string) => build.packages.find((entry) => path === entry.target || path.startsWith(`${entry.target}/`))!;
  const components = imageComponents(
    { name: build.runtime.name, version: build.runtime.version, arch, sha256: sha256File(build.binary) },
    providerFiles.map((path) => ({
      path,
      address: addressOf(path).address,
      version: addressOf(path).version,
      sha256: sha256File(join(providersRoot, path)),
    })),
    filesUnder(stagedModule).map((path) => ({ path, sha256: sha256File(join(stagedModule, path)) })),
  );
  const sbomFile = join(moduleRoot, sbomPath);
  mkdirSync(join(sbomFile, ".."), { recursive: true });
  writeFileSync(
    sbomFile,
    cycloneDxJson({
      subject: { type: "container", name: build.title, version: build.version, properties: { "oci:architecture": arch } },
      created: createdIso,
      components,
    }),
  );
  for (const dir of [runtimeRoot, moduleRoot, ...(build.packages.length > 0 ? [providersRoot] : [])]) stampTimes(dir, created);

  const providersLayer = { source: providersRoot, path: "/captf/providers", createdBy: "the locked providers at /captf/providers" };
  assembleImage(run, {
    layout: build.layout,
    ref: build.ref,
    created,
    layers: [
      { source: runtimeRoot, path: "/", createdBy: `${build.runtime.name} v${build.runtime.version} for linux/${arch} at /captf/runtime` },
      { source: moduleRoot, path: "/", createdBy: `the ${build.role} module at /captf/module, the SBOM at ${sbomPath}` },
      ...(build.packages.length > 0 ? [providersLayer] : []),
    ],
    arch,
    user: moduleImageUser,
    labels: build.labels,
  });
}

/** The platform a runtime binary is for, read from its ELF header; throws naming the file when it is neither amd64 nor arm64 Linux. */
export function runtimeBinaryOf(path: string, arch?: string): RuntimeBinary {
  if (!existsSync(path) || !statSync(path).isFile()) throw new CommandError(`--runtime ${path}: no such file`, "RuntimeMissing");
  const read = binaryArchitecture(path);
  if (!read) throw new CommandError(`--runtime ${path}: not a linux/amd64 or linux/arm64 executable (ELF)`, "RuntimeNotElf");
  if (arch && arch !== read)
    throw new CommandError(`--runtime linux/${arch}=${path}: the binary is built for linux/${read}`, "RuntimeWrongPlatform");
  return { arch: read, path };
}
