import { createHash } from "node:crypto";
import { describe, expect, it } from "@jest/globals";
import { pino } from "pino";
import { machineAdapter } from "../kinds/adapters.js";
import type { KubeObject } from "../runtime/kube-client.js";
import { workspaceController } from "./workspace-controller.js";
import type { ReconcilerDeps } from "./workspace-reconciler.js";
import {
  jobLeftRunning,
  jobSlotWait,
  JobSlots,
  reservationTtlMs,
  settlingJobSlot,
  slotJobCache,
  wakePromiseTtlMs,
  type SlotJob,
} from "./job-slots.js";

const job = (name: string, clusterName: string, finished = false): SlotJob => ({
  metadata: {
    name,
    namespace: "ns",
    labels: { "captf.infrastructure.cluster.x-k8s.io/owner-kind": "TerraformMachine", "cluster.x-k8s.io/cluster-name": clusterName },
  },
  ...(finished ? { status: { conditions: [{ type: "Complete", status: "True" }] } } : {}),
});

const pod = (jobName: string, phase: string): KubeObject =>
  ({ metadata: { name: `${jobName}-x`, namespace: "ns", labels: { "job-name": jobName } }, status: { phase } }) as KubeObject;

/** An informer's indexes over a mutable array, as slotJobCache reads them; `deleted` fires its delete handlers. */
function indexedArray(objects: KubeObject[]): Parameters<typeof slotJobCache>[0] & { deleted(object: KubeObject): void } {
  const deletes: ((object: KubeObject) => void)[] = [];
  const indexes = new Map<string, (object: KubeObject) => string[]>([
    ["label:job-name", (object) => [object.metadata?.labels?.["job-name"] ?? ""]],
  ]);
  return {
    addIndex: (name: string, fn: (object: KubeObject) => string[]) => void indexes.set(name, fn),
    addHandlers: (handlers: { delete?: (object: KubeObject) => void }) => void (handlers.delete && deletes.push(handlers.delete)),
    deleted: (object: KubeObject) => deletes.forEach((handler) => handler(object)),
    byIndex: (name: string, value: string) => objects.filter((object) => indexes.get(name)!(object).includes(value)),
    get: ((namespace: string, name: string) =>
      objects.find((object) => object.metadata?.namespace === namespace && object.metadata.name === name)) as never,
  };
}

/** A waiting apply of cluster `c`, which has no limit of its own. */
const apply = { op: "apply", namespace: "ns", clusterName: "c", clusterLimit: 0 } as const;

