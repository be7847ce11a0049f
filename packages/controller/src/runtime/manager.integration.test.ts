// The manager on the real API server: probes and metrics over HTTP, reconcile outcomes, graceful
// shutdown that finishes work in flight before releasing the Lease, and a standby taking over.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getEventListeners } from "node:events";
import { afterAll, beforeAll, describe, expect, it, jest } from "@jest/globals";
import { describeWithTools, sharedControlPlane } from "@captf/testkit";
import { createManagerMetrics } from "../metrics/manager-metrics.js";
import { seriesValue } from "../metrics/series.test-support.js";
import { builtinTypes } from "./builtin-types.js";
import { TerminalError, watchSelf, type Controller, type ReconcileContext } from "./controller.js";
import { kubeMetricsAuthorizer, parseBindAddress, runChecks, serveMetrics } from "./http-endpoints.js";
import type { KubeObject } from "./kube-client.js";
import type { Lease } from "./leader-election.js";
import { Manager, type ManagerOptions } from "./manager.js";
import { ExponentialFailureRateLimiter } from "./rate-limiter.js";
import { captureLogs, createTestNamespace, eventually, FaultyKubeClient } from "./runtime.test-support.js";

jest.setTimeout(30_000);

describe("bind addresses", () => {
  it.each([
    [":9440", { host: undefined, port: 9440 }],
    ["127.0.0.1:8080", { host: "127.0.0.1", port: 8080 }],
    ["[::1]:80", { host: "::1", port: 80 }],
    [":0", { host: undefined, port: 0 }],
    ["0", undefined],
    ["", undefined],
  ])("%j → %j", (address, expected) => {
    expect(parseBindAddress(address)).toEqual(expected);
  });

  it.each(["9440", "host:", ":99999", "a:b:c"])("rejects %j", (address) => {
    expect(() => parseBindAddress(address)).toThrow(/invalid bind address/);
  });
});

describe("checks", () => {
  it("report each check and fail when one fails or throws", async () => {
    const result = await runChecks([
      { name: "ping", check: () => undefined },
      { name: "sync", check: () => "not synced" },
      {
        name: "boom",
        check: () => {
          throw new Error("exploded");
        },
      },
    ]);
    expect(result).toEqual({ ok: false, lines: ["[+]ping ok", "[-]sync failed: not synced", "[-]boom failed: exploded"] });
  });
});

describe("scoped informers", () => {
  const things = { group: "example.io", version: "v1", plural: "things", kind: "Thing", namespaced: true };
  const others = { group: "example.io", version: "v1", plural: "others", kind: "Other", namespaced: true };

  it("narrow the informers of the scoped types to the scope's requirement, nothing without one, and follow it", () => {
    const manager = new Manager({ client: {} as FaultyKubeClient, logger: captureLogs().logger });
    const before = manager.informer(things, { labelSelector: "app=x" });
    let requirement: string | undefined;
    manager.scopeInformers({ scopes: (type) => type.plural === "things", requirement: () => requirement });
    const after = manager.informer(things);
    const whole = manager.informer(things, { labelSelector: "shard notin (0,1)", unscoped: true });
    const other = manager.informer(others);
    expect([before.labelSelector, after.labelSelector, whole.labelSelector, other.labelSelector]).toEqual([
      false,
      false,
      "shard notin (0,1)",
      undefined,
    ]);
    requirement = "shard in (1)";
    manager.rescope();
    expect([before.labelSelector, after.labelSelector, whole.labelSelector, other.labelSelector]).toEqual([
      "app=x,shard in (1)",
      "shard in (1)",
      "shard notin (0,1)",
      undefined,
    ]);
    expect(manager.scopedInformers()).toEqual([before, after]);
    // The same informer for the same request: its scope is the informer's, not the request's.
    expect(manager.informer(things)).toBe(after);
  });

  it("let a later request name the same transform again, not another one", () => {
    const manager = new Manager({ client: {} as FaultyKubeClient, logger: captureLogs().logger });
    const transform = (o: KubeObject) => o;
    const informer = manager.informer(things, { transform });
    expect(manager.informer(things, { transform })).toBe(informer);
    expect(() => manager.informer(things, { transform: (o: KubeObject) => o })).toThrow(/transform can only be set by its first request/);
  });
});

describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager"], "the manager on a real API server", () => {
  let client: FaultyKubeClient;
  let namespace: string;
  const cleanups: (() => Promise<unknown>)[] = [];

  beforeAll(async () => {
    client = new FaultyKubeClient();
    namespace = await createTestNamespace(client, "manager");
  });

  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
    await client.delete(builtinTypes.namespace, undefined, namespace).catch(() => undefined);
    client.close();
  });

  const createConfigMap = (name: string, labels: Record<string, string>) =>
    client.create(builtinTypes.configMap, namespace, { metadata: { name, labels } });

  /** A manager on ConfigMaps labelled `suite=<suite>` with ephemeral ports and short timings. */
  function startManager(suite: string, reconcile: Controller["reconcile"], overrides: Partial<ManagerOptions> = {}) {
    const logs = captureLogs("info");
    const metrics = createManagerMetrics({
      processMetrics: false,
      buildInfo: { version: "0.0.0-test", commit: "abc", contract: "v1alpha1" },
    });
    const managerClient = new FaultyKubeClient(undefined, { metrics: metrics.runtime.kubeClientSink("plane") });
    const manager = new Manager({
      client: managerClient,
      logger: logs.logger,
      metrics,
      namespace,
      healthAddress: "127.0.0.1:0",
      metricsAddress: "127.0.0.1:0",
      informerOptions: { backoffInitialMillis: 50 },
      // Generous lease timings: a loaded machine must not make a leader miss its renewals; handovers here are releases, not expiries.
      leaderElection: {
        namespace,
        leaseName: `lease-${suite}`,
        leaseDurationMillis: 6_000,
        renewDeadlineMillis: 5_000,
        retryPeriodMillis: 250,
      },
      ...overrides,
    });
    const controller: Controller = {
      name: `configmap-${suite}`,
      kind: "ConfigMap",
      concurrency: 2,
      watches: [{ ...watchSelf<KubeObject>(builtinTypes.configMap), labelSelector: `suite=${suite}` }],
      reconcile,
      rateLimiter: new ExponentialFailureRateLimiter(20, 200),
    };
    manager.addController(controller);
    const stop = new AbortController();
    const run = manager.run(stop.signal);
    cleanups.push(async () => {
      stop.abort();
      await run;
      managerClient.close();
    });
    const get = async (path: string, port = manager.ports.health) => {
      const response = await fetch(`http://127.0.0.1:${port}${path}`);
      return { status: response.status, body: await response.text() };
    };
    return { manager, stop, run, logs, metrics, get };
  }

  it("watches one object by name on demand once it runs (a user's Secret no label scopes), outside the readiness check", async () => {
    const { manager, get } = startManager("object-watch", async () => undefined, { leaderElection: undefined });
    await eventually(async () => manager.ports.health !== undefined && (await get("/readyz")).status === 200, 10_000, "readiness");
    await createConfigMap("watched", { other: "x" });
    const watch = manager.objectWatch(builtinTypes.configMap, namespace, "watched");
    expect(manager.objectWatch(builtinTypes.configMap, namespace, "watched")).toBe(watch);
    await eventually(
      () => watch.hasSynced() && watch.get(namespace, "watched") !== undefined,
      10_000,
      "the watched ConfigMap in its watch",
    );
    expect(watch.list({ namespace }).map((object) => object.metadata?.name)).toEqual(["watched"]);
    // Released, it stops: a change of the object no longer reaches it, and the next request starts a new watch.
    const watched = manager.objectWatches;
    manager.releaseObjectWatch(builtinTypes.configMap, namespace, "watched");
    expect(manager.objectWatches).toEqual(watched.filter((id) => !id.startsWith(`${namespace}/watched `)));
    await client.patch(builtinTypes.configMap, namespace, "watched", { metadata: { labels: { other: "y" } } }, "merge");
    const next = manager.objectWatch(builtinTypes.configMap, namespace, "watched");
    expect(next).not.toBe(watch);
    await eventually(() => next.get(namespace, "watched")?.metadata?.labels?.other === "y", 10_000, "the change in the new watch");
    expect(watch.get(namespace, "watched")?.metadata?.labels?.other).toBe("x");
  });

  it("serves probes and metrics, and reconciles with controller-runtime's outcomes", async () => {
    const calls = new Map<string, number>();
    const contexts: ReconcileContext[] = [];
    const reconcile = async (key: string, context: ReconcileContext) => {
      calls.set(key, (calls.get(key) ?? 0) + 1);
      contexts.push(context);
      const count = calls.get(key)!;
      if (context.name === "flaky" && count < 3) throw new Error("transient");
      if (context.name === "broken") throw new TerminalError("cannot ever work");
      if (context.name === "timer" && count < 3) return { requeueAfterMillis: 100 };
      return undefined;
    };
    await createConfigMap("existing", { suite: "outcomes" });
    const { manager, get, metrics } = startManager("outcomes", reconcile);
    await eventually(() => manager.ports.health !== undefined, 5_000, "the probe server");
    await eventually(async () => (await get("/readyz")).status === 200, 10_000, "readiness");
    expect(await get("/healthz")).toEqual({ status: 200, body: "ok" });
    expect((await get("/readyz?verbose")).body).toContain("[+]informer-sync ok");
    expect((await get("/nope")).status).toBe(404);

    await eventually(() => calls.get(`${namespace}/existing`) === 1, 10_000, "the initial list's key");
    for (const name of ["flaky", "broken", "timer"]) await createConfigMap(name, { suite: "outcomes" });
    await eventually(() => calls.get(`${namespace}/flaky`) === 3 && calls.get(`${namespace}/timer`) === 3, 10_000, "retries and requeues");
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(calls.get(`${namespace}/broken`)).toBe(1);
    expect(calls.get(`${namespace}/flaky`)).toBe(3);
    expect(calls.get(`${namespace}/timer`)).toBe(3);
    expect(contexts.find((c) => c.name === "existing")).toMatchObject({ namespace, name: "existing" });
    expect(new Set(contexts.map((c) => c.reconcileId)).size).toBe(contexts.length);

    const { status, body } = await get("/metrics", manager.ports.metrics);
    expect(status).toBe(200);
    const controller = 'controller="configmap-outcomes"';
    expect(body).toContain(`controller_runtime_reconcile_total{${controller},result="success"} 3`);
    expect(body).toContain(`controller_runtime_reconcile_total{${controller},result="error"} 3`);
    expect(body).toContain(`controller_runtime_reconcile_total{${controller},result="requeue_after"} 2`);
    expect(body).toContain(`controller_runtime_reconcile_errors_total{${controller}} 3`);
    expect(body).toContain(`controller_runtime_terminal_reconcile_errors_total{${controller}} 1`);
    expect(body).toContain(`controller_runtime_max_concurrent_reconciles{${controller}} 2`);
    expect(body).toContain('workqueue_retries_total{name="configmap-outcomes",controller="configmap-outcomes"} 2');
    expect(body).toContain('leader_election_master_status{name="lease-outcomes"} 1');
    expect(body).toContain('captf_build_info{version="0.0.0-test",commit="abc",contract="v1alpha1"} 1');
    expect(body).toMatch(/rest_client_requests_total\{code="200",method="GET",host="plane"\} \d+/);
    expect(body).toMatch(/rest_client_requests_total\{code="200",method="PUT",host="plane"\} \d+/);
    // Present from the start at 0, as controller-runtime has it: a rate over it needs the series before the first panic.
    expect(body).toContain(`controller_runtime_reconcile_panics_total{${controller}} 0`);
    // Each of the 8 reconciles timed, and taken from the queue after its wait there.
    const queue = { name: "configmap-outcomes", controller: "configmap-outcomes" };
    const timed = (metric: string, labels: Record<string, string>) => seriesValue(metrics.registry, metric, labels, "count");
    expect(await timed("controller_runtime_reconcile_time_seconds", { controller: "configmap-outcomes" })).toBe(8);
    expect(await timed("workqueue_queue_duration_seconds", queue)).toBe(8);
    expect(await timed("workqueue_work_duration_seconds", queue)).toBe(8);
    expect(await seriesValue(metrics.registry, "workqueue_adds_total", queue)).toBeGreaterThanOrEqual(8);
    expect(await timed("rest_client_request_duration_seconds", { verb: "GET", host: "plane" })).toBeGreaterThan(0);
    expect(await timed("captf_informer_list_duration_seconds", { resource: "configmaps{suite=outcomes}" })).toBeGreaterThanOrEqual(1);
  });

  it("on stop, finishes the reconcile in flight before releasing the Lease", async () => {
    let release: () => void = () => undefined;
    const finished: string[] = [];
    let inFlightSignal: AbortSignal | undefined;
    const reconcile = async (_key: string, context: ReconcileContext) => {
      inFlightSignal = context.signal;
      await new Promise<void>((resolve) => (release = resolve));
      finished.push(context.name);
    };
    await createConfigMap("slow", { suite: "graceful" });
    const { stop, run, manager, get } = startManager("graceful", reconcile);
    await eventually(() => inFlightSignal !== undefined, 10_000, "the reconcile to start");
    stop.abort();
    await eventually(async () => (await get("/readyz")).status === 500, 5_000, "not ready while shutting down");
    // The Lease is still held while the reconcile runs.
    const held = await client.get<Lease>(builtinTypes.lease, namespace, "lease-graceful");
    expect(held.spec?.holderIdentity).not.toBe("");
    release();
    expect(await run).toEqual({ reason: "stopped", drained: true });
    expect(finished).toEqual(["slow"]);
    expect(inFlightSignal?.aborted).toBe(false);
    expect(manager.isLeader()).toBe(false);
    const released = await client.get<Lease>(builtinTypes.lease, namespace, "lease-graceful");
    expect(released.spec?.holderIdentity).toBe("");
  });

  it("aborts a reconcile that outlives the grace period", async () => {
    let signal: AbortSignal | undefined;
    const reconcile = async (_key: string, context: ReconcileContext) => {
      signal = context.signal;
      await new Promise<void>((resolve) => context.signal.addEventListener("abort", () => resolve()));
    };
    await createConfigMap("stuck", { suite: "grace" });
    const { stop, run } = startManager("grace", reconcile, { gracefulShutdownTimeoutMillis: 300 });
    await eventually(() => signal !== undefined, 10_000, "the reconcile to start");
    const stoppedAt = Date.now();
    stop.abort();
    expect(await run).toEqual({ reason: "stopped", drained: false });
    expect(signal?.aborted).toBe(true);
    expect(Date.now() - stoppedAt).toBeGreaterThanOrEqual(250);
  });

  it("runs workers only on the leader; a standby with a warm cache takes over when the leader stops", async () => {
    const seen: string[] = [];
    await createConfigMap("shared", { suite: "standby" });
    const first = startManager("standby", async (key) => void seen.push(`first ${key}`));
    await eventually(() => first.manager.isLeader(), 10_000, "the first to lead");
    const second = startManager("standby", async (key) => void seen.push(`second ${key}`));
    await eventually(async () => (await second.get("/readyz")).status === 200, 10_000, "the standby's caches");
    await createConfigMap("while-standing-by", { suite: "standby" });
    await eventually(() => seen.includes(`first ${namespace}/while-standing-by`), 10_000, "the leader to reconcile");
    expect(second.manager.isLeader()).toBe(false);
    expect(seen.filter((s) => s.startsWith("second"))).toEqual([]);

    first.stop.abort();
    await first.run;
    await eventually(() => second.manager.isLeader(), 10_000, "the standby to lead");
    // The standby queued every key while standing by and reconciles them once it leads.
    await eventually(
      () => seen.includes(`second ${namespace}/shared`) && seen.includes(`second ${namespace}/while-standing-by`),
      10_000,
      "the standby's backlog",
    );
  });

  it("serves metrics over HTTPS only to tokens the API server authenticates and authorizes", async () => {
    const dir = mkdtempSync(join(tmpdir(), "metrics-tls-"));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const [certFile, keyFile] = [join(dir, "tls.crt"), join(dir, "tls.key")];
    execFileSync(
      "openssl",
      ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-days", "1", "-keyout", keyFile, "-out", certFile],
      { stdio: "ignore" },
    );
    const { registry } = createManagerMetrics({ processMetrics: false, buildInfo: { version: "v", commit: "c", contract: "v1alpha1" } });
    const server = await serveMetrics({
      address: "127.0.0.1:0",
      registry,
      logger: captureLogs().logger,
      secure: { certFile, keyFile, authorize: kubeMetricsAuthorizer(client) },
    });
    cleanups.push(() => server!.close());
    const scrape = (token?: string) =>
      new Promise<number>((resolve, reject) => {
        const req = request(
          {
            host: "127.0.0.1",
            port: server!.port,
            path: "/metrics",
            rejectUnauthorized: false,
            headers: token ? { Authorization: `Bearer ${token}` } : {},
          },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on("error", reject);
        req.end();
      });
    expect(await scrape()).toBe(401);
    expect(await scrape("not-a-token")).toBe(403);
    expect(await scrape(sharedControlPlane().token)).toBe(200);
  });

  it("gives up when a cache cannot sync in time", async () => {
    const logs = captureLogs("info");
    const manager = new Manager({
      client,
      logger: logs.logger,
      healthAddress: "0",
      cacheSyncTimeoutMillis: 300,
      informerOptions: { backoffInitialMillis: 50 },
    });
    manager.informer({ group: "nothing.captf.io", version: "v1", plural: "absents", kind: "Absent", namespaced: true });
    const exit = await manager.run(new AbortController().signal);
    expect(exit).toEqual({ reason: "cache-sync-timeout", unsynced: ["absents.nothing.captf.io/v1"] });
  });

  it(
    "waits for a dozen caches at once with one listener on its stop signal, not one per cache (Node warns of a leak past " + "10)",
    async () => {
      const manager = new Manager({
        client,
        logger: captureLogs("info").logger,
        healthAddress: "0",
        cacheSyncTimeoutMillis: 500,
        informerOptions: { backoffInitialMillis: 50 },
      });
      for (let index = 0; index < 12; index++)
        manager.informer({ group: "nothing.captf.io", version: "v1", plural: `absents${index}`, kind: "Absent", namespaced: true });
      const stop = new AbortController();
      const run = manager.run(stop.signal);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(getEventListeners(stop.signal, "abort").length).toBeLessThanOrEqual(2);
      expect(await run).toMatchObject({ reason: "cache-sync-timeout" });
    },
  );
});
