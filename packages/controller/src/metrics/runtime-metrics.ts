/**
 * The metrics the manager runtime owns, under controller-runtime's and client-go's names (the
 * reference serves `controller_runtime_*`, `workqueue_*`, `rest_client_*` and
 * `leader_election_master_status` beside its `captf_*` metrics, and its alerts query them):
 * reconcile totals, errors and durations per controller, work queue depth, adds, retries and
 * latencies, leader status, API requests. Every per-controller series starts at zero.
 */
import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import type { InformerMetricsSink, WatchRestartReason } from "../runtime/informer.js";
import type { KubeClientMetricsSink } from "../runtime/kube-client.js";
import type { WorkQueueMetricsSink } from "../runtime/work-queue.js";

/** How one reconcile pass ended (controller-runtime's `result` label). */
export type ReconcileResult = "success" | "error" | "requeue" | "requeue_after";
export const reconcileResults: readonly ReconcileResult[] = ["success", "error", "requeue", "requeue_after"];

/** controller-runtime's reconcile-time buckets. */
const reconcileBuckets = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.25, 1.5, 1.75, 2, 2.5, 3, 3.5, 4, 4.5,
  5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
];
/** client-go's work queue latency buckets: 1 µs … 10 s, ×10. */
const queueBuckets = [1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1, 10];

/** controller-runtime's per-controller reconcile metrics. */
function reconcileMetrics(registers: Registry[]) {
  const reconcileTotal = new Counter({
    name: "controller_runtime_reconcile_total",
    help: "Total number of reconciliations per controller",
    labelNames: ["controller", "result"],
    registers,
  });
  const reconcileErrors = new Counter({
    name: "controller_runtime_reconcile_errors_total",
    help: "Total number of reconciliation errors per controller",
    labelNames: ["controller"],
    registers,
  });
  const terminalReconcileErrors = new Counter({
    name: "controller_runtime_terminal_reconcile_errors_total",
    help: "Total number of terminal reconciliation errors per controller",
    labelNames: ["controller"],
    registers,
  });
  const reconcilePanics = new Counter({
    name: "controller_runtime_reconcile_panics_total",
    help: "Total number of reconciliation panics per controller",
    labelNames: ["controller"],
    registers,
  });
  const reconcileTime = new Histogram({
    name: "controller_runtime_reconcile_time_seconds",
    help: "Length of time per reconciliation per controller",
    labelNames: ["controller"],
    buckets: reconcileBuckets,
    registers,
  });
  const maxConcurrentReconciles = new Gauge({
    name: "controller_runtime_max_concurrent_reconciles",
    help: "Maximum number of concurrent reconciles per controller",
    labelNames: ["controller"],
    registers,
  });
  const activeWorkers = new Gauge({
    name: "controller_runtime_active_workers",
    help: "Number of currently used workers per controller",
    labelNames: ["controller"],
    registers,
  });
  return {
    reconcileTotal,
    reconcileErrors,
    terminalReconcileErrors,
    reconcilePanics,
    reconcileTime,
    maxConcurrentReconciles,
    activeWorkers,
  };
}

/** client-go's work queue metrics; the unfinished-work gauges read `inFlight` at scrape time. */
function workQueueMetrics(registers: Registry[], inFlight: ReadonlyMap<string, () => readonly number[]>, now: () => number) {
  const queueLabels = ["name", "controller"] as const;
  const queueDepth = new Gauge({ name: "workqueue_depth", help: "Current depth of workqueue", labelNames: queueLabels, registers });
  const queueAdds = new Counter({
    name: "workqueue_adds_total",
    help: "Total number of adds handled by workqueue",
    labelNames: queueLabels,
    registers,
  });
  const queueRetries = new Counter({
    name: "workqueue_retries_total",
    help: "Total number of retries handled by workqueue",
    labelNames: queueLabels,
    registers,
  });
  const queueLatency = new Histogram({
    name: "workqueue_queue_duration_seconds",
    help: "How long in seconds an item stays in workqueue before being requested",
    labelNames: queueLabels,
    buckets: queueBuckets,
    registers,
  });
  const workDuration = new Histogram({
    name: "workqueue_work_duration_seconds",
    help: "How long in seconds processing an item from workqueue takes",
    labelNames: queueLabels,
    buckets: queueBuckets,
    registers,
  });
  const unfinishedWork = new Gauge({
    name: "workqueue_unfinished_work_seconds",
    help: "How many seconds of work has been done that is in progress and hasn't been observed by work_duration",
    labelNames: queueLabels,
    registers,
    collect() {
      for (const [name, since] of inFlight)
        this.set(
          { name, controller: name },
          since().reduce((sum, start) => sum + (now() - start) / 1000, 0),
        );
    },
  });
  const longestRunningProcessor = new Gauge({
    name: "workqueue_longest_running_processor_seconds",
    help: "How many seconds has the longest running processor for workqueue been running",
    labelNames: queueLabels,
    registers,
    collect() {
      for (const [name, since] of inFlight)
        this.set(
          { name, controller: name },
          since().reduce((longest, start) => Math.max(longest, (now() - start) / 1000), 0),
        );
    },
  });
  return { queueDepth, queueAdds, queueRetries, queueLatency, workDuration, unfinishedWork, longestRunningProcessor };
}

