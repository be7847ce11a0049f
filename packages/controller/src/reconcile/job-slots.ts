import { labels } from "@captf/contract/api";
import { nameLabelValue } from "@captf/contract/object-names";
import { runningCaptfJob, type JobLike } from "../metrics/active-jobs.js";
import { labelIndexName, objectKey, type Informer } from "../runtime/informer.js";
import type { KubeObject } from "../runtime/kube-client.js";
import type { Operation } from "./decide-operation.js";
import { jobNameLabel } from "./observe-jobs.js";

/**
 * Job slots: `--max-active-jobs` caps the manager's running Jobs, a TerraformCluster's
 * `spec.maxActiveJobs` (else `--cluster-max-active-jobs`) those of one cluster. Background
 * operations (drift, refresh) start only below 80% of a limit, so they never crowd out an apply
 * or a destroy. Counts come from the Job cache plus the slots passes reserved and have not filled.
 * A Job holds its slot until its Pod has ended or the Job has finished, whichever the manager sees
 * first: the Job controller marks a Job Complete a second or more after its Pod ended.
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
  if (full(usage.total, limits.manager, background))
    return `${usage.total} Jobs run for this manager; --max-active-jobs is ${limits.manager}${share}`;
  if (full(usage.cluster, limits.cluster, background))
    return `${usage.cluster} Jobs run for this cluster; its limit is ${limits.cluster}${share}`;
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
  /** `owner` (`namespace/kind/name`): the asking pass, whose own wake-up is not counted against it. */
  usage(namespace: string, clusterName: string, owner?: string): JobSlotUsage;
  managerLimit: number;
  clusterDefaultLimit: number;
  /** Holds a slot for `claim.job` from the moment its pass saw one free (synchronously with `usage`). */
  reserve?(claim: SlotClaim): void;
  /**
   * The owner's pass ended: its reservation goes unless it created that Job; after an error (created or not, unknown) it stays until the
   * Job shows or it expires.
   */
  settle?(owner: string, outcome: { createdJob?: string } | "failed"): void;
  /** The owner's pass found no slot for `waiter`: it is woken (in the order owners asked) when one frees for it. */
  wait?(owner: string, waiter: SlotWaiter): void;
  /** A slot freed: the `namespace/name` keys of the waiting owners of `kind` to look again (the oldest it lets start). */
  wake?(kind: string): string[];
  /** The owner's object is gone: it waits no more, and a slot kept for it is free at once. */
  forget?(owner: string): void;
  /** Whether a Job event frees a slot (at most one event of a Job or its Pod does). */
  jobFreesSlot?(job: KubeObject, event: WatchEvent, oldJob?: KubeObject): boolean;
  /** Whether a Pod event frees a slot; the label selector of the Pod informer it reads. */
  podFreesSlot?: { labelSelector: string; predicate(pod: KubeObject, event: WatchEvent, oldPod?: KubeObject): boolean };
}

type WatchEvent = "add" | "update" | "delete";

/** The Job cache as the slots read it, and the Pod cache when the manager has one. */
export interface SlotJobCache {
  /** The captf Jobs holding a slot: not finished, and their Pod not ended (from an index, not a scan). */
  running(): Iterable<SlotJob>;
  /** Whether the cache shows the Job, or saw it go within the last minute (a reservation for it is over either way). */
  shown(namespace: string, name: string): boolean;
  /** The Jobs (`namespace/name`) seen to go within the last minute: the record expires by itself. */
  gone(): string[];
  /** Whether the Job's Pod has ended (Succeeded or Failed: captf's Jobs run one Pod), per the Pod cache. */
  podEnded(namespace: string, jobName: string): boolean;
  /** Whether the Job is cached and not finished. */
  jobRunning(namespace: string, name: string): boolean;
  /** The label selector of the Pod informer, when there is one. */
  podSelector?: string;
}

const runningIndex = "captf-running";

// Jobs carry the cluster-name label value (hashed past 63 characters); waiters carry the name: both key alike.
const clusterKey = (namespace: string, clusterName: string) => `${namespace}/${nameLabelValue(clusterName)}`;

