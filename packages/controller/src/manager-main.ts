/**
 * The manager program: flags → {@link bootstrapManager} → the admission server and the
 * controllers → `Manager.run` until SIGTERM/SIGINT. `bin/captf-manager.js` (from dist/) and the
 * image's bundle (`scripts/build-manager-bundle.mjs`) both call {@link runManagerProcess}.
 *
 * Exit codes: 0 after `--help`, `--version` or a graceful stop; 2 for invalid flags; 1 when the
 * manager cannot start (kubeconfig, serving certificate, ports), loses its leadership or its caches
 * never sync, so that the kubelet restarts it as a standby.
 */
import { hostname } from "node:os";
import type { V1Secret } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { contractVersion } from "@captf/contract";
import { kubeEventRecorder } from "./events/event-recorder.js";
import { notificationReceiverType, notifyingRecorder, receiverNotifier, type ReceiverObject } from "./notifications/notifier.js";
import { parseManagerFlags, type ManagerSettings } from "./flags.js";
import { managerTracing, type ManagerTracing } from "./tracing/manager-tracing.js";
import { identityController, mirrorLabelSelector } from "./identity/identity-controller.js";
import { identityCredentials } from "./identity/job-credentials.js";
import { namespaceSweepController, sweepNamespaceLogged } from "./identity/namespace-sweep.js";
import { defaultJobEnvironment, type JobEnvironment } from "./jobs/build-job.js";
import { clusterAdapter, machineAdapter, poolAdapter } from "./kinds/adapters.js";
import type { BuildInfo, MetricKind } from "./metrics/captf-metrics.js";
import type { ManagerMetrics } from "./metrics/manager-metrics.js";
import { clusterNameOf, workspaceController } from "./reconcile/workspace-controller.js";
import { machineTemplateController } from "./templates/template-controller.js";
import { managedSecretSelector, managerReadCache, withoutManagedFields } from "./reconcile/manager-cache.js";
import { recordingWrites } from "./runtime/recorded-writes.js";
import { watchFilterSelector } from "./runtime/controller.js";
import type { ReconcilerDeps } from "./reconcile/types.js";
import { policyImageVerifier } from "./signatures/image-verifier.js";
import { activeJobCounts } from "./metrics/active-jobs.js";
import { JobSlots, slotJobCache } from "./reconcile/job-slots.js";
import type { ReadCache } from "./runtime/read-cache.js";
import { bootstrapManager, inClusterNamespaceFile, readNamespaceFile } from "./bootstrap.js";
import { builtinTypes } from "./runtime/builtin-types.js";
import { openProfiler } from "./runtime/profiler.js";
import type { Controller } from "./runtime/controller.js";
import { tlsServerOptions } from "./runtime/http-endpoints.js";
import { shutdownSignal, type Manager, type ManagerExit } from "./runtime/manager.js";
import { ShardCoordinator } from "./runtime/shard-coordinator.js";
import { ShardGate } from "./runtime/shard-gate.js";
import { ShardLabeller, shardLabelMetadata } from "./runtime/shard-labels.js";
import { andSelectors, heldShardsSelector, shardLeaseName, shardOf, unassignedShardSelector } from "./runtime/shards.js";
import { labels } from "@captf/contract/api";
import type { KubeApi, KubeObject } from "./runtime/kube-client.js";
import { objectKey } from "./runtime/informer.js";
import { workspaceResourceType } from "./api/resource-types.js";
import { kubernetesAdmissionFacts } from "./webhooks/facts.js";
import { startAdmissionServer, type AdmissionServer, type AdmissionServerOptions } from "./webhooks/server.js";

/** The manager's version; a test keeps it equal to package.json's. */
export const managerVersion = "0.1.0";

/** The ServiceAccount the shipped manifests run the manager as. */
export const managerServiceAccount = "captf-controller-manager";
export const defaultManagerNamespace = "captf-system";

// Set by the bundle (esbuild `define`); absent when running from dist/.
declare const CAPTF_BUILD_COMMIT: string | undefined;

export function managerBuildInfo(): BuildInfo {
  return {
    version: managerVersion,
    commit: typeof CAPTF_BUILD_COMMIT === "string" ? CAPTF_BUILD_COMMIT : "unknown",
    contract: contractVersion,
  };
}

export function versionLine(build: BuildInfo = managerBuildInfo()): string {
  return `manager ${build.version} (commit ${build.commit}, contract ${build.contract}, node ${process.version})\n`;
}

