import { runningCaptfJob, runningJobs, type JobLike } from "../metrics/active-jobs.js";
import type { Informer } from "../runtime/informer.js";
import type { KubeObject } from "../runtime/kube-client.js";
import type { Operation } from "./decide-operation.js";

/**
 * Job slots: `--max-active-jobs` caps the manager's running Jobs, a TerraformCluster's
 * `spec.maxActiveJobs` (else `--cluster-max-active-jobs`) those of one cluster. Background
 * operations (drift, refresh) start only below 80% of a limit, so they never crowd out an apply
 * or a destroy. Counts come from the Job cache plus the slots passes reserved and have not filled.
 */

export interface JobSlotUsage {
  /** Running captf Jobs of the manager. */
  total: number;
  /** Running captf Jobs of the object's cluster. */
  cluster: number;
}

export interface JobSlotLimits {
  /** 0: no limit. */
  manager: number;
  /** 0: no limit. */
  cluster: number;
}

const backgroundShare = 0.8;

function full(used: number, limit: number, background: boolean): boolean {
  if (limit <= 0) return false;
  return background ? used >= Math.floor(limit * backgroundShare) : used >= limit;
}

/** Why no slot is free for `op`, or undefined when one is. */
export function jobSlotWait(op: Operation, usage: JobSlotUsage, limits: JobSlotLimits): string | undefined {
  const background = op === "drift" || op === "refresh";
  const share = background ? " (drift and refresh use at most 80% of it)" : "";
  if (full(usage.total, limits.manager, background)) return `${usage.total} Jobs run for this manager; --max-active-jobs is ${limits.manager}${share}`;
  if (full(usage.cluster, limits.cluster, background)) return `${usage.cluster} Jobs run for this cluster; its limit is ${limits.cluster}${share}`;
  return undefined;
}

/** A Job of the cache, as the slot count reads it. */
export type SlotJob = JobLike & { metadata?: { name?: string; namespace?: string } };

/** Where a pass's slot goes: the Job it is for, and who takes it. */
export interface SlotClaim {
  /** `namespace/kind/name` of the object whose pass takes the slot. */
  owner: string;
  namespace: string;
  clusterName: string;
  /** The name of the Job the pass is about to create. */
  job: string;
}

/** The slot count and limits a pass checks; `reserve` and `settle` close the gap between the check and the Job's creation. */
export interface JobSlotSource {
  usage(namespace: string, clusterName: string): JobSlotUsage;
  managerLimit: number;
  clusterDefaultLimit: number;
  /** Holds a slot for `claim.job` from the moment its pass saw one free (synchronously with `usage`). */
  reserve?(claim: SlotClaim): void;
  /** The owner's pass ended: its reservation goes unless it created that Job; after an error (created or not, unknown) it stays until the Job shows or it expires. */
  settle?(owner: string, outcome: { createdJob?: string } | "failed"): void;
  /** The owner's pass found no slot: it is woken (in the order owners asked) when one frees. */
  wait?(owner: string): void;
  /** A slot freed: the `namespace/name` keys of up to `count` waiting owners of `kind` to look again. */
  wake?(kind: string, count: number): string[];
}

/** The Job cache as the slots read it: the running captf Jobs (from an index, not a scan), and whether a Job is cached at all. */
export interface SlotJobCache {
  running(): Iterable<SlotJob>;
  has(namespace: string, name: string): boolean;
}

const runningIndex = "captf-running";

/** The slots' view of a Job informer: indexes its running captf Jobs (call before the informer starts). */
export function slotJobCache(informer: Pick<Informer<KubeObject>, "addIndex" | "byIndex" | "get">): SlotJobCache {
  informer.addIndex(runningIndex, (job) => (runningCaptfJob(job as SlotJob) ? ["running"] : []));
  return { running: () => informer.byIndex(runningIndex, "running") as SlotJob[], has: (namespace, name) => informer.get(namespace, name) !== undefined };
}

