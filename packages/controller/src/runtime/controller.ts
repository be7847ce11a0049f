/**
 * A controller: a named reconcile function, the informer events that enqueue keys for it, and the
 * workers that drain its queue with controller-runtime's result semantics:
 *
 * | outcome | queue |
 * | --- | --- |
 * | throws a {@link TerminalError} | counted and logged, not retried; `forget` |
 * | throws anything else | rate-limited re-add (per-key backoff 5 ms … 1000 s) |
 * | returns `{ requeueAfterMillis }` | `forget`, then re-add after the delay (0: at once) |
 * | returns nothing | `forget` |
 *
 * Each pass gets a `reconcileId` in its logger; a key is never reconciled by two workers at once.
 */
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { RuntimeMetrics } from "../metrics/runtime-metrics.js";
import { realClock, type Clock } from "./clock.js";
import { objectKey, splitKey, type InformerHandlers } from "./informer.js";
import type { KubeObject, ResourceType } from "./kube-client.js";
import type { RateLimiter } from "./rate-limiter.js";
import { lowPriority, WorkQueue } from "./work-queue.js";

export interface ReconcileContext {
  /** The key's namespace (undefined for a cluster-scoped object) and name. */
  namespace: string | undefined;
  name: string;
  /** A fresh id per pass, also in the logger. */
  reconcileId: string;
  /** Carries `controller`, `key` and `reconcileId`. */
  logger: Logger;
  /** Aborts when the manager must stop now: leadership lost, or the shutdown grace period ran out. */
  signal: AbortSignal;
}

export interface ReconcileOutcome {
  /** Look again after this long (a timer: drift interval, poll of a running Job, backoff of a wait). */
  requeueAfterMillis?: number;
}

/** An error retrying cannot fix (controller-runtime's TerminalError): counted and logged, not retried. */
export class TerminalError extends Error {
  override readonly name = "TerminalError";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

export type WatchEventType = "add" | "update" | "delete";

/** Maps one informer's events to the keys a controller reconciles. */
export interface WatchSpec<T extends KubeObject = KubeObject> {
  type: ResourceType;
  /** Which of the manager's informers on `type` (by its server-side label selector); default the unfiltered one. */
  labelSelector?: string;
  /** The keys to enqueue for an event; `oldObject` is set on updates. */
  map(object: T, event: WatchEventType, oldObject?: T): readonly string[];
  /** Drops events before mapping, e.g. status-only updates. Default: all. */
  predicate?(object: T, event: WatchEventType, oldObject?: T): boolean;
  /** The queue priority of the keys its events map to (initial lists and resyncs stay low); default 0. */
  priority?: number;
}

export interface Controller {
  /** Names the controller in logs and metrics, e.g. `terraformmachine`. */
  name: string;
  /** The kind it reconciles, e.g. `TerraformMachine`. */
  kind: string;
  /** Workers, i.e. keys reconciled at once (the `--<kind>-concurrency` flags). */
  concurrency: number;
  watches: readonly WatchSpec[];
  reconcile(key: string, context: ReconcileContext): Promise<ReconcileOutcome | void>;
  /** Default true: workers run only on the leader. */
  needsLeaderElection?: boolean;
  /** Default: client-go's controller rate limiter. */
  rateLimiter?: RateLimiter;
}

/** Enqueues the object's own key. */
export function watchSelf<T extends KubeObject>(type: ResourceType, predicate?: WatchSpec<T>["predicate"]): WatchSpec<T> {
  return { type, map: (object) => [objectKey(object)], ...(predicate ? { predicate } : {}) };
}

/** Enqueues the key of the object's controller owner of `ownerKind` (e.g. a Job → its TerraformMachine). */
export function watchControllerOwner<T extends KubeObject>(
  type: ResourceType,
  ownerKind: string,
  predicate?: WatchSpec<T>["predicate"],
): WatchSpec<T> {
  return {
    type,
    map: (object) => {
      const owner = object.metadata?.ownerReferences?.find((ref) => ref.controller && ref.kind === ownerKind);
      if (!owner) return [];
      return [object.metadata?.namespace ? `${object.metadata.namespace}/${owner.name}` : owner.name];
    },
    ...(predicate ? { predicate } : {}),
  };
}

/** Drops updates that changed neither the generation nor the labels, annotations, finalizers or deletion (status-only writes). */
export function generationOrMetadataChanged<T extends KubeObject>(object: T, event: WatchEventType, oldObject?: T): boolean {
  if (event !== "update" || !oldObject) return true;
  const a = oldObject.metadata ?? {};
  const b = object.metadata ?? {};
  return (
    a.generation !== b.generation ||
    a.deletionTimestamp !== b.deletionTimestamp ||
    JSON.stringify(a.labels ?? {}) !== JSON.stringify(b.labels ?? {}) ||
    JSON.stringify(a.annotations ?? {}) !== JSON.stringify(b.annotations ?? {}) ||
    JSON.stringify(a.finalizers ?? []) !== JSON.stringify(b.finalizers ?? [])
  );
}

/**
 * {@link generationOrMetadataChanged}, with a periodic resync (the same resourceVersion re-delivered) let through: the `--sync-period`
 * pass.
 */
export function changedOrResync<T extends KubeObject>(object: T, event: WatchEventType, oldObject?: T): boolean {
  return oldObject?.metadata?.resourceVersion === object.metadata?.resourceVersion || generationOrMetadataChanged(object, event, oldObject);
}

export interface ControllerRunnerOptions {
  logger: Logger;
  metrics?: RuntimeMetrics;
  clock?: Clock;
}

/** One controller's queue and workers. */
export class ControllerRunner {
  readonly controller: Controller;
  readonly queue: WorkQueue;
  readonly #log: Logger;
  readonly #metrics: RuntimeMetrics | undefined;
  readonly #clock: Clock;
  readonly #hardStop = new AbortController();
  #workers: Promise<void>[] = [];
  #active = 0;

