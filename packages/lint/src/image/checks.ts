// The image/* checks of one platform's flattened filesystem and config: pure functions of data.
import type { Role } from "@captf/contract/roles";
import { checkIds } from "../checks/ids.js";
import type { Finding, Severity } from "../findings.js";
import { isModuleFile } from "../module/load.js";
import { entriesUnder, moduleDir, providersDir, resolvePath, runtimePath, within, type Filesystem, type FsEntry } from "./filesystem.js";
import { parseCapacityLabel, parseNodeInfoLabel, capacityLabel, nodeInfoLabel } from "@captf/contract/oci";

export interface ImageConfig {
  readonly os: string;
  readonly architecture: string;
  readonly variant?: string;
  readonly user: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly entrypoint: readonly string[];
  readonly cmd: readonly string[];
}

/** A provider the module needs: its local name and declared source, if any. */
export interface RequiredProvider {
  readonly local: string;
  readonly source: string | undefined;
}

export interface ImageCheckInput {
  readonly fs: Filesystem;
  readonly config: ImageConfig;
  readonly role: Role;
  readonly contract: string;
  /** Undefined when the image has no module to read. */
  readonly requiredProviders: readonly RequiredProvider[] | undefined;
}

export const reservedPaths = ["/captf/work", "/var/run/captf/credentials", "/captf/bin", "/captf/config"] as const;

const labelRole = "io.captf.role";
const labelContract = "io.captf.contract";
const labelRuntime = "io.captf.runtime";

function finding(id: string, severity: Severity, file: string, message: string, fix: string): Finding {
  return { id, severity, file, line: 0, column: 0, message, fix };
}

/** The image user as the checks read it: root, a numeric uid[:gid], or a name no passwd file resolves here. */
export interface ImageUser {
  readonly root: boolean;
  readonly numeric: boolean;
  readonly uid: number;
  readonly gid: number;
}

export function parseUser(user: string): ImageUser {
  const [name = "", group] = user.split(":");
  if (name === "" || name === "root" || name === "0") return { root: true, numeric: true, uid: 0, gid: 0 };
  if (!/^\d+$/.test(name)) return { root: false, numeric: false, uid: -1, gid: -1 };
  return { root: false, numeric: true, uid: Number(name), gid: group !== undefined && /^\d+$/.test(group) ? Number(group) : -1 };
}

/** Whether the user has any of `perm` (4 read, 1 execute) on the entry; root and unresolved names get any class's bit. */
export function userCan(user: ImageUser, entry: Pick<FsEntry, "mode" | "uid" | "gid">, perm: number): boolean {
  if (user.root || !user.numeric) return (entry.mode & (perm | (perm << 3) | (perm << 6))) !== 0;
  if (user.uid === entry.uid) return (entry.mode & (perm << 6)) !== 0;
  if (user.gid === entry.gid) return (entry.mode & (perm << 3)) !== 0;
  return (entry.mode & perm) !== 0;
}

export function hasModule(fs: Filesystem): boolean {
  for (const entry of fs.entries.values()) {
    if (
      entry.type === "file" &&
      entry.path.slice(0, entry.path.lastIndexOf("/")) === moduleDir &&
      isModuleFile(entry.path.slice(moduleDir.length + 1))
    )
      return true;
  }
  return false;
}

function modulePresent({ fs }: ImageCheckInput): Finding[] {
  if (hasModule(fs)) return [];
  return [
    finding(
      checkIds.imageModulePresent,
      "error",
      moduleDir,
      `${moduleDir} has no .tf, .tf.json, .tofu or .tofu.json file at its top`,
      "COPY the module's files to /captf/module in the Containerfile",
    ),
  ];
}