export interface ManagerIo {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
  /** Stops the manager; default: SIGTERM or SIGINT (a second signal exits at once). */
  signal?: AbortSignal;
}

export interface ManagerControllerDeps {
  /** The API client the controllers' live reads and writes go through (the manager's, never the informers' caches). */
  client: KubeApi;
  logger: Logger;
  metrics: ManagerMetrics;
  /** The events' reportingInstance: the Pod's name. */
  instance: string;
  /** Whose informer caches the controllers' watches share and the passes read from. */
  manager: Pick<Manager, "informer" | "client"> & Partial<Pick<Manager, "objectWatch" | "releaseObjectWatch">>;
  /** With tracing on: spans of the passes and the Jobs, and the Jobs' trace context (docs/tracing.md). */
  tracing?: ManagerTracing;
  /** Handed the read cache and the Job slots the passes share, for tests that check what they hold. */
  wired?: (parts: { cache: ReadCache; jobSlots: JobSlots }) => void;
}

/** Every Job's init container copies the runner bundle out of `--runner-image`. */
export function managerJobEnvironment(settings: Pick<ManagerSettings, "runnerImage">, tracing?: ManagerTracing): JobEnvironment {
  return { ...defaultJobEnvironment, runnerImage: settings.runnerImage, ...(tracing ? { tracing } : {}) };
}

/** Every controller the manager runs, in the order they are added. */
export function createManagerControllers(deps: ManagerControllerDeps, settings: ManagerSettings): Controller[] {
  const { logger } = deps;
  // First: the cache's informers strip managedFields, which only their first request can ask for.
  const cache = managerReadCache(deps.manager, [clusterAdapter, machineAdapter, poolAdapter], {
    ...(settings.watchFilter ? { watchFilterSelector: watchFilterSelector(settings.watchFilter)! } : {}),
    sharded: settings.shards > 1,
  });
  // Every write recorded as an expectation of the read cache.
  const client = recordingWrites(deps.client, cache);
  // Each event recorded is also a notification to the TerraformNotificationReceivers that select it.
  const notifier = receiverNotifier({
    client,
    receivers: deps.manager.informer<ReceiverObject>(notificationReceiverType),
    logger,
    metrics: deps.metrics.captf,
  });
  const events = notifyingRecorder(kubeEventRecorder(client, { instance: deps.instance, logger }), notifier);
  const reconcilerDeps: ReconcilerDeps = {
    client,
    jobEnvironment: managerJobEnvironment(settings, deps.tracing),
    cache,
    credentials: identityCredentials({ client, cache }, events),
    events,
    metrics: deps.metrics.captf,
    logger,
    driftDefaultIntervalSeconds: Math.round(settings.driftDefaultIntervalMillis / 1000),
    clusterOperationGate: settings.clusterOperationGate,
    runnerEvents: settings.runnerEvents,
    stateBackups: settings.stateBackups,
    sweepNamespace: async (namespace) => void (await sweepNamespaceLogged(client, namespace, logger)),
    imageVerifier: policyImageVerifier({ client }),
    ...(settings.watchFilter ? { watchFilter: settings.watchFilter } : {}),
  };
  // captf_jobs_active is read from the Job cache the controllers' Job watches fill.
  const jobCache = deps.manager.informer(builtinTypes.job);
  deps.tracing?.watchJobs(jobCache);
  deps.metrics.captf.setActiveJobsSource(() => activeJobCounts(jobCache.list()));
  // Always wired: a cluster's own spec.maxActiveJobs applies even when the flags set no limit.
  const podCache = {
    informer: deps.manager.informer(builtinTypes.pod, { labelSelector: managedSecretSelector }),
    labelSelector: managedSecretSelector,
  };
  const jobSlots = new JobSlots(slotJobCache(jobCache, podCache), {
    manager: settings.maxActiveJobs,
    clusterDefault: settings.clusterMaxActiveJobs,
  });
  reconcilerDeps.jobSlots = jobSlots;
  deps.wired?.({ cache, jobSlots });
  // The identity controller's mirror watch fills this cache.
  const mirrorCache = deps.manager.informer(builtinTypes.secret, { labelSelector: mirrorLabelSelector });
  const controllerOptions = (concurrency: number) => ({
    concurrency,
    manager: deps.manager,
    ...(settings.watchFilter ? { watchFilter: settings.watchFilter } : {}),
    ...(deps.tracing ? { tracing: deps.tracing } : {}),
  });
  return [
    workspaceController(clusterAdapter, reconcilerDeps, controllerOptions(settings.concurrency.terraformCluster)),
    workspaceController(machineAdapter, reconcilerDeps, controllerOptions(settings.concurrency.terraformMachine)),
    workspaceController(poolAdapter, reconcilerDeps, controllerOptions(settings.concurrency.terraformMachinePool)),
    identityController(
      { client, events, unexpectedWrites: deps.client },
      { cache: { reads: cache, mirrors: () => mirrorCache.list() as V1Secret[] } },
    ),
    machineTemplateController(
      { client, events, metrics: deps.metrics.captf },
      { concurrency: settings.concurrency.terraformMachineTemplate },
    ),
    namespaceSweepController(client, { syncPeriodMillis: settings.syncPeriodMillis }),
  ];
}

