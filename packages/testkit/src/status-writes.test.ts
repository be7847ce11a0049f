// The chroot kubelet's status writes (packages/testkit/src/status-writes.ts): in order, one at a time, a superseded waiting one dropped.
import { describe, expect, it } from "@jest/globals";
import { LatestStatusWrites } from "./status-writes.js";

describe("a Pod's status writes", () => {
  it("sends one at a time in order and drops a waiting write once a newer one is queued; the last is always sent", async () => {
    const writes = new LatestStatusWrites();
    const sent: string[] = [];
    let release = () => {};
    const inFlight = new Promise<void>((resolve) => (release = resolve));
    writes.write(async () => {
      sent.push("Pending");
      await inFlight;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(sent).toEqual(["Pending"]);
    // Queued while the first is in flight: only the newest of them is sent after it.
    for (const phase of ["init started", "init ended", "Running"]) writes.write(async () => void sent.push(phase));
    release();
    await writes.settled();
    expect(sent).toEqual(["Pending", "Running"]);
    expect(writes.dropped).toBe(2);
    // Nothing in flight: the next write is sent, not dropped.
    writes.write(async () => void sent.push("Succeeded"));
    await writes.settled();
    expect(sent).toEqual(["Pending", "Running", "Succeeded"]);
  });

  it("goes on after a write that failed", async () => {
    const writes = new LatestStatusWrites();
    const sent: string[] = [];
    writes.write(() => Promise.reject(new Error("the API server is gone")));
    await writes.settled();
    writes.write(async () => void sent.push("Running"));
    await expect(writes.settled()).resolves.toBeUndefined();
    expect(sent).toEqual(["Running"]);
  });
});
