// A Pod's containers in CPU cgroups as the kubelet makes them, so a bench that starts a Job's
// containers as processes shares the CPU between them as a node does: each container's cpu.shares
// (cgroup v1) or cpu.weight (v2) from its CPU request, its CFS quota from its CPU limit, under a
// Pod cgroup weighted by the Pod's requests, under a "kubepods" cgroup holding the machine's cores.
// Needs root and a writable cpu controller; otherwise `podCgroups` returns undefined and the bench
// says it ran without them.
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";

const periodUs = 100_000;

/** "250m", "1", "0.5" as millicores. */
function milliCpu(quantity) {
  if (quantity === undefined) return undefined;
  const text = String(quantity);
  return text.endsWith("m") ? Number(text.slice(0, -1)) : Math.round(Number(text) * 1000);
}

/** The kubelet's MilliCPUToShares: at least 2. */
const sharesOf = (milli) => Math.max(2, Math.floor((milli * 1024) / 1000));
/** The kubelet's cgroup v2 conversion of shares to a weight. */
const weightOf = (shares) => 1 + Math.floor(((shares - 2) * 9999) / 262142);

function cpuHierarchy() {
  const v2 = "/sys/fs/cgroup";
  if (existsSync(join(v2, "cgroup.controllers")) && readFileSync(join(v2, "cgroup.controllers"), "utf8").split(/\s+/).includes("cpu"))
    return {
      kind: "cgroup v2",
      root: v2,
      configure(dir, shares, quotaUs) {
        writeFileSync(join(dir, "cpu.weight"), String(weightOf(shares)));
        writeFileSync(join(dir, "cpu.max"), `${quotaUs ?? "max"} ${periodUs}`);
      },
      prepareParent(dir) {
        writeFileSync(join(dir, "cgroup.subtree_control"), "+cpu");
      },
    };
  const v1 = "/sys/fs/cgroup/cpu";
  if (existsSync(join(v1, "cpu.shares")))
    return {
      kind: "cgroup v1",
      root: v1,
      configure(dir, shares, quotaUs) {
        writeFileSync(join(dir, "cpu.shares"), String(shares));
        writeFileSync(join(dir, "cpu.cfs_period_us"), String(periodUs));
        writeFileSync(join(dir, "cpu.cfs_quota_us"), String(quotaUs ?? -1));
      },
      prepareParent() {},
    };
  return undefined;
}

/**
 * Cgroups for the Pod `spec`'s containers (init and regular). `wrap(container, command, args)` gives
 * the command and arguments that start `command` inside that container's cgroup (a shell that moves
 * itself there, then execs it); `remove()` deletes them once every process in them has exited.
 */
export function podCgroups(spec, label) {
  const hierarchy = cpuHierarchy();
  if (!hierarchy || process.getuid?.() !== 0) return undefined;
  const containers = [...(spec.initContainers ?? []), ...spec.containers];
  const kubepods = join(hierarchy.root, `captf-bench-${process.pid}-${label}`);
  const pod = join(kubepods, "pod");
  const dirs = [];
  try {
    for (const [dir, shares, quota] of [
      [kubepods, cpus().length * 1024, undefined],
      // The Pod's weight: its containers' requests (the kubelet's sum, sidecars and regular containers together).
      [pod, sharesOf(containers.reduce((sum, container) => sum + (milliCpu(container.resources?.requests?.cpu) ?? 0), 0)), undefined],
    ]) {
      mkdirSync(dir);
      dirs.unshift(dir);
      hierarchy.configure(dir, shares, quota);
      hierarchy.prepareParent(dir);
    }
    for (const container of containers) {
      const dir = join(pod, container.name);
      mkdirSync(dir);
      dirs.unshift(dir);
      const limit = milliCpu(container.resources?.limits?.cpu);
      hierarchy.configure(
        dir,
        sharesOf(milliCpu(container.resources?.requests?.cpu) ?? 0),
        limit === undefined ? undefined : Math.max(1000, Math.floor((limit * periodUs) / 1000)),
      );
    }
  } catch (error) {
    for (const dir of dirs) rmdirSync(dir);
    if (error.code === "EACCES" || error.code === "EROFS" || error.code === "EPERM") return undefined;
    throw error;
  }
  return {
    kind: hierarchy.kind,
    wrap(container, command, args) {
      if (!containers.some((candidate) => candidate.name === container)) throw new Error(`the Pod has no container ${container}`);
      const procs = join(pod, container, "cgroup.procs");
      return ["/bin/sh", ["-c", `echo $$ > ${procs} && exec "$0" "$@"`, command, ...args]];
    },
    remove() {
      for (const dir of dirs) rmdirSync(dir);
    },
  };
}