describe("JobSlots", () => {
  const setup = (limit: number) => {
    const cache: SlotJob[] = [];
    const pods: KubeObject[] = [];
    let now = 0;
    /** Timers the Job cache set, as [due, run]: `advance` runs those due, as the clock reaches them. */
    const timers: [number, () => void][] = [];
    const jobInformer = indexedArray(cache as KubeObject[]);
    const slots = new JobSlots(
      slotJobCache(
        jobInformer,
        { informer: indexedArray(pods), labelSelector: "captf.io/managed=true" },
        () => now,
        (run, ms) => void timers.push([now + ms, run]),
      ),
      { manager: limit, clusterDefault: 0 },
      () => now,
    );
    const advance = (ms: number) => {
      const until = now + ms;
      for (let due = timers.findIndex(([at]) => at <= until); due >= 0; due = timers.findIndex(([at]) => at <= until)) {
        const [at, run] = timers.splice(due, 1)[0]!;
        now = Math.max(now, at);
        run();
      }
      now = until;
    };
    /** What a pass does between its look at the count and the Job's creation, synchronously. */
    const take = (owner: string) => {
      const wait = jobSlotWait("apply", slots.usage("ns", "c", owner), { manager: limit, cluster: 0 });
      if (!wait) slots.reserve({ owner, namespace: "ns", clusterName: "c", job: `${owner}-job` });
      return wait === undefined;
    };
    return { cache, pods, slots, take, jobInformer, advance, timers };
  };

  it("gives concurrent passes no more slots than the limit before any of their Jobs shows in the cache", () => {
    const { take } = setup(3);
    expect(["a", "b", "c", "d", "e"].map(take)).toEqual([true, true, true, false, false]);
  });

  it("counts a created Job once: reserved until the cache shows it, then from the cache", () => {
    const { cache, slots, take } = setup(2);
    expect(take("a")).toBe(true);
    slots.settle("a", { createdJob: "a-job" });
    expect(slots.usage("ns", "c")).toEqual({ total: 1, cluster: 1 });
    cache.push(job("a-job", "c"));
    expect(slots.usage("ns", "c")).toEqual({ total: 1, cluster: 1 });
    cache[0] = job("a-job", "c", true);
    expect(slots.usage("ns", "c")).toEqual({ total: 0, cluster: 0 });
  });

  it("counts a running Job for its cluster when the cluster's name is longer than a label value (the label holds its hash)", () => {
    const { cache, slots } = setup(2);
    const longName = "c".repeat(64);
    cache.push(job("long-job", createHash("sha256").update(longName).digest("hex").slice(0, 16)));
    expect(slots.usage("ns", longName)).toEqual({ total: 1, cluster: 1 });
  });

  it("ends the reservation of a Job that was created and deleted before any pass counted the slots", () => {
    const { slots, take, jobInformer } = setup(1);
    expect(take("a")).toBe(true);
    slots.settle("a", { createdJob: "a-job" });
    jobInformer.deleted(job("a-job", "c") as KubeObject);
    expect(take("b")).toBe(true);
  });

  it("forgets a deleted Job a minute after it went, by itself: no other delete or pass is needed", () => {
    const { slots, jobInformer, advance, timers } = setup(1);
    jobInformer.deleted(job("a-job", "c") as KubeObject);
    advance(reservationTtlMs / 2);
    jobInformer.deleted(job("b-job", "c") as KubeObject);
    expect(slots.held.goneJobs).toEqual(["ns/a-job", "ns/b-job"]);
    // One timer at a time, for the oldest.
    expect(timers).toHaveLength(1);
    advance(reservationTtlMs / 2);
    expect(slots.held.goneJobs).toEqual(["ns/b-job"]);
    advance(reservationTtlMs / 2);
    expect(slots.held.goneJobs).toEqual([]);
    expect(timers).toEqual([]);
  });

  it("gives the slot back when the pass ends without creating its Job", () => {
    const { slots, take } = setup(1);
    expect(take("a")).toBe(true);
    expect(take("b")).toBe(false);
    slots.settle("a", {});
    expect(take("b")).toBe(true);
  });

  it("keeps the slot of a pass that failed (its Job may exist) until the Job shows or the reservation expires", () => {
    const { cache, slots, take, advance } = setup(1);
    expect(take("a")).toBe(true);
    slots.settle("a", "failed");
    expect(take("b")).toBe(false);
    advance(reservationTtlMs);
    expect(take("b")).toBe(true);
    cache.push(job("b-job", "c"));
    slots.settle("b", "failed");
    expect(slots.usage("ns", "c")).toEqual({ total: 1, cluster: 1 });
  });

  it(
    "wakes, oldest first, the waiters the freed slots let start, each through its own kind's controller, keeping a place in " +
      "line for one that waits again",
    () => {
      const { cache, slots, advance } = setup(2);
      cache.push(job("j1", "c"), job("j2", "c"));
      for (const owner of ["ns/TerraformMachine/a", "ns/TerraformMachinePool/p", "ns/TerraformMachine/b", "ns/TerraformMachine/c"])
        slots.wait(owner, apply);
      expect(slots.wake("TerraformMachine")).toEqual([]);
      // One slot frees: the oldest waiter, a, gets it, whichever kind's watch saw the Job first.
      cache[0] = job("j1", "c", true);
      expect(slots.wake("TerraformMachinePool")).toEqual([]);
      expect(slots.wake("TerraformMachine")).toEqual(["ns/a"]);
      // The next one goes to p, the pool next in line, not to b.
      cache[1] = job("j2", "c", true);
      expect(slots.wake("TerraformMachine")).toEqual([]);
      expect(slots.wake("TerraformMachinePool")).toEqual(["ns/p"]);
      // a found no slot after all (it waits again): it is first in line again, and its slot is its again.
      slots.wait("ns/TerraformMachine/a", apply);
      expect(slots.wake("TerraformMachine")).toEqual(["ns/a"]);
      expect(slots.wake("TerraformMachine")).toEqual([]);
      // Woken owners that never came back (their objects went): their slots lapse, and they are forgotten after a while.
      advance(5 * 60_000);
      expect(slots.wake("TerraformMachine")).toEqual(["ns/b", "ns/c"]);
      slots.wait("ns/TerraformMachine/d", apply);
      advance(wakePromiseTtlMs);
      expect(slots.wake("TerraformMachinePool")).toEqual([]);
      expect(slots.wake("TerraformMachine")).toEqual(["ns/d"]);
    },
  );

  it("forgets a waiter whose object is gone: no slot is kept for it, and no wake picks it", () => {
    const { cache, slots, take } = setup(1);
    cache.push(job("busy", "c"));
    slots.wait("ns/TerraformMachine/gone", apply);
    slots.wait("ns/TerraformMachine/next", apply);
    cache[0] = job("busy", "c", true);
    expect(slots.wake("TerraformMachine")).toEqual(["ns/gone"]);
    expect(take("ns/TerraformMachine/late")).toBe(false);
    slots.forget("ns/TerraformMachine/gone");
    expect(slots.wake("TerraformMachine")).toEqual(["ns/next"]);
  });

  it("wakes an apply behind a drift check that the background share still holds back, and the drift check once it fits", () => {
    const { cache, slots } = setup(5);
    for (const name of ["j1", "j2", "j3", "j4", "j5"]) cache.push(job(name, "c"));
    slots.wait("ns/TerraformMachine/drift", { ...apply, op: "drift" });
    slots.wait("ns/TerraformMachine/apply", apply);
    cache[0] = job("j1", "c", true);
    // 4 of 5 in use: drift and refresh start only below 80% (4).
    expect(slots.wake("TerraformMachine")).toEqual(["ns/apply"]);
    cache[1] = job("j2", "c", true);
    expect(slots.wake("TerraformMachine")).toEqual([]);
    cache[2] = job("j3", "c", true);
    expect(slots.wake("TerraformMachine")).toEqual(["ns/drift"]);
  });

  it("wakes a waiter held back by its cluster's limit only when a slot of that cluster frees", () => {
    const { cache, slots } = setup(10);
    cache.push(job("c-job", "c"), job("d-job", "d"));
    slots.wait("ns/TerraformMachine/in-c", { ...apply, clusterLimit: 1 });
    slots.wait("ns/TerraformMachine/in-d", { ...apply, clusterName: "d", clusterLimit: 2 });
    expect(slots.wake("TerraformMachine")).toEqual(["ns/in-d"]);
    cache[0] = job("c-job", "c", true);
    expect(slots.wake("TerraformMachine")).toEqual(["ns/in-c"]);
  });

  it("frees a slot when a running captf Job finishes or goes, not when a finished one goes or one appears", () => {
    const running = job("j", "c") as never;
    const finished = job("j", "c", true) as never;
    expect(jobLeftRunning(finished, "update", running)).toBe(true);
    expect(jobLeftRunning(running, "delete")).toBe(true);
    expect(jobLeftRunning(finished, "delete")).toBe(false);
    expect(jobLeftRunning(running, "add")).toBe(false);
    expect(jobLeftRunning(finished, "update", finished)).toBe(false);
  });

  it("counts a Job whose Pod ended as holding no slot, before the Job controller marks it finished", () => {
    const { cache, pods, slots } = setup(2);
    cache.push(job("a", "c"), job("b", "c"));
    pods.push(pod("a", "Running"), pod("b", "Running"));
    expect(slots.usage("ns", "c").total).toBe(2);
    pods[0] = pod("a", "Succeeded");
    pods[1] = pod("b", "Failed");
    expect(slots.usage("ns", "c")).toEqual({ total: 0, cluster: 0 });
  });

  it("wakes one waiter per freed slot whichever the manager sees first, the Pod's end or the Job's", () => {
    const { cache, pods, slots } = setup(1);
    const podRule = slots.podFreesSlot!;
    expect(podRule.labelSelector).toBe("captf.io/managed=true");
    // The Pod ends first (the Job controller marks the Job a second later): the Pod's event frees the slot, the Job's does not.
    cache.push(job("a", "c"));
    pods.push(pod("a", "Running"));
    pods[0] = pod("a", "Succeeded");
    expect(podRule.predicate(pods[0], "update", pod("a", "Running"))).toBe(true);
    cache[0] = job("a", "c", true);
    expect(slots.jobFreesSlot(cache[0] as KubeObject, "update", job("a", "c") as KubeObject)).toBe(false);
    // The Job's event comes first: it frees the slot, the Pod's (its Job finished) does not.
    cache[0] = job("b", "c", true);
    pods[0] = pod("b", "Running");
    expect(slots.jobFreesSlot(cache[0] as KubeObject, "update", job("b", "c") as KubeObject)).toBe(true);
    pods[0] = pod("b", "Succeeded");
    expect(podRule.predicate(pods[0], "update", pod("b", "Running"))).toBe(false);
    // Neither a Pod that appears ended, nor one that ends again, nor a deleted one.
    cache[0] = job("c", "c");
    expect(podRule.predicate(pod("c", "Succeeded"), "add")).toBe(false);
    expect(podRule.predicate(pod("c", "Succeeded"), "update", pod("c", "Succeeded"))).toBe(false);
    expect(podRule.predicate(pod("c", "Running"), "delete")).toBe(false);
  });

  it("keeps a freed slot for the waiter it woke: a pass that was not woken waits behind it until the slot was kept for long enough", () => {
    const { cache, slots, take, advance } = setup(1);
    cache.push(job("busy", "c"));
    for (const owner of ["ns/TerraformMachine/a", "ns/TerraformMachine/b"]) {
      expect(take(owner)).toBe(false);
      slots.wait(owner, apply);
    }
    cache[0] = job("busy", "c", true);
    expect(slots.wake("TerraformMachine")).toEqual(["ns/a"]);
    // A pass that arrives meanwhile (its own due time, a backstop) does not take a's slot.
    expect(take("ns/TerraformMachine/late")).toBe(false);
    expect(take("ns/TerraformMachine/b")).toBe(false);
    expect(take("ns/TerraformMachine/a")).toBe(true);
    slots.settle("ns/TerraformMachine/a", {});
    // a's pass started no Job after all: the slot is free again; a slot kept for a woken waiter that never comes lapses.
    expect(slots.wake("TerraformMachine")).toEqual(["ns/b"]);
    expect(take("ns/TerraformMachine/late")).toBe(false);
    advance(wakePromiseTtlMs);
    expect(take("ns/TerraformMachine/late")).toBe(true);
  });

  it("gives back the slot kept for a woken waiter that waits again (its cluster's limit) or ends its pass without a Job", () => {
    const { slots, take } = setup(1);
    slots.wait("ns/TerraformMachine/a", apply);
    slots.wait("ns/TerraformMachine/b", apply);
    expect(slots.wake("TerraformMachine")).toEqual(["ns/a"]);
    expect(take("ns/TerraformMachine/late")).toBe(false);
    slots.wait("ns/TerraformMachine/a", apply);
    expect(take("ns/TerraformMachine/late")).toBe(true);
    slots.settle("ns/TerraformMachine/late", {});
    expect(slots.wake("TerraformMachine")).toEqual(["ns/a"]);
    slots.settle("ns/TerraformMachine/a", {});
    expect(take("ns/TerraformMachine/late")).toBe(true);
  });

  it("counts the running captf Jobs of the cache, in all and of one cluster of one namespace", () => {
    const { cache, slots } = setup(0);
    const inNamespace = (namespace: string, clusterName: string, finished = false) => {
      const made = job(`${namespace}-${clusterName}-${cache.length}`, clusterName, finished);
      return { ...made, metadata: { ...made.metadata, namespace } };
    };
    cache.push(
      inNamespace("a", "c1"),
      inNamespace("a", "c1"),
      inNamespace("a", "c1", true),
      inNamespace("b", "c1"),
      inNamespace("a", "c2"),
      { metadata: { name: "not-captf", namespace: "a", labels: {} } },
    );
    expect(slots.usage("a", "c1")).toEqual({ total: 4, cluster: 2 });
  });

  it("counts reservations per cluster", () => {
    const { slots, take } = setup(0);
    take("a");
    expect(slots.usage("ns", "c")).toEqual({ total: 1, cluster: 1 });
    expect(slots.usage("ns", "other")).toEqual({ total: 1, cluster: 0 });
  });

  it("settles the slot with the pass's outcome, also when the pass throws", async () => {
    const { slots, take } = setup(1);
    await settlingJobSlot(slots, "a", async () => {
      take("a");
      return {};
    });
    expect(take("b")).toBe(true);
    await expect(settlingJobSlot(slots, "b", () => Promise.reject(new Error("create failed")))).rejects.toThrow("create failed");
    expect(take("c")).toBe(false);
    await settlingJobSlot(slots, "c", async () => ({ job: { name: "c-job" } }));
    expect(slots.usage("ns", "c").total).toBe(1);
  });
});

describe("the workspace controller and the slots", () => {
  it("forgets the waiter of an object its pass finds gone", async () => {
    const forgotten: string[] = [];
    const slots = {
      usage: () => ({ total: 0, cluster: 0 }),
      managerLimit: 1,
      clusterDefaultLimit: 0,
      forget: (owner: string) => void forgotten.push(owner),
    };
    const deps = { cache: { get: async () => undefined }, jobSlots: slots } as unknown as ReconcilerDeps;
    const controller = workspaceController(machineAdapter, deps);
    const logger = pino({ level: "silent" });
    await controller.reconcile("ns/m-1", { namespace: "ns", name: "m-1", reconcileId: "r", logger, signal: new AbortController().signal });
    expect(forgotten).toEqual(["ns/TerraformMachine/m-1"]);
  });
});
