// The drift phase: the drift policy and the newest check's finding (DriftDetected once, the captf_drift_detected gauge), and the
// health sampling interval of a provisioned machine that may ask for remediation.
import { describe, expect, it } from "@jest/globals";
import type { RunResult } from "@captf/contract/run-result";
import { seriesValue } from "../metrics/series.test-support.js";
import { FakeObjects } from "../runtime/fake-client.test-support.js";
import type { ObservedJob } from "./observe-jobs.js";
import { reconcileDrift } from "./phase-drift.js";
import { machineJob, reconcilePass } from "./reconcile-pass.test-support.js";

const now = Date.parse("2026-12-07T10:00:00Z");
const finding = { detected: true, add: 0, change: 1, destroy: 0, resources: [] };

/** A drift check that finished a minute ago and found `drift`. */
function driftCheck(drift: typeof finding | null): ObservedJob {
  const at = now - 60_000;
  return {
    job: machineJob("m-drift-1", "drift", { condition: "Complete", at }),
    name: "m-drift-1",
    op: "drift",
    attempt: 1,
    outcome: "succeeded",
    finishedAt: at,
    bookkept: false,
    deadlineExceeded: false,
    remediation: false,
    result: { drift } as unknown as RunResult,
  };
}

describe("reconcileDrift", () => {
  it("a check that found drift: DriftDetected, the gauge at 1, the check's time on the status", async () => {
    const check = driftCheck(finding);
    const pass = reconcilePass(new FakeObjects().client, { now, facts: { jobs: [check], toMark: [check] } });
    expect(await reconcileDrift(pass)).toEqual({ kind: "continue" });
    expect(pass.facts.drift).toMatchObject({ detected: true, lastCheckAt: check.finishedAt });
    expect(pass.scope.fields.lastDriftCheck).toBe(new Date(check.finishedAt!).toISOString());
    expect(pass.recorded).toEqual(["DriftDetected"]);
    expect(await seriesValue(pass.registry, "captf_drift_detected", { name: "m" })).toBe(1);
  });

  it("no check: no drift, the gauge at 0, no health sampling for a machine that does not ask for remediation", async () => {
    const pass = reconcilePass(new FakeObjects().client, { now, facts: { wasProvisioned: true } });
    await reconcileDrift(pass);
    expect(pass.facts.drift?.detected).toBe(false);
    expect(pass.facts.healthCheckIntervalSeconds).toBeUndefined();
    expect(pass.recorded).toEqual([]);
    expect(await seriesValue(pass.registry, "captf_drift_detected", { name: "m" })).toBe(0);
  });

  it("a provisioned machine that annotates its Machine samples its health on the remediation interval", async () => {
    const pass = reconcilePass(new FakeObjects().client, {
      now,
      object: { spec: { source: { image: "i" }, remediation: { annotateMachine: true, healthCheckIntervalSeconds: 120 } } },
      facts: { wasProvisioned: true },
    });
    await reconcileDrift(pass);
    expect(pass.facts.healthCheckIntervalSeconds).toBe(120);
  });
});