/** A Pod that ran to its end. Pure. */
export function podEnded(pod: KubeObject | undefined): boolean {
  const phase = (pod as { status?: { phase?: string } } | undefined)?.status?.phase;
  return phase === "Succeeded" || phase === "Failed";
}

/** Runs `run` in `ms` without keeping the process alive for it. */
export type Later = (run: () => void, ms: number) => void;

const unrefLater: Later = (run, ms) => void setTimeout(run, ms).unref();

/**
 * The Jobs seen to go, each for {@link reservationTtlMs}: one timer at a time, set for the oldest, drops them as they expire, so the
 * record empties by itself when nothing else is deleted.
 */
function goneJobs(now: () => number, later: Later): { add(key: string): void; has(key: string): boolean; keys(): string[] } {
  const gone = new Map<string, number>();
  let timerSet = false;
  const dropExpired = () => {
    for (const [key, at] of gone)
      if (at + reservationTtlMs <= now()) gone.delete(key);
      else break;
  };
  const expireOldest = () => {
    const oldest = gone.values().next();
    if (timerSet || oldest.done) return;
    timerSet = true;
    later(
      () => {
        timerSet = false;
        dropExpired();
        expireOldest();
      },
      Math.max(0, oldest.value + reservationTtlMs - now()),
    );
  };
  return {
    add: (key) => {
      dropExpired();
      // Deleted again (a Job of the same name): it goes to the end, in the order of expiry.
      gone.delete(key);
      gone.set(key, now());
      expireOldest();
    },
    has: (key) => gone.has(key),
    keys: () => [...gone.keys()],
  };
}

/**
 * The slots' view of the Job informer (its running captf Jobs indexed) and of the manager's Pod
 * informer (indexed by `job-name`, with its label selector): call before the informers start.
 */
export function slotJobCache(
  jobs: Pick<Informer<KubeObject>, "addIndex" | "addHandlers" | "byIndex" | "get">,
  pods?: { informer: Pick<Informer<KubeObject>, "byIndex">; labelSelector: string },
  now: () => number = Date.now,
  later: Later = unrefLater,
): SlotJobCache {
  jobs.addIndex(runningIndex, (job) => (runningCaptfJob(job as SlotJob) ? ["running"] : []));
  // A Job created and deleted before any pass counted the slots leaves no reservation behind.
  const gone = goneJobs(now, later);
  jobs.addHandlers({ delete: (job) => gone.add(objectKey(job)) });
  const podEndedFor = (namespace: string, jobName: string) =>
    (pods?.informer.byIndex(labelIndexName(jobNameLabel), jobName) ?? []).some(
      (pod) => pod.metadata?.namespace === namespace && podEnded(pod),
    );
  return {
    running: () =>
      (jobs.byIndex(runningIndex, "running") as SlotJob[]).filter(
        (job) => !podEndedFor(job.metadata?.namespace ?? "", job.metadata?.name ?? ""),
      ),
    shown: (namespace, name) => jobs.get(namespace, name) !== undefined || gone.has(`${namespace}/${name}`),
    gone: gone.keys,
    podEnded: podEndedFor,
    jobRunning: (namespace, name) => {
      const job = jobs.get(namespace, name);
      return job !== undefined && runningCaptfJob(job as SlotJob);
    },
    ...(pods ? { podSelector: pods.labelSelector } : {}),
  };
}

/** A Job that finished, or went while it ran. Pure: whether its Pod freed the slot first is {@link JobSlots.jobFreesSlot}'s. */
export function jobLeftRunning(job: KubeObject, event: WatchEvent, oldJob?: KubeObject): boolean {
  if (event === "delete") return runningCaptfJob(job as SlotJob);
  return event === "update" && oldJob !== undefined && runningCaptfJob(oldJob as SlotJob) && !runningCaptfJob(job as SlotJob);
}

/** A woken waiter that neither waits again nor takes a slot within this long is forgotten (its object went). */
const wokenTtlMs = 5 * 60_000;

/** A woken waiter's slot is kept for it this long: a pass that was not woken cannot take it meanwhile. */
export const wakePromiseTtlMs = 10_000;

