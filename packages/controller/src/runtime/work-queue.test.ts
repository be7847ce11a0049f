import { describe, expect, it } from "@jest/globals";
import { FakeClock, flushPromises } from "./clock.test-support.js";
import { ExponentialFailureRateLimiter } from "./rate-limiter.js";
import { lowPriority, WorkQueue, type WorkQueueMetricsSink } from "./work-queue.js";

function newQueue(clock = new FakeClock()) {
  const events: string[] = [];
  const metrics: WorkQueueMetricsSink = {
    depth: (n) => events.push(`depth=${n}`),
    added: () => events.push("added"),
    retried: () => events.push("retried"),
    queued: (s) => events.push(`queued=${s}`),
    worked: (s) => events.push(`worked=${s}`),
  };
  const queue = new WorkQueue({ name: "test", clock, rateLimiter: new ExponentialFailureRateLimiter(5, 1_000_000), metrics });
  return { queue, clock, events };
}

/** Collects what `get()` has resolved with so far, without blocking. */
async function taken(queue: WorkQueue, count: number): Promise<(string | undefined)[]> {
  const results: (string | undefined)[] = [];
  for (let i = 0; i < count; i++) {
    let value: string | undefined | null = null;
    void queue.get().then((v) => (value = v));
    await flushPromises();
    if (value === null) break;
    results.push(value);
  }
  return results;
}

describe("WorkQueue", () => {
  it("hands out keys first in, first out, each once however often it was added", async () => {
    const { queue } = newQueue();
    for (const key of ["a", "b", "a", "c", "b"]) queue.add(key);
    expect(queue.length).toBe(3);
    expect(await queue.get()).toBe("a");
    expect(await queue.get()).toBe("b");
    expect(await queue.get()).toBe("c");
    expect(queue.length).toBe(0);
  });

  it("never hands a key to two workers: a key added while in flight comes back once, after done", async () => {
    const { queue } = newQueue();
    queue.add("a");
    expect(await queue.get()).toBe("a");
    queue.add("a");
    queue.add("a");
    expect(queue.length).toBe(0);
    expect(await taken(queue, 1)).toEqual([]);
    queue.done("a");
    await flushPromises();
    // The getter left waiting by `taken` received it.
    expect(queue.length).toBe(0);
    queue.done("a");
    queue.add("a");
    expect(await queue.get()).toBe("a");
  });

  it("wakes a waiting worker when a key arrives", async () => {
    const { queue } = newQueue();
    const next = queue.get();
    queue.add("x");
    expect(await next).toBe("x");
  });

  it("serves higher priorities first and raises a queued key's priority", async () => {
    const { queue } = newQueue();
    queue.add("initial-1", lowPriority);
    queue.add("initial-2", lowPriority);
    queue.add("event");
    queue.add("initial-2");
    // A raised key keeps its place by first arrival among its new peers (controller-runtime does the same).
    expect(await taken(queue, 3)).toEqual(["initial-2", "event", "initial-1"]);
  });

  it("delays addAfter keys on the clock and keeps the earliest of several delays", async () => {
    const { queue, clock } = newQueue();
    queue.addAfter("k", 1000);
    queue.addAfter("k", 300);
    queue.addAfter("k", 5000);
    expect(queue.delayedLength).toBe(1);
    await clock.advance(299);
    expect(queue.length).toBe(0);
    await clock.advance(1);
    expect(queue.length).toBe(1);
    expect(await queue.get()).toBe("k");
    queue.done("k");
    await clock.advance(10_000);
    expect(queue.length).toBe(0);
  });

  it("makes a delayed key ready now when it is added without a delay", async () => {
    const { queue, clock } = newQueue();
    queue.addAfter("k", 1000);
    queue.add("k");
    expect(await queue.get()).toBe("k");
    queue.done("k");
    await clock.advance(1000);
    expect(queue.length).toBe(0);
  });

  it("ignores addAfter for a key that is already ready", async () => {
    const { queue, clock } = newQueue();
    queue.add("k");
    queue.addAfter("k", 100);
    expect(queue.delayedLength).toBe(0);
    expect(await queue.get()).toBe("k");
    queue.done("k");
    await clock.advance(100);
    expect(queue.length).toBe(0);
  });

  it("requeues after a delay set while the key is in flight (a reconcile's requeueAfter)", async () => {
    const { queue, clock } = newQueue();
    queue.add("k");
    expect(await queue.get()).toBe("k");
    queue.addAfter("k", 30_000);
    queue.done("k");
    await clock.advance(29_999);
    expect(queue.length).toBe(0);
    await clock.advance(1);
    expect(await queue.get()).toBe("k");
  });

  it("backs off exponentially per key until forgotten", async () => {
    const { queue, clock } = newQueue();
    const readyAfter: number[] = [];
    for (let attempt = 0; attempt < 4; attempt++) {
      queue.addRateLimited("k");
      const start = clock.now();
      while (queue.length === 0) await clock.advance(1);
      readyAfter.push(clock.now() - start);
      expect(await queue.get()).toBe("k");
      queue.done("k");
    }
    expect(readyAfter).toEqual([5, 10, 20, 40]);
    expect(queue.numRequeues("k")).toBe(4);
    queue.forget("k");
    expect(queue.numRequeues("k")).toBe(0);
  });

  it("reports depth, adds, retries and latencies", async () => {
    const { queue, clock, events } = newQueue();
    queue.add("a");
    queue.add("a");
    await clock.advance(2000);
    await queue.get();
    await clock.advance(500);
    queue.done("a");
    queue.addRateLimited("a");
    expect(events).toEqual(["added", "depth=1", "added", "depth=0", "queued=2", "worked=0.5", "retried"]);
  });

  it("returns undefined to waiting workers on shutdown and drops pending and delayed keys", async () => {
    const { queue, clock } = newQueue();
    const waiting = queue.get();
    queue.shutDown();
    expect(await waiting).toBeUndefined();
    queue.add("late");
    queue.addAfter("later", 10);
    await clock.advance(10);
    expect(queue.length).toBe(0);
    expect(await queue.get()).toBeUndefined();
    expect(clock.pendingTimers).toBe(0);
  });

  it("drains: shutDownWithDrain resolves once the work in flight is done", async () => {
    const { queue } = newQueue();
    queue.add("a");
    queue.add("b");
    await queue.get();
    await queue.get();
    let drained: boolean | undefined;
    void queue.shutDownWithDrain().then((d) => (drained = d));
    queue.done("a");
    await flushPromises();
    expect(drained).toBeUndefined();
    queue.done("b");
    await flushPromises();
    expect(drained).toBe(true);
  });

  it("gives up draining after the timeout", async () => {
    const { queue, clock } = newQueue();
    queue.add("stuck");
    await queue.get();
    let drained: boolean | undefined;
    void queue.shutDownWithDrain(1000).then((d) => (drained = d));
    await clock.advance(999);
    expect(drained).toBeUndefined();
    await clock.advance(1);
    expect(drained).toBe(false);
  });

  it("keeps thousands of keys in order by priority, then by arrival", async () => {
    const { queue } = newQueue();
    const keys = Array.from({ length: 2000 }, (_, i) => `k${i}`);
    keys.forEach((key, i) => queue.add(key, i % 2 === 0 ? lowPriority : 0));
    const order: string[] = [];
    while (queue.length > 0) order.push((await queue.get())!);
    expect(order).toEqual([...keys.filter((_, i) => i % 2 === 1), ...keys.filter((_, i) => i % 2 === 0)]);
  });
});