  constructor(controller: Controller, options: ControllerRunnerOptions) {
    if (!Number.isInteger(controller.concurrency) || controller.concurrency < 1)
      throw new Error(`controller ${controller.name}: concurrency must be an integer >= 1`);
    this.controller = controller;
    this.#log = options.logger.child({ controller: controller.name, controllerKind: controller.kind });
    this.#metrics = options.metrics;
    this.#clock = options.clock ?? realClock;
    this.queue = new WorkQueue({
      name: controller.name,
      clock: this.#clock,
      ...(controller.rateLimiter ? { rateLimiter: controller.rateLimiter } : {}),
      ...(options.metrics ? { metrics: options.metrics.workQueueSink(controller.name) } : {}),
    });
    options.metrics?.trackInFlight(controller.name, () => this.queue.inFlightSince());
    options.metrics?.initController(controller.name, controller.concurrency);
  }

  /** Informer handlers that turn one watch's events into keys: initial-list and resync keys at low priority. */
  handlersFor<T extends KubeObject>(watch: WatchSpec<T>): InformerHandlers<T> {
    const enqueue = (keys: readonly string[], priority: number) => {
      for (const key of keys) if (key) this.queue.add(key, priority);
    };
    const handle = (event: WatchEventType, object: T, oldObject: T | undefined, priority: number) => {
      if (watch.predicate && !watch.predicate(object, event, oldObject)) return;
      enqueue(watch.map(object, event, oldObject), priority);
    };
    return {
      add: (object, { initialList }) => handle("add", object, undefined, initialList ? lowPriority : (watch.priority ?? 0)),
      update: (oldObject, object, { resync }) => handle("update", object, oldObject, resync ? lowPriority : (watch.priority ?? 0)),
      delete: (object) => handle("delete", object, undefined, watch.priority ?? 0),
    };
  }

