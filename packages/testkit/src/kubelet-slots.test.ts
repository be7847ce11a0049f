// How many Pods the chroot kubelet runs at once: a limit from the machine's cores and memory for Pods
// that run to completion (Jobs'), none for a service's Pod (the manager's), as on a real node.
import { describe, expect, it } from "@jest/globals";
import { parallelPodsFor, podMemoryBytes, runsToCompletion } from "./kubelet.js";

const gib = 1024 * 1024 * 1024;

describe("the chroot kubelet's Pod slots", () => {
  it("runs two Pods per core, as many as fit in the free memory, at least one", () => {
    expect(parallelPodsFor(2, 8 * gib)).toBe(4);
    expect(parallelPodsFor(16, 64 * gib)).toBe(32);
    // Memory bounds it: 768 MiB free holds three Pods of 256 MiB.
    expect(parallelPodsFor(8, 3 * podMemoryBytes)).toBe(3);
    expect(parallelPodsFor(8, 3 * podMemoryBytes - 1)).toBe(2);
    expect(parallelPodsFor(2, 0)).toBe(1);
    expect(parallelPodsFor(0, 8 * gib)).toBe(1);
  });

  it("gives a slot to a Pod that runs to completion, not to a service's Pod", () => {
    const pod = (restartPolicy?: string) => ({ spec: { containers: [], ...(restartPolicy ? { restartPolicy } : {}) } });
    expect(runsToCompletion(pod("Never"))).toBe(true);
    expect(runsToCompletion(pod("OnFailure"))).toBe(true);
    expect(runsToCompletion(pod("Always"))).toBe(false);
    // A Pod's default restartPolicy is Always (a Deployment's Pods).
    expect(runsToCompletion(pod())).toBe(false);
  });
});