/** The kinds split into shards with `--shards` > 1: a cluster's objects, which share its shard. */
const shardedKinds: ReadonlySet<string> = new Set([clusterAdapter.kind, machineAdapter.kind, poolAdapter.kind]);

/**
 * Adds the controllers to the manager; with a gate, those of the sharded kinds run on every
 * replica for the shards it holds, the others (identities, …) stay on the leader.
 */
export function addManagerControllers(
  manager: Pick<Manager, "informer" | "addController">,
  controllers: readonly Controller[],
  gate: ShardGate | undefined,
): void {
  for (const controller of controllers) {
    if (!gate || !shardedKinds.has(controller.kind)) {
      manager.addController(controller);
      continue;
    }
    // The informer of the controller's own watch: the one its keys come from.
    const own = controller.watches.find((watch) => watch.type.kind === controller.kind)!;
    const objects = manager.informer(own.type, own.labelSelector ? { labelSelector: own.labelSelector } : {});
    gate.attach(manager.addController(gate.shard(controller, objects)), objects);
  }
}

/** The sharded kinds' resource types. */
const shardedTypes = [clusterAdapter, machineAdapter, poolAdapter].map((adapter) => workspaceResourceType(adapter));

export interface ManagerSharding {
  gate: ShardGate;
  coordinator: ShardCoordinator;
  /** Keeps the shard label on the sharded kinds (with a manager to scope). */
  labeller?: ShardLabeller;
  /** What the coordinator calls when this replica gains or loses a shard. */
  onShardGained(index: number): void;
  onShardLost(index: number): void;
}

/**
 * With `--shards` > 1: the gate of the sharded controllers and the coordinator that claims shards
 * for it; with `manager`, also the informers of the sharded kinds scoped to the held shards (by
 * the shard label) and the labeller that keeps that label (see runtime/shard-labels.ts).
 */
export function managerSharding(
  settings: ManagerSettings,
  deps: Pick<ManagerControllerDeps, "logger" | "metrics"> & {
    client: Manager["client"];
    manager?: Pick<Manager, "informer" | "scopeInformers" | "rescope" | "scopedInformers">;
  },
): ManagerSharding | undefined {
  if (settings.shards <= 1) return undefined;
  const namespace = settings.podNamespace ?? readNamespaceFile(inClusterNamespaceFile);
  if (!namespace) throw new Error("--shards needs the manager's namespace for its Leases: set POD_NAMESPACE or run in a pod");
  // Without leader election the controllers that are not sharded (identities, …) would run on every replica at once.
  if (!settings.leaderElection.enabled)
    deps.logger.warn(
      { shards: settings.shards },
      "--shards without --leader-elect: the controllers that are not sharded run on every replica",
    );
  const shardOfObject = (object: KubeObject) => shardOf(object.metadata?.namespace ?? "", clusterNameOf(object), settings.shards);
  const gate = new ShardGate(
    shardOfObject,
    // The new holder reports these objects now; a stale series here would keep alerts (CAPTFNotReady, …) firing.
    (kind, object) => deps.metrics.captf.forgetObject(kind as MetricKind, object.metadata?.namespace ?? "", object.metadata?.name ?? ""),
  );
  const leaderStatus = deps.metrics.runtime.leaderStatus;
  const held = new Set<number>();
  const onShardGained = (index: number) => {
    held.add(index);
    gate.gained(index);
    // The scoped informers relist with this shard: its objects arrive as adds, which the gate enqueues.
    deps.manager?.rescope();
    labeller?.gained(index);
    leaderStatus.set({ name: shardLeaseName(index) }, 1);
  };
  const onShardLost = (index: number) => {
    held.delete(index);
    gate.lost(index);
    deps.manager?.rescope();
    leaderStatus.set({ name: shardLeaseName(index) }, 0);
  };
  const coordinator = new ShardCoordinator({
    client: deps.client,
    namespace,
    shards: settings.shards,
    leaseDurationMillis: settings.leaderElection.leaseDurationMillis,
    renewDeadlineMillis: settings.leaderElection.renewDeadlineMillis,
    retryPeriodMillis: settings.leaderElection.retryPeriodMillis,
    logger: deps.logger,
    onShardGained,
    onShardLost,
  });
  const labeller = deps.manager ? scopeShardedInformers(settings, deps.manager, held, shardOfObject, deps) : undefined;
  return { gate, coordinator, ...(labeller ? { labeller } : {}), onShardGained, onShardLost };
}

