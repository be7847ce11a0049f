import { describe, expect, it } from "@jest/globals";
import { FakeClock, flushPromises } from "./clock.test-support.js";
import {
  ControllerRunner,
  generationOrMetadataChanged,
  TerminalError,
  watchControllerOwner,
  watchFilterSelector,
  watchSelf,
  type Controller,
  type ReconcileContext,
} from "./controller.js";
import { builtinTypes } from "./builtin-types.js";
import type { KubeObject } from "./kube-client.js";
import { ExponentialFailureRateLimiter } from "./rate-limiter.js";
import { captureLogs } from "./runtime.test-support.js";
import { lowPriority } from "./work-queue.js";

/** A runner whose reconcile is scripted per call; each call waits until the test releases it. */
function scriptedRunner(concurrency = 2) {
  const clock = new FakeClock();
  const calls: {
    key: string;
    at: number;
    context: ReconcileContext;
    finish: (outcome?: { requeueAfterMillis?: number } | Error) => void;
  }[] = [];
  const controller: Controller = {
    name: "test",
    kind: "Test",
    concurrency,
    watches: [],
    rateLimiter: new ExponentialFailureRateLimiter(5, 1_000_000),
    reconcile: (key, context) =>
      new Promise((resolve, reject) => {
        calls.push({ key, at: clock.now(), context, finish: (outcome) => (outcome instanceof Error ? reject(outcome) : resolve(outcome)) });
      }),
  };
  const logs = captureLogs();
  const runner = new ControllerRunner(controller, { logger: logs.logger, clock });
  runner.start();
  return { runner, clock, calls, logs };
}

describe("ControllerRunner", () => {
  it("never reconciles one key on two workers, and runs a key added meanwhile once more afterwards", async () => {
    const { runner, calls } = scriptedRunner(2);
    runner.queue.add("ns/a");
    await flushPromises();
    runner.queue.add("ns/a");
    runner.queue.add("ns/b");
    await flushPromises();
    expect(calls.map((c) => c.key)).toEqual(["ns/a", "ns/b"]);
    calls[0]!.finish();
    await flushPromises();
    expect(calls.map((c) => c.key)).toEqual(["ns/a", "ns/b", "ns/a"]);
    calls[1]!.finish();
    calls[2]!.finish();
    await flushPromises();
    expect(calls).toHaveLength(3);
  });

  it("lets the event loop's I/O in between passes that never wait on I/O (a resync of thousands served from the caches)", async () => {
    let passes = 0;
    const controller: Controller = {
      name: "cached",
      kind: "Test",
      concurrency: 2,
      watches: [],
      rateLimiter: new ExponentialFailureRateLimiter(5, 1_000_000),
      reconcile: async () => void passes++,
    };
    const runner = new ControllerRunner(controller, { logger: captureLogs().logger, clock: new FakeClock() });
    for (let i = 0; i < 1000; i++) runner.queue.add(`ns/k-${i}`, lowPriority);
    runner.start();
    // What a watch event's callback is: a macrotask. It runs long before the queue is drained.
    const passesWhenIoRan = await new Promise<number>((resolve) => setImmediate(() => setImmediate(() => resolve(passes))));
    expect(passesWhenIoRan).toBeLessThan(10);
    while (passes < 1000) await flushPromises();
    await runner.stop(1000);
  });

  it("splits the key and gives every pass its own id and logger fields", async () => {
    const { runner, calls, logs } = scriptedRunner(1);
    runner.queue.add("ns/a");
    runner.queue.add("cluster-scoped");
    await flushPromises();
    expect(calls[0]!.context).toMatchObject({ namespace: "ns", name: "a" });
    calls[0]!.context.logger.info("inside");
    expect(logs.lines.at(-1)).toMatchObject({ controller: "test", key: "ns/a", reconcileId: calls[0]!.context.reconcileId, msg: "inside" });
    calls[0]!.finish();
    await flushPromises();
    expect(calls[1]!.context).toMatchObject({ namespace: undefined, name: "cluster-scoped" });
    expect(calls[1]!.context.reconcileId).not.toBe(calls[0]!.context.reconcileId);
  });

  it("retries errors with per-key exponential backoff and forgets the key after a success", async () => {
    const { runner, clock, calls } = scriptedRunner(1);
    const start = clock.now();
    runner.queue.add("k");
    await flushPromises();
    for (let i = 0; i < 3; i++) {
      calls.at(-1)!.finish(new Error("transient"));
      await flushPromises();
      while (calls.length === i + 1) await clock.advance(1);
    }
    expect(calls.map((c) => c.at - start)).toEqual([0, 5, 15, 35]);
    expect(runner.queue.numRequeues("k")).toBe(3);
    calls.at(-1)!.finish();
    await flushPromises();
    expect(runner.queue.numRequeues("k")).toBe(0);
  });

  it("does not retry a terminal error", async () => {
    const { runner, clock, calls, logs } = scriptedRunner(1);
    runner.queue.add("k");
    await flushPromises();
    calls[0]!.finish(new TerminalError("never works"));
    await clock.advance(60_000);
    expect(calls).toHaveLength(1);
    expect(logs.messages()).toContain("reconciler error (terminal, not retried)");
  });

  it("requeues after the delay a pass asks for, without backoff", async () => {
    const { runner, clock, calls } = scriptedRunner(1);
    runner.queue.add("k");
    await flushPromises();
    calls[0]!.finish({ requeueAfterMillis: 30_000 });
    await flushPromises();
    await clock.advance(29_999);
    expect(calls).toHaveLength(1);
    await clock.advance(1);
    expect(calls).toHaveLength(2);
    expect(runner.queue.numRequeues("k")).toBe(0);
  });

  it("runs a pass that asks for a requeue after 0 ms again at once", async () => {
    const { runner, calls } = scriptedRunner(1);
    runner.queue.add("k");
    await flushPromises();
    calls[0]!.finish({ requeueAfterMillis: 0 });
    await flushPromises();
    expect(calls).toHaveLength(2);
    expect(runner.queue.numRequeues("k")).toBe(0);
  });

  it("drains on stop: no new keys, the pass in flight finishes", async () => {
    const { runner, calls } = scriptedRunner(1);
    runner.queue.add("a");
    runner.queue.add("b");
    await flushPromises();
    const stopped = runner.stop(10_000);
    calls[0]!.finish();
    expect(await stopped).toBe(true);
    expect(calls.map((c) => c.key)).toEqual(["a"]);
    expect(calls[0]!.context.signal.aborted).toBe(false);
  });

  it("aborts the pass in flight once the grace period is over", async () => {
    const { runner, clock, calls } = scriptedRunner(1);
    runner.queue.add("a");
    await flushPromises();
    calls[0]!.context.signal.addEventListener("abort", () => calls[0]!.finish(new Error("aborted")));
    const stopped = runner.stop(1_000);
    await clock.advance(1_000);
    expect(await stopped).toBe(false);
    expect(calls[0]!.context.signal.aborted).toBe(true);
  });
});