function runtimePresent({ fs, config }: ImageCheckInput): Finding[] {
  const fix = "install tofu or terraform at /captf/runtime (a file, or a link to one inside the image), mode 0755";
  const resolved = resolvePath(fs, runtimePath);
  if (!resolved)
    return [
      finding(
        checkIds.imageRuntimePresent,
        "error",
        runtimePath,
        `${runtimePath} is missing, or a link whose target is not in the image`,
        fix,
      ),
    ];
  if (resolved.entry.type !== "file")
    return [finding(checkIds.imageRuntimePresent, "error", runtimePath, `${runtimePath} is not a regular file`, fix)];
  if (!userCan(parseUser(config.user), resolved.entry, 0o1)) {
    const mode = resolved.entry.mode.toString(8).padStart(4, "0");
    const problem = `${runtimePath} (mode ${mode}) is not executable by user ${JSON.stringify(config.user)}`;
    return [finding(checkIds.imageRuntimePresent, "error", runtimePath, problem, fix)];
  }
  return [];
}

function runtimeVersion({ fs, config }: ImageCheckInput): Finding[] {
  const want = config.labels[labelRuntime];
  if (!want) return [];
  const link = fs.entries.get(runtimePath);
  const name = link?.type === "symlink" ? link.linkname : runtimePath;
  const base = name.slice(name.lastIndexOf("/") + 1);
  const seen = base.includes("tofu") ? "tofu" : base.includes("terraform") ? "terraform" : undefined;
  if (!seen || seen === want) return [];
  return [
    finding(
      checkIds.imageRuntimeVersion,
      "warning",
      runtimePath,
      `${runtimePath} looks like ${seen} (${name}), but ${labelRuntime} says ${want}`,
      `set ${labelRuntime}=${seen}, or install ${want} at ${runtimePath}`,
    ),
  ];
}

const packedZip = /^terraform-provider-[^_]+_[^_]+_([a-z0-9]+_[a-z0-9]+)\.zip$/;
const targetPattern = /^[a-z0-9]+_[a-z0-9]+$/;

function isBuiltin(p: RequiredProvider): boolean {
  return (p.source?.includes("/builtin/") ?? false) || (p.local === "terraform" && !p.source);
}

/** The mirror directories that could serve a provider: Terraform's and/or OpenTofu's registry host. */
export function providerSources(p: RequiredProvider, runtime: string | undefined): string[] {
  const source = (p.source && p.source !== "" ? p.source : `hashicorp/${p.local}`).toLowerCase();
  if (source.split("/").length === 3) return [source];
  if (runtime === "terraform") return [`registry.terraform.io/${source}`];
  if (runtime === "tofu") return [`registry.opentofu.org/${source}`];
  return [`registry.terraform.io/${source}`, `registry.opentofu.org/${source}`];
}

function providers(input: ImageCheckInput): Finding[] {
  const { fs, config } = input;
  const entries = entriesUnder(fs, providersDir).filter((e) => e.type === "file" || e.type === "symlink" || e.type === "hardlink");
  if (!fs.entries.has(providersDir) && entries.length === 0) {
    return [
      finding(
        checkIds.imageProvidersAbsent,
        "info",
        providersDir,
        "no provider mirror: init needs registry access when the Job runs",
        "mirror the providers into /captf/providers with `tofu providers mirror` at build time",
      ),
    ];
  }
  const target = `${config.os}_${config.architecture}`;
  const out: Finding[] = [];
  const have = new Set<string>();
  const broken: string[] = [];
  for (const entry of entries.sort((a, b) => (a.path < b.path ? -1 : 1))) {
    const parts = entry.path.slice(providersDir.length + 1).split("/");
    const isLink = entry.type !== "file";
    const final = isLink ? resolvePath(fs, entry.path)?.entry : entry;
    let ok = false;
    if (parts.length === 4) {
      const zip = packedZip.exec(parts[3]!);
      if (zip) {
        ok = true;
        if (isLink && final?.type !== "file") broken.push(entry.path);
        else if (zip[1] === target) have.add(parts.slice(0, 3).join("/"));
      } else if (parts[3]!.endsWith(".json")) ok = true;
    } else if (parts.length === 5 && isLink && targetPattern.test(parts[4]!)) {
      ok = true;
      if (final?.type !== "dir") broken.push(entry.path);
      else if (parts[4] === target) have.add(parts.slice(0, 3).join("/"));
    } else if (parts.length >= 6) {
      ok = targetPattern.test(parts[4]!);
      if (ok && parts[4] === target) have.add(parts.slice(0, 3).join("/"));
    }
    if (!ok) {
      out.push(
        finding(
          checkIds.imageProvidersLayout,
          "error",
          entry.path,
          `${entry.path} is neither a packed (HOST/NS/TYPE/*.zip, *.json) nor an unpacked (HOST/NS/TYPE/VERSION/TARGET/) mirror entry`,
          "build the mirror with `tofu providers mirror` (or `terraform providers mirror`) and copy it unchanged",
        ),
      );
    }
  }
  for (const path of broken) {
    out.push(
      finding(
        checkIds.imageProvidersComplete,
        "error",
        path,
        `${path} is a link whose target is missing from the image or is not a provider zip or directory: init cannot use it`,
        "copy the provider package into the mirror instead of linking it",
      ),
    );
  }
  for (const p of input.requiredProviders ?? []) {
    if (isBuiltin(p)) continue;
    const sources = providerSources(p, config.labels[labelRuntime]);
    if (sources.some((s) => have.has(s))) continue;
    out.push(
      finding(
        checkIds.imageProvidersComplete,
        "error",
        providersDir,
        `the mirror has no ${target} package of provider ${p.local} (${sources.join(" or ")}): init fails, as the Job turns off ` +
          `direct installation`,
        `mirror it for every platform: providers mirror -platform=${target} /captf/providers`,
      ),
    );
  }
  return out;
}

