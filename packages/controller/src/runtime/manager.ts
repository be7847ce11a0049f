/**
 * The manager: shared informers, controllers, leader election, probes and metrics, and an orderly
 * shutdown. `run` goes through these steps:
 *
 * 1. serve `/healthz` (always ok while running) and `/readyz` (ok once every cache synced);
 *    serve `/metrics`;
 * 2. start every informer and wait until all synced (`cacheSyncTimeoutMillis`, default 2 min);
 *    caches fill on standbys too, so a new leader starts warm;
 * 3. campaign for the Lease (when leader election is on); once leading, start the workers;
 * 4. on `stop` (SIGTERM): stop handing out keys, let reconciles in flight finish within
 *    `gracefulShutdownTimeoutMillis` (default 20 s, then their signal aborts), release the Lease,
 *    stop the informers and servers;
 * 5. on losing the Lease: abort reconciles at once (another leader may already run) and shut down;
 *    the process should then exit non-zero and restart as a standby.
 */
import { setMaxListeners } from "node:events";
import type { Logger } from "pino";
import type { ManagerMetrics } from "../metrics/manager-metrics.js";
import { realClock, type Clock } from "./clock.js";
import { ControllerRunner, type Controller } from "./controller.js";
import { serveMetrics, serveProbes, type BoundServer, type Check, type SecureServing } from "./http-endpoints.js";
import { Informer, type IndexFunction, type InformerOptions } from "./informer.js";
import type { KubeClient, KubeObject, ResourceType } from "./kube-client.js";
import { LeaderElector, type LeaderElectionOptions } from "./leader-election.js";

/** The knobs every informer of the manager shares (timeouts, the resync period, the page size). */
export type SharedInformerOptions = Pick<
  InformerOptions<KubeObject>,
  "inactivityTimeoutMillis" | "resyncPeriodMillis" | "watchTimeoutSeconds" | "backoffInitialMillis" | "backoffMaxMillis" | "pageSize"
>;

export interface ManagerOptions {
  client: KubeClient;
  logger: Logger;
  metrics?: ManagerMetrics;
  /** Limit every namespaced informer to one namespace (`--namespace`); default all. */
  namespace?: string;
  /** How often informers re-deliver their cached objects as resyncs (`--sync-period`). Default 10 min. */
  syncPeriodMillis?: number;
  informerOptions?: SharedInformerOptions;
  /** How long `run` waits for the first sync of every cache. Default 2 min (controller-runtime). */
  cacheSyncTimeoutMillis?: number;
  /** Omit to run without leader election (`--leader-elect=false`). */
  leaderElection?: Omit<
    LeaderElectionOptions,
    "client" | "logger" | "clock" | "onStartedLeading" | "onStoppedLeading" | "onNewLeader" | "onLeadingChanged"
  >;
  /** `/healthz` and `/readyz` (`--health-addr`, default `:9440`); "" or "0" disables. */
  healthAddress?: string;
  /** `/metrics` (`--diagnostics-address`, default `:8443`); "" or "0" disables. */
  metricsAddress?: string;
  /** Serve metrics over HTTPS with authn/authz; plain HTTP when absent (`--insecure-diagnostics`). */
  metricsSecure?: SecureServing;
  /** Time for reconciles in flight to finish on shutdown. Default 20 s (the reference's GracefulShutdownTimeout). */
  gracefulShutdownTimeoutMillis?: number;
  clock?: Clock;
}

export const managerDefaults = {
  syncPeriodMillis: 10 * 60_000,
  cacheSyncTimeoutMillis: 2 * 60_000,
  healthAddress: ":9440",
  metricsAddress: ":8443",
  gracefulShutdownTimeoutMillis: 20_000,
} as const;

/** Why `run` returned. */
export type ManagerExit =
  | { reason: "stopped"; drained: boolean }
  | { reason: "leadership-lost" }
  | { reason: "cache-sync-timeout"; unsynced: string[] };

