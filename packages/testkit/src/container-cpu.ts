// The CPU time of each container the chroot kubelet runs, accounted as a real kubelet's cgroups account it:
// every container run in a cgroup of its own (under one per kubelet), which counts the CPU of all its
// processes, the ones that have exited too. Accounting only: no shares, no quota. Needs root and a cgroup
// v1 cpuacct hierarchy or cgroup v2; without them the kubelet runs containers as before and accounts nothing.
import { existsSync, mkdirSync, readFileSync, rmdirSync } from "node:fs";
import { join } from "node:path";

/** How the machine's cgroups count CPU time: v1's cpuacct.usage (ns) or v2's cpu.stat usage_usec. */
export type CpuHierarchyKind = "cgroup v1" | "cgroup v2";

/** One container run's CPU time (user + system, its processes and their children), in seconds. */
export interface ContainerCpu {
  namespace: string;
  pod: string;
  container: string;
  /** The container's restart count when this run started. */
  restart: number;
  seconds: number;
  /** Still running: the figure so far. */
  running: boolean;
}

/** The hierarchy that accounts CPU under `base`: v1's cpuacct controller, else a v2 unified hierarchy; undefined without. */
export function cpuHierarchy(base = "/sys/fs/cgroup"): { kind: CpuHierarchyKind; root: string } | undefined {
  if (existsSync(join(base, "cpuacct", "cpuacct.usage"))) return { kind: "cgroup v1", root: join(base, "cpuacct") };
  if (existsSync(join(base, "cgroup.controllers"))) return { kind: "cgroup v2", root: base };
  return undefined;
}

/** Seconds of CPU in a cgroup's accounting file: v1 cpuacct.usage (nanoseconds), v2 cpu.stat (usage_usec). Pure. */
export function cpuSecondsOf(kind: CpuHierarchyKind, text: string): number {
  if (kind === "cgroup v1") return Number(text.trim()) / 1e9;
  const usage = /^usage_usec\s+(\d+)$/m.exec(text)?.[1];
  if (usage === undefined) throw new Error("cpu.stat has no usage_usec line");
  return Number(usage) / 1e6;
}

/** The cgroups one kubelet makes: `<root>/<scope>/<pod uid>-<container>-<restart>`. */
export class ContainerCgroups {
  private readonly dir: string;
  private readonly leftovers = new Set<string>();

  private constructor(
    private readonly kind: CpuHierarchyKind,
    root: string,
    scope: string,
  ) {
    this.dir = join(root, scope);
    mkdirSync(this.dir, { recursive: true });
  }

  /** The kubelet's cgroup named `scope`, or undefined where it cannot be made (no hierarchy, not root, read-only). */
  static open(scope: string, base?: string): ContainerCgroups | undefined {
    const hierarchy = cpuHierarchy(base);
    if (!hierarchy || process.getuid?.() !== 0) return undefined;
    try {
      return new ContainerCgroups(hierarchy.kind, hierarchy.root, scope);
    } catch {
      return undefined;
    }
  }

  /** Makes a container run's cgroup; the path of its cgroup.procs, which the container's first process joins. */
  create(podUid: string, container: string, restart: number): string {
    const dir = join(this.dir, `${podUid}-${container}-${restart}`);
    mkdirSync(dir, { recursive: true });
    return join(dir, "cgroup.procs");
  }

  /** CPU seconds of the run whose cgroup.procs is `procs`, so far. */
  seconds(procs: string): number {
    const dir = join(procs, "..");
    return cpuSecondsOf(this.kind, readFileSync(join(dir, this.kind === "cgroup v1" ? "cpuacct.usage" : "cpu.stat"), "utf8"));
  }

  /** Removes a run's cgroup once its processes are gone; one still busy (a process not yet reaped) is retried by close(). */
  remove(procs: string): void {
    const dir = join(procs, "..");
    try {
      rmdirSync(dir);
      this.leftovers.delete(dir);
    } catch {
      this.leftovers.add(dir);
    }
  }

  /** Removes the cgroups left and the kubelet's own. */
  close(): void {
    for (const dir of [...this.leftovers, this.dir]) {
      try {
        rmdirSync(dir);
      } catch {
        // Still busy (a process the kernel has not reaped): it goes with the next boot.
      }
    }
  }
}