/**
 * Scopes the manager's informers of the sharded kinds to the `held` shards (nothing
 * until it holds one), and starts keeping the shard label: each kind's own informer relabels what
 * moved, an unassigned informer per kind labels what has no shard label yet.
 */
function scopeShardedInformers(
  settings: ManagerSettings,
  manager: Pick<Manager, "informer" | "scopeInformers" | "scopedInformers">,
  held: ReadonlySet<number>,
  shardOfObject: (object: KubeObject) => number,
  deps: Pick<ManagerControllerDeps, "logger" | "metrics"> & { client: Manager["client"] },
): ShardLabeller {
  const sharded = new Set(shardedTypes.map((type) => `${type.group}/${type.plural}`));
  manager.scopeInformers({
    scopes: (type) => sharded.has(`${type.group}/${type.plural}`),
    requirement: () => heldShardsSelector(labels.shard, held),
  });
  const labeller = new ShardLabeller({ client: deps.client, label: labels.shard, shardOfObject, held: () => held, logger: deps.logger });
  const filter = settings.watchFilter ? watchFilterSelector(settings.watchFilter) : undefined;
  for (const type of shardedTypes) {
    // The controllers' own informer of the kind (the read cache asks for the same one, with the same transform).
    labeller.watchScoped(manager.informer(type, { ...(filter ? { labelSelector: filter } : {}), transform: withoutManagedFields }));
    labeller.watchUnassigned(
      manager.informer(type, {
        labelSelector: andSelectors(filter, unassignedShardSelector(labels.shard, settings.shards))!,
        unscoped: true,
        transform: shardLabelMetadata,
      }),
    );
  }
  deps.metrics.runtime.setShardCacheSource(() => {
    // Keys per kind and shard: with --watch-filter a kind may have two scoped informers.
    const keys = new Map<string, { kind: string; shard: string; keys: Set<string> }>();
    for (const informer of manager.scopedInformers()) {
      for (const object of informer.list()) {
        const shard = object.metadata?.labels?.[labels.shard] ?? "";
        const id = `${informer.type.kind} ${shard}`;
        const entry = keys.get(id) ?? { kind: informer.type.kind, shard, keys: new Set<string>() };
        entry.keys.add(objectKey(object));
        keys.set(id, entry);
      }
    }
    return [...keys.values()].map(({ kind, shard, keys }) => ({ kind, shard, count: keys.size }));
  });
  return labeller;
}

/** The user the webhooks let write a providerID: the flags' `system:serviceaccount:…`, else the shipped ServiceAccount's. */
export function managerUsername(settings: Pick<ManagerSettings, "managerUser" | "podNamespace">): string {
  return settings.managerUser ?? `system:serviceaccount:${settings.podNamespace ?? defaultManagerNamespace}:${managerServiceAccount}`;
}

/** The admission server's certificate files and TLS settings, from the webhook and `--tls-*` flags. */
export function admissionServing(settings: ManagerSettings): Pick<AdmissionServerOptions, "port" | "certFile" | "keyFile" | "tls"> {
  const certFile = `${settings.webhook.certDir.replace(/\/+$/, "")}/${settings.webhook.certName}`;
  const keyFile = `${settings.webhook.certDir.replace(/\/+$/, "")}/${settings.webhook.keyName}`;
  // The same protocol options as the diagnostics server; reading the pair here also fails fast when it is missing.
  const { minVersion, ciphers, ecdhCurve } = tlsServerOptions({
    certFile,
    keyFile,
    authorize: async () => false,
    minVersion: settings.diagnostics.tlsMinVersion,
    ciphers: settings.diagnostics.tlsCipherSuites,
    curves: settings.diagnostics.tlsCurvePreferences,
  });
  return {
    port: settings.webhook.port,
    certFile,
    keyFile,
    tls: { minVersion, ...(ciphers ? { ciphers } : {}), ...(ecdhCurve ? { ecdhCurve } : {}) },
  };
}

