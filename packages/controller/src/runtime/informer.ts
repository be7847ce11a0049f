/**
 * A resilient informer: list, then watch from the list's resourceVersion, into a cache keyed by
 * `namespace/name` with secondary indexes, calling handlers on add, update and delete.
 *
 * client-node 1.4's informer stops on any error but 410 and has no watch timeout, so this one
 * supervises its own loop:
 * - 410 Gone (a compacted resourceVersion): relist at once;
 * - any other error: rewatch from the last resourceVersion after an exponential backoff (1 s … 30 s);
 * - no event or bookmark for `inactivityTimeoutMillis`: the connection is presumed dead, rewatch;
 * - every `resyncPeriodMillis` (the manager's `--sync-period`): re-deliver every cached object as a
 *   resync update, from the cache, as client-go's resync does (a watch misses nothing: it delivers
 *   every change in order or ends in 410, which relists);
 * - the server ends each watch after a random 5–10 minutes (`timeoutSeconds`), like client-go;
 * - {@link Informer.rescope} (a sharded manager's held shards changed): relist with the new label
 *   selector, firing adds for objects that entered the scope and deletes for those that left it.
 */
import type { Logger } from "pino";
import { realClock, sleep, type Clock, type TimerHandle } from "./clock.js";
import { isGone, KubeApiError, type KubeStatus } from "./api-errors.js";
import { exponentialBackoffMillis } from "./backoff.js";
import { resourcePath, type KubeClient, type KubeObject, type ResourceType, type WatchEvent } from "./kube-client.js";
import { matchesLabels, parseLabelSelector, type LabelRequirement } from "./label-selector.js";

/** `namespace/name`, or `name` for a cluster-scoped object: the key of the cache and of work queues. */
export function objectKey(object: KubeObject): string {
  const meta = object.metadata ?? {};
  return meta.namespace ? `${meta.namespace}/${meta.name ?? ""}` : (meta.name ?? "");
}

