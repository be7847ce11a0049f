// The decision phase is pure: it leaves the decision on the pass and records nothing; recordDecision puts it on the status outcome
// and counts it.
import { describe, expect, it } from "@jest/globals";
import { seriesValue } from "../metrics/series.test-support.js";
import { FakeObjects } from "../runtime/fake-client.test-support.js";
import { reconcileDecision, recordDecision } from "./phase-decision.js";
import { reconcilePass } from "./reconcile-pass.test-support.js";
import type { DriftFacts } from "./types.js";

const now = Date.parse("2026-12-07T10:00:00Z");
const drift: DriftFacts = { policy: { intervalSeconds: 1800, action: "Report" }, detected: false };

describe("reconcileDecision", () => {
  it.each([
    ["paused", { paused: true }, {}, { reason: "Paused" }],
    ["held by a retained state", {}, { retainedBy: ["uid-old"] }, { reason: "RetainedStateFound", requeueAfterMs: 60_000 }],
    ["deleting without a policy", { deleting: true }, {}, { reason: "DeletionPolicyUnresolved", requeueAfterMs: 30_000 }],
  ])("%s", async (_what, scope, facts, decision) => {
    const server = new FakeObjects();
    const pass = reconcilePass(server.client, { now, scope, facts: { drift, ...facts } });
    expect(await reconcileDecision(pass)).toEqual({ kind: "continue" });
    expect(pass.facts.decision).toEqual(decision);
    expect(pass.outcome.decision).toBeUndefined();
    expect(server.writes).toEqual([]);
    expect(await seriesValue(pass.registry, "captf_reconcile_op_decisions_total")).toBe(0);
  });

  it("a new machine with its inputs rendered and no state applies them", async () => {
    const pass = reconcilePass(new FakeObjects().client, {
      now,
      facts: {
        drift,
        currentHash: "h2:new",
        inputs: {
          kind: "ready",
          rendered: { root: { "main.tf.json": "{}", "terraform.tfvars.json": "{}" }, hash: "h2:new", approvalHash: "h2:new" },
        },
      },
    });
    await reconcileDecision(pass);
    expect(pass.facts.decision?.op).toBe("apply");
  });

  it("recordDecision: on the status outcome, counted by op and reason", async () => {
    const pass = reconcilePass(new FakeObjects().client, { now, facts: { decision: { reason: "Paused" } } });
    recordDecision(pass);
    expect(pass.outcome.decision).toEqual({ reason: "Paused" });
    expect(await seriesValue(pass.registry, "captf_reconcile_op_decisions_total", { op: "none", reason: "Paused" })).toBe(1);
  });
});
