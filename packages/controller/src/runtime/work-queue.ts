/**
 * A rate-limited, deduplicating work queue of object keys (`namespace/name`), with the semantics of
 * client-go's workqueue and controller-runtime's priority queue:
 *
 * - a key is queued at most once; adding a queued key only raises its priority;
 * - a key is never handed to two workers at once: a key added while it is processed is handed out
 *   again, once, after {@link WorkQueue.done};
 * - `addAfter` keeps the earliest of several delays, and a plain `add` makes a waiting key ready now;
 * - `addRateLimited` waits as long as the rate limiter says (per-key backoff, overall bucket);
 * - shutdown stops handing out work and can wait for the work in flight to finish.
 *
 * Keys carry no event: the reconciler reads the current state (level-based).
 */
import { realClock, type Clock, type TimerHandle } from "./clock.js";
import { controllerRateLimiter, type RateLimiter } from "./rate-limiter.js";

/** The priority of keys from an informer's initial list and from resyncs (controller-runtime's LowPriority). */
export const lowPriority = -100;

/** What a queue reports while it works; the metrics module implements it (controller-runtime's `workqueue_*`). */
export interface WorkQueueMetricsSink {
  /** Keys waiting for a worker. */
  depth(keys: number): void;
  /** Every add, including those deduplicated. */
  added(): void;
  /** Every rate-limited re-add. */
  retried(): void;
  /** From the add that made a key ready until a worker took it. */
  queued(seconds: number): void;
  /** From a worker taking a key until it was done. */
  worked(seconds: number): void;
}

export interface WorkQueueOptions {
  /** Names the queue in metrics and logs, e.g. the controller name. */
  name: string;
  /** Default {@link controllerRateLimiter}: 5 ms … 1000 s per key, 10 qps burst 100 overall. */
  rateLimiter?: RateLimiter;
  clock?: Clock;
  metrics?: WorkQueueMetricsSink;
}

interface ReadyEntry {
  key: string;
  priority: number;
  /** Insertion order breaks priority ties: first in, first out. */
  seq: number;
  addedAt: number;
  /** In the heap, i.e. waiting for a worker (not held back because the key is in flight). */
  inHeap: boolean;
  /** Superseded by a higher-priority entry for the same key; skipped when popped. */
  stale: boolean;
}

interface WaitingEntry {
  readyAt: number;
  priority: number;
  timer: TimerHandle;
}

export class WorkQueue {
  readonly name: string;
  readonly #clock: Clock;
  readonly #limiter: RateLimiter;
  readonly #metrics: WorkQueueMetricsSink | undefined;
  readonly #heap = new EntryHeap();
  readonly #ready = new Map<string, ReadyEntry>();
  readonly #waiting = new Map<string, WaitingEntry>();
  readonly #processing = new Map<string, number>();
  readonly #getters: ((key: string | undefined) => void)[] = [];
  readonly #drainWaiters: (() => void)[] = [];
  #queuedCount = 0;
  #seq = 0;
  #shuttingDown = false;

  constructor(options: WorkQueueOptions) {
    this.name = options.name;
    this.#clock = options.clock ?? realClock;
    this.#limiter = options.rateLimiter ?? controllerRateLimiter({ clock: this.#clock });
    this.#metrics = options.metrics;
  }

