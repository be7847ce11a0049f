import { execFile, execFileSync, spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmodSync,
  chownSync,
  closeSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readSync,
  readlinkSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { connect } from "node:net";
import { constants as osConstants, cpus, release, tmpdir, totalmem } from "node:os";
import { dirname, join, posix } from "node:path";
import { promisify } from "node:util";
import * as k8s from "@kubernetes/client-node";
import { ContainerCgroups, type ContainerCpu } from "./container-cpu.js";
import { LatestStatusWrites } from "./status-writes.js";
import { requireTool } from "./tools.js";

/**
 * The testkit's chroot kubelet: just enough of a kubelet for Jobs on the local control plane.
 * It registers a Node, binds unscheduled Pods to it (there is no scheduler), pulls their images
 * from a loopback registry (skopeo + umoci) or takes a root prepared in-process, and runs each
 * container in its own mount, PID and UTS namespaces under a chroot of the image root (an
 * overlay over the unpacked image, or a copy where overlayfs is unavailable), with the Pod's
 * volumes bind-mounted, /proc, a tmpfs /dev with the usual nodes, /etc/hosts and the
 * termination-message file. It writes Pod status through `pods/status` (phases, container
 * states, exit codes, termination messages), enforces `activeDeadlineSeconds`, stops deleted
 * Pods (SIGTERM, SIGKILL after the grace period) and finalizes them.
 *
 * Native sidecars (init containers with `restartPolicy: Always`) behave as on a real kubelet:
 * each starts in its turn and counts as started once spawned (or once its startupProbe passes),
 * is restarted whenever it exits while the Pod runs, and gets SIGTERM in reverse order of
 * declaration only after every main container has ended, within what is left of the grace
 * period. They do not decide the Pod's phase; the final status write carries their end.
 *
 * Containers run as their user, as a real runtime runs them: the uid and gid of runAsUser and
 * runAsGroup (container, else Pod) or of the image's numeric `User`, with fsGroup and
 * supplementalGroups as supplementary groups, no_new_privs when allowPrivilegeEscalation is
 * false, and the capabilities `drop` names taken out of the bounding set. The launch mounts and
 * chroots as root, then drops to that user (`setpriv` around `unshare --setuid`). Volumes are
 * owned so that user can use them (emptyDir 0777, or group fsGroup with setgid; projected files
 * in group fsGroup).
 *
 * Deliberately not a kubelet: no resource limits, no seccomp, the host's network namespace (Pod
 * IP = 127.0.0.1), no probes other than a sidecar's startupProbe, and images are only pulled from
 * loopback registries. A container running as root keeps CAP_SYS_CHROOT (the launch needs it),
 * so it can leave its chroot; one running as another user cannot. Root is required (namespaces,
 * mounts, mknod).
 */

/** An image prepared in-process: its root directory and the parts of its config a container uses. */
export interface ResolvedImage {
  rootfs: string;
  /** `NAME=value` entries, like an OCI image config's Env. */
  env?: readonly string[];
  entrypoint?: readonly string[];
  cmd?: readonly string[];
  workingDir?: string;
  /** The user it runs as unless the Pod says otherwise, like an OCI image config's User (`uid[:gid]`). */
  user?: string;
}

/** Maps an image reference to a root prepared in-process; undefined means "pull it". */
export type ImageResolver = (reference: string) => string | ResolvedImage | undefined | Promise<string | ResolvedImage | undefined>;

export interface ChrootKubeletOptions {
  kubeconfigPath: string;
  /** The Node to register; pick one per kubelet (tests share the plane). */
  nodeName: string;
  /** Consulted before pulling: images built in-process (for example the manager image's root). */
  imageResolver?: ImageResolver;
  /** Where images, Pod volumes, container roots and logs go. Default: a temp dir, removed by stop(). */
  workDir?: string;
  /** One line per thing the kubelet does (binds, starts, exits, status writes that failed). */
  log?: (line: string) => void;
  /**
   * Pods that run to completion (restartPolicy Never or OnFailure: Jobs' Pods) run at the same time; a
   * service's Pod (restartPolicy Always, a Deployment's) takes no slot. Default 1;
   * {@link parallelPodsFor} gives a limit from the machine's cores and memory.
   */
  maxParallel?: number;
  /** Only bind Pods of these namespaces (tests share the plane). Default: every namespace. */
  namespaces?: readonly string[];
  /**
   * The token mounted at /var/run/secrets/kubernetes.io/serviceaccount (with ca.crt and namespace)
   * unless the Pod opts out: "request" (default) asks the TokenRequest API for a token of the Pod's
   * ServiceAccount, bound to the Pod; `{ token }` mounts that token; false mounts nothing. A projected
   * serviceAccountToken volume gets `{ token }` too when given, else a requested token.
   */
  serviceAccountTokens?: "request" | { token: string } | false;
  /**
   * A host directory bound, writable, where a container's NODE_V8_COVERAGE points (an absolute path): the test command's
   * coverage of the manager in its Pods (docs/testing.md#coverage). Default: none is bound.
   */
  coverageDirectory?: string;
  /** How often the Node's Ready condition is renewed. Default 10 s. */
  heartbeatSeconds?: number;
  /** How container roots are made: "auto" (default) uses overlayfs when a probe mount works, else copies. */
  rootfs?: "auto" | "overlay" | "copy";
  /** Each container run in a cgroup of its own that accounts its CPU ({@link ChrootKubelet.containerCpu}). Default true, where possible. */
  cpuAccounting?: boolean;
}

export interface ChrootKubelet {
  readonly nodeName: string;
  readonly workDir: string;
  /** How container roots are made: an overlay over the unpacked image, or a copy of it. */
  readonly rootfsMode: "overlay" | "copy";
  /** Everything a container wrote to stdout and stderr (all its restarts), or "" if it never ran. */
  containerLog(namespace: string, pod: string, container: string): string;
  /** The CPU time of every container run so far, ended and running, in the order they started; [] without accounting. */
  containerCpu(): ContainerCpu[];
  /** Kills every container, stops watching, deletes the Node, removes the work dir it created. */
  stop(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// Pure pieces (exported for the unit tests).

/** A container cannot start yet (image pull, missing Secret): the Pod stays Pending and is retried. */
export class PodWaiting extends Error {
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(message);
    this.name = "PodWaiting";
  }
}

/** The Pod can never run here (an unsupported volume, a bad path): it fails at once. */
export class PodFailure extends Error {
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(message);
    this.name = "PodFailure";
  }
}

/** Kubernetes' `$(VAR)` expansion: defined names are replaced, `$$` is `$`, anything else stays. */
export function expandReferences(input: string, lookup: (name: string) => string | undefined): string {
  let out = "";
  for (let i = 0; i < input.length; i++) {
    const char = input[i]!;
    if (char !== "$" || i + 1 >= input.length) {
      out += char;
      continue;
    }
    const next = input[i + 1];
    if (next === "$") {
      out += "$";
      i++;
    } else if (next === "(") {
      const close = input.indexOf(")", i + 2);
      if (close < 0) {
        out += input.slice(i);
        break;
      }
      const name = input.slice(i + 2, close);
      const value = name ? lookup(name) : undefined;
      out += value ?? `$(${name})`;
      i = close;
    } else {
      out += char;
    }
  }
  return out;
}

/** The argv a container runs: `command` replaces the image's entrypoint, `args` its cmd. */
export function resolveContainerCommand(
  container: Pick<k8s.V1Container, "command" | "args">,
  image: Pick<ResolvedImage, "entrypoint" | "cmd">,
): string[] {
  if (container.command?.length) return [...container.command, ...(container.args ?? [])];
  if (container.args?.length) return [...(image.entrypoint ?? []), ...container.args];
  return [...(image.entrypoint ?? []), ...(image.cmd ?? [])];
}

/**
 * Resolves `path` inside the root `root` as a chroot would, following symbolic links without
 * leaving the root; returns the absolute, link-free path inside the root. Missing parts are kept.
 */
export function resolveInRoot(root: string, path: string): string {
  const pending = path.split("/").filter(Boolean);
  const resolved: string[] = [];
  let hops = 0;
  while (pending.length > 0) {
    const part = pending.shift()!;
    if (part === ".") continue;
    if (part === "..") {
      resolved.pop();
      continue;
    }
    let info;
    try {
      info = lstatSync(join(root, ...resolved, part));
    } catch {
      resolved.push(part, ...pending.filter((p) => p !== "."));
      return normalizeInside(resolved);
    }
    if (!info.isSymbolicLink()) {
      resolved.push(part);
      continue;
    }
    if (++hops > 40) throw new PodFailure("StartError", `too many symbolic links resolving ${path}`);
    const target = readlinkSync(join(root, ...resolved, part));
    if (target.startsWith("/")) resolved.length = 0;
    pending.unshift(...target.split("/").filter(Boolean));
  }
  return normalizeInside(resolved);
}

function normalizeInside(parts: string[]): string {
  const out: string[] = [];
  for (const part of parts) {
    if (part === "..") out.pop();
    else if (part !== ".") out.push(part);
  }
  return `/${out.join("/")}`;
}

export interface ProjectedFile {
  path: string;
  content: Buffer;
  mode: number;
}

function checkRelativePath(path: string, what: string): void {
  if (!path || path.startsWith("/") || path.split("/").includes(".."))
    throw new PodFailure("InvalidVolume", `${what}: path "${path}" must be relative and must not contain ".."`);
}

/** The files of a Secret or ConfigMap volume: every key, or just `items`, with their modes. */
export function projectKeys(
  source: string,
  data: Readonly<Record<string, Buffer>>,
  items: readonly { key: string; path: string; mode?: number }[] | undefined,
  defaultMode: number,
  optional: boolean,
): ProjectedFile[] {
  if (!items?.length) {
    return Object.keys(data)
      .sort()
      .map((key) => ({ path: key, content: data[key]!, mode: defaultMode }));
  }
  const files: ProjectedFile[] = [];
  for (const item of items) {
    const content = data[item.key];
    if (content === undefined) {
      if (optional) continue;
      throw new PodWaiting("ContainerCreating", `${source} has no key "${item.key}"`);
    }
    checkRelativePath(item.path, source);
    files.push({ path: item.path, content, mode: item.mode ?? defaultMode });
  }
  return files;
}

/** The value of a downward-API field path, or undefined when this kubelet does not know it. */
export function downwardValue(pod: k8s.V1Pod, fieldPath: string): string | undefined {
  const meta = pod.metadata ?? {};
  switch (fieldPath) {
    case "metadata.name":
      return meta.name ?? "";
    case "metadata.namespace":
      return meta.namespace ?? "";
    case "metadata.uid":
      return meta.uid ?? "";
    case "spec.nodeName":
      return pod.spec?.nodeName ?? "";
    case "spec.serviceAccountName":
      return pod.spec?.serviceAccountName ?? "default";
    case "status.hostIP":
    case "status.hostIPs":
    case "status.podIP":
    case "status.podIPs":
      return loopbackAddress;
    case "metadata.labels":
    case "metadata.annotations": {
      const map = (fieldPath === "metadata.labels" ? meta.labels : meta.annotations) ?? {};
      return Object.keys(map)
        .sort()
        .map((key) => `${key}=${JSON.stringify(map[key])}`)
        .join("\n");
    }
  }
  const match = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(fieldPath);
  if (match) return (match[1] === "labels" ? meta.labels : meta.annotations)?.[match[2]!] ?? "";
  return undefined;
}

/** The Secrets and ConfigMaps a container's environment reads, by name (null: not found). */
export interface EnvironmentSources {
  secrets: ReadonlyMap<string, Readonly<Record<string, string>> | null>;
  configMaps: ReadonlyMap<string, Readonly<Record<string, string>> | null>;
}

/**
 * A container's environment as the kubelet computes it: envFrom, then env in order (each value
 * expanded against what came before and the service variables), then the remaining service
 * variables. Missing required sources throw {@link PodWaiting} (CreateContainerConfigError).
 */
export function containerEnvironment(
  pod: k8s.V1Pod,
  container: k8s.V1Container,
  sources: EnvironmentSources,
  serviceEnv: readonly [string, string][],
): [string, string][] {
  const env = new Map<string, string>();
  const service = new Map(serviceEnv);
  const missing = (what: string): never => {
    throw new PodWaiting("CreateContainerConfigError", `container "${container.name}": ${what}`);
  };
  for (const from of container.envFrom ?? []) {
    const prefix = from.prefix ?? "";
    const [kind, ref] = from.secretRef
      ? (["secret", from.secretRef] as const)
      : from.configMapRef
        ? (["configmap", from.configMapRef] as const)
        : [undefined, undefined];
    if (!kind || !ref) continue;
    const data = (kind === "secret" ? sources.secrets : sources.configMaps).get(ref.name ?? "");
    if (!data) {
      if (ref.optional) continue;
      missing(`${kind} "${ref.name}" not found`);
    }
    for (const [key, value] of Object.entries(data ?? {})) if (!key.includes("=")) env.set(prefix + key, value);
  }
  const lookup = (name: string) => env.get(name) ?? service.get(name);
  for (const entry of container.env ?? []) {
    if (entry.value !== undefined) {
      env.set(entry.name, expandReferences(entry.value, lookup));
      continue;
    }
    const from = entry.valueFrom;
    if (!from) {
      env.set(entry.name, "");
      continue;
    }
    if (from.fieldRef) {
      const value = downwardValue(pod, from.fieldRef.fieldPath);
      if (value === undefined)
        throw new PodFailure(
          "CreateContainerConfigError",
          `container "${container.name}": env ${entry.name}: the chroot kubelet does not know field ${from.fieldRef.fieldPath}`,
        );
      env.set(entry.name, value);
    } else if (from.secretKeyRef || from.configMapKeyRef) {
      const ref = (from.secretKeyRef ?? from.configMapKeyRef)!;
      const kind = from.secretKeyRef ? "secret" : "configmap";
      const data = (kind === "secret" ? sources.secrets : sources.configMaps).get(ref.name ?? "");
      const value = data?.[ref.key];
      if (value === undefined) {
        if (ref.optional) continue;
        missing(data ? `${kind} "${ref.name}" has no key "${ref.key}"` : `${kind} "${ref.name}" not found`);
      }
      env.set(entry.name, value!);
    } else {
      throw new PodFailure(
        "CreateContainerConfigError",
        `container "${container.name}": env ${entry.name}: the chroot kubelet supports value, fieldRef, secretKeyRef and ` +
          `configMapKeyRef only`,
      );
    }
  }
  for (const [name, value] of serviceEnv) if (!env.has(name)) env.set(name, value);
  return [...env];
}

/** Whom a container runs as, and what it may not do. */
export interface ContainerUser {
  uid: number;
  gid: number;
  /** Supplementary groups: the Pod's fsGroup and supplementalGroups. */
  groups: number[];
  noNewPrivs: boolean;
  /** Capabilities taken out of the bounding set, lower case without CAP_ (`all` for ALL). */
  dropCapabilities: string[];
}

/**
 * Whom a container runs as, as the kubelet and a runtime decide it: runAsUser and runAsGroup of
 * the container, else of the Pod, else the image's `User` (`uid[:gid]`; a name stands for root,
 * as this kubelet reads no /etc/passwd). runAsNonRoot refuses uid 0 and user names
 * ({@link PodWaiting} CreateContainerConfigError, with the real kubelet's messages).
 */
export function containerUser(pod: k8s.V1PodSpec, container: k8s.V1Container, imageUser: string): ContainerUser {
  const own = container.securityContext ?? {};
  const shared = pod.securityContext ?? {};
  const [imageUid = "", imageGid = ""] = imageUser.split(":");
  const numeric = (text: string) => /^\d+$/.test(text);
  const runAsUser = own.runAsUser ?? shared.runAsUser;
  const uid = runAsUser ?? (numeric(imageUid) ? Number(imageUid) : 0);
  // A uid from the Pod has no group from the image (no /etc/passwd is read): gid 0, as containerd gives.
  const gid = own.runAsGroup ?? shared.runAsGroup ?? (runAsUser === undefined && numeric(imageGid) ? Number(imageGid) : 0);
  if (own.runAsNonRoot ?? shared.runAsNonRoot) {
    const refuse = (message: string): never => {
      throw new PodWaiting("CreateContainerConfigError", `${message} (container: ${container.name})`);
    };
    if (runAsUser === 0) refuse("container's runAsUser breaks non-root policy");
    if (runAsUser === undefined && imageUid && !numeric(imageUid))
      refuse(`container has runAsNonRoot and image has non-numeric user (${imageUid}), cannot verify user is non-root`);
    if (uid === 0) refuse("container has runAsNonRoot and image will run as root");
  }
  const groups = [...new Set([...(shared.fsGroup === undefined ? [] : [shared.fsGroup]), ...(shared.supplementalGroups ?? [])])];
  const dropCapabilities = (own.capabilities?.drop ?? []).map((name) => name.toLowerCase().replace(/^cap_/, ""));
  return { uid, gid, groups, noNewPrivs: own.allowPrivilegeEscalation === false, dropCapabilities };
}

/** Whether a reference names an image on a loopback registry (127.x, localhost, [::1]). */
export function isLoopbackReference(reference: string): boolean {
  const slash = reference.indexOf("/");
  if (slash < 0) return false;
  const host = reference.slice(0, slash).replace(/:\d+$/, "");
  return host === "localhost" || host === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** The host programs a container launch runs, by absolute path. */
export interface HostPrograms {
  sh: string;
  env: string;
  unshare: string;
  mount: string;
  mkdir: string;
  mknod: string;
  touch: string;
  cp: string;
  hostname: string;
  setpriv: string;
}

export interface ContainerLaunch {
  /** The container root: an overlay to mount at `merged`, or a directory (a private copy). */
  root: { overlay: { lower: string; upper: string; work: string; merged: string } } | { dir: string };
  /** The kubelet's /dev template (see {@link prepareDeviceTemplate}): copied, nodes and links, onto the container's tmpfs /dev. */
  devices: string;
  /** Bind mounts, in order; targets are link-free absolute paths inside the root. */
  mounts: readonly { source: string; target: string; readOnly: boolean; file: boolean }[];
  readOnlyRoot: boolean;
  hostname: string;
  workingDir: string;
  /** The link-free form of workingDir, created before the root goes read-only. */
  workingDirInRoot: string;
  env: readonly [string, string][];
  argv: readonly string[];
  /** Whom the command runs as once chrooted; absent: root, unrestricted. */
  user?: ContainerUser;
}

/** Exit code of a launch whose setup (mounts, nodes) failed before the container started. */
export const setupFailureExitCode = 125;

function quote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/**
 * The shell script that runs as PID 1 of a new mount, PID and UTS namespace: it builds the
 * container root (root overlay, /proc, /dev, bind mounts), makes it read-only if asked, sets
 * the hostname, then replaces itself with the container command under chroot (`unshare --root`,
 * which also sets the working directory) and the container's environment alone.
 */
export function launchScript(launch: ContainerLaunch, bin: HostPrograms): string {
  const lines = [`fail() { echo "chroot kubelet: $1" >&2; exit ${setupFailureExitCode}; }`];
  const root = "overlay" in launch.root ? launch.root.overlay.merged : launch.root.dir;
  lines.push(`R=${quote(root)}`);
  if ("overlay" in launch.root) {
    const { lower, upper, work } = launch.root.overlay;
    const options = quote(`lowerdir=${lower},upperdir=${upper},workdir=${work}`);
    lines.push(`${bin.mount} -t overlay overlay -o ${options} "$R" || fail "cannot mount the container root (overlay)"`);
  } else {
    lines.push(`${bin.mount} --bind "$R" "$R" || fail "cannot bind the container root"`);
  }
  // One copy of the kubelet's template, not a process per node and link: each process here is CPU every container pays.
  lines.push(
    `${bin.mkdir} -p "$R/proc" "$R/dev" || fail "cannot create /proc and /dev"`,
    `${bin.mount} -t proc proc "$R/proc" || fail "cannot mount /proc"`,
    `${bin.mount} -t tmpfs -o mode=755,nosuid tmpfs "$R/dev" || fail "cannot mount /dev"`,
    `${bin.cp} -a ${quote(`${launch.devices}/.`)} "$R/dev/" || fail "cannot populate /dev"`,
  );
  for (const mount of launch.mounts) {
    const target = `"$R"${quote(mount.target)}`;
    if (mount.file) {
      const parent = `"$R"${quote(posix.dirname(mount.target))}`;
      lines.push(
        `${bin.mkdir} -p ${parent} && { [ -e ${target} ] || ${bin.touch} ${target}; } || fail ${quote(`cannot create ${mount.target}`)}`,
      );
    } else lines.push(`${bin.mkdir} -p ${target} || fail ${quote(`cannot create ${mount.target}`)}`);
    // A read-only one in the same command: mount(8) remounts the bind read-only itself.
    const options = mount.readOnly ? " -o ro" : "";
    lines.push(`${bin.mount} --bind${options} ${quote(mount.source)} ${target} || fail ${quote(`cannot mount ${mount.target}`)}`);
  }
  lines.push(
    `${bin.mkdir} -p "$R"${quote(launch.workingDirInRoot)} || fail ${quote(`cannot create the working directory ${launch.workingDir}`)}`,
  );
  if (launch.readOnlyRoot) lines.push(`${bin.mount} -o remount,bind,ro "$R" || fail "cannot make the root read-only"`);
  lines.push(`${bin.hostname} ${quote(launch.hostname)} || fail "cannot set the hostname"`);
  const env = launch.env.map(([name, value]) => quote(`${name}=${value}`)).join(" ");
  const chroot = `${bin.unshare} --root="$R" --wd=${quote(launch.workingDir)}`;
  const argv = launch.argv.map(quote).join(" ");
  if (!launch.user) {
    lines.push(`exec ${bin.env} -i ${env} ${chroot} -- ${argv}`);
  } else {
    // setpriv sets the groups and limits while still root; unshare chroots, then setuid drops root.
    lines.push(
      `exec ${bin.env} -i ${env} ${setprivArgs(bin.setpriv, launch.user).join(" ")} -- ${chroot} --setuid=${launch.user.uid} -- ${argv}`,
    );
  }
  return `${lines.join("\n")}\n`;
}

/**
 * Lays out in `dir` what every container's /dev holds, as a container runtime gives it: the nodes null, zero, random,
 * urandom and tty (mode 666), shm (1777), and fd, stdin, stdout and stderr linked into /proc/self/fd. Made once per
 * kubelet; each launch copies it onto the container's own tmpfs.
 */
export function prepareDeviceTemplate(dir: string, mknod: string): void {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, "shm"), { recursive: true });
  chmodSync(dir, 0o755);
  chmodSync(join(dir, "shm"), 0o1777);
  for (const [name, major, minor] of [
    ["null", "1", "3"],
    ["zero", "1", "5"],
    ["random", "1", "8"],
    ["urandom", "1", "9"],
    ["tty", "5", "0"],
  ] as const)
    execFileSync(mknod, ["-m", "666", join(dir, name), "c", major, minor]);
  for (const [target, name] of [
    ["/proc/self/fd", "fd"],
    ["/proc/self/fd/0", "stdin"],
    ["/proc/self/fd/1", "stdout"],
    ["/proc/self/fd/2", "stderr"],
  ] as const)
    symlinkSync(target, join(dir, name));
}