  /** Starts the workers. */
  start(): void {
    if (this.#workers.length > 0) throw new Error(`controller ${this.controller.name} already started`);
    this.#log.info({ workers: this.controller.concurrency }, "starting workers");
    for (let i = 0; i < this.controller.concurrency; i++) this.#workers.push(this.#work());
  }

  /**
   * Stops handing out keys and waits up to `graceMillis` for reconciles in flight; then aborts their
   * signal and waits for them to return. Resolves true when everything finished within the grace period.
   */
  async stop(graceMillis: number): Promise<boolean> {
    const drained = await this.queue.shutDownWithDrain(graceMillis);
    if (!drained) {
      this.#log.warn(
        { graceMillis, inFlight: this.queue.inFlightSince().length },
        "reconciles still running after the grace period, aborting them",
      );
      this.#hardStop.abort();
    }
    await Promise.all(this.#workers);
    return drained;
  }

  /** Aborts reconciles in flight now (leadership lost: another leader may start at once). */
  abort(): void {
    this.#hardStop.abort();
    this.queue.shutDown();
  }

  async #work(): Promise<void> {
    for (;;) {
      // A pass served from the caches awaits only settled promises: without a turn of the event loop
      // between passes, a burst of them (a resync of thousands) would hold off every watch event.
      await new Promise<void>((resolve) => setImmediate(resolve));
      const key = await this.queue.get();
      if (key === undefined) return;
      this.#active++;
      this.#metrics?.activeWorkers.set({ controller: this.controller.name }, this.#active);
      try {
        await this.#reconcileOnce(key);
      } finally {
        this.#active--;
        this.#metrics?.activeWorkers.set({ controller: this.controller.name }, this.#active);
        this.queue.done(key);
      }
    }
  }

  async #reconcileOnce(key: string): Promise<void> {
    const controller = this.controller.name;
    const reconcileId = randomUUID();
    const logger = this.#log.child({ key, reconcileId });
    const { namespace, name } = splitKey(key);
    const started = this.#clock.now();
    let outcome: ReconcileOutcome | void;
    try {
      outcome = await this.controller.reconcile(key, { namespace, name, reconcileId, logger, signal: this.#hardStop.signal });
    } catch (error) {
      this.#metrics?.reconcileTime.observe({ controller }, (this.#clock.now() - started) / 1000);
      this.#metrics?.reconcileErrors.inc({ controller });
      this.#metrics?.reconcileTotal.inc({ controller, result: "error" });
      if (error instanceof TerminalError) {
        this.#metrics?.terminalReconcileErrors.inc({ controller });
        logger.error({ err: error }, "reconciler error (terminal, not retried)");
        this.queue.forget(key);
        return;
      }
      // A reconcile that throws something not an Error is a bug, like a Go panic: counted apart.
      if (!(error instanceof Error)) this.#metrics?.reconcilePanics.inc({ controller });
      logger.error({ err: error }, "reconciler error");
      this.queue.addRateLimited(key);
      return;
    }
    this.#metrics?.reconcileTime.observe({ controller }, (this.#clock.now() - started) / 1000);
    const after = outcome?.requeueAfterMillis;
    // 0 asks for another pass now (controller-runtime's Requeue), not for nothing.
    if (after !== undefined && after >= 0) {
      this.queue.forget(key);
      this.queue.addAfter(key, after);
      this.#metrics?.reconcileTotal.inc({ controller, result: "requeue_after" });
      return;
    }
    this.queue.forget(key);
    this.#metrics?.reconcileTotal.inc({ controller, result: "success" });
  }
}

/** The label of Cluster API's `--watch-filter`. */
export const watchFilterLabel = "cluster.x-k8s.io/watch-filter";

/** The server-side label selector for a `--watch-filter` value; undefined (everything) when empty. */
export function watchFilterSelector(value: string): string | undefined {
  return value === "" ? undefined : `${watchFilterLabel}=${value}`;
}