  /** Makes `key` ready now (or, if it is in flight, ready again once it is done). */
  add(key: string, priority = 0): void {
    if (this.#shuttingDown) return;
    this.#metrics?.added();
    const waiting = this.#waiting.get(key);
    if (waiting) {
      this.#clock.clearTimeout(waiting.timer);
      this.#waiting.delete(key);
      priority = Math.max(priority, waiting.priority);
    }
    const existing = this.#ready.get(key);
    if (existing) {
      if (priority <= existing.priority) return;
      if (!existing.inHeap) {
        existing.priority = priority;
        return;
      }
      // Re-insert at the higher priority, keeping the key's place among its new peers by its first add.
      existing.stale = true;
      this.#queuedCount--;
      const raised: ReadyEntry = { ...existing, priority, stale: false, inHeap: false };
      this.#ready.set(key, raised);
      this.#enqueue(raised);
      return;
    }
    const entry: ReadyEntry = { key, priority, seq: this.#seq++, addedAt: this.#clock.now(), inHeap: false, stale: false };
    this.#ready.set(key, entry);
    if (!this.#processing.has(key)) this.#enqueue(entry);
  }

  /** Makes `key` ready after `delayMillis`; a key already ready, or due sooner, is left as it is. */
  addAfter(key: string, delayMillis: number, priority = 0): void {
    if (this.#shuttingDown) return;
    if (delayMillis <= 0) return this.add(key, priority);
    if (this.#ready.has(key)) return;
    const readyAt = this.#clock.now() + delayMillis;
    const waiting = this.#waiting.get(key);
    if (waiting) {
      if (waiting.readyAt <= readyAt) {
        waiting.priority = Math.max(waiting.priority, priority);
        return;
      }
      this.#clock.clearTimeout(waiting.timer);
      priority = Math.max(priority, waiting.priority);
    }
    const timer = this.#clock.setTimeout(() => {
      const current = this.#waiting.get(key);
      if (current?.timer !== timer) return;
      this.#waiting.delete(key);
      this.add(key, current.priority);
    }, delayMillis);
    this.#waiting.set(key, { readyAt, priority, timer });
  }

  /** Re-adds `key` after the rate limiter's delay: its next backoff step, or the overall bucket's wait. */
  addRateLimited(key: string): void {
    if (this.#shuttingDown) return;
    this.#metrics?.retried();
    this.addAfter(key, this.#limiter.when(key));
  }

  /** Clears `key`'s backoff; call it after a success. */
  forget(key: string): void {
    this.#limiter.forget(key);
  }

  /** How many times `key` was re-added by {@link addRateLimited} since it was last forgotten. */
  numRequeues(key: string): number {
    return this.#limiter.numRequeues(key);
  }

  /** The next ready key, waiting for one if none is; `undefined` once the queue shuts down. */
  get(): Promise<string | undefined> {
    if (this.#shuttingDown) return Promise.resolve(undefined);
    const entry = this.#heap.pop();
    if (entry) return Promise.resolve(this.#take(entry));
    return new Promise((resolve) => this.#getters.push(resolve));
  }

  /** Marks `key` processed; if it was added meanwhile, it becomes ready again. */
  done(key: string): void {
    const startedAt = this.#processing.get(key);
    if (startedAt === undefined) return;
    this.#processing.delete(key);
    this.#metrics?.worked((this.#clock.now() - startedAt) / 1000);
    const again = this.#ready.get(key);
    if (again && !this.#shuttingDown) this.#enqueue(again);
    if (this.#processing.size === 0) for (const resolve of this.#drainWaiters.splice(0)) resolve();
  }

  /** Whether `key` is ready, waiting for a delay, or in flight. */
  holds(key: string): boolean {
    return this.#ready.has(key) || this.#waiting.has(key) || this.#processing.has(key);
  }

  /** Keys ready and waiting for a worker. */
  get length(): number {
    return this.#queuedCount;
  }

  /** Keys waiting for a delay (`addAfter`, backoff) to pass. */
  get delayedLength(): number {
    return this.#waiting.size;
  }

  /** When each key in flight was taken, for the unfinished-work metrics. */
  inFlightSince(): number[] {
    return [...this.#processing.values()];
  }

  get shuttingDown(): boolean {
    return this.#shuttingDown;
  }

  /** Stops taking and handing out work at once; pending and delayed keys are dropped (the next leader relists). */
  shutDown(): void {
    if (this.#shuttingDown) return;
    this.#shuttingDown = true;
    for (const waiting of this.#waiting.values()) this.#clock.clearTimeout(waiting.timer);
    this.#waiting.clear();
    this.#heap.clear();
    this.#ready.clear();
    this.#queuedCount = 0;
    this.#metrics?.depth(0);
    for (const resolve of this.#getters.splice(0)) resolve(undefined);
  }

  /**
   * Shuts down and waits until every key in flight is done, or `timeoutMillis` passed.
   * Resolves true when drained, false on timeout.
   */
  async shutDownWithDrain(timeoutMillis = Number.POSITIVE_INFINITY): Promise<boolean> {
    this.shutDown();
    if (this.#processing.size === 0) return true;
    return new Promise<boolean>((resolve) => {
      let timer: TimerHandle | undefined;
      const drained = () => {
        if (timer) this.#clock.clearTimeout(timer);
        resolve(true);
      };
      this.#drainWaiters.push(drained);
      if (Number.isFinite(timeoutMillis)) {
        timer = this.#clock.setTimeout(() => {
          const index = this.#drainWaiters.indexOf(drained);
          if (index >= 0) this.#drainWaiters.splice(index, 1);
          resolve(false);
        }, timeoutMillis);
      }
    });
  }

  #enqueue(entry: ReadyEntry): void {
    const getter = this.#getters.shift();
    if (getter) return getter(this.#take(entry));
    entry.inHeap = true;
    this.#heap.push(entry);
    this.#queuedCount++;
    this.#metrics?.depth(this.#queuedCount);
  }

  #take(entry: ReadyEntry): string {
    if (entry.inHeap) {
      entry.inHeap = false;
      this.#queuedCount--;
      this.#metrics?.depth(this.#queuedCount);
    }
    const now = this.#clock.now();
    this.#ready.delete(entry.key);
    this.#processing.set(entry.key, now);
    this.#metrics?.queued((now - entry.addedAt) / 1000);
    return entry.key;
  }
}

/** A binary max-heap on (priority, then first-in) that skips stale entries. */
class EntryHeap {
  #items: ReadyEntry[] = [];

  push(entry: ReadyEntry): void {
    const items = this.#items;
    items.push(entry);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(items[i]!, items[parent]!)) break;
      [items[i], items[parent]] = [items[parent]!, items[i]!];
      i = parent;
    }
  }

  pop(): ReadyEntry | undefined {
    for (;;) {
      const items = this.#items;
      const top = items[0];
      if (!top) return undefined;
      const last = items.pop()!;
      if (items.length > 0) {
        items[0] = last;
        let i = 0;
        for (;;) {
          const left = 2 * i + 1;
          const right = left + 1;
          let best = i;
          if (left < items.length && before(items[left]!, items[best]!)) best = left;
          if (right < items.length && before(items[right]!, items[best]!)) best = right;
          if (best === i) break;
          [items[i], items[best]] = [items[best]!, items[i]!];
          i = best;
        }
      }
      if (!top.stale) return top;
    }
  }

  clear(): void {
    this.#items = [];
  }
}

function before(a: ReadyEntry, b: ReadyEntry): boolean {
  return a.priority !== b.priority ? a.priority > b.priority : a.seq < b.seq;
}