/** A slot held by a pass (reserved) or for one (kept for a woken waiter), until `until`. */
interface Hold {
  namespace: string;
  clusterName: string;
  until: number;
}

interface Reservation extends SlotClaim, Hold {}

/** What a waiting pass needs a slot for: its operation, its cluster and the cluster's limit (0: none). */
export interface SlotWaiter {
  op: Operation;
  namespace: string;
  clusterName: string;
  clusterLimit: number;
}

/** A reservation whose Job never shows in the cache (its create failed unseen) goes after this long, like a run lease's grace. */
export const reservationTtlMs = 60_000;

/**
 * Job slots counted from the Job cache plus the slots reserved by passes that saw one free and
 * have not created their Job yet (or whose Job the cache does not show yet), so concurrent passes
 * never start more Jobs than the limit: the ReplicaSet controller's expectations, for a count.
 * Passes that found no slot wait in line; a freed slot wakes the oldest waiters it lets start
 * (an apply behind a drift check that the background share still holds back goes first) and is
 * kept for them, so a pass that was not woken does not take it.
 */
export class JobSlots implements JobSlotSource {
  readonly #jobs: SlotJobCache;
  readonly #now: () => number;
  /** By `namespace/job`. */
  readonly #reserved = new Map<string, Reservation>();
  /** Owners waiting for a slot, oldest first (a Map keeps its first insertion order); `wokenAt` once woken. */
  readonly #waiting = new Map<string, SlotWaiter & { wokenAt?: number }>();
  /** Slots kept for woken owners whose pass has not come yet, by owner. */
  readonly #promised = new Map<string, Hold>();
  /** Woken owners not yet handed to their kind's controller (a freed slot is seen by each kind's watch). */
  readonly #undelivered = new Set<string>();
  readonly managerLimit: number;
  readonly clusterDefaultLimit: number;

  constructor(jobs: SlotJobCache, limits: { manager: number; clusterDefault: number }, now: () => number = Date.now) {
    this.#jobs = jobs;
    this.managerLimit = limits.manager;
    this.clusterDefaultLimit = limits.clusterDefault;
    this.#now = now;
  }

  usage(namespace: string, clusterName: string, owner?: string): JobSlotUsage {
    const counts = this.#counts(owner);
    return { total: counts.total, cluster: counts.byCluster.get(clusterKey(namespace, clusterName)) ?? 0 };
  }

  reserve(claim: SlotClaim): void {
    this.#reserved.set(`${claim.namespace}/${claim.job}`, { ...claim, until: this.#now() + reservationTtlMs });
    this.forget(claim.owner);
  }

  wait(owner: string, waiter: SlotWaiter): void {
    // Waiting again keeps the owner's place in line; the slot kept for it (not enough, e.g. its cluster's limit) goes.
    this.#waiting.set(owner, { ...waiter });
    this.#promised.delete(owner);
    this.#undelivered.delete(owner);
  }

  wake(kind: string): string[] {
    const now = this.#now();
    const counts = this.#counts();
    for (const [owner, waiter] of this.#waiting) {
      if (waiter.wokenAt !== undefined) {
        if (waiter.wokenAt + wokenTtlMs <= now) this.#waiting.delete(owner);
        continue;
      }
      const cluster = clusterKey(waiter.namespace, waiter.clusterName);
      const usage = { total: counts.total, cluster: counts.byCluster.get(cluster) ?? 0 };
      if (jobSlotWait(waiter.op, usage, { manager: this.managerLimit, cluster: waiter.clusterLimit })) {
        // Nothing more fits anywhere once the manager's own limit is reached.
        if (this.managerLimit > 0 && usage.total >= this.managerLimit) break;
        continue;
      }
      waiter.wokenAt = now;
      this.#promised.set(owner, { namespace: waiter.namespace, clusterName: waiter.clusterName, until: now + wakePromiseTtlMs });
      this.#undelivered.add(owner);
      counts.total++;
      counts.byCluster.set(cluster, usage.cluster + 1);
    }
    const keys: string[] = [];
    for (const owner of this.#undelivered) {
      const [namespace, ownerKind, name] = owner.split("/");
      if (ownerKind !== kind) continue;
      this.#undelivered.delete(owner);
      keys.push(`${namespace}/${name}`);
    }
    return keys;
  }