/** Leader status, API requests, informer restarts and lists, the sharded caches' sizes (read at scrape time). */
function clientMetrics(registers: Registry[], shardCachedObjects: () => readonly { kind: string; shard: string; count: number }[]) {
  const leaderStatus = new Gauge({
    name: "leader_election_master_status",
    help: "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master",
    labelNames: ["name"],
    registers,
  });
  const restClientRequests = new Counter({
    name: "rest_client_requests_total",
    help: "Number of HTTP requests, partitioned by status code, method, and host",
    labelNames: ["code", "method", "host"],
    registers,
  });
  const restClientLatency = new Histogram({
    name: "rest_client_request_duration_seconds",
    help: "Request latency in seconds. Broken down by verb and host",
    labelNames: ["verb", "host"],
    buckets: [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60],
    registers,
  });
  const informerWatchRestarts = new Counter({
    name: "captf_informer_watch_restarts_total",
    help: "[ALPHA] Watch restarts of the manager's informers by reason (gone, error, inactive, relist, ended)",
    labelNames: ["resource", "reason"],
    registers,
  });
  const informerListDuration = new Histogram({
    name: "captf_informer_list_duration_seconds",
    help: "[ALPHA] How long an informer's full list took",
    labelNames: ["resource"],
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers,
  });
  const shardCachedObjectsGauge = new Gauge({
    name: "captf_shard_cached_objects",
    help: "[ALPHA] Objects of the sharded kinds in this replica's caches, by kind and shard label (--shards > 1), read at scrape time",
    labelNames: ["kind", "shard"],
    registers,
    collect() {
      this.reset();
      for (const { kind, shard, count } of shardCachedObjects()) this.set({ kind, shard }, count);
    },
  });
  return {
    leaderStatus,
    restClientRequests,
    restClientLatency,
    informerWatchRestarts,
    informerListDuration,
    shardCachedObjects: shardCachedObjectsGauge,
  };
}

export class RuntimeMetrics {
  readonly reconcileTotal: Counter<"controller" | "result">;
  readonly reconcileErrors: Counter<"controller">;
  readonly terminalReconcileErrors: Counter<"controller">;
  readonly reconcilePanics: Counter<"controller">;
  readonly reconcileTime: Histogram<"controller">;
  readonly maxConcurrentReconciles: Gauge<"controller">;
  readonly activeWorkers: Gauge<"controller">;
  readonly queueDepth: Gauge<"name" | "controller">;
  readonly queueAdds: Counter<"name" | "controller">;
  readonly queueRetries: Counter<"name" | "controller">;
  readonly queueLatency: Histogram<"name" | "controller">;
  readonly workDuration: Histogram<"name" | "controller">;
  readonly unfinishedWork: Gauge<"name" | "controller">;
  readonly longestRunningProcessor: Gauge<"name" | "controller">;
  readonly leaderStatus: Gauge<"name">;
  readonly restClientRequests: Counter<"code" | "method" | "host">;
  readonly restClientLatency: Histogram<"verb" | "host">;
  readonly informerWatchRestarts: Counter<"resource" | "reason">;
  readonly informerListDuration: Histogram<"resource">;
  readonly shardCachedObjects: Gauge<"kind" | "shard">;
  #shardCachedObjects: () => readonly { kind: string; shard: string; count: number }[] = () => [];
  /** In-flight start times per queue, read at scrape time for the unfinished-work gauges. */
  readonly #inFlight = new Map<string, () => readonly number[]>();