/**
 * Narrows the informers of some types to a label selector that changes while the manager runs
 * (`--shards`: the held shards). Their caches then hold the objects of the scope only.
 */
export interface InformerScope {
  /** Whether informers of `type` follow the scope. */
  scopes(type: ResourceType): boolean;
  /** The requirement they add to their own selector now; undefined selects nothing. */
  requirement(): string | undefined;
}

export interface InformerRequest<T extends KubeObject> {
  /** Server-side label selector; informers are shared per (type, selectors). */
  labelSelector?: string;
  /** Keep this informer whole even when an {@link InformerScope} scopes its type (it watches what no scope holds). */
  unscoped?: boolean;
  /** Server-side field selector (e.g. `metadata.name=…` for one object per namespace). */
  fieldSelector?: string;
  /** Only on the first request for a (type, selector), or the same function again: shapes objects before caching. */
  transform?: (object: T) => T;
  /** Added if not yet present. */
  indexes?: Record<string, IndexFunction<T>>;
}

export class Manager {
  readonly #o: ManagerOptions;
  readonly #log: Logger;
  readonly #clock: Clock;
  readonly #informers = new Map<string, Informer<KubeObject>>();
  /** The informers an {@link InformerScope} narrows, with their own selector. */
  readonly #scoped = new Map<Informer<KubeObject>, string | undefined>();
  #scope: InformerScope | undefined;
  /** Informers requested `unscoped`: never narrowed. */
  readonly #unscoped = new Set<Informer<KubeObject>>();
  /** The transform each informer was created with. */
  readonly #transforms = new Map<string, unknown>();
  readonly #objectWatches = new Map<string, Informer<KubeObject>>();
  readonly #runners: ControllerRunner[] = [];
  readonly #healthChecks: Check[] = [{ name: "ping", check: () => undefined }];
  readonly #readyChecks: Check[] = [];
  #servers: BoundServer[] = [];
  #started = false;
  #shuttingDown = false;
  #elector: LeaderElector | undefined;