function reserved({ fs }: ImageCheckInput): Finding[] {
  return reservedPaths.flatMap((dir) => {
    const files = entriesUnder(fs, dir).filter((e) => e.type !== "dir");
    if (files.length === 0) return [];
    return [
      finding(
        checkIds.imageReservedPaths,
        "error",
        dir,
        `${files.length} file(s) under ${dir}, which is mounted over when the Job runs: the image must not ship anything there`,
        `remove ${dir} from the image`,
      ),
    ];
  });
}

function labelRoleCheck({ config, role }: ImageCheckInput): Finding[] {
  const got = config.labels[labelRole];
  if (got === undefined) return [finding(checkIds.imageLabelRole, "info", "", `${labelRole} is not set`, `LABEL ${labelRole}=${role}`)];
  if (got !== role)
    return [
      finding(
        checkIds.imageLabelRole,
        "error",
        "",
        `${labelRole} is ${JSON.stringify(got)}, but the image is linted as ${role}`,
        `lint with --role ${got}, or set LABEL ${labelRole}=${role}`,
      ),
    ];
  return [];
}

function labelContractCheck({ config, contract }: ImageCheckInput): Finding[] {
  const got = config.labels[labelContract];
  if (got === undefined)
    return [finding(checkIds.imageLabelContract, "info", "", `${labelContract} is not set`, `LABEL ${labelContract}=${contract}`)];
  if (got !== contract)
    return [
      finding(
        checkIds.imageLabelContract,
        "warning",
        "",
        `${labelContract} is ${JSON.stringify(got)}, but the image is linted against ${contract}`,
        `set LABEL ${labelContract}=${contract} once the module implements it`,
      ),
    ];
  return [];
}

function labelCapacity({ config, role }: ImageCheckInput): Finding[] {
  const capacity = config.labels[capacityLabel];
  const nodeInfo = config.labels[nodeInfoLabel];
  if (role !== "machine") {
    if (capacity === undefined && nodeInfo === undefined) return [];
    return [
      finding(
        checkIds.imageLabelCapacity,
        "info",
        "",
        `the capacity labels are read for the machine role only; ignored for ${role}`,
        `drop ${capacityLabel} and ${nodeInfoLabel} from a ${role} image`,
      ),
    ];
  }
  if (capacity === undefined && nodeInfo === undefined) {
    return [
      finding(
        checkIds.imageLabelCapacity,
        "info",
        "",
        `neither ${capacityLabel} nor ${nodeInfoLabel} is set: no scale-from-zero capacity`,
        `LABEL ${capacityLabel}='{"cpu":"4","memory":"16Gi"}'`,
      ),
    ];
  }
  const out: Finding[] = [];
  const fix = "see the image contract's capacity labels";
  if (capacity !== undefined) {
    const reading = parseCapacityLabel(capacity);
    if (!reading.ok) out.push(finding(checkIds.imageLabelCapacity, "error", "", reading.message, fix));
  }
  if (nodeInfo !== undefined) {
    const reading = parseNodeInfoLabel(nodeInfo);
    if (!reading.ok) out.push(finding(checkIds.imageLabelCapacity, "error", "", reading.message, fix));
  }
  return out;
}