/** 0 for a graceful stop; 1 when the process must restart (leadership lost, caches never synced). */
export function exitCodeOf(exit: ManagerExit): number {
  return exit.reason === "stopped" ? 0 : 1;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Runs the manager with `argv` (without node and the script) and resolves its exit code. */
export async function runManager(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
  io: ManagerIo,
): Promise<number> {
  const parsed = await parseManagerFlags(argv, env);
  if (parsed.kind === "help") {
    io.stdout.write(`${parsed.text}\n`);
    return 0;
  }
  if (parsed.kind === "version") {
    io.stdout.write(versionLine());
    return 0;
  }
  if (parsed.kind === "invalid") {
    io.stderr.write(`${parsed.message}\n`);
    return 2;
  }
  const settings = parsed.options;
  let bootstrapped: ReturnType<typeof bootstrapManager>;
  try {
    bootstrapped = bootstrapManager(settings, {
      buildInfo: managerBuildInfo(),
      flagLines: parsed.flagLines,
      stdout: io.stdout,
      stderr: io.stderr,
    });
  } catch (error) {
    io.stderr.write(`manager: cannot start: ${messageOf(error)}\n`);
    return 1;
  }
  const { logger, client, metrics, manager } = bootstrapped;
  logger.info({ ...managerBuildInfo(), node: process.version }, "captf manager starting");
  try {
    const profiler = openProfiler(settings.profilerAddress);
    if (profiler) logger.info({ url: profiler }, "profiler (Node inspector) listening");
  } catch (error) {
    io.stderr.write(`manager: cannot open the profiler on ${settings.profilerAddress}: ${messageOf(error)}\n`);
    return 1;
  }
  const signal = io.signal ?? shutdownSignal(logger);
  const tracing = managerTracing(settings.tracing, env, {
    onError: (error) => logger.error({ err: error }, "tracing: cannot load the SDK"),
  });
  if (tracing) logger.info({ endpoint: settings.tracing.otlpEndpoint || "from OTEL_* variables" }, "tracing on: spans exported over OTLP");
  let admission: AdmissionServer | undefined;
  const shardsStop = new AbortController();
  let shardsRun: Promise<void> | undefined;
  try {
    const deps = { client, logger, metrics, instance: hostname(), manager, ...(tracing ? { tracing } : {}) };
    const sharding = managerSharding(settings, { logger, metrics, client, manager });
    addManagerControllers(manager, createManagerControllers(deps, settings), sharding?.gate);
    admission = await startAdmissionServer({
      ...admissionServing(settings),
      logger,
      managerUsername: managerUsername(settings),
      facts: kubernetesAdmissionFacts(client),
    });
    // Claims run beside the manager; passes of a gained shard start once the caches synced.
    shardsRun = sharding?.coordinator.run(shardsStop.signal);
    const exit = await manager.run(signal);
    logExit(logger, exit);
    return exitCodeOf(exit);
  } catch (error) {
    logger.error({ err: error }, "manager failed");
    return 1;
  } finally {
    // After the workers stopped: the next holder of a shard must not overlap with them.
    shardsStop.abort();
    await shardsRun;
    await admission?.close();
    await tracing?.shutdown();
    client.close();
  }
}

function logExit(logger: Logger, exit: ManagerExit): void {
  if (exit.reason === "stopped") logger.info({ drained: exit.drained }, "manager exiting");
  else
    logger.error(
      { reason: exit.reason, ...(exit.reason === "cache-sync-timeout" ? { unsynced: exit.unsynced } : {}) },
      "manager exiting for a restart",
    );
}

/** The process entry point: this process's arguments, environment and signals; exits with the code. */
export async function runManagerProcess(): Promise<never> {
  const code = await runManager(process.argv.slice(2), process.env, { stdout: process.stdout, stderr: process.stderr });
  // Exit explicitly: idle keep-alive sockets of the API client must not hold the process open.
  process.exit(code);
}