describe("watch mappings", () => {
  const handlersOf = (watch: Parameters<ControllerRunner["handlersFor"]>[0]) => {
    const runner = new ControllerRunner(
      { name: "m", kind: "K", concurrency: 1, watches: [], reconcile: async () => undefined },
      { logger: captureLogs().logger, clock: new FakeClock() },
    );
    return { runner, handlers: runner.handlersFor(watch) };
  };

  it("enqueue initial-list and resync keys at low priority, events at normal priority", async () => {
    const { runner, handlers } = handlersOf(watchSelf(builtinTypes.configMap));
    handlers.add!({ metadata: { namespace: "ns", name: "initial" } }, { initialList: true });
    const resynced = { metadata: { namespace: "ns", name: "resynced" } };
    handlers.update!(resynced, resynced, { resync: true });
    handlers.add!({ metadata: { namespace: "ns", name: "new" } }, { initialList: false });
    expect([await runner.queue.get(), await runner.queue.get(), await runner.queue.get()]).toEqual(["ns/new", "ns/initial", "ns/resynced"]);
    expect(lowPriority).toBeLessThan(0);
  });

  it("enqueue a watch's keys at its own priority, ahead of keys queued before them", async () => {
    const { runner, handlers } = handlersOf(watchSelf(builtinTypes.configMap));
    const urgent = runner.handlersFor({ ...watchSelf(builtinTypes.configMap), map: () => ["ns/woken"], priority: 10 });
    handlers.add!({ metadata: { namespace: "ns", name: "first" } }, { initialList: false });
    handlers.add!({ metadata: { namespace: "ns", name: "woken" } }, { initialList: false });
    urgent.update!(
      { metadata: { namespace: "ns", name: "x", resourceVersion: "1" } },
      { metadata: { namespace: "ns", name: "x", resourceVersion: "2" } },
      { resync: false },
    );
    expect([await runner.queue.get(), await runner.queue.get()]).toEqual(["ns/woken", "ns/first"]);
  });

  it("map an owned object to its controller owner of the right kind", async () => {
    const { runner, handlers } = handlersOf(watchControllerOwner(builtinTypes.job, "TerraformMachine"));
    const owned = (kind: string, controller: boolean) => ({
      metadata: { namespace: "ns", name: "job", ownerReferences: [{ apiVersion: "x/v1", kind, name: "m1", uid: "u", controller }] },
    });
    handlers.add!(owned("TerraformCluster", true), { initialList: false });
    handlers.add!(owned("TerraformMachine", false), { initialList: false });
    handlers.delete!(owned("TerraformMachine", true));
    expect(runner.queue.length).toBe(1);
    expect(await runner.queue.get()).toBe("ns/m1");
  });

  it("drop status-only updates with the generation predicate", () => {
    const before: KubeObject = { metadata: { generation: 1, labels: { a: "1" } } };
    expect(generationOrMetadataChanged({ metadata: { generation: 1, labels: { a: "1" } } }, "update", before)).toBe(false);
    expect(generationOrMetadataChanged({ metadata: { generation: 2, labels: { a: "1" } } }, "update", before)).toBe(true);
    expect(generationOrMetadataChanged({ metadata: { generation: 1, labels: { a: "2" } } }, "update", before)).toBe(true);
    expect(
      generationOrMetadataChanged({ metadata: { generation: 1, labels: { a: "1" }, deletionTimestamp: "now" } }, "update", before),
    ).toBe(true);
    expect(generationOrMetadataChanged({ metadata: {} }, "delete")).toBe(true);
  });

  it("turn a --watch-filter value into a label selector", () => {
    expect(watchFilterSelector("")).toBeUndefined();
    // Cluster API's own label: the objects a CAPI controller with the same --watch-filter watches.
    expect(watchFilterSelector("team-a")?.split("=")).toEqual(["cluster.x-k8s.io/watch-filter", "team-a"]);
  });

  it("refuse a concurrency below 1", () => {
    expect(
      () =>
        new ControllerRunner(
          { name: "x", kind: "K", concurrency: 0, watches: [], reconcile: async () => undefined },
          { logger: captureLogs().logger },
        ),
    ).toThrow(/concurrency/);
  });
});