/**
 * The `setpriv` command that gives a root process a container's gid, supplementary groups,
 * no_new_privs and bounding set, before a chroot and a setuid that still need root: the bounding
 * set keeps CAP_SYS_CHROOT and CAP_SETUID for them (setuid to a non-root uid clears them anyway).
 */
export function setprivArgs(setpriv: string, user: ContainerUser): string[] {
  const args = [setpriv, `--regid=${user.gid}`, user.groups.length ? `--groups=${user.groups.join(",")}` : "--clear-groups"];
  if (user.noNewPrivs) args.push("--no-new-privs");
  if (user.dropCapabilities.length) {
    const drops = user.dropCapabilities.map((name) => `-${name}`);
    args.push(`--bounding-set=${[...drops, "+sys_chroot", "+setuid"].join(",")}`);
  }
  return args;
}

/** The first 4096 bytes of a termination-message file, as the kubelet reads it. */
export function readTerminationMessage(file: string, limit = 4096): string {
  let fd: number;
  try {
    fd = openSync(file, "r");
  } catch {
    return "";
  }
  try {
    const buffer = Buffer.alloc(limit);
    const read = readSync(fd, buffer, 0, limit, 0);
    return buffer.subarray(0, read).toString("utf8");
  } finally {
    closeSync(fd);
  }
}