  settle(owner: string, outcome: { createdJob?: string } | "failed"): void {
    if (outcome === "failed") return;
    this.#promised.delete(owner);
    for (const [key, reservation] of this.#reserved)
      if (reservation.owner === owner && reservation.job !== outcome.createdJob) this.#reserved.delete(key);
  }

  /** A Job that finished or went frees its slot, unless its Pod's end freed it first. */
  jobFreesSlot = (job: KubeObject, event: WatchEvent, oldJob?: KubeObject): boolean =>
    jobLeftRunning(job, event, oldJob) && !this.#jobs.podEnded(job.metadata?.namespace ?? "", job.metadata?.name ?? "");

  /** A Pod that ended frees its Job's slot, unless the Job finished first. */
  get podFreesSlot(): JobSlotSource["podFreesSlot"] {
    const cache = this.#jobs;
    if (cache.podSelector === undefined) return undefined;
    return {
      labelSelector: cache.podSelector,
      predicate: (pod, event, oldPod) => {
        const jobName = pod.metadata?.labels?.[jobNameLabel];
        return (
          event === "update" &&
          jobName !== undefined &&
          !podEnded(oldPod) &&
          podEnded(pod) &&
          cache.jobRunning(pod.metadata?.namespace ?? "", jobName)
        );
      },
    };
  }

  /** Slots in use, in all and by cluster: running Jobs, reservations, and slots kept for woken owners (but `exceptFor`'s own). */
  #counts(exceptFor?: string): { total: number; byCluster: Map<string, number> } {
    const now = this.#now();
    // The cache shows a reserved Job now: it counts there.
    this.#dropExpired(this.#reserved, now, (reservation) => this.#jobs.shown(reservation.namespace, reservation.job));
    this.#dropExpired(this.#promised, now);
    const counts = { total: 0, byCluster: new Map<string, number>() };
    const add = (namespace: string, clusterName: string) => {
      counts.total++;
      const key = clusterKey(namespace, clusterName);
      counts.byCluster.set(key, (counts.byCluster.get(key) ?? 0) + 1);
    };
    for (const job of this.#jobs.running()) add(job.metadata?.namespace ?? "", job.metadata?.labels?.[labels.clusterName] ?? "");
    for (const hold of this.#reserved.values()) add(hold.namespace, hold.clusterName);
    for (const [promisedTo, hold] of this.#promised) if (promisedTo !== exceptFor) add(hold.namespace, hold.clusterName);
    return counts;
  }

  /** Entries held, by what they hold: for tests that check a deleted owner leaves none. */
  get held(): { reserved: string[]; waiting: string[]; promised: string[]; undelivered: string[]; goneJobs: string[] } {
    return {
      goneJobs: this.#jobs.gone(),
      reserved: [...this.#reserved.keys()],
      waiting: [...this.#waiting.keys()],
      promised: [...this.#promised.keys()],
      undelivered: [...this.#undelivered],
    };
  }

  forget(owner: string): void {
    this.#waiting.delete(owner);
    this.#promised.delete(owner);
    this.#undelivered.delete(owner);
  }

  #dropExpired<H extends Hold>(holds: Map<string, H>, now: number, shown: (hold: H) => boolean = () => false): void {
    for (const [key, hold] of holds) if (hold.until <= now || shown(hold)) holds.delete(key);
  }
}

/** Runs a pass's start of a Job; a slot it reserved goes back unless it created the Job. */
export async function settlingJobSlot<T extends { job?: { name: string } }>(
  slots: JobSlotSource | undefined,
  owner: string,
  start: () => Promise<T>,
): Promise<T> {
  try {
    const outcome = await start();
    slots?.settle?.(owner, outcome.job ? { createdJob: outcome.job.name } : {});
    return outcome;
  } catch (error) {
    slots?.settle?.(owner, "failed");
    throw error;
  }
}
