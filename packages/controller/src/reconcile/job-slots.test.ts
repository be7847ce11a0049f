import { describe, expect, it } from "@jest/globals";
import { freesSlot, jobSlotWait, JobSlots, reservationTtlMs, settlingJobSlot, type SlotJob } from "./job-slots.js";

const job = (name: string, clusterName: string, finished = false): SlotJob => ({
  metadata: { name, namespace: "ns", labels: { "captf.infrastructure.cluster.x-k8s.io/owner-kind": "TerraformMachine", "cluster.x-k8s.io/cluster-name": clusterName } },
  ...(finished ? { status: { conditions: [{ type: "Complete", status: "True" }] } } : {}),
});

describe("JobSlots", () => {
  const setup = (limit: number) => {
    const cache: SlotJob[] = [];
    let now = 0;
    const slots = new JobSlots({ running: () => cache, has: (namespace, name) => cache.some((job) => job.metadata?.namespace === namespace && job.metadata.name === name) }, { manager: limit, clusterDefault: 0 }, () => now);
    /** What a pass does between its look at the count and the Job's creation, synchronously. */
    const take = (owner: string) => {
      const wait = jobSlotWait("apply", slots.usage("ns", "c"), { manager: limit, cluster: 0 });
      if (!wait) slots.reserve({ owner, namespace: "ns", clusterName: "c", job: `${owner}-job` });
      return wait === undefined;
    };
    return { cache, slots, take, advance: (ms: number) => (now += ms) };
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

  it("wakes waiting owners of a kind oldest first, one each, keeping a place in line for one that waits again, forgetting one that took a slot", () => {
    const { slots, take, advance } = setup(0);
    for (const owner of ["ns/TerraformMachine/a", "ns/TerraformMachinePool/p", "ns/TerraformMachine/b", "ns/TerraformMachine/c"]) slots.wait(owner);
    expect(slots.wake("TerraformMachine", 1)).toEqual(["ns/a"]);
    expect(slots.wake("TerraformMachine", 1)).toEqual(["ns/b"]);
    // a found no slot again: it is first in line again.
    slots.wait("ns/TerraformMachine/a");
    expect(slots.wake("TerraformMachine", 2)).toEqual(["ns/a", "ns/c"]);
    expect(slots.wake("TerraformMachinePool", 5)).toEqual(["ns/p"]);
    // b took a slot: it waits no more.
    take("ns/TerraformMachine/b");
    slots.wait("ns/TerraformMachine/a");
    expect(slots.wake("TerraformMachine", 5)).toEqual(["ns/a"]);
    // A woken owner that never came back (its object went) is forgotten after a while.
    advance(5 * 60_000);
    slots.wait("ns/TerraformMachine/d");
    expect(slots.wake("TerraformMachine", 5)).toEqual(["ns/d"]);
  });

  it("frees a slot when a running captf Job finishes or goes, not when a finished one goes or one appears", () => {
    const running = job("j", "c") as never;
    const finished = job("j", "c", true) as never;
    expect(freesSlot(finished, "update", running)).toBe(true);
    expect(freesSlot(running, "delete")).toBe(true);
    expect(freesSlot(finished, "delete")).toBe(false);
    expect(freesSlot(running, "add")).toBe(false);
    expect(freesSlot(finished, "update", finished)).toBe(false);
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