function userRoot({ config }: ImageCheckInput): Finding[] {
  if (!parseUser(config.user).root) return [];
  return [
    finding(
      checkIds.imageUserRoot,
      "warning",
      "",
      `the image runs as root (User ${JSON.stringify(config.user)}): the Job cannot run under the restricted Pod Security Standard`,
      "USER 65532 (and make /captf readable by it)",
    ),
  ];
}

function userUnresolved({ config }: ImageCheckInput): Finding[] {
  const user = parseUser(config.user);
  if (user.root || user.numeric) return [];
  return [
    finding(
      checkIds.imageUserUnresolved,
      "warning",
      "",
      `the image user ${JSON.stringify(config.user)} is a name the linter cannot resolve to a uid: the permission checks are ` +
        `approximate and module-readable is skipped`,
      "use a numeric USER, e.g. USER 65532",
    ),
  ];
}

function moduleReadable({ fs, config }: ImageCheckInput): Finding[] {
  const user = parseUser(config.user);
  if (user.root || !user.numeric) return [];
  const bad: string[] = [];
  for (const dir of [moduleDir, providersDir]) {
    const entries = entriesUnder(fs, dir).filter((e) => e.type === "file" || e.type === "dir");
    const self = fs.entries.get(dir);
    if (self) entries.push(self);
    for (const e of entries) if (!userCan(user, e, e.type === "dir" ? 0o1 : 0o4)) bad.push(e.path);
  }
  if (bad.length === 0) return [];
  bad.sort();
  const shown = bad.slice(0, 5);
  return [
    finding(
      checkIds.imageModuleReadable,
      "warning",
      shown[0]!,
      `${bad.length} path(s) not readable or traversable by user ${user.uid}: ${shown.join(", ")}`,
      `chown -R ${user.uid} /captf (or chmod a+rX) in the Containerfile`,
    ),
  ];
}

/** Links under /captf/module that do not end at a file or directory inside it. */
export function badModuleLinks(fs: Filesystem): { path: string; target: string }[] {
  const out: { path: string; target: string }[] = [];
  for (const entry of fs.entries.values()) {
    if ((entry.type !== "symlink" && entry.type !== "hardlink") || entry.path === moduleDir || !within(entry.path, moduleDir)) continue;
    const resolved = resolvePath(fs, entry.path);
    if (resolved && within(resolved.path, moduleDir) && (resolved.entry.type === "file" || resolved.entry.type === "dir")) continue;
    out.push({ path: entry.path, target: entry.linkname });
  }
  return out.sort((a, b) => (a.path < b.path ? -1 : 1));
}

function moduleLinks({ fs }: ImageCheckInput): Finding[] {
  return badModuleLinks(fs).map((l) =>
    finding(
      checkIds.imageModuleLink,
      "error",
      l.path,
      `${l.path} links to ${l.target}, which is not a file inside ${moduleDir}: the lint cannot read it, and it may be missing at run time`,
      "copy the file into the module instead of linking it",
    ),
  );
}

function entrypoint({ config }: ImageCheckInput): Finding[] {
  if (config.entrypoint.length === 0 && config.cmd.length === 0) return [];
  return [
    finding(
      checkIds.imageEntrypoint,
      "info",
      "",
      "ENTRYPOINT/CMD are set; the runner replaces them when the Job runs",
      "leave them unset, or ignore this note",
    ),
  ];
}

/** Every image check of one platform. */
export function runImageChecks(input: ImageCheckInput): Finding[] {
  return [
    modulePresent,
    runtimePresent,
    runtimeVersion,
    providers,
    reserved,
    labelRoleCheck,
    labelContractCheck,
    labelCapacity,
    userRoot,
    userUnresolved,
    moduleReadable,
    moduleLinks,
    entrypoint,
  ].flatMap((check) => check(input));
}