/** Splits a key back into its namespace (undefined when cluster-scoped) and name. */
export function splitKey(key: string): { namespace: string | undefined; name: string } {
  const slash = key.indexOf("/");
  return slash < 0 ? { namespace: undefined, name: key } : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

/** Index values of an object; an object may sit under several values of one index, or none. */
export type IndexFunction<T extends KubeObject> = (object: T) => readonly string[];

/** Indexes an object under the value of one of its labels. */
export const labelIndex =
  <T extends KubeObject>(labelKey: string): IndexFunction<T> =>
  (object) => {
    const value = object.metadata?.labels?.[labelKey];
    return value === undefined ? [] : [value];
  };

/** The name of the index {@link Informer.indexLabel} adds. */
export const labelIndexName = (key: string): string => `label:${key}`;

/** Indexes an object under `<kind>/<name>` of its controller owner (`ownerReferences[controller=true]`). */
export const controllerOwnerIndex =
  <T extends KubeObject>(): IndexFunction<T> =>
  (object) =>
    (object.metadata?.ownerReferences ?? []).filter((ref) => ref.controller).map((ref) => `${ref.kind}/${ref.name}`);

export interface InformerHandlers<T extends KubeObject> {
  /** A new object; `initialList` while the cache fills for the first time. */
  add?(object: T, info: { initialList: boolean }): void;
  /** A changed object; `resync` when a periodic relist re-delivers it unchanged. */
  update?(oldObject: T, newObject: T, info: { resync: boolean }): void;
  /** A deleted object, as last seen. */
  delete?(object: T): void;
}

/** What an informer reports; the metrics module may count these. */
export interface InformerMetricsSink {
  listed(items: number, seconds: number): void;
  watchRestarted(reason: WatchRestartReason): void;
}

export type WatchRestartReason = "gone" | "error" | "inactive" | "relist" | "ended";

export interface InformerOptions<T extends KubeObject> {
  client: KubeClient;
  type: ResourceType;
  /** Watch one namespace only (the manager's `--namespace`); default all. */
  namespace?: string;
  /** Server-side label selector (e.g. the `--watch-filter`); `false` selects nothing (no list, no watch: an empty cache). */
  labelSelector?: string | false;
  fieldSelector?: string;
  /** Shapes each object before it is cached (e.g. strip a Secret's data to save memory). */
  transform?: (object: T) => T;
  indexes?: Record<string, IndexFunction<T>>;
  logger: Logger;
  clock?: Clock;
  metrics?: InformerMetricsSink;
  /** Rewatch when nothing (not even a bookmark, which the server sends about once a minute) arrived for this long. Default 3 min. */
  inactivityTimeoutMillis?: number;
  /** Re-deliver every cached object as a resync update this often (0 = never). Default 10 min. */
  resyncPeriodMillis?: number;
  /** Server-side watch timeout; default random 300–600 s (client-go). */
  watchTimeoutSeconds?: () => number;
  /** Reconnect backoff after an error. Default 1 s doubling to 30 s. */
  backoffInitialMillis?: number;
  backoffMaxMillis?: number;
  /** List page size. Default 500. */
  pageSize?: number;
}

export const informerDefaults = {
  inactivityTimeoutMillis: 3 * 60_000,
  resyncPeriodMillis: 10 * 60_000,
  backoffInitialMillis: 1000,
  backoffMaxMillis: 30_000,
  pageSize: 500,
} as const;

/** Why the current watch was aborted from inside the informer. */
class WatchInterrupt extends Error {
  constructor(readonly reason: "inactive" | "rescope" | "stop") {
    super(`watch interrupted: ${reason}`);
  }
}

export class Informer<T extends KubeObject> {
  readonly type: ResourceType;
  readonly #options: InformerOptions<T>;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #objects = new Map<string, T>();
  readonly #indexes = new Map<string, { fn: IndexFunction<T>; values: Map<string, Set<string>>; byKey: Map<string, readonly string[]> }>();
  readonly #handlers: InformerHandlers<T>[] = [];
  readonly #syncWaiters: (() => void)[] = [];
  #resourceVersion: string | undefined;
  #synced = false;
  #running: Promise<void> | undefined;
  #stopping: AbortController | undefined;
  #current: AbortController | undefined;
  #resyncTimer: TimerHandle | undefined;
  #lastError: unknown;
  #labelSelector: string | false | undefined;
  /** Bumped by each {@link rescope}; the cache shows the current scope once a list of this generation finished. */
  #scopeGeneration = 0;
  #listedGeneration = -1;
  #rescopeDue = false;
  /** Wakes the loop while it holds nothing (`labelSelector: false`). */
  #wake: (() => void) | undefined;

  constructor(options: InformerOptions<T>) {
    this.type = options.type;
    this.#options = options;
    this.#labelSelector = options.labelSelector;
    this.#clock = options.clock ?? realClock;
    this.#log = options.logger.child({ informer: options.type.plural, ...(options.namespace ? { namespace: options.namespace } : {}) });
    for (const [name, fn] of Object.entries(options.indexes ?? {})) this.#indexes.set(name, { fn, values: new Map(), byKey: new Map() });
  }

  /** Registers handlers; added after the cache filled, they see every cached object as an add first. */
  addHandlers(handlers: InformerHandlers<T>): void {
    this.#handlers.push(handlers);
    if (this.#synced)
      for (const object of this.#objects.values()) this.#call(handlers, "add", () => handlers.add?.(object, { initialList: true }));
  }

  /** Adds a secondary index; only before {@link start}. */
  addIndex(name: string, fn: IndexFunction<T>): void {
    if (this.#running) throw new Error(`informer for ${this.type.plural}: add index "${name}" before starting it`);
    if (this.#indexes.has(name)) throw new Error(`informer for ${this.type.plural} already has an index "${name}"`);
    this.#indexes.set(name, { fn, values: new Map(), byKey: new Map() });
  }

  /** Whether {@link start} was called. */
  get started(): boolean {
    return this.#running !== undefined;
  }

  /** Starts listing and watching in the background; resolves at once. */
  start(): void {
    if (this.#running) throw new Error(`informer for ${this.type.plural} already started`);
    this.#stopping = new AbortController();
    this.#running = this.#run(this.#stopping.signal);
  }

  /** Stops watching and waits for the loop to end. The cache keeps its last contents. */
  async stop(): Promise<void> {
    this.#stopping?.abort();
    this.#current?.abort(new WatchInterrupt("stop"));
    if (this.#resyncTimer) this.#clock.clearTimeout(this.#resyncTimer);
    await this.#running;
  }

  /** True once the first list filled the cache. */
  hasSynced(): boolean {
    return this.#synced;
  }

  /** The label selector the cache follows now (`false`: nothing). */
  get labelSelector(): string | false | undefined {
    return this.#labelSelector;
  }

  /**
   * Follows another label selector from now on (`false`: nothing): the watch restarts with a list
   * of the new scope that makes the cache equal to it, firing adds for objects that entered it,
   * deletes for those that left and updates for those that changed meanwhile (unchanged objects
   * fire nothing: this is not a resync). Until that list finished, {@link listedCurrentScope} is false.
   */
  rescope(labelSelector: string | false | undefined): void {
    if (labelSelector === this.#labelSelector) return;
    this.#labelSelector = labelSelector;
    this.#scopeGeneration++;
    this.#rescopeDue = true;
    if (this.#running) this.#log.info({ labelSelector }, "rescoping the cache");
    this.#current?.abort(new WatchInterrupt("rescope"));
    this.#wake?.();
  }

  /** Whether the cache holds the objects of the current scope: synced, and listed since the last {@link rescope}. */
  listedCurrentScope(): boolean {
    return this.#synced && this.#listedGeneration === this.#scopeGeneration;
  }

  /** Resolves true once synced, false if `timeoutMillis` passed or `signal` aborted first. */
  async waitForSync(timeoutMillis: number, signal?: AbortSignal): Promise<boolean> {
    if (this.#synced) return true;
    const abort = new AbortController();
    const onAbort = () => abort.abort();
    signal?.addEventListener("abort", onAbort, { once: true });
    const synced = new Promise<void>((resolve) => this.#syncWaiters.push(resolve));
    await Promise.race([synced, sleep(this.#clock, timeoutMillis, abort.signal)]);
    abort.abort();
    signal?.removeEventListener("abort", onAbort);
    return this.#synced;
  }

  /** The last error of the list/watch loop, for readiness messages. */
  get lastError(): unknown {
    return this.#lastError;
  }

  /** The resourceVersion the next watch starts from. */
  get resourceVersion(): string | undefined {
    return this.#resourceVersion;
  }

  /** The cached object (deep-frozen: copy before changing it). */
  get(key: string): T | undefined;
  get(namespace: string | undefined, name: string): T | undefined;
  get(keyOrNamespace: string | undefined, name?: string): T | undefined {
    const key = name === undefined ? (keyOrNamespace ?? "") : keyOrNamespace ? `${keyOrNamespace}/${name}` : name;
    return this.#objects.get(key);
  }

  /** Cached objects, optionally of one namespace and matching a label selector (string or parsed). */
  list(filter: { namespace?: string; labelSelector?: string | readonly LabelRequirement[] } = {}): T[] {
    const requirements = typeof filter.labelSelector === "string" ? parseLabelSelector(filter.labelSelector) : (filter.labelSelector ?? []);
    const result: T[] = [];
    for (const object of this.#candidates(requirements)) {
      if (filter.namespace !== undefined && object.metadata?.namespace !== filter.namespace) continue;
      if (!matchesLabels(requirements, object.metadata?.labels)) continue;
      result.push(object);
    }
    return result;
  }

  /**
   * Indexes the objects by the value of label `key` (before {@link start}): a {@link list} whose
   * selector asks for one value of it reads that value's objects, not every cached one.
   */
  indexLabel(key: string): void {
    this.addIndex(labelIndexName(key), labelIndex<T>(key));
  }

  /** The objects a list with these requirements must look at: one indexed label's value's, else all. */
  #candidates(requirements: readonly LabelRequirement[]): Iterable<T> {
    for (const requirement of requirements) {
      if (requirement.operator !== "In" || requirement.values.length !== 1) continue;
      const index = this.#indexes.get(labelIndexName(requirement.key));
      if (index) return [...(index.values.get(requirement.values[0]!) ?? [])].map((key) => this.#objects.get(key)!).filter(Boolean);
    }
    return this.#objects.values();
  }

  /** Cached objects under `value` of the index `indexName`. */
  byIndex(indexName: string, value: string): T[] {
    const index = this.#indexes.get(indexName);
    if (!index) throw new Error(`informer for ${this.type.plural} has no index "${indexName}"`);
    return [...(index.values.get(value) ?? [])].map((key) => this.#objects.get(key)!).filter(Boolean);
  }

  /** The number of cached objects. */
  get size(): number {
    return this.#objects.size;
  }

  async #run(stop: AbortSignal): Promise<void> {
    const o = this.#options;
    const initial = o.backoffInitialMillis ?? informerDefaults.backoffInitialMillis;
    const max = o.backoffMaxMillis ?? informerDefaults.backoffMaxMillis;
    // Failed lists or watches in a row: the wait before the next try is the manager's one back-off formula of it.
    let failures = 0;
    this.#scheduleResync();
    while (!stop.aborted) {
      try {
        if (this.#labelSelector === false) {
          await this.#holdNothing(stop);
          continue;
        }
        if (this.#resourceVersion === undefined || this.#rescopeDue) {
          // A fresh list (the first, or after 410) re-delivers unchanged objects as resyncs; a rescope does not.
          const resyncUnchanged = this.#resourceVersion === undefined;
          this.#rescopeDue = false;
          await this.#listAndReplace(stop, resyncUnchanged);
          failures = 0;
        }
        // Rescoped while listing: list the new scope before watching.
        if (this.#rescopeDue || this.#selectsNothing()) continue;
        const receivedAny = await this.#watch(stop);
        if (receivedAny) failures = 0;
        o.metrics?.watchRestarted("ended");
      } catch (error) {
        if (stop.aborted) break;
        this.#lastError = error;
        if (error instanceof WatchInterrupt) {
          o.metrics?.watchRestarted(error.reason === "inactive" ? "inactive" : "relist");
          if (error.reason === "inactive")
            this.#log.warn({ afterMillis: this.#inactivityTimeout() }, "watch silent for too long, reconnecting");
          continue;
        }
        if (isGone(error)) {
          // The resourceVersion was compacted: only a fresh list can tell what changed meanwhile.
          this.#log.info({ resourceVersion: this.#resourceVersion }, "resourceVersion expired (410 Gone), relisting");
          o.metrics?.watchRestarted("gone");
          this.#resourceVersion = undefined;
          continue;
        }
        o.metrics?.watchRestarted("error");
        const delay = jitter(exponentialBackoffMillis(failures++, initial, max));
        this.#log.warn({ err: error, retryInMillis: delay }, "list/watch failed, retrying");
        await sleep(this.#clock, delay, stop);
      }
    }
  }

  #inactivityTimeout(): number {
    return this.#options.inactivityTimeoutMillis ?? informerDefaults.inactivityTimeoutMillis;
  }

  #scheduleResync(): void {
    const period = this.#options.resyncPeriodMillis ?? informerDefaults.resyncPeriodMillis;
    if (period <= 0 || this.#stopping?.signal.aborted) return;
    this.#resyncTimer = this.#clock.setTimeout(() => {
      this.#resync();
      this.#scheduleResync();
    }, period);
  }

  /** Every cached object, re-delivered unchanged as a resync update: no request, and the watch goes on. */
  #resync(): void {
    if (!this.#synced) return;
    for (const object of [...this.#objects.values()]) this.#fire("update", (h) => h.update?.(object, object, { resync: true }));
  }

  #selectsNothing(): boolean {
    return this.#labelSelector === false;
  }

  /** Selects nothing: empties the cache (firing deletes), counts as synced, and waits for a rescope or the stop. */
  async #holdNothing(stop: AbortSignal): Promise<void> {
    const generation = this.#scopeGeneration;
    this.#rescopeDue = false;
    for (const [key, old] of [...this.#objects]) {
      this.#remove(key);
      this.#fire("delete", (h) => h.delete?.(old));
    }
    this.#resourceVersion = undefined;
    this.#listedGeneration = generation;
    this.#markSynced();
    if (this.#scopeGeneration !== generation || stop.aborted) return;
    let onStop: (() => void) | undefined;
    await new Promise<void>((resolve) => {
      this.#wake = resolve;
      onStop = () => resolve();
      stop.addEventListener("abort", onStop, { once: true });
    });
    stop.removeEventListener("abort", onStop!);
    this.#wake = undefined;
  }

  #markSynced(): void {
    if (this.#synced) return;
    this.#synced = true;
    for (const resolve of this.#syncWaiters.splice(0)) resolve();
  }

  /**
   * Lists page by page and makes the cache equal to the result, firing the differences; unchanged objects fire a resync update only when
   * `resyncUnchanged`.
   */
  async #listAndReplace(stop: AbortSignal, resyncUnchanged = true): Promise<void> {
    const o = this.#options;
    const started = performance.now();
    // One selector for every page (a continue token is bound to it), and the scope it lists.
    const labelSelector = this.#labelSelector === false ? undefined : this.#labelSelector;
    const generation = this.#scopeGeneration;
    const items: T[] = [];
    let resourceVersion: string | undefined;
    let continueToken: string | undefined;
    do {
      const page = await o.client.list<T>(
        o.type,
        o.namespace,
        { labelSelector, fieldSelector: o.fieldSelector, limit: o.pageSize ?? informerDefaults.pageSize, continue: continueToken },
        { signal: stop },
      );
      // Transformed page by page: a relist of thousands of Jobs or Pods never holds them all as the server sent them.
      for (const raw of page.items) items.push(this.#prepare(raw));
      resourceVersion ??= page.metadata?.resourceVersion;
      continueToken = page.metadata?.continue || undefined;
    } while (continueToken);
    if (stop.aborted) return;
    const initialList = !this.#synced;
    const seen = new Set<string>();
    for (const object of items) {
      const key = objectKey(object);
      seen.add(key);
      const old = this.#objects.get(key);
      this.#store(key, object);
      if (!old) this.#fire("add", (h) => h.add?.(object, { initialList }));
      else {
        const resync = old.metadata?.resourceVersion === object.metadata?.resourceVersion;
        if (!resync || resyncUnchanged) this.#fire("update", (h) => h.update?.(old, object, { resync }));
      }
    }
    for (const [key, old] of [...this.#objects]) {
      if (seen.has(key)) continue;
      this.#remove(key);
      this.#fire("delete", (h) => h.delete?.(old));
    }
    this.#resourceVersion = resourceVersion;
    o.metrics?.listed(items.length, (performance.now() - started) / 1000);
    if (generation > 0 && this.#listedGeneration !== generation)
      this.#log.info({ labelSelector, items: items.length }, "listed the new scope");
    else this.#log.debug({ items: items.length, resourceVersion }, "listed");
    this.#listedGeneration = generation;
    this.#markSynced();
  }

  /** One watch from the current resourceVersion; resolves true when it delivered anything before the server ended it. */
  async #watch(stop: AbortSignal): Promise<boolean> {
    const o = this.#options;
    const current = new AbortController();
    this.#current = current;
    const onStop = () => current.abort(new WatchInterrupt("stop"));
    stop.addEventListener("abort", onStop, { once: true });
    const inactivity = this.#inactivityTimeout();
    let timer: TimerHandle | undefined;
    const arm = () => {
      if (timer) this.#clock.clearTimeout(timer);
      timer = this.#clock.setTimeout(() => current.abort(new WatchInterrupt("inactive")), inactivity);
    };
    let receivedAny = false;
    arm();
    try {
      const timeoutSeconds = o.watchTimeoutSeconds?.() ?? Math.floor(300 * (1 + Math.random()));
      await o.client.watch<T>(
        resourcePath(o.type, o.namespace),
        {
          resourceVersion: this.#resourceVersion,
          allowWatchBookmarks: true,
          timeoutSeconds,
          labelSelector: this.#labelSelector === false ? undefined : this.#labelSelector,
          fieldSelector: o.fieldSelector,
        },
        (event) => {
          arm();
          receivedAny = true;
          this.#apply(event);
        },
        {
          signal: current.signal,
          onUnparsable: (line) => this.#log.debug({ line: line.slice(0, 200) }, "dropped an unparsable watch line"),
        },
      );
      return receivedAny;
    } catch (error) {
      // An abort surfaces as a generic AbortError; the reason says why we aborted.
      if (current.signal.aborted && current.signal.reason instanceof WatchInterrupt) throw current.signal.reason;
      throw error;
    } finally {
      if (timer) this.#clock.clearTimeout(timer);
      stop.removeEventListener("abort", onStop);
      if (this.#current === current) this.#current = undefined;
    }
  }

  #apply(event: WatchEvent<T>): void {
    if (event.type === "ERROR") {
      const status = event.object as KubeStatus;
      throw new KubeApiError(status.code ?? 500, status, `watch ${this.type.plural}: ${status.message ?? "error event"}`);
    }
    const resourceVersion = event.object.metadata?.resourceVersion;
    if (event.type === "BOOKMARK") {
      if (resourceVersion) this.#resourceVersion = resourceVersion;
      return;
    }
    const object = this.#prepare(event.object);
    const key = objectKey(object);
    const old = this.#objects.get(key);
    if (event.type === "DELETED") {
      this.#remove(key);
      this.#fire("delete", (h) => h.delete?.(old ?? object));
    } else if (!old) {
      this.#store(key, object);
      this.#fire("add", (h) => h.add?.(object, { initialList: false }));
    } else if (old.metadata?.resourceVersion !== resourceVersion) {
      this.#store(key, object);
      this.#fire("update", (h) => h.update?.(old, object, { resync: false }));
    }
    if (resourceVersion) this.#resourceVersion = resourceVersion;
  }

  #prepare(raw: T): T {
    const object = this.#options.transform ? this.#options.transform(raw) : raw;
    return deepFreeze(object);
  }

  #store(key: string, object: T): void {
    this.#unindex(key);
    this.#objects.set(key, object);
    for (const index of this.#indexes.values()) {
      const values = index.fn(object);
      index.byKey.set(key, values);
      for (const value of values) {
        let keys = index.values.get(value);
        if (!keys) index.values.set(value, (keys = new Set()));
        keys.add(key);
      }
    }
  }

  #remove(key: string): void {
    this.#unindex(key);
    this.#objects.delete(key);
  }

  #unindex(key: string): void {
    for (const index of this.#indexes.values()) {
      for (const value of index.byKey.get(key) ?? []) {
        const keys = index.values.get(value);
        keys?.delete(key);
        if (keys?.size === 0) index.values.delete(value);
      }
      index.byKey.delete(key);
    }
  }

  #fire(event: string, call: (handlers: InformerHandlers<T>) => void): void {
    for (const handlers of this.#handlers) this.#call(handlers, event, () => call(handlers));
  }

  /** A throwing handler must not stop the watch: log it and carry on. */
  #call(_handlers: InformerHandlers<T>, event: string, call: () => void): void {
    try {
      call();
    } catch (error) {
      this.#log.error({ err: error, event }, "informer handler threw");
    }
  }
}

/** ±20 % so that many informers failing together do not reconnect in lockstep. */
function jitter(millis: number): number {
  return Math.round(millis * (0.8 + Math.random() * 0.4));
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