  constructor(registry: Registry, now: () => number = Date.now) {
    const registers = [registry];
    const reconcile = reconcileMetrics(registers);
    const queue = workQueueMetrics(registers, this.#inFlight, now);
    const client = clientMetrics(registers, () => this.#shardCachedObjects());
    this.reconcileTotal = reconcile.reconcileTotal;
    this.reconcileErrors = reconcile.reconcileErrors;
    this.terminalReconcileErrors = reconcile.terminalReconcileErrors;
    this.reconcilePanics = reconcile.reconcilePanics;
    this.reconcileTime = reconcile.reconcileTime;
    this.maxConcurrentReconciles = reconcile.maxConcurrentReconciles;
    this.activeWorkers = reconcile.activeWorkers;
    this.queueDepth = queue.queueDepth;
    this.queueAdds = queue.queueAdds;
    this.queueRetries = queue.queueRetries;
    this.queueLatency = queue.queueLatency;
    this.workDuration = queue.workDuration;
    this.unfinishedWork = queue.unfinishedWork;
    this.longestRunningProcessor = queue.longestRunningProcessor;
    this.leaderStatus = client.leaderStatus;
    this.restClientRequests = client.restClientRequests;
    this.restClientLatency = client.restClientLatency;
    this.informerWatchRestarts = client.informerWatchRestarts;
    this.informerListDuration = client.informerListDuration;
    this.shardCachedObjects = client.shardCachedObjects;
  }

  /** Where {@link shardCachedObjects} reads its counts (the sharded manager's scoped informers). */
  setShardCacheSource(source: () => readonly { kind: string; shard: string; count: number }[]): void {
    this.#shardCachedObjects = source;
  }

  /** Creates a controller's series at zero (controller-runtime's initMetrics) and records its worker count. */
  initController(controller: string, concurrency: number): void {
    for (const result of reconcileResults) this.reconcileTotal.inc({ controller, result }, 0);
    this.reconcileErrors.inc({ controller }, 0);
    this.terminalReconcileErrors.inc({ controller }, 0);
    this.reconcilePanics.inc({ controller }, 0);
    this.maxConcurrentReconciles.set({ controller }, concurrency);
    this.activeWorkers.set({ controller }, 0);
  }

  /** The sink a controller's work queue reports to; `inFlightSince` feeds the unfinished-work gauges. */
  workQueueSink(name: string, inFlightSince?: () => readonly number[]): WorkQueueMetricsSink {
    const labels = { name, controller: name };
    this.queueDepth.set(labels, 0);
    this.queueAdds.inc(labels, 0);
    this.queueRetries.inc(labels, 0);
    if (inFlightSince) this.#inFlight.set(name, inFlightSince);
    return {
      depth: (keys) => this.queueDepth.set(labels, keys),
      added: () => this.queueAdds.inc(labels),
      retried: () => this.queueRetries.inc(labels),
      queued: (seconds) => this.queueLatency.observe(labels, seconds),
      worked: (seconds) => this.workDuration.observe(labels, seconds),
    };
  }

  /** Lets the unfinished-work gauges read a queue created after its sink. */
  trackInFlight(name: string, inFlightSince: () => readonly number[]): void {
    this.#inFlight.set(name, inFlightSince);
  }

  /** The sink the API client reports to. */
  kubeClientSink(host: string): KubeClientMetricsSink {
    return {
      request: (method, statusCode, seconds) => {
        this.restClientRequests.inc({ code: statusCode === 0 ? "<error>" : String(statusCode), method, host });
        this.restClientLatency.observe({ verb: method, host }, seconds);
      },
    };
  }

  /** The sink an informer reports to. */
  informerSink(resource: string): InformerMetricsSink {
    return {
      listed: (_items, seconds) => this.informerListDuration.observe({ resource }, seconds),
      watchRestarted: (reason: WatchRestartReason) => this.informerWatchRestarts.inc({ resource, reason }),
    };
  }
}