/** The last 80 lines (at most 2048 bytes) of a log: a FallbackToLogsOnError message. */
export function logTail(text: string): string {
  const lines = text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  let tail = lines.slice(-80).join("\n");
  while (Buffer.byteLength(tail) > 2048) tail = tail.slice(Math.max(1, tail.length - 2048));
  return tail;
}

// ---------------------------------------------------------------------------------------------
// The manager image's root, for the Job's init container.

/**
 * Lays out, in `rootDir`, a root like the manager image's for the Job's init container: this
 * machine's `node` at /usr/local/bin/node with the libraries `ldd` names at their usual paths,
 * and the runner bundle (`packages/runner/scripts/build-bundle.mjs --out <bundleDir>`) at
 * /opt/captf/runner, so `node /opt/captf/runner/runner.mjs copy /captf/bin` (the Job's default
 * init command) works. Return it from an {@link ImageResolver} for the manager image reference.
 */
export function prepareRunnerImageRoot(rootDir: string, bundleDir: string): ResolvedImage {
  const node = realpathSync(process.execPath);
  // Copies, not hard links: a container must never share an inode with this machine's files.
  const place = (from: string, to: string) => {
    mkdirSync(dirname(to), { recursive: true });
    cpSync(from, to);
  };
  place(node, join(rootDir, "usr/local/bin/node"));
  for (const line of execFileSync("ldd", [node], { encoding: "utf8" }).split("\n")) {
    const path = /=>\s+(\/\S+)/.exec(line)?.[1] ?? /^\s*(\/\S+)\s+\(/.exec(line)?.[1];
    if (path) place(realpathSync(path), join(rootDir, path));
  }
  cpSync(bundleDir, join(rootDir, "opt/captf/runner"), { recursive: true });
  mkdirSync(join(rootDir, "tmp"), { recursive: true, mode: 0o1777 });
  return { rootfs: rootDir, env: ["PATH=/usr/local/bin:/usr/bin:/bin"] };
}

// ---------------------------------------------------------------------------------------------
// The kubelet.

const loopbackAddress = "127.0.0.1";
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";
const defaultFileMode = 0o644;

interface PulledImage {
  rootfs: string;
  env: string[];
  entrypoint: string[];
  cmd: string[];
  workingDir: string;
  imageID: string;
  /** The image config's User ("" for root). */
  user: string;
}

interface ContainerState {
  waiting?: { reason: string; message?: string };
  running?: { startedAt: string };
  terminated?: {
    exitCode: number;
    signal?: number;
    reason: string;
    message?: string;
    startedAt: string;
    finishedAt: string;
    containerID: string;
  };
}

interface ContainerRecord {
  spec: k8s.V1Container;
  init: boolean;
  /** A native sidecar: an init container with `restartPolicy: Always`. */
  sidecar: boolean;
  /** The current run counts as started: spawned, and its startupProbe (sidecars only) passed. */
  started: boolean;
  /** It has started at least once: from then on a sidecar no longer holds back Initialized. */
  startedOnce: boolean;
  imageID: string;
  state: ContainerState;
  lastState: ContainerState;
  restartCount: number;
  containerID?: string;
}

interface PreparedPod {
  dir: string;
  images: Map<string, PulledImage>;
  /** Volume name → host path, whether its files are read-only by nature (Secrets and the like). */
  volumes: Map<string, { path: string; readOnly: boolean }>;
  env: Map<string, [string, string][]>;
  tokenDir?: string;
  hostsFile: string;
  /** Whom each container runs as, by name. */
  users: Map<string, ContainerUser>;
}

type TaskPhase = "queued" | "running" | "waiting" | "done";

interface PodTask {
  uid: string;
  namespace: string;
  name: string;
  pod: k8s.V1Pod;
  phase: TaskPhase;
  startTime?: string;
  containers: Map<string, ContainerRecord>;
  processes: Map<string, ChildProcess>;
  stop?: { reason: "deleted" | "deadline" | "kubelet" };
  killAt?: number;
  killTimer?: NodeJS.Timeout;
  deadlineTimer?: NodeJS.Timeout;
  retryTimer?: NodeJS.Timeout;
  attempts: number;
  /** The phase written while containers run: Pending during the init containers, then Running. */
  runningPhase: "Pending" | "Running";
  /** One supervisor per started sidecar, by name: it restarts the sidecar until the Pod ends. */
  sidecars: Map<string, Promise<void>>;
  /** The main containers have ended (or the Pod is stopping): sidecars are not restarted any more. */
  sidecarsStopping: boolean;
  /** Resolves once the Pod is ending (stopped, or its sidecars stopping), so back-offs and waits end early. */
  ending: Promise<void>;
  end: () => void;
  statusWrites: LatestStatusWrites;
  conditionTimes: Map<string, { status: string; time: string }>;
  /** The API object is gone (DELETED event): write nothing more. */
  gone: boolean;
}

const now = () => new Date().toISOString();
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());
/** The wait before a container's restart number `attempt` (from 0): 1 s, doubling up to 30 s. */
const restartBackoff = (attempt: number) => Math.min(1000 * 2 ** attempt, 30_000);
const execFileAsync = promisify(execFile);

function apiCode(error: unknown): number | undefined {
  return error instanceof k8s.ApiException ? error.code : undefined;
}

function describeError(error: unknown): string {
  if (error instanceof k8s.ApiException) {
    const body = error.body as { message?: string } | string | undefined;
    return `HTTP ${error.code}: ${typeof body === "object" && body?.message ? body.message : String(body ?? error.message).slice(0, 300)}`;
  }
  return error instanceof Error ? error.message : String(error);
}

function findProgram(name: string): string {
  for (const dir of [
    ...(process.env.PATH ?? "").split(":"),
    "/usr/local/sbin",
    "/usr/local/bin",
    "/usr/sbin",
    "/usr/bin",
    "/sbin",
    "/bin",
  ]) {
    if (!dir) continue;
    const candidate = join(dir, name);
    if (existsSync(candidate)) return candidate;
  }
  throw new Error(`the chroot kubelet needs ${name} on this machine (Debian: util-linux, coreutils, mount, hostname)`);
}

/**
 * The host PID of a container's process (PID 1 of its namespace: the only child of the launch's
 * `unshare --fork`), once it runs chrooted; undefined while the launch is still mounting.
 */