/** A Job that finished, or went while it ran: its slot is free. */
export function freesSlot(job: KubeObject, event: "add" | "update" | "delete", oldJob?: KubeObject): boolean {
  if (event === "delete") return runningCaptfJob(job as SlotJob);
  return event === "update" && oldJob !== undefined && runningCaptfJob(oldJob as SlotJob) && !runningCaptfJob(job as SlotJob);
}

/** A woken waiter that neither waits again nor takes a slot within this long is forgotten (its object went). */
const wokenTtlMs = 5 * 60_000;

interface Reservation extends SlotClaim {
  until: number;
}

/** A reservation whose Job never shows in the cache (its create failed unseen) goes after this long, like a run lease's grace. */
export const reservationTtlMs = 60_000;

/**
 * Job slots counted from the Job cache plus the slots reserved by passes that saw one free and
 * have not created their Job yet (or whose Job the cache does not show yet), so concurrent passes
 * never start more Jobs than the limit: the ReplicaSet controller's expectations, for a count.
 */
export class JobSlots implements JobSlotSource {
  readonly #jobs: SlotJobCache;
  readonly #now: () => number;
  /** By `namespace/job`. */
  readonly #reserved = new Map<string, Reservation>();
  /** Owners waiting for a slot, oldest first (a Map keeps its first insertion order); `wokenAt` once woken. */
  readonly #waiting = new Map<string, { wokenAt?: number }>();
  readonly managerLimit: number;
  readonly clusterDefaultLimit: number;

  constructor(jobs: SlotJobCache, limits: { manager: number; clusterDefault: number }, now: () => number = Date.now) {
    this.#jobs = jobs;
    this.managerLimit = limits.manager;
    this.clusterDefaultLimit = limits.clusterDefault;
    this.#now = now;
  }

  usage(namespace: string, clusterName: string): JobSlotUsage {
    let { total, cluster } = runningJobs(this.#jobs.running(), namespace, clusterName);
    const now = this.#now();
    for (const [key, reservation] of this.#reserved) {
      // The cache shows the Job now: it counts there.
      if (this.#jobs.has(reservation.namespace, reservation.job) || reservation.until <= now) {
        this.#reserved.delete(key);
        continue;
      }
      total++;
      if (reservation.namespace === namespace && reservation.clusterName === clusterName) cluster++;
    }
    return { total, cluster };
  }

  reserve(claim: SlotClaim): void {
    this.#reserved.set(`${claim.namespace}/${claim.job}`, { ...claim, until: this.#now() + reservationTtlMs });
    this.#waiting.delete(claim.owner);
  }

  wait(owner: string): void {
    // Waiting again keeps the owner's place in line.
    this.#waiting.set(owner, {});
  }

  wake(kind: string, count: number): string[] {
    const keys: string[] = [];
    const now = this.#now();
    for (const [owner, waiter] of this.#waiting) {
      if (keys.length >= count) break;
      if (waiter.wokenAt !== undefined) {
        if (waiter.wokenAt + wokenTtlMs <= now) this.#waiting.delete(owner);
        continue;
      }
      const [namespace, ownerKind, name] = owner.split("/");
      if (ownerKind !== kind) continue;
      waiter.wokenAt = now;
      keys.push(`${namespace}/${name}`);
    }
    return keys;
  }

  settle(owner: string, outcome: { createdJob?: string } | "failed"): void {
    if (outcome === "failed") return;
    for (const [key, reservation] of this.#reserved) if (reservation.owner === owner && reservation.job !== outcome.createdJob) this.#reserved.delete(key);
  }
}

/** Runs a pass's start of a Job; a slot it reserved goes back unless it created the Job. */
export async function settlingJobSlot<T extends { job?: { name: string } }>(slots: JobSlotSource | undefined, owner: string, start: () => Promise<T>): Promise<T> {
  try {
    const outcome = await start();
    slots?.settle?.(owner, outcome.job ? { createdJob: outcome.job.name } : {});
    return outcome;
  } catch (error) {
    slots?.settle?.(owner, "failed");
    throw error;
  }
}
