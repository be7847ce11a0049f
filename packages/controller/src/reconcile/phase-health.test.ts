// The health phase: the outputs decoded from the state, the health reading they give, and the samples that read it pending.
import { describe, expect, it } from "@jest/globals";
import { FakeObjects } from "../runtime/fake-client.test-support.js";
import type { ObservedJob } from "./observe-jobs.js";
import { reconcileHealth } from "./phase-health.js";
import { reconcilePass } from "./reconcile-pass.test-support.js";
import { machineOutputs, stateWith } from "./state.test-support.js";

const now = Date.parse("2026-12-07T10:00:00Z");
const appliedNow = { op: "apply", outcome: "succeeded", finishedAt: now - 1000 } as ObservedJob;
const refreshedNow = { op: "refresh", outcome: "succeeded", finishedAt: now - 1000 } as ObservedJob;

describe("reconcileHealth", () => {
  it("decodes the state's outputs: valid, with the health reading the module reports", async () => {
    const pass = reconcilePass(new FakeObjects().client, { now, facts: { state: stateWith(machineOutputs) } });
    expect(await reconcileHealth(pass)).toEqual({ kind: "continue" });
    expect(pass.facts.decoding?.status).toBe("True");
    expect(pass.facts.healthReading).toBe("running");
  });

  it("a refresh that read a pending health counts one more sample; an apply after it starts the count again", async () => {
    const pending = { ...machineOutputs, health: { state: "pending", healthy: false } };
    const status = { conditions: [], pendingRefreshes: 2 };
    const object = { spec: { source: { image: "i" } }, status };
    const pass = reconcilePass(new FakeObjects().client, { now, object, facts: { state: stateWith(pending), toMark: [refreshedNow] } });
    await reconcileHealth(pass);
    expect(pass.facts.healthReading).toBe("pending");
    expect(pass.facts.pendingRefreshes).toBe(3);
    expect(pass.scope.fields.pendingRefreshes).toBe(3);
    const applied = reconcilePass(new FakeObjects().client, { now, object, facts: { state: stateWith(pending), toMark: [appliedNow] } });
    await reconcileHealth(applied);
    expect(applied.facts.pendingRefreshes).toBe(0);
    expect(applied.scope.fields.pendingRefreshes).toBeNull();
  });

  it("no state: nothing decoded, nothing on the status", async () => {
    const pass = reconcilePass(new FakeObjects().client, { now });
    await reconcileHealth(pass);
    expect(pass.facts.decoding).toBeUndefined();
    expect(pass.scope.fields.pendingRefreshes).toBeUndefined();
  });
});