function containerProcess(launch: ChildProcess): number | undefined {
  try {
    const pid = Number(readFileSync(`/proc/${launch.pid}/task/${launch.pid}/children`, "utf8").trim().split(" ")[0]);
    return pid > 0 && readlinkSync(`/proc/${pid}/root`) !== "/" ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Root with nothing taken away: launched without setpriv, as before users existed here. */
function isPlainRoot(user: ContainerUser): boolean {
  return user.uid === 0 && user.gid === 0 && user.groups.length === 0 && !user.noNewPrivs && user.dropCapabilities.length === 0;
}

function signalNumber(signal: NodeJS.Signals): number {
  return (osConstants.signals as Record<string, number>)[signal] ?? 0;
}

function decodeBase64Map(data: Record<string, string> | undefined): Record<string, Buffer> {
  return Object.fromEntries(Object.entries(data ?? {}).map(([key, value]) => [key, Buffer.from(value, "base64")]));
}

function textMap(data: Record<string, Buffer>): Record<string, string> {
  return Object.fromEntries(Object.entries(data).map(([key, value]) => [key, value.toString("utf8")]));
}

/** A Pod's Secrets and ConfigMaps, each read once (null: not found), for its volumes and its containers' environments. */
class PodObjectReads {
  readonly #secrets = new Map<string, Record<string, Buffer> | null>();
  readonly #configMaps = new Map<string, Record<string, Buffer> | null>();

  constructor(
    private readonly core: k8s.CoreV1Api,
    private readonly namespace: string,
  ) {}

  async secret(name: string): Promise<Record<string, Buffer> | null> {
    if (!this.#secrets.has(name)) {
      const secret = await this.core
        .readNamespacedSecret({ name, namespace: this.namespace })
        .catch((error: unknown) => (apiCode(error) === 404 ? null : Promise.reject(error)));
      this.#secrets.set(name, secret ? decodeBase64Map(secret.data) : null);
    }
    return this.#secrets.get(name)!;
  }

  async configMap(name: string): Promise<Record<string, Buffer> | null> {
    if (!this.#configMaps.has(name)) {
      const map = await this.core
        .readNamespacedConfigMap({ name, namespace: this.namespace })
        .catch((error: unknown) => (apiCode(error) === 404 ? null : Promise.reject(error)));
      this.#configMaps.set(
        name,
        map
          ? {
              ...Object.fromEntries(Object.entries(map.data ?? {}).map(([key, value]) => [key, Buffer.from(value, "utf8")])),
              ...decodeBase64Map(map.binaryData),
            }
          : null,
      );
    }
    return this.#configMaps.get(name)!;
  }

  /** Everything read so far, as text: what the containers' env and envFrom take. */
  environmentSources(): EnvironmentSources {
    const texts = (map: Map<string, Record<string, Buffer> | null>) =>
      new Map([...map].map(([name, data]) => [name, data ? textMap(data) : null]));
    return { secrets: texts(this.#secrets), configMaps: texts(this.#configMaps) };
  }
}

function writeProjectedFiles(root: string, files: readonly ProjectedFile[], owner: { uid: number; gid: number }): void {
  for (const file of files) {
    const path = join(root, file.path);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, file.content);
    chmodSync(path, file.mode & 0o777);
    chownSync(path, owner.uid, owner.gid);
  }
}

function downwardFiles(
  pod: k8s.V1Pod,
  items: readonly k8s.V1DownwardAPIVolumeFile[],
  defaultMode: number,
  volume: string,
): ProjectedFile[] {
  return items.map((item) => {
    checkRelativePath(item.path, `volume ${volume}`);
    const fieldPath = item.fieldRef?.fieldPath;
    const value = fieldPath ? downwardValue(pod, fieldPath) : undefined;
    if (value === undefined)
      throw new PodFailure("InvalidVolume", `volume ${volume}: the chroot kubelet supports fieldRef items only, of known fields`);
    return { path: item.path, content: Buffer.from(value), mode: item.mode ?? defaultMode };
  });
}

/** Who owns a projected volume's files: group fsGroup, else the one non-root user of the containers mounting it. */
function projectedOwner(task: PodTask, prepared: PreparedPod, volume: string): { uid: number; gid: number } {
  const fsGroup = task.pod.spec?.securityContext?.fsGroup;
  if (fsGroup !== undefined) return { uid: 0, gid: fsGroup };
  const uids = new Set(
    [...task.containers.values()]
      .filter((r) => r.spec.volumeMounts?.some((m) => m.name === volume))
      .map((r) => prepared.users.get(r.spec.name)!.uid),
  );
  const [only] = uids;
  return uids.size === 1 && only !== 0 ? { uid: only!, gid: 0 } : { uid: 0, gid: 0 };
}

/** A container's mounts, shallowest first: its volumes, the ServiceAccount token, /etc/hosts and the termination log. */
function containerMounts(
  prepared: PreparedPod,
  spec: k8s.V1Container,
  image: PulledImage,
  terminationFile: string,
): ContainerLaunch["mounts"][number][] {
  const mounts: ContainerLaunch["mounts"][number][] = [];
  const mountPaths = new Set<string>();
  for (const mount of [...(spec.volumeMounts ?? [])].sort((a, b) => a.mountPath.split("/").length - b.mountPath.split("/").length)) {
    const volume = prepared.volumes.get(mount.name)!;
    const subPath = mount.subPath ?? "";
    const source = subPath ? join(volume.path, subPath) : volume.path;
    if (subPath && !existsSync(source)) mkdirSync(source, { recursive: true });
    mountPaths.add(posix.normalize(mount.mountPath));
    mounts.push({
      source,
      target: resolveInRoot(image.rootfs, mount.mountPath),
      readOnly: Boolean(mount.readOnly) || volume.readOnly,
      file: !statSync(source).isDirectory(),
    });
  }
  if (prepared.tokenDir && !mountPaths.has(serviceAccountDir))
    mounts.push({ source: prepared.tokenDir, target: resolveInRoot(image.rootfs, serviceAccountDir), readOnly: true, file: false });
  if (!mountPaths.has("/etc/hosts"))
    mounts.push({ source: prepared.hostsFile, target: resolveInRoot(image.rootfs, "/etc/hosts"), readOnly: false, file: true });
  const messagePath = spec.terminationMessagePath || "/dev/termination-log";
  mounts.push({
    source: terminationFile,
    target: messagePath.startsWith("/dev/") ? posix.normalize(messagePath) : resolveInRoot(image.rootfs, messagePath),
    readOnly: false,
    file: true,
  });
  return mounts;
}

/**
 * The reason and message of a container's end: StartError when the launch script or unshare could not start it,
 * else Completed or Error with its termination message (or its log's tail, as FallbackToLogsOnError asks).
 */
function containerEnd(
  exitCode: number,
  logText: string,
  terminationMessage: string,
  spec: k8s.V1Container,
): { reason: string; message: string } {
  const lastLine = logTail(logText).split("\n").at(-1) ?? "";
  if (exitCode === setupFailureExitCode && lastLine.startsWith("chroot kubelet: ")) return { reason: "StartError", message: lastLine };
  if ((exitCode === 126 || exitCode === 127) && /^unshare: failed to execute/.test(lastLine))
    return { reason: "StartError", message: lastLine.replace(/^unshare: /, "") };
  const reason = exitCode === 0 ? "Completed" : "Error";
  if (!terminationMessage && exitCode !== 0 && spec.terminationMessagePolicy === "FallbackToLogsOnError")
    return { reason, message: logTail(logText) };
  return { reason, message: terminationMessage };
}

/** Every container mounts only volumes the Pod declares, with relative subPaths. */
function checkVolumeMounts(task: PodTask, prepared: PreparedPod): void {
  for (const record of task.containers.values()) {
    for (const mount of record.spec.volumeMounts ?? []) {
      if (!prepared.volumes.has(mount.name))
        throw new PodFailure(
          "CreateContainerConfigError",
          `container "${record.spec.name}" mounts volume "${mount.name}", which the Pod does not declare`,
        );
      if (mount.subPath) checkRelativePath(mount.subPath, `volume mount ${mount.name} of container "${record.spec.name}"`);
    }
  }
}

function stateJson(state: ContainerState): Record<string, unknown> {
  // Explicit nulls: a strategic-merge patch would otherwise keep the previous state's key.
  return { waiting: state.waiting ?? null, running: state.running ?? null, terminated: state.terminated ?? null };
}

function isTerminalPhase(phase: string | undefined): boolean {
  return phase === "Succeeded" || phase === "Failed";
}

/** A Pod whose containers end (a Job's: restartPolicy Never or OnFailure); a service's Pod (Always, the default) does not. Pure. */
export function runsToCompletion(pod: k8s.V1Pod): boolean {
  return (pod.spec?.restartPolicy ?? "Always") !== "Always";
}

/** Memory a Job's Pod takes on this plane, at most: the runner (node) and OpenTofu with a small module's providers. */
export const podMemoryBytes = 256 * 1024 * 1024;

/**
 * Pods that run to completion at the same time on a machine of `cores` cores with `freeBytes` of memory free:
 * two per core (a run waits on the API server and its providers about as long as it computes), as many as
 * {@link podMemoryBytes} each fit in the free memory, at least one. Pure.
 */
export function parallelPodsFor(cores: number, freeBytes: number): number {
  return Math.max(1, Math.min(2 * cores, Math.floor(freeBytes / podMemoryBytes)));
}

class Kubelet implements ChrootKubelet {
  readonly nodeName: string;
  readonly workDir: string;
  rootfsMode: "overlay" | "copy" = "copy";
  private readonly ownsWorkDir: boolean;
  private readonly kc = new k8s.KubeConfig();
  private readonly core: k8s.CoreV1Api;
  private readonly log: (line: string) => void;
  private readonly maxParallel: number;
  private readonly bin: HostPrograms;
  private readonly tasks = new Map<string, PodTask>();
  private readonly finished = new Set<string>();
  private readonly finalizing = new Set<string>();
  private readonly binding = new Set<string>();
  private readonly queue: PodTask[] = [];
  private readonly runs = new Set<Promise<void>>();
  private readonly images = new Map<string, Promise<PulledImage>>();
  /** Each image pulled, by its manifest digest: a Pod naming it by digest (a destroy's pinned image) reuses its root. */
  private readonly imagesByDigest = new Map<string, Promise<PulledImage>>();
  private readonly watches = new Set<AbortController>();
  private readonly loops: Promise<void>[] = [];
  private readonly wakeups = new Set<() => void>();
  private running = 0;
  private stopped = false;
  private heartbeat?: NodeJS.Timeout;
  private readonly serviceEnv: [string, string][];
  private readonly caPem: Buffer | undefined;
  private cgroups?: ContainerCgroups;
  /** Container runs accounted, in the order they started: a running one's figure is read when asked. */
  private readonly cpuRuns: (ContainerCpu & { procs: string })[] = [];

  constructor(private readonly options: ChrootKubeletOptions) {
    this.nodeName = options.nodeName;
    this.ownsWorkDir = !options.workDir;
    this.workDir = options.workDir ?? mkdtempSync(join(tmpdir(), "captf-kubelet-"));
    this.log = options.log ?? (() => undefined);
    this.maxParallel = Math.max(1, options.maxParallel ?? 1);
    this.kc.loadFromFile(options.kubeconfigPath);
    this.core = this.kc.makeApiClient(k8s.CoreV1Api);
    const cluster = this.kc.getCurrentCluster();
    if (!cluster) throw new Error(`${options.kubeconfigPath} has no current cluster`);
    const server = new URL(cluster.server);
    const port = server.port || (server.protocol === "https:" ? "443" : "80");
    const host = server.hostname.replace(/^\[(.*)\]$/, "$1");
    this.serviceEnv = [
      ["KUBERNETES_SERVICE_HOST", host],
      ["KUBERNETES_SERVICE_PORT", port],
      ["KUBERNETES_SERVICE_PORT_HTTPS", port],
      ["KUBERNETES_PORT", `tcp://${server.host}`],
      [`KUBERNETES_PORT_${port}_TCP`, `tcp://${server.host}`],
      [`KUBERNETES_PORT_${port}_TCP_PROTO`, "tcp"],
      [`KUBERNETES_PORT_${port}_TCP_PORT`, port],
      [`KUBERNETES_PORT_${port}_TCP_ADDR`, host],
    ];
    this.caPem = cluster.caData ? Buffer.from(cluster.caData, "base64") : cluster.caFile ? readFileSync(cluster.caFile) : undefined;
    this.bin = {
      sh: findProgram("sh"),
      env: findProgram("env"),
      unshare: findProgram("unshare"),
      mount: findProgram("mount"),
      mkdir: findProgram("mkdir"),
      mknod: findProgram("mknod"),
      touch: findProgram("touch"),
      cp: findProgram("cp"),
      hostname: findProgram("hostname"),
      setpriv: findProgram("setpriv"),
    };
    for (const dir of ["images", "pods", "logs"]) mkdirSync(join(this.workDir, dir), { recursive: true });
    prepareDeviceTemplate(this.devicesDir, this.bin.mknod);
  }

  /** What every container's /dev starts as ({@link prepareDeviceTemplate}). */
  private get devicesDir(): string {
    return join(this.workDir, "devices");
  }

  containerLog(namespace: string, pod: string, container: string): string {
    try {
      return readFileSync(this.logFile(namespace, pod, container), "utf8");
    } catch {
      return "";
    }
  }

  private logFile(namespace: string, pod: string, container: string): string {
    return join(this.workDir, "logs", `${namespace}_${pod}_${container}.log`);
  }

  containerCpu(): ContainerCpu[] {
    return this.cpuRuns.map(({ procs, ...run }) => (run.running && this.cgroups ? { ...run, seconds: this.cgroups.seconds(procs) } : run));
  }

  async start(): Promise<void> {
    if (this.options.cpuAccounting ?? true) this.cgroups = ContainerCgroups.open(`captf-kubelet-${this.nodeName}-${process.pid}`);
    const wanted = this.options.rootfs ?? "auto";
    this.rootfsMode = wanted === "copy" ? "copy" : (await this.overlayWorks()) ? "overlay" : "copy";
    if (wanted === "overlay" && this.rootfsMode !== "overlay")
      throw new Error(`overlayfs does not work under ${this.workDir}: use rootfs "copy" or "auto"`);
    await this.registerNode();
    const period = (this.options.heartbeatSeconds ?? 10) * 1000;
    this.heartbeat = setInterval(
      () => void this.patchNodeStatus().catch((error) => this.log(`node heartbeat failed: ${describeError(error)}`)),
      period,
    );
    this.heartbeat.unref();
    const scopes = this.options.namespaces?.length ? [...this.options.namespaces] : [undefined];
    for (const namespace of scopes) this.loops.push(this.watchLoop(namespace));
    const accounting = this.cgroups ? "CPU accounted per container" : "no CPU accounting";
    this.log(
      `node ${this.nodeName} ready (${this.rootfsMode} roots, ${this.maxParallel} at a time, ${accounting}, work dir ${this.workDir})`,
    );
  }

  private async overlayWorks(): Promise<boolean> {
    if (/[,:\\\s]/.test(this.workDir)) return false;
    const probe = mkdtempSync(join(this.workDir, "overlay-probe-"));
    try {
      for (const dir of ["lower", "upper", "work", "merged"]) mkdirSync(join(probe, dir));
      await execFileAsync(this.bin.unshare, [
        "--mount",
        "--propagation",
        "private",
        this.bin.mount,
        "-t",
        "overlay",
        "overlay",
        "-o",
        `lowerdir=${join(probe, "lower")},upperdir=${join(probe, "upper")},workdir=${join(probe, "work")}`,
        join(probe, "merged"),
      ]);
      return true;
    } catch {
      return false;
    } finally {
      rmSync(probe, { recursive: true, force: true });
    }
  }

  // --- the Node ---

  private nodeLabels(): Record<string, string> {
    return {
      "kubernetes.io/hostname": this.nodeName,
      "kubernetes.io/os": "linux",
      "kubernetes.io/arch": "amd64",
      "captf.io/chroot-kubelet": "true",
    };
  }

  private async registerNode(): Promise<void> {
    try {
      await this.core.createNode({ body: { metadata: { name: this.nodeName, labels: this.nodeLabels() } } });
    } catch (error) {
      if (apiCode(error) !== 409) throw new Error(`registering node ${this.nodeName}: ${describeError(error)}`);
    }
    await this.patchNodeStatus(true);
  }

  private nodeReadySince = now();

  private async patchNodeStatus(full = false): Promise<void> {
    const time = now();
    const condition = (type: string, status: string, reason: string, message: string) => ({
      type,
      status,
      reason,
      message,
      lastHeartbeatTime: time,
      lastTransitionTime: this.nodeReadySince,
    });
    const conditions = [
      condition("Ready", "True", "KubeletReady", "the captf chroot kubelet is posting ready status"),
      condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "no memory pressure"),
      condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "no disk pressure"),
      condition("PIDPressure", "False", "KubeletHasSufficientPID", "no PID pressure"),
    ];
    const status: Record<string, unknown> = { conditions };
    if (full) {
      const resources = { cpu: String(cpus().length), memory: `${Math.floor(totalmem() / 1024)}Ki`, pods: "110" };
      Object.assign(status, {
        addresses: [
          { type: "InternalIP", address: loopbackAddress },
          { type: "Hostname", address: this.nodeName },
        ],
        capacity: resources,
        allocatable: resources,
        daemonEndpoints: { kubeletEndpoint: { Port: 0 } },
        nodeInfo: {
          machineID: createHash("sha256").update(this.nodeName).digest("hex").slice(0, 32),
          systemUUID: this.nodeName,
          bootID: this.nodeName,
          kernelVersion: release(),
          osImage: "captf chroot kubelet",
          containerRuntimeVersion: "chroot://1",
          kubeletVersion: "v0.0.0-captf-chroot",
          kubeProxyVersion: "",
          operatingSystem: "linux",
          architecture: "amd64",
        },
      });
    }
    await this.core.patchNodeStatus(
      { name: this.nodeName, body: { status } },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.StrategicMergePatch),
    );
  }

  // --- watching Pods ---

  private async watchLoop(namespace: string | undefined): Promise<void> {
    const watch = new k8s.Watch(this.kc);
    const path = namespace ? `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods` : "/api/v1/pods";
    while (!this.stopped) {
      try {
        const list = namespace ? await this.core.listNamespacedPod({ namespace }) : await this.core.listPodForAllNamespaces();
        const seen = new Set<string>();
        for (const pod of list.items) {
          seen.add(pod.metadata?.uid ?? "");
          this.onPod("SYNC", pod);
        }
        for (const task of [...this.tasks.values()])
          if ((!namespace || task.namespace === namespace) && !seen.has(task.uid)) this.onPod("DELETED", task.pod);
        if (this.stopped) break;
        await new Promise<void>((resolve) => {
          let controller: AbortController | undefined;
          const done = () => {
            if (controller) this.watches.delete(controller);
            this.wakeups.delete(done);
            resolve();
          };
          this.wakeups.add(done);
          watch
            .watch(
              path,
              { resourceVersion: list.metadata?.resourceVersion, allowWatchBookmarks: true },
              (type, object) => {
                if (type === "ADDED" || type === "MODIFIED" || type === "DELETED") this.onPod(type, object as k8s.V1Pod);
              },
              done,
            )
            .then((created) => {
              controller = created;
              if (this.stopped) created.abort();
              else this.watches.add(created);
            })
            .catch((error: unknown) => {
              this.log(`watching pods failed: ${describeError(error)}`);
              done();
            });
        });
      } catch (error) {
        if (!this.stopped) this.log(`listing pods failed: ${describeError(error)}`);
      }
      if (!this.stopped) await sleep(500);
    }
  }

  private onPod(type: string, pod: k8s.V1Pod): void {
    if (this.stopped) return;
    const uid = pod.metadata?.uid;
    if (!uid) return;
    const task = this.tasks.get(uid);
    if (type === "DELETED") {
      if (task) {
        task.gone = true;
        task.pod = pod;
        this.stopTask(task, "deleted", 0);
      }
      return;
    }
    if (!pod.spec?.nodeName) {
      this.maybeBind(pod);
      return;
    }
    if (pod.spec.nodeName !== this.nodeName) return;
    if (task) task.pod = pod;
    if (pod.metadata?.deletionTimestamp) {
      const grace = pod.metadata.deletionGracePeriodSeconds ?? pod.spec.terminationGracePeriodSeconds ?? 30;
      if (task) this.stopTask(task, "deleted", grace);
      else void this.finalize(pod);
      return;
    }
    if (task || this.finished.has(uid) || isTerminalPhase(pod.status?.phase)) return;
    let end = () => {};
    const ending = new Promise<void>((resolve) => (end = resolve));
    const created: PodTask = {
      uid,
      namespace: pod.metadata?.namespace ?? "default",
      name: pod.metadata?.name ?? uid,
      pod,
      phase: "queued",
      containers: new Map(),
      processes: new Map(),
      attempts: 0,
      runningPhase: "Pending",
      sidecars: new Map(),
      sidecarsStopping: false,
      ending,
      end,
      statusWrites: new LatestStatusWrites(),
      conditionTimes: new Map(),
      gone: false,
    };
    const record = (spec: k8s.V1Container, init: boolean): ContainerRecord => ({
      spec,
      init,
      sidecar: init && spec.restartPolicy === "Always",
      started: false,
      startedOnce: false,
      imageID: "",
      state: { waiting: { reason: init ? "PodInitializing" : "ContainerCreating" } },
      lastState: {},
      restartCount: 0,
    });
    for (const spec of pod.spec.initContainers ?? []) created.containers.set(spec.name, record(spec, true));
    for (const spec of pod.spec.containers) created.containers.set(spec.name, record(spec, false));
    this.tasks.set(uid, created);
    this.queue.push(created);
    this.log(`queued ${created.namespace}/${created.name}`);
    this.pump();
  }

  private maybeBind(pod: k8s.V1Pod): void {
    const uid = pod.metadata!.uid!;
    const scheduler = pod.spec?.schedulerName;
    if (scheduler && scheduler !== "default-scheduler") return;
    if (pod.metadata?.deletionTimestamp || isTerminalPhase(pod.status?.phase) || this.binding.has(uid)) return;
    const labels = this.nodeLabels();
    if (Object.entries(pod.spec?.nodeSelector ?? {}).some(([key, value]) => labels[key] !== value)) return;
    this.binding.add(uid);
    const namespace = pod.metadata!.namespace!;
    const name = pod.metadata!.name!;
    this.core
      .createNamespacedPodBinding({
        name,
        namespace,
        body: { metadata: { name, namespace }, target: { apiVersion: "v1", kind: "Node", name: this.nodeName } },
      })
      .then(() => this.log(`bound ${namespace}/${name}`))
      .catch((error: unknown) => {
        this.binding.delete(uid);
        if (apiCode(error) !== 409 && apiCode(error) !== 404) this.log(`binding ${namespace}/${name} failed: ${describeError(error)}`);
      });
  }

  // --- running Pods ---

  private pump(): void {
    // In order of arrival; a service's Pod starts whatever the count, as it never ends to free a slot.
    for (let at = 0; !this.stopped && at < this.queue.length; ) {
      const task = this.queue[at]!;
      const takesSlot = runsToCompletion(task.pod);
      if (takesSlot && this.running >= this.maxParallel) {
        at++;
        continue;
      }
      this.queue.splice(at, 1);
      if (takesSlot) this.running++;
      task.phase = "running";
      const run = this.runTask(task).finally(() => {
        if (takesSlot) this.running--;
        this.runs.delete(run);
        this.pump();
      });
      this.runs.add(run);
    }
  }

  private async runTask(task: PodTask): Promise<void> {
    task.attempts++;
    if (!task.startTime) {
      task.startTime = now();
      const deadline = task.pod.spec?.activeDeadlineSeconds;
      if (deadline) {
        task.deadlineTimer = setTimeout(
          () => this.stopTask(task, "deadline", task.pod.spec?.terminationGracePeriodSeconds ?? 30),
          deadline * 1000,
        );
        task.deadlineTimer.unref();
      }
    }
    let prepared: PreparedPod | undefined;
    try {
      if (task.stop) return await this.finish(task);
      this.writeStatus(task, "Pending");
      prepared = await this.preparePod(task);
      try {
        if ((await this.runInitContainers(task, prepared)) && !task.stop) {
          const mains = [...task.containers.values()].filter((r) => !r.init);
          for (const record of mains) record.state = { waiting: { reason: "ContainerCreating" } };
          task.runningPhase = "Running";
          await Promise.all(mains.map((record) => this.runWithRestarts(task, prepared!, record)));
        }
      } finally {
        // Before the final status write, so that it carries the sidecars' ends and messages.
        await this.stopSidecars(task);
      }
      await this.finish(task);
    } catch (error) {
      if (error instanceof PodWaiting && !task.stop && !this.stopped) {
        for (const record of task.containers.values())
          if (!record.state.terminated) record.state = { waiting: { reason: error.reason, message: error.message } };
        this.log(`${task.namespace}/${task.name} waits: ${error.reason}: ${error.message}`);
        this.writeStatus(task, "Pending");
        const delay = Math.min(1000 * 2 ** Math.min(task.attempts, 5), 30_000);
        task.phase = "waiting";
        task.retryTimer = setTimeout(() => {
          task.retryTimer = undefined;
          if (task.stop || this.stopped) return;
          task.phase = "queued";
          this.queue.push(task);
          this.pump();
        }, delay);
        task.retryTimer.unref();
      } else if (!this.stopped) {
        const reason = error instanceof PodFailure || error instanceof PodWaiting ? error.reason : "KubeletError";
        this.log(`${task.namespace}/${task.name} failed: ${reason}: ${describeError(error)}`);
        await this.finish(task, { reason, message: describeError(error) });
      }
    } finally {
      if (prepared && task.phase !== "waiting") rmSync(prepared.dir, { recursive: true, force: true });
    }
  }

  private async finish(task: PodTask, failure?: { reason: string; message: string }): Promise<void> {
    task.phase = "done";
    clearTimeout(task.deadlineTimer);
    clearTimeout(task.killTimer);
    clearTimeout(task.retryTimer);
    if (this.stopped) return;
    const records = [...task.containers.values()];
    for (const record of records) {
      if (!record.state.terminated)
        record.state = {
          waiting: { reason: record.init ? "PodInitializing" : "ContainerCreating", ...(failure ? { message: failure.message } : {}) },
        };
    }
    // A Pod deleted after its containers all ended with 0 still Succeeded; a deadline never does.
    // Sidecars do not count: they end by SIGTERM, whatever their exit code says.
    const succeeded =
      !failure && task.stop?.reason !== "deadline" && records.every((record) => record.sidecar || record.state.terminated?.exitCode === 0);
    const phase = succeeded ? "Succeeded" : "Failed";
    const podReason =
      task.stop?.reason === "deadline"
        ? { reason: "DeadlineExceeded", message: "Pod was active on the node longer than the specified deadline" }
        : failure;
    this.finished.add(task.uid);
    this.log(`${task.namespace}/${task.name} ${phase}${podReason ? ` (${podReason.reason})` : ""}`);
    this.writeStatus(task, phase, podReason);
    await task.statusWrites.settled();
    this.tasks.delete(task.uid);
    if (task.stop?.reason === "deleted" || task.pod.metadata?.deletionTimestamp) await this.finalize(task.pod);
  }

  /**
   * Runs the init containers in order: a regular one to its end, a sidecar until it has started
   * (it then keeps running beside the rest). True when all of them got there.
   */
  private async runInitContainers(task: PodTask, prepared: PreparedPod): Promise<boolean> {
    for (const record of [...task.containers.values()].filter((r) => r.init)) {
      if (task.stop) return false;
      const done = record.sidecar ? await this.startSidecar(task, prepared, record) : await this.runWithRestarts(task, prepared, record);
      if (!done) return false;
    }
    return true;
  }

  /** Runs one container, restarting it as the Pod's restartPolicy says; true when it ended with 0. */
  private async runWithRestarts(task: PodTask, prepared: PreparedPod, record: ContainerRecord): Promise<boolean> {
    const policy = task.pod.spec?.restartPolicy ?? "Always";
    for (let attempt = 0; ; attempt++) {
      const exitCode = await this.runContainer(task, prepared, record);
      const restart = !task.stop && !this.stopped && (policy === "Always" && !record.init ? true : policy !== "Never" && exitCode !== 0);
      if (!restart) return exitCode === 0;
      await Promise.race([sleep(restartBackoff(attempt)), task.ending]);
      if (task.stop || this.stopped) return false;
      record.lastState = record.state;
      record.restartCount++;
    }
  }

  /**
   * Starts a sidecar under a supervisor that restarts it, whatever the Pod's restartPolicy, until
   * the Pod ends; resolves true once it has started, false when the Pod ends first.
   */
  private startSidecar(task: PodTask, prepared: PreparedPod, record: ContainerRecord): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      const supervise = async () => {
        for (let attempt = 0; ; attempt++) {
          await this.runContainer(task, prepared, record, () => resolve(true));
          if (task.stop || task.sidecarsStopping || this.stopped) return;
          await Promise.race([sleep(restartBackoff(attempt)), task.ending]);
          if (task.stop || task.sidecarsStopping || this.stopped) return;
          record.lastState = record.state;
          record.restartCount++;
        }
      };
      task.sidecars.set(
        record.spec.name,
        supervise().finally(() => resolve(false)),
      );
      void task.ending.then(() => resolve(false));
    });
  }

  /**
   * Ends the sidecars once the main containers have: SIGTERM in reverse order of declaration, each
   * after the one declared later has exited, all within what is left of the grace period (then
   * the kill timer's SIGKILL).
   */
  private async stopSidecars(task: PodTask): Promise<void> {
    task.sidecarsStopping = true;
    task.end();
    if (task.sidecars.size === 0) return;
    if (task.killAt === undefined) {
      task.killAt = Date.now() + (task.pod.spec?.terminationGracePeriodSeconds ?? 30) * 1000;
      task.killTimer = setTimeout(() => this.signalContainers(task, "SIGKILL"), Math.max(0, task.killAt - Date.now()));
      task.killTimer.unref();
    }
    for (const [name, supervisor] of [...task.sidecars].reverse()) {
      this.signalContainers(task, "SIGTERM", (record) => record.spec.name === name);
      await supervisor;
    }
  }

  /** Runs one container to its end; `onStarted` is called once it counts as started. */
  private async runContainer(task: PodTask, prepared: PreparedPod, record: ContainerRecord, onStarted?: () => void): Promise<number> {
    const spec = record.spec;
    const image = prepared.images.get(spec.name)!;
    const containerDir = join(prepared.dir, "containers", `${spec.name}-${record.restartCount}`);
    mkdirSync(containerDir, { recursive: true });
    const containerID = `chroot://${task.uid}/${spec.name}/${record.restartCount}`;
    record.containerID = containerID;
    record.imageID = image.imageID;
    const logPath = this.logFile(task.namespace, task.name, spec.name);
    const started = now();
    const fail = (message: string): number => {
      const finishedAt = now();
      record.state = { terminated: { exitCode: 128, reason: "StartError", message, startedAt: started, finishedAt, containerID } };
      this.log(`${task.namespace}/${task.name}/${spec.name} could not start: ${message}`);
      this.writeStatus(task, task.runningPhase);
      return 128;
    };

    const terminationFile = join(containerDir, "termination-log");
    let launch: ContainerLaunch;
    try {
      const launchOrProblem = await this.containerLaunch(task, prepared, record, containerDir, terminationFile);
      if (typeof launchOrProblem === "string") return fail(launchOrProblem);
      launch = launchOrProblem;
    } catch (error) {
      return fail(describeError(error));
    }

    const cpu = this.accountCpu(task, spec.name, record.restartCount);
    const child = this.spawnContainer(launch, logPath, cpu?.procs);
    task.processes.set(spec.name, child);
    record.state = { running: { startedAt: started } };
    this.log(`${task.namespace}/${task.name}/${spec.name} started: ${launch.argv.join(" ")}`);
    const exited = new Promise<[number | null, NodeJS.Signals | null, Error | undefined]>((resolve) => {
      child.once("error", (error) => resolve([null, null, error]));
      child.once("exit", (exitCode, exitSignal) => resolve([exitCode, exitSignal, undefined]));
    });
    const markStarted = () => {
      if (task.processes.get(spec.name) !== child) return;
      record.started = record.startedOnce = true;
      this.writeStatus(task, task.runningPhase);
      onStarted?.();
    };
    const probe = record.sidecar ? spec.startupProbe : undefined;
    if (probe) {
      this.writeStatus(task, task.runningPhase);
      void this.startupProbe(task, record, prepared.users.get(spec.name)!, child, exited, probe, launch.env).then((passed) =>
        passed ? markStarted() : undefined,
      );
    } else {
      markStarted();
    }
    // A container started while its Pod (or, for a sidecar, its sidecars) is stopping gets the signal at once.
    const ending = record.sidecar ? task.sidecarsStopping : Boolean(task.stop);
    if (ending && task.killAt !== undefined)
      this.signalContainers(task, task.killAt <= Date.now() ? "SIGKILL" : "SIGTERM", (r) => r === record);

    const [code, signal, spawnError] = await exited;
    if (cpu) this.endCpuAccount(cpu);
    task.processes.delete(spec.name);
    record.started = false;
    const finishedAt = now();
    if (spawnError) return fail(spawnError.message);
    const exitCode = code ?? 128 + signalNumber(signal ?? "SIGKILL");
    const logText = this.containerLog(task.namespace, task.name, spec.name);
    const { reason, message } = containerEnd(exitCode, logText, readTerminationMessage(terminationFile), spec);
    record.state = {
      terminated: {
        exitCode,
        ...(signal ? { signal: signalNumber(signal) } : {}),
        reason,
        ...(message ? { message } : {}),
        startedAt: started,
        finishedAt,
        containerID,
      },
    };
    this.log(`${task.namespace}/${task.name}/${spec.name} exited ${exitCode}${signal ? ` (${signal})` : ""}`);
    rmSync(containerDir, { recursive: true, force: true });
    this.writeStatus(task, task.runningPhase);
    return exitCode;
  }

  /** What to launch for a container: its root, mounts, environment and command; a message when it cannot start. */
  private async containerLaunch(
    task: PodTask,
    prepared: PreparedPod,
    record: ContainerRecord,
    containerDir: string,
    terminationFile: string,
  ): Promise<ContainerLaunch | string> {
    const spec = record.spec;
    const image = prepared.images.get(spec.name)!;
    let root: ContainerLaunch["root"];
    if (this.rootfsMode === "overlay") {
      for (const dir of ["upper", "work", "merged"]) mkdirSync(join(containerDir, dir));
      root = {
        overlay: {
          lower: image.rootfs,
          upper: join(containerDir, "upper"),
          work: join(containerDir, "work"),
          merged: join(containerDir, "merged"),
        },
      };
    } else {
      await execFileAsync(this.bin.cp, ["-a", "--reflink=auto", `${image.rootfs}/.`, join(containerDir, "rootfs")]);
      root = { dir: join(containerDir, "rootfs") };
    }
    const user = prepared.users.get(spec.name)!;
    writeFileSync(terminationFile, "");
    chownSync(terminationFile, user.uid, user.gid);
    const mounts = containerMounts(prepared, spec, image, terminationFile);

    const env = new Map<string, string>();
    for (const entry of image.env) {
      const eq = entry.indexOf("=");
      if (eq > 0) env.set(entry.slice(0, eq), entry.slice(eq + 1));
    }
    if (!env.has("PATH")) env.set("PATH", defaultPath);
    env.set("HOSTNAME", this.podHostname(task.pod));
    const containerEnv = prepared.env.get(spec.name) ?? [];
    for (const [name, value] of containerEnv) env.set(name, value);
    const coverage = env.get("NODE_V8_COVERAGE");
    if (this.options.coverageDirectory && coverage?.startsWith("/"))
      mounts.push({ source: this.options.coverageDirectory, target: resolveInRoot(image.rootfs, coverage), readOnly: false, file: false });
    const lookup = new Map(containerEnv);
    const argv = resolveContainerCommand(spec, image).map((arg) => expandReferences(arg, (name) => lookup.get(name)));
    if (argv.length === 0) return `container "${spec.name}" has no command and its image ${spec.image} none either`;
    const workingDir = spec.workingDir || image.workingDir || "/";
    return {
      root,
      devices: this.devicesDir,
      mounts,
      readOnlyRoot: Boolean(spec.securityContext?.readOnlyRootFilesystem),
      hostname: this.podHostname(task.pod),
      workingDir,
      workingDirInRoot: resolveInRoot(image.rootfs, workingDir),
      env: [...env],
      argv,
      ...(isPlainRoot(user) ? {} : { user }),
    };
  }

  /** A cgroup for a container run about to start, recorded in {@link containerCpu}; undefined without accounting. */
  private accountCpu(task: PodTask, container: string, restart: number): (ContainerCpu & { procs: string }) | undefined {
    if (!this.cgroups) return undefined;
    const run = { namespace: task.namespace, pod: task.name, container, restart, seconds: 0, running: true };
    const accounted = { ...run, procs: this.cgroups.create(task.uid, container, restart) };
    this.cpuRuns.push(accounted);
    return accounted;
  }

  /** A container run has ended: its CPU time is final, its cgroup goes. */
  private endCpuAccount(run: ContainerCpu & { procs: string }): void {
    run.seconds = this.cgroups!.seconds(run.procs);
    run.running = false;
    this.cgroups!.remove(run.procs);
  }

  /**
   * Starts the launch script in new mount, PID and UTS namespaces, its output appended to the container's log; with
   * `cgroupProcs`, its first process joins that cgroup before anything else runs, so the cgroup counts all of it.
   */
  private spawnContainer(launch: ContainerLaunch, logPath: string, cgroupProcs?: string): ChildProcess {
    const script = launchScript(launch, this.bin);
    const logFd = openSync(logPath, "a");
    const unshare = [this.bin.unshare, "--mount", "--propagation", "private", "--pid", "--uts", "--fork", "--kill-child", "--"];
    const command = [...unshare, this.bin.sh, "-c", script];
    const joined = cgroupProcs
      ? [this.bin.sh, "-c", 'echo $$ > "$1" && shift && exec "$@"', "join-cgroup", cgroupProcs, ...command]
      : command;
    try {
      return spawn(joined[0]!, joined.slice(1), {
        detached: true,
        stdio: ["ignore", logFd, logFd],
        env: { PATH: defaultPath },
      });
    } finally {
      closeSync(logFd);
    }
  }

  /**
   * Runs a sidecar's startupProbe until it passes (true); false when the container exits, the
   * Pod ends, or the probe fails failureThreshold times in a row, when it kills the container
   * (which its supervisor restarts) as a real kubelet does.
   */
  private async startupProbe(
    task: PodTask,
    record: ContainerRecord,
    user: ContainerUser,
    child: ChildProcess,
    exited: Promise<unknown>,
    probe: k8s.V1Probe,
    env: readonly [string, string][],
  ): Promise<boolean> {
    const over = () =>
      child.exitCode !== null || child.signalCode !== null || task.stop !== undefined || task.sidecarsStopping || this.stopped;
    const wait = (seconds: number) => Promise.race([sleep(seconds * 1000), exited, task.ending]);
    await wait(probe.initialDelaySeconds ?? 0);
    for (let failures = 0; !over(); ) {
      if (await this.probeOnce(record.spec, user, child, probe, env)) return !over();
      if (++failures >= (probe.failureThreshold ?? 3)) {
        this.log(`${task.namespace}/${task.name}/${record.spec.name} failed its startup probe ${failures} times: killing it`);
        if (!over()) this.signalContainers(task, "SIGKILL", (r) => r === record);
        return false;
      }
      await wait(probe.periodSeconds ?? 10);
    }
    return false;
  }

  /** One probe: exec (in the container's namespaces and root), httpGet or tcpSocket (the host's network is the Pod's). */
  private async probeOnce(
    container: k8s.V1Container,
    user: ContainerUser,
    child: ChildProcess,
    probe: k8s.V1Probe,
    env: readonly [string, string][],
  ): Promise<boolean> {
    const timeout = (probe.timeoutSeconds ?? 1) * 1000;
    if (probe.exec?.command?.length) {
      const pid = containerProcess(child);
      if (!pid) return false;
      // As the container's user: the same setpriv as its launch, then setuid once inside its root.
      const [setpriv, ...limits] = setprivArgs(this.bin.setpriv, user);
      const nsenter = [
        ...limits,
        "--",
        findProgram("nsenter"),
        "--target",
        String(pid),
        "--mount",
        "--pid",
        "--uts",
        "--root",
        "--wd",
        `--setuid=${user.uid}`,
        "--",
        ...probe.exec.command,
      ];
      return execFileAsync(setpriv!, nsenter, { env: Object.fromEntries(env), timeout }).then(
        () => true,
        () => false,
      );
    }
    const action = probe.httpGet ?? probe.tcpSocket;
    if (!action) return false;
    const port =
      typeof action.port === "number"
        ? action.port
        : (container.ports?.find((p) => p.name === action.port)?.containerPort ?? Number(action.port));
    const host = action.host || loopbackAddress;
    return new Promise<boolean>((resolve) => {
      if (!probe.httpGet) {
        const socket = connect({ host, port, timeout }, () => {
          socket.destroy();
          resolve(true);
        });
        socket.on("error", () => resolve(false)).on("timeout", () => (socket.destroy(), resolve(false)));
        return;
      }
      const headers = Object.fromEntries((probe.httpGet.httpHeaders ?? []).map((h) => [h.name, h.value]));
      const send = probe.httpGet.scheme === "HTTPS" ? httpsRequest : httpRequest;
      const request = send({ host, port, path: probe.httpGet.path || "/", headers, timeout, rejectUnauthorized: false }, (response) => {
        response.resume();
        resolve((response.statusCode ?? 0) >= 200 && (response.statusCode ?? 0) < 400);
      });
      request.on("error", () => resolve(false)).on("timeout", () => (request.destroy(), resolve(false)));
      request.end();
    });
  }

  private podHostname(pod: k8s.V1Pod): string {
    return (pod.spec?.hostname || pod.metadata?.name || "pod").slice(0, 63);
  }

  // --- preparing a Pod: images, volumes, environments ---

  private async preparePod(task: PodTask): Promise<PreparedPod> {
    const pod = task.pod;
    const spec = pod.spec!;
    const dir = join(this.workDir, "pods", task.uid);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(join(dir, "volumes"), { recursive: true });
    const prepared: PreparedPod = {
      dir,
      images: new Map(),
      volumes: new Map(),
      env: new Map(),
      hostsFile: join(dir, "hosts"),
      users: new Map(),
    };
    const hostname = this.podHostname(pod);
    writeFileSync(prepared.hostsFile, `127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n${loopbackAddress}\t${hostname}\n`);

    for (const record of task.containers.values()) {
      const image = await this.image(record.spec.image ?? "", record.spec.imagePullPolicy);
      prepared.images.set(record.spec.name, image);
      record.imageID = image.imageID;
      prepared.users.set(record.spec.name, containerUser(spec, record.spec, image.user));
    }
    const reads = new PodObjectReads(this.core, task.namespace);
    for (const volume of spec.volumes ?? []) await this.prepareVolume(task, prepared, reads, volume);

    const tokens = this.options.serviceAccountTokens ?? "request";
    if (tokens !== false && spec.automountServiceAccountToken !== false) {
      const token = tokens === "request" ? await this.serviceAccountToken(pod) : tokens.token;
      const tokenDir = join(dir, "volumes", "kube-api-access");
      mkdirSync(tokenDir, { mode: 0o755 });
      writeProjectedFiles(
        tokenDir,
        [
          { path: "token", content: Buffer.from(token), mode: defaultFileMode },
          { path: "namespace", content: Buffer.from(task.namespace), mode: defaultFileMode },
          ...(this.caPem ? [{ path: "ca.crt", content: this.caPem, mode: defaultFileMode }] : []),
        ],
        { uid: 0, gid: spec.securityContext?.fsGroup ?? 0 },
      );
      prepared.tokenDir = tokenDir;
    }

    for (const record of task.containers.values()) {
      for (const from of record.spec.envFrom ?? []) {
        if (from.secretRef?.name) await reads.secret(from.secretRef.name);
        if (from.configMapRef?.name) await reads.configMap(from.configMapRef.name);
      }
      for (const entry of record.spec.env ?? []) {
        if (entry.valueFrom?.secretKeyRef?.name) await reads.secret(entry.valueFrom.secretKeyRef.name);
        if (entry.valueFrom?.configMapKeyRef?.name) await reads.configMap(entry.valueFrom.configMapKeyRef.name);
      }
    }
    checkVolumeMounts(task, prepared);
    const sources = reads.environmentSources();
    for (const record of task.containers.values())
      prepared.env.set(record.spec.name, containerEnvironment(pod, record.spec, sources, this.serviceEnv));
    return prepared;
  }

  /** Makes one of the Pod's volumes on the host and records it in `prepared.volumes`. */
  private async prepareVolume(task: PodTask, prepared: PreparedPod, reads: PodObjectReads, volume: k8s.V1Volume): Promise<void> {
    const path = join(prepared.dir, "volumes", volume.name);
    const fsGroup = task.pod.spec?.securityContext?.fsGroup;
    const owner = { uid: 0, gid: fsGroup ?? 0 };
    if (volume.emptyDir) {
      mkdirSync(path);
      // As the real kubelet: world-writable, or in group fsGroup with setgid so new files stay in it.
      if (fsGroup !== undefined) chownSync(path, 0, fsGroup);
      chmodSync(path, fsGroup === undefined ? 0o777 : 0o2777);
      prepared.volumes.set(volume.name, { path, readOnly: false });
    } else if (volume.hostPath) {
      const host = volume.hostPath.path;
      const type = volume.hostPath.type ?? "";
      if (!existsSync(host)) {
        if (type === "File" || type === "Directory" || type === "Socket" || type === "CharDevice" || type === "BlockDevice")
          throw new PodWaiting("ContainerCreating", `hostPath ${host} of volume ${volume.name} does not exist`);
        if (type === "FileOrCreate") {
          mkdirSync(dirname(host), { recursive: true });
          writeFileSync(host, "");
        } else mkdirSync(host, { recursive: true });
      }
      prepared.volumes.set(volume.name, { path: host, readOnly: false });
    } else if (volume.secret || volume.configMap) {
      const source = volume.secret
        ? { kind: "secret", name: volume.secret.secretName ?? "", ...volume.secret }
        : { kind: "configmap", ...volume.configMap! };
      const data = source.kind === "secret" ? await reads.secret(source.name ?? "") : await reads.configMap(source.name ?? "");
      mkdirSync(path, { mode: 0o755 });
      if (!data && !source.optional)
        throw new PodWaiting("ContainerCreating", `${source.kind} "${source.name}" of volume ${volume.name} not found`);
      const mode = source.defaultMode ?? defaultFileMode;
      writeProjectedFiles(
        path,
        projectKeys(`${source.kind} "${source.name}"`, data ?? {}, source.items, mode, Boolean(source.optional)),
        owner,
      );
      prepared.volumes.set(volume.name, { path, readOnly: true });
    } else if (volume.downwardAPI) {
      mkdirSync(path, { mode: 0o755 });
      const mode = volume.downwardAPI.defaultMode ?? defaultFileMode;
      writeProjectedFiles(path, downwardFiles(task.pod, volume.downwardAPI.items ?? [], mode, volume.name), owner);
      prepared.volumes.set(volume.name, { path, readOnly: true });
    } else if (volume.projected) {
      mkdirSync(path, { mode: 0o755 });
      await this.writeProjectedVolume(task, prepared, reads, volume.name, volume.projected, path);
      prepared.volumes.set(volume.name, { path, readOnly: true });
    } else {
      throw new PodFailure(
        "UnsupportedVolume",
        `volume ${volume.name}: the chroot kubelet supports emptyDir, hostPath, secret, configMap, downwardAPI and projected ` +
          `volumes only`,
      );
    }
  }

  /** Writes a projected volume's sources into `path`: Secrets, ConfigMaps, downward API fields, ServiceAccount tokens. */
  private async writeProjectedVolume(
    task: PodTask,
    prepared: PreparedPod,
    reads: PodObjectReads,
    volume: string,
    projected: k8s.V1ProjectedVolumeSource,
    path: string,
  ): Promise<void> {
    const mode = projected.defaultMode ?? defaultFileMode;
    const owner = projectedOwner(task, prepared, volume);
    for (const projection of projected.sources ?? []) {
      if (projection.secret || projection.configMap) {
        const ref = (projection.secret ?? projection.configMap)!;
        const kind = projection.secret ? "secret" : "configmap";
        const data = kind === "secret" ? await reads.secret(ref.name ?? "") : await reads.configMap(ref.name ?? "");
        if (!data && !ref.optional) throw new PodWaiting("ContainerCreating", `${kind} "${ref.name}" of volume ${volume} not found`);
        writeProjectedFiles(path, projectKeys(`${kind} "${ref.name}"`, data ?? {}, ref.items, mode, Boolean(ref.optional)), owner);
      } else if (projection.downwardAPI) {
        writeProjectedFiles(path, downwardFiles(task.pod, projection.downwardAPI.items ?? [], mode, volume), owner);
      } else if (projection.serviceAccountToken) {
        const fixed = this.options.serviceAccountTokens;
        const { audience, expirationSeconds } = projection.serviceAccountToken;
        const token = typeof fixed === "object" ? fixed.token : await this.serviceAccountToken(task.pod, audience, expirationSeconds);
        writeProjectedFiles(path, [{ path: projection.serviceAccountToken.path, content: Buffer.from(token), mode }], owner);
      } else {
        throw new PodFailure(
          "UnsupportedVolume",
          `volume ${volume}: the chroot kubelet projects secret, configMap, downwardAPI and serviceAccountToken sources only`,
        );
      }
    }
  }

  private async serviceAccountToken(pod: k8s.V1Pod, audience?: string, expirationSeconds?: number): Promise<string> {
    // Without the ServiceAccount admission plugin a Pod may name none: then "default", unbound
    // (the API server refuses to bind a token to a Pod that names another account).
    const named = pod.spec?.serviceAccountName;
    const serviceAccount = named || "default";
    const namespace = pod.metadata!.namespace!;
    try {
      const response = await this.core.createNamespacedServiceAccountToken({
        name: serviceAccount,
        namespace,
        body: {
          spec: {
            audiences: audience ? [audience] : [],
            expirationSeconds: expirationSeconds ?? 86_400,
            ...(named ? { boundObjectRef: { apiVersion: "v1", kind: "Pod", name: pod.metadata!.name!, uid: pod.metadata!.uid! } } : {}),
          },
        },
      });
      const token = response.status?.token;
      if (!token) throw new Error("the TokenRequest answered without a token");
      return token;
    } catch (error) {
      if (apiCode(error) === 404)
        throw new PodWaiting(
          "ContainerCreating",
          `serviceaccount "${serviceAccount}" not found in ${namespace}: create it, or start the kubelet with ` +
            `serviceAccountTokens: false or { token }`,
        );
      throw error;
    }
  }

  private async image(reference: string, pullPolicy: string | undefined): Promise<PulledImage> {
    const resolved = await this.options.imageResolver?.(reference);
    if (resolved) {
      const image = typeof resolved === "string" ? { rootfs: resolved } : resolved;
      return {
        rootfs: image.rootfs,
        env: [...(image.env ?? [])],
        entrypoint: [...(image.entrypoint ?? [])],
        cmd: [...(image.cmd ?? [])],
        workingDir: image.workingDir ?? "",
        imageID: `resolver://${reference}`,
        user: image.user ?? "",
      };
    }
    if (pullPolicy === "Always") this.images.delete(reference);
    let pull = this.images.get(reference) ?? (pullPolicy === "Always" ? undefined : this.unpackedByDigest(reference));
    if (!pull) {
      const pulling = this.pull(reference);
      pull = pulling;
      this.images.set(reference, pulling);
      pulling.then(
        (image) => this.imagesByDigest.set(image.imageID.slice(image.imageID.lastIndexOf("@") + 1), pulling),
        () => this.images.delete(reference),
      );
    }
    return pull;
  }

  /** A digest reference (`repo@sha256:…`) of an image unpacked already, under any name: that root again, named by this reference. */
  private unpackedByDigest(reference: string): Promise<PulledImage> | undefined {
    const digest = /@(sha256:[0-9a-f]{64})$/.exec(reference)?.[1];
    const unpacked = digest ? this.imagesByDigest.get(digest) : undefined;
    if (!unpacked) return undefined;
    const named = unpacked.then((image) => ({ ...image, imageID: reference }));
    this.images.set(reference, named);
    this.log(`${reference}: unpacked already, not pulled again`);
    return named;
  }

  private async pull(reference: string): Promise<PulledImage> {
    if (!reference) throw new PodFailure("InvalidImageName", "a container has no image");
    if (!isLoopbackReference(reference)) {
      throw new PodWaiting(
        "ErrImagePull",
        `${reference} is not on a loopback registry: the chroot kubelet pulls only from 127.0.0.1/localhost ` +
          `(startLocalRegistry()), or takes an imageResolver root`,
      );
    }
    const started = Date.now();
    const key = createHash("sha256").update(`${reference}\n${started}`).digest("hex").slice(0, 16);
    const dir = join(this.workDir, "images", key);
    const layout = join(dir, "layout");
    const rootfs = join(dir, "rootfs");
    mkdirSync(dir, { recursive: true });
    try {
      await execFileAsync(requireTool("skopeo"), [
        "--insecure-policy",
        "--command-timeout",
        "120s",
        "copy",
        "--quiet",
        "--src-tls-verify=false",
        `docker://${reference}`,
        `oci:${layout}:image`,
      ]);
      await execFileAsync(requireTool("umoci"), ["raw", "unpack", "--image", `${layout}:image`, rootfs]);
    } catch (error) {
      rmSync(dir, { recursive: true, force: true });
      const stderr = (error as { stderr?: string }).stderr?.trim().split("\n").at(-1) ?? describeError(error);
      throw new PodWaiting("ErrImagePull", `pulling ${reference}: ${stderr}`);
    }
    const blob = (digest: string) =>
      JSON.parse(readFileSync(join(layout, "blobs", ...digest.split(":")), "utf8")) as Record<string, unknown>;
    const index = JSON.parse(readFileSync(join(layout, "index.json"), "utf8")) as {
      manifests: { digest: string; annotations?: Record<string, string> }[];
    };
    const descriptor = index.manifests.find((m) => m.annotations?.["org.opencontainers.image.ref.name"] === "image") ?? index.manifests[0];
    if (!descriptor) throw new PodWaiting("ErrImagePull", `pulling ${reference}: the copied layout has no manifest`);
    const manifest = blob(descriptor.digest) as { config: { digest: string } };
    const config = ((
      blob(manifest.config.digest) as {
        config?: { Env?: string[]; Entrypoint?: string[]; Cmd?: string[]; WorkingDir?: string; User?: string };
      }
    ).config ?? {}) as {
      Env?: string[];
      Entrypoint?: string[];
      Cmd?: string[];
      WorkingDir?: string;
      User?: string;
    };
    rmSync(layout, { recursive: true, force: true });
    const repository = reference.replace(/@sha256:[0-9a-f]+$/, "").replace(/:[^/:]+$/, "");
    this.log(`pulled ${reference} (${descriptor.digest.slice(0, 19)}…) in ${((Date.now() - started) / 1000).toFixed(1)}s`);
    return {
      rootfs,
      env: config.Env ?? [],
      entrypoint: config.Entrypoint ?? [],
      cmd: config.Cmd ?? [],
      workingDir: config.WorkingDir ?? "",
      imageID: `${repository}@${descriptor.digest}`,
      user: config.User ?? "",
    };
  }

  // --- stopping Pods ---

  private signalContainers(task: PodTask, signal: NodeJS.Signals, include: (record: ContainerRecord) => boolean = () => true): void {
    for (const [name, child] of task.processes) {
      if (!include(task.containers.get(name)!)) continue;
      if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) continue;
      try {
        process.kill(-child.pid, signal);
      } catch {
        // Already gone.
      }
    }
  }

  /**
   * Stops a Pod: SIGTERM to every container but the sidecars now (runTask ends those once the
   * others have exited), SIGKILL to all when the grace period ends.
   */
  private stopTask(task: PodTask, reason: "deleted" | "deadline" | "kubelet", graceSeconds: number): void {
    if (task.phase === "done") return;
    const first = !task.stop;
    if (first || reason === "deleted") task.stop = { reason: task.stop?.reason === "deadline" ? "deadline" : reason };
    task.end();
    const killAt = Date.now() + graceSeconds * 1000;
    if (task.killAt !== undefined && task.killAt <= killAt) return;
    task.killAt = killAt;
    if (first) this.log(`${task.namespace}/${task.name} stopping (${reason}, grace ${graceSeconds}s)`);
    if (task.phase === "queued" || task.phase === "waiting") {
      const queued = this.queue.indexOf(task);
      if (queued >= 0) this.queue.splice(queued, 1);
      clearTimeout(task.retryTimer);
      if (task.gone) {
        this.tasks.delete(task.uid);
        task.phase = "done";
        return;
      }
      const finishing = this.finish(task);
      this.runs.add(finishing);
      void finishing.finally(() => this.runs.delete(finishing));
      return;
    }
    if (graceSeconds === 0) this.signalContainers(task, "SIGKILL");
    else this.signalContainers(task, "SIGTERM", (record) => !record.sidecar);
    clearTimeout(task.killTimer);
    task.killTimer = setTimeout(() => this.signalContainers(task, "SIGKILL"), Math.max(0, killAt - Date.now()));
    task.killTimer.unref();
  }

  /** The kubelet's last word on a deleted Pod: delete it with grace 0 (finalizers still apply). */
  private async finalize(pod: k8s.V1Pod): Promise<void> {
    const uid = pod.metadata?.uid ?? "";
    if (this.finalizing.has(uid)) return;
    this.finalizing.add(uid);
    const namespace = pod.metadata?.namespace ?? "default";
    const name = pod.metadata?.name ?? "";
    try {
      await this.core.deleteNamespacedPod({
        name,
        namespace,
        gracePeriodSeconds: 0,
        body: { gracePeriodSeconds: 0, preconditions: { uid } },
      });
      this.log(`finalized ${namespace}/${name}`);
    } catch (error) {
      if (apiCode(error) !== 404 && apiCode(error) !== 409) {
        this.finalizing.delete(uid);
        this.log(`finalizing ${namespace}/${name} failed: ${describeError(error)}`);
      }
    }
  }

  // --- status ---

  private condition(task: PodTask, type: string, status: boolean, reason?: string): Record<string, unknown> {
    const value = status ? "True" : "False";
    let entry = task.conditionTimes.get(type);
    if (!entry || entry.status !== value) {
      entry = { status: value, time: now() };
      task.conditionTimes.set(type, entry);
    }
    // reason null, not absent: a strategic-merge patch would keep the previous reason.
    return { type, status: value, lastProbeTime: null, lastTransitionTime: entry.time, reason: reason ?? null };
  }

  private containerStatus(record: ContainerRecord): Record<string, unknown> {
    return {
      name: record.spec.name,
      image: record.spec.image ?? "",
      imageID: record.imageID,
      ...(record.containerID ? { containerID: record.containerID } : {}),
      ready: record.sidecar ? record.started : Boolean(record.state.running) && !record.init,
      started: record.sidecar ? record.started : Boolean(record.state.running),
      restartCount: record.restartCount,
      state: stateJson(record.state),
      lastState: stateJson(record.lastState),
    };
  }

  /** Queues a strategic-merge patch of the whole status as it stands now; patches keep their order. */
  private writeStatus(task: PodTask, phase: string, podReason?: { reason: string; message: string }): void {
    if (task.gone || this.stopped) return;
    const records = [...task.containers.values()];
    const inits = records.filter((r) => r.init);
    const mains = records.filter((r) => !r.init);
    // Sidecars count once they have started, and towards readiness while they run.
    const initialized = inits.every((r) => (r.sidecar ? r.startedOnce : r.state.terminated?.exitCode === 0));
    const ready = phase === "Running" && mains.every((r) => r.state.running) && inits.every((r) => !r.sidecar || r.started);
    const terminal = isTerminalPhase(phase);
    const notReadyReason = terminal ? "PodCompleted" : "ContainersNotReady";
    const status = {
      phase,
      reason: podReason?.reason ?? null,
      message: podReason?.message ?? null,
      hostIP: loopbackAddress,
      hostIPs: [{ ip: loopbackAddress }],
      podIP: loopbackAddress,
      podIPs: [{ ip: loopbackAddress }],
      startTime: task.startTime,
      conditions: [
        this.condition(task, "PodReadyToStartContainers", !terminal),
        this.condition(task, "Initialized", initialized, initialized ? undefined : terminal ? "PodCompleted" : "ContainersNotInitialized"),
        this.condition(task, "ContainersReady", ready, ready ? undefined : notReadyReason),
        this.condition(task, "Ready", ready, ready ? undefined : notReadyReason),
      ],
      initContainerStatuses: inits.map((r) => this.containerStatus(r)),
      containerStatuses: mains.map((r) => this.containerStatus(r)),
    };
    const options = k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.StrategicMergePatch);
    task.statusWrites.write(async () => {
      if (task.gone) return;
      for (let attempt = 0; attempt < 3; attempt++) {
        try {
          await this.core.patchNamespacedPodStatus({ name: task.name, namespace: task.namespace, body: { status } }, options);
          return;
        } catch (error) {
          if (apiCode(error) === 404) return;
          if (attempt === 2) this.log(`writing the status of ${task.namespace}/${task.name} failed: ${describeError(error)}`);
          else await sleep(200);
        }
      }
    });
  }

  // --- stopping the kubelet ---

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.heartbeat);
    for (const controller of this.watches) controller.abort();
    for (const wake of [...this.wakeups]) wake();
    for (const task of this.tasks.values()) {
      clearTimeout(task.retryTimer);
      clearTimeout(task.deadlineTimer);
      clearTimeout(task.killTimer);
      task.stop ??= { reason: "kubelet" };
      task.end();
      this.signalContainers(task, "SIGKILL");
    }
    this.queue.length = 0;
    await Promise.allSettled([...this.runs, ...this.loops]);
    await this.core.deleteNode({ name: this.nodeName }).catch(() => undefined);
    this.cgroups?.close();
    if (this.ownsWorkDir) rmSync(this.workDir, { recursive: true, force: true });
    else rmSync(join(this.workDir, "pods"), { recursive: true, force: true });
    this.log(`node ${this.nodeName} stopped`);
  }
}

/**
 * Starts the chroot kubelet against a control plane (see the module comment). Needs root and
 * util-linux (`unshare`, `mount`); pulling needs skopeo and umoci. stop() it in afterAll.
 */
export async function startChrootKubelet(options: ChrootKubeletOptions): Promise<ChrootKubelet> {
  if (process.getuid?.() !== 0) {
    throw new Error(
      "the chroot kubelet needs root (it creates mount, PID and UTS namespaces, mounts and device nodes): run the tests as " +
        "root, as CI does",
    );
  }
  const kubelet = new Kubelet(options);
  try {
    await kubelet.start();
  } catch (error) {
    await kubelet.stop();
    throw error;
  }
  return kubelet;
}