  constructor(options: ManagerOptions) {
    this.#o = options;
    this.#log = options.logger;
    this.#clock = options.clock ?? realClock;
    this.#readyChecks.push({
      name: "informer-sync",
      check: () => {
        const unsynced = this.#unsyncedInformers();
        return unsynced.length > 0 ? `not synced: ${unsynced.join(", ")}` : undefined;
      },
    });
    this.#readyChecks.push({ name: "shutdown", check: () => (this.#shuttingDown ? "shutting down" : undefined) });
  }

  /** The shared informer for `type` (and label selector), created on first request. */
  informer<T extends KubeObject>(type: ResourceType, request: InformerRequest<T> = {}): Informer<T> {
    const id =
      informerId(type, request.labelSelector, request.fieldSelector) + (request.unscoped && this.#scope?.scopes(type) ? "{unscoped}" : "");
    let informer = this.#informers.get(id) as Informer<T> | undefined;
    if (!informer) {
      if (this.#started) throw new Error(`informer for ${id} requested after the manager started`);
      const o = this.#o;
      informer = new Informer<T>({
        ...o.informerOptions,
        client: o.client,
        type,
        logger: this.#log,
        clock: this.#clock,
        resyncPeriodMillis: o.informerOptions?.resyncPeriodMillis ?? o.syncPeriodMillis ?? managerDefaults.syncPeriodMillis,
        ...(type.namespaced && o.namespace ? { namespace: o.namespace } : {}),
        ...(request.labelSelector ? { labelSelector: request.labelSelector } : {}),
        ...(request.fieldSelector ? { fieldSelector: request.fieldSelector } : {}),
        ...(request.transform ? { transform: request.transform } : {}),
        ...(o.metrics
          ? { metrics: o.metrics.runtime.informerSink(`${type.plural}${request.labelSelector ? `{${request.labelSelector}}` : ""}`) }
          : {}),
      });
      this.#informers.set(id, informer as unknown as Informer<KubeObject>);
      if (request.transform) this.#transforms.set(id, request.transform);
      if (request.unscoped) this.#unscoped.add(informer as unknown as Informer<KubeObject>);
      else if (this.#scope?.scopes(type)) {
        this.#scoped.set(informer as unknown as Informer<KubeObject>, request.labelSelector);
        informer.rescope(scopedSelector(request.labelSelector, this.#scope.requirement()));
      }
    } else if (request.transform && this.#transforms.get(id) !== request.transform) {
      throw new Error(`informer for ${id} already exists: a transform can only be set by its first request`);
    }
    for (const [name, fn] of Object.entries(request.indexes ?? {})) informer.addIndex(name, fn);
    return informer;
  }

  /**
   * Narrows the informers of the types `scope` names, those requested already and later ones (not
   * those requested `unscoped`); call {@link rescope} whenever its requirement changes.
   */
  scopeInformers(scope: InformerScope): void {
    if (this.#started) throw new Error("scope the informers before the manager starts");
    this.#scope = scope;
    for (const informer of this.#informers.values()) {
      if (!scope.scopes(informer.type) || this.#unscoped.has(informer) || this.#scoped.has(informer)) continue;
      const own = informer.labelSelector === false ? undefined : informer.labelSelector;
      this.#scoped.set(informer, own);
      informer.rescope(scopedSelector(own, scope.requirement()));
    }
  }

  /** The scope's requirement changed: every scoped informer relists with it (at once when running, else when it starts). */
  rescope(): void {
    const requirement = this.#scope?.requirement();
    for (const [informer, own] of this.#scoped) informer.rescope(scopedSelector(own, requirement));
  }

  /** The scoped informers (see {@link scopeInformers}). */
  scopedInformers(): Informer<KubeObject>[] {
    return [...this.#scoped.keys()];
  }

  /**
   * A watch of one object by name, for reads no label scopes (a user's Secret named by an
   * identity): created on its first request, started with the manager or at once when it runs,
   * stopped with the others. Outside the readiness check: its readers read live until it synced.
   */
  objectWatch<T extends KubeObject>(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    transform?: (object: T) => T,
  ): Informer<T> {
    const id = objectWatchId(type, namespace, name);
    let informer = this.#objectWatches.get(id) as Informer<T> | undefined;
    if (!informer) {
      informer = new Informer<T>({
        client: this.#o.client,
        type,
        logger: this.#log,
        clock: this.#clock,
        ...(namespace ? { namespace } : {}),
        fieldSelector: `metadata.name=${name}`,
        ...(transform ? { transform } : {}),
      });
      this.#objectWatches.set(id, informer as unknown as Informer<KubeObject>);
      if (this.#started && !this.#shuttingDown) informer.start();
    }
    return informer;
  }

  /** Stops the watch of one object by name: nothing reads that object any more (a later request starts a new watch). */
  releaseObjectWatch(type: ResourceType, namespace: string | undefined, name: string): void {
    const id = objectWatchId(type, namespace, name);
    const informer = this.#objectWatches.get(id);
    if (!informer) return;
    this.#objectWatches.delete(id);
    void informer.stop();
  }

  /** The objects watched by name, as `namespace/name type`. */
  get objectWatches(): string[] {
    return [...this.#objectWatches.keys()];
  }

  /** Registers a controller: its watches become handlers on the shared informers. */
  addController(controller: Controller): ControllerRunner {
    if (this.#started) throw new Error(`controller ${controller.name} added after the manager started`);
    if (this.#runners.some((r) => r.controller.name === controller.name)) throw new Error(`controller ${controller.name} added twice`);
    const runner = new ControllerRunner(controller, {
      logger: this.#log,
      clock: this.#clock,
      ...(this.#o.metrics ? { metrics: this.#o.metrics.runtime } : {}),
    });
    for (const watch of controller.watches) {
      this.informer(watch.type, watch.labelSelector ? { labelSelector: watch.labelSelector } : {}).addHandlers(runner.handlersFor(watch));
    }
    this.#runners.push(runner);
    return runner;
  }

  /** The API client the informers list and watch with (live reads go through it too). */
  get client(): KubeClient {
    return this.#o.client;
  }

  addHealthCheck(check: Check): void {
    this.#healthChecks.push(check);
  }

  addReadyCheck(check: Check): void {
    this.#readyChecks.push(check);
  }

  /** The bound ports of the probe and metrics servers once `run` started them (undefined when disabled). */
  get ports(): { health: number | undefined; metrics: number | undefined } {
    return { health: this.#healthServer?.port, metrics: this.#metricsServer?.port };
  }

  /** Whether this manager currently leads (always true without leader election once started). */
  isLeader(): boolean {
    if (this.#o.leaderElection) return this.#elector?.isLeader() ?? false;
    return this.#started && !this.#shuttingDown;
  }

  #healthServer: BoundServer | undefined;
  #metricsServer: BoundServer | undefined;

  /** Runs until `stop` aborts or leadership is lost; see the module comment for the steps. */
  async run(stop: AbortSignal): Promise<ManagerExit> {
    if (this.#started) throw new Error("the manager runs only once");
    this.#started = true;
    const o = this.#o;
    const leadershipLost = new AbortController();
    const electorStop = new AbortController();
    let electorRun: Promise<void> | undefined;
    try {
      this.#healthServer = await serveProbes(
        o.healthAddress ?? managerDefaults.healthAddress,
        { healthz: () => this.#healthChecks, readyz: () => this.#readyChecks },
        this.#log,
      );
      if (this.#healthServer) this.#servers.push(this.#healthServer);
      if (o.metrics) {
        this.#metricsServer = await serveMetrics({
          address: o.metricsAddress ?? managerDefaults.metricsAddress,
          registry: o.metrics.registry,
          logger: this.#log,
          ...(o.metricsSecure ? { secure: o.metricsSecure } : {}),
        });
        if (this.#metricsServer) this.#servers.push(this.#metricsServer);
      }
      this.#log.info(
        { healthPort: this.ports.health, metricsPort: this.ports.metrics, informers: [...this.#informers.keys()] },
        "starting manager",
      );

      for (const informer of this.#informers.values()) informer.start();
      for (const informer of this.#objectWatches.values()) if (!informer.started) informer.start();
      const synced = await this.#waitForSync(stop);
      if (!synced) {
        const unsynced = this.#unsyncedInformers();
        if (!stop.aborted) {
          this.#log.error({ unsynced }, "timed out waiting for caches to sync");
          return { reason: "cache-sync-timeout", unsynced };
        }
      } else this.#log.info("caches synced");

      const leaderOnly = this.#runners.filter((r) => r.controller.needsLeaderElection ?? true);
      for (const runner of this.#runners) if (!(runner.controller.needsLeaderElection ?? true)) runner.start();
      if (o.leaderElection && !stop.aborted) {
        const metrics = o.metrics?.runtime;
        const leaseName = o.leaderElection.leaseName;
        this.#elector = new LeaderElector({
          ...o.leaderElection,
          client: o.client,
          logger: this.#log,
          clock: this.#clock,
          onStartedLeading: () => {
            if (!this.#shuttingDown) for (const runner of leaderOnly) runner.start();
          },
          onStoppedLeading: () => {
            if (!electorStop.signal.aborted) leadershipLost.abort();
          },
          onLeadingChanged: (leading) =>
            metrics?.leaderStatus.set({ name: leaseName ?? "controller-leader-election-captf" }, leading ? 1 : 0),
        });
        electorRun = this.#elector.run(electorStop.signal);
      } else if (!stop.aborted) {
        for (const runner of leaderOnly) runner.start();
      }

      await untilAborted(stop, leadershipLost.signal);
      this.#shuttingDown = true;
      if (leadershipLost.signal.aborted && !stop.aborted) {
        this.#log.error("leader election lost, stopping at once");
        for (const runner of this.#runners) runner.abort();
        await Promise.all(this.#runners.map((r) => r.stop(0)));
        return { reason: "leadership-lost" };
      }
      this.#log.info("shutting down: finishing reconciles in flight");
      const grace = o.gracefulShutdownTimeoutMillis ?? managerDefaults.gracefulShutdownTimeoutMillis;
      const drained = (await Promise.all(this.#runners.map((r) => r.stop(grace)))).every(Boolean);
      return { reason: "stopped", drained };
    } finally {
      this.#shuttingDown = true;
      // Release the Lease only after the workers stopped: the next leader must not overlap with them.
      electorStop.abort();
      await electorRun;
      // Runners already stopped on every path past startup; this only closes queues never started.
      for (const runner of this.#runners) runner.queue.shutDown();
      await Promise.all([...this.#informers.values(), ...this.#objectWatches.values()].map((informer) => informer.stop()));
      await Promise.all(this.#servers.map((server) => server.close()));
      this.#servers = [];
      this.#log.info("manager stopped");
    }
  }

  async #waitForSync(stop: AbortSignal): Promise<boolean> {
    const timeout = this.#o.cacheSyncTimeoutMillis ?? managerDefaults.cacheSyncTimeoutMillis;
    const deadline = this.#clock.now() + timeout;
    // One listener on the caller's signal; the informers each listen on this one, meant for as many of them as there are.
    const syncing = new AbortController();
    setMaxListeners(this.#informers.size + 1, syncing.signal);
    const onStop = () => syncing.abort();
    stop.addEventListener("abort", onStop, { once: true });
    try {
      const results = await Promise.all(
        [...this.#informers.values()].map((informer) => informer.waitForSync(Math.max(0, deadline - this.#clock.now()), syncing.signal)),
      );
      return results.every(Boolean);
    } finally {
      stop.removeEventListener("abort", onStop);
    }
  }

  #unsyncedInformers(): string[] {
    return [...this.#informers.entries()].filter(([, informer]) => !informer.hasSynced()).map(([id]) => id);
  }
}

/** An informer's own selector and the scope's requirement; `false` (nothing) without a requirement. */
function scopedSelector(own: string | undefined, requirement: string | undefined): string | false {
  if (requirement === undefined) return false;
  return own ? `${own},${requirement}` : requirement;
}

function informerId(type: ResourceType, labelSelector: string | undefined, fieldSelector?: string): string {
  const group = type.group === "" ? "core" : type.group;
  return `${type.plural}.${group}/${type.version}${labelSelector ? `{${labelSelector}}` : ""}${fieldSelector ? `{${fieldSelector}}` : ""}`;
}

/** Resolves once any of the signals aborts. */
function objectWatchId(type: ResourceType, namespace: string | undefined, name: string): string {
  return `${namespace ?? ""}/${name} ${informerId(type, undefined)}`;
}

function untilAborted(...signals: AbortSignal[]): Promise<void> {
  if (signals.some((s) => s.aborted)) return Promise.resolve();
  return new Promise((resolve) => {
    for (const signal of signals) signal.addEventListener("abort", () => resolve(), { once: true });
  });
}

/** Aborts the returned signal on SIGTERM or SIGINT (once; a second signal exits at once, like controller-runtime). */
export function shutdownSignal(logger: Logger, exit: (code: number) => void = (code) => process.exit(code)): AbortSignal {
  const controller = new AbortController();
  const onSignal = (name: string) => {
    if (controller.signal.aborted) {
      logger.warn({ signal: name }, "second signal, exiting now");
      exit(1);
      return;
    }
    logger.info({ signal: name }, "signal received, shutting down");
    controller.abort();
  };
  process.on("SIGTERM", () => onSignal("SIGTERM"));
  process.on("SIGINT", () => onSignal("SIGINT"));
  return controller.signal;
}
