import { describe, expect, it } from "@jest/globals";
import { emptyPlanHash, type PlanSummary, type RunResult } from "@captf/contract/run-result";
import type { ObservedJob } from "./observe-jobs.js";
import { bookkeepPlans, observedPlan, planSupersession, previewCounts, type SupersessionFacts } from "./plan-approval.js";
import type { PlanPreview } from "../api/workspace.js";
import { Registry } from "prom-client";
import { CaptfMetrics } from "../metrics/captf-metrics.js";
import { seriesValue } from "../metrics/series.test-support.js";

const plan: PlanSummary = { hash: "p1:aa", add: 1, change: 2, destroy: 0, resources: ["module.role.x (create)"], truncated: false };
function job(
  op: "plan" | "apply",
  outcome: ObservedJob["outcome"],
  extra: { annotations?: Record<string, string>; args?: string[]; plan?: typeof plan; finishedAt?: number } = {},
): ObservedJob {
  const result = {
    version: 1,
    op,
    image: { ref: "i", providersMirror: false },
    runtime: { command: [], version: "1" },
    steps: [],
    drift: null,
    error: null,
    ...(extra.plan ? { plan: extra.plan } : {}),
  } as unknown as RunResult;
  return {
    job: {
      metadata: { annotations: extra.annotations ?? {} },
      spec: { template: { spec: { containers: [{ name: "source", args: extra.args ?? [] }] } } },
    },
    name: `${op}-job`,
    op,
    attempt: 1,
    outcome,
    finishedAt: extra.finishedAt ?? Date.parse("2026-12-02T10:00:00Z"),
    inputsHash: "h2:in",
    bookkept: false,
    result,
    deadlineExceeded: false,
    remediation: false,
  };
}

describe("bookkeepPlans", () => {
  it("shows a finished plan Job's plan for approval", () => {
    const outcome = bookkeepPlans([job("plan", "succeeded", { plan })]);
    expect(outcome.plan).toEqual({
      inputsHash: "h2:in",
      job: "plan-job",
      planHash: "p1:aa",
      add: 1,
      change: 2,
      destroy: 0,
      resources: ["module.role.x (create)"],
      createdAt: "2026-12-02T10:00:00Z",
    });
    expect(outcome.events.map((event) => event.reason)).toEqual(["PlanReady"]);
    expect(outcome.approvals).toEqual(["created"]);
  });

  it(
    "clears the plan and consumes the approval (and the approver annotation the Job keeps) once the approved apply succeeds, " +
      "naming the approver",
    () => {
      const outcome = bookkeepPlans([
        job("plan", "succeeded", { plan, finishedAt: 1 }),
        job("apply", "succeeded", {
          annotations: { "captf.io/approved-plan": "p1:aa", "captf.io/plan-approved-by": "alice" },
          finishedAt: 2,
        }),
      ]);
      expect(outcome.plan).toBeNull();
      expect(outcome.removeAnnotations).toEqual(["captf.io/approve-plan", "captf.io/plan-approved-by"]);
      expect(outcome.events).toEqual([{ reason: "PlanApplied", note: "applied the approved plan p1:aa (approved by alice)" }]);
    },
  );

  it("announces nothing as approved or applied when the apply ran an empty plan, which needs no approval", () => {
    const outcome = bookkeepPlans([job("apply", "succeeded", { annotations: { "captf.io/approved-plan": emptyPlanHash } })]);
    expect(outcome.plan).toBeNull();
    expect(outcome.events).toEqual([]);
    expect(outcome.approvals).toEqual([]);
  });

  it("shows the new plan of an apply that planned differently", () => {
    const outcome = bookkeepPlans([
      job("apply", "plan-changed", { annotations: { "captf.io/approved-plan": "p1:aa" }, plan: { ...plan, hash: "p1:bb" } }),
    ]);
    expect(outcome.plan).toMatchObject({ planHash: "p1:bb", job: "apply-job" });
    expect(outcome.approvals).toEqual(["changed"]);
  });

  it("counts an approved plan's failed apply as failed, keeping the approval for the retry; an unapproved one counts nothing", async () => {
    const failed = bookkeepPlans([job("apply", "failed", { annotations: { "captf.io/approved-plan": "p1:aa" } })]);
    expect(failed).toEqual({ removeAnnotations: [], events: [], approvals: ["failed"] });
    expect(bookkeepPlans([job("apply", "failed")]).approvals).toEqual([]);
    // As the pass counts them.
    const registry = new Registry();
    const metrics = new CaptfMetrics(registry);
    for (const result of failed.approvals) metrics.planApprovals.inc({ kind: "TerraformCluster", result });
    expect(await seriesValue(registry, "captf_plan_approvals_total", { kind: "TerraformCluster", result: "failed" })).toBe(1);
  });

  it("consumes a destructive-plan approval once an apply allowed to delete succeeds", () => {
    const outcome = bookkeepPlans([job("apply", "succeeded", { args: ["--guard-deletes", "--allow-deletes-hash=h2:in"] })]);
    expect(outcome.plan).toBeUndefined();
    expect(outcome.removeAnnotations).toEqual(["captf.io/approve-destructive-plan"]);
  });

  it("changes nothing for an ordinary apply", () => {
    expect(bookkeepPlans([job("apply", "succeeded")])).toEqual({ removeAnnotations: [], events: [], approvals: [] });
  });
});

describe("observedPlan", () => {
  it("is empty only when the plan changes nothing", () => {
    expect(observedPlan({ inputsHash: "h", job: "j", planHash: emptyPlanHash, add: 0, change: 0, destroy: 0 })).toEqual({
      inputsHash: "h",
      planHash: emptyPlanHash,
      empty: true,
    });
    expect(observedPlan({ inputsHash: "h", job: "j", planHash: "p1:x", add: 0, change: 0, destroy: 0, outputChanges: 1 })?.empty).toBe(
      false,
    );
    expect(observedPlan(undefined)).toBeUndefined();
  });

  it("is not empty when the plan only imports or moves, nor when its hash says it changes something its counts do not show", () => {
    expect(observedPlan({ inputsHash: "h", job: "j", planHash: "p1:x", add: 0, change: 0, destroy: 0, import: 1 })?.empty).toBe(false);
    expect(observedPlan({ inputsHash: "h", job: "j", planHash: "p1:x", add: 0, change: 0, destroy: 0, move: 1 })?.empty).toBe(false);
    // A status.plan an older manager wrote, without the import and move counts.
    expect(observedPlan({ inputsHash: "h", job: "j", planHash: "p1:x", add: 0, change: 0, destroy: 0 })?.empty).toBe(false);
  });
});

describe("previewCounts and the plan events", () => {
  it("show imports and moves apart from adds, changes and destroys", () => {
    expect(previewCounts({ inputsHash: "h", job: "j", planHash: "p1:x", add: 0, change: 0, destroy: 0, import: 1, move: 2 })).toBe(
      "0 to add, 0 to change, 0 to destroy, 1 to import, 2 to move",
    );
    const outcome = bookkeepPlans([job("plan", "succeeded", { plan: { ...plan, add: 0, change: 0, import: 1, move: 2 } })]);
    expect(outcome.plan).toMatchObject({ add: 0, change: 0, destroy: 0, import: 1, move: 2 });
    expect(outcome.events[0]!.note).toContain("(0 to add, 0 to change, 0 to destroy, 1 to import, 2 to move)");
  });
});

describe("planSupersession", () => {
  const shown: PlanPreview = {
    inputsHash: "h2:old",
    job: "plan-1",
    planHash: "p2:old",
    add: 1,
    change: 0,
    destroy: 0,
    createdAt: "2026-12-02T10:00:00Z",
  };
  const facts = (extra: Partial<SupersessionFacts> = {}): SupersessionFacts => ({
    shownBefore: shown,
    shown,
    currentHash: "h2:old",
    manual: true,
    jobRuns: false,
    paused: false,
    deleting: false,
    approvedPlanHash: undefined,
    ...extra,
  });

  it("keeps a plan the inputs still hash to", () => {
    expect(planSupersession(facts())).toBeUndefined();
  });

  it("drops the plan once the inputs no longer hash to it: Normal, or Warning when it had been approved", () => {
    expect(planSupersession(facts({ currentHash: "h2:new" }))).toEqual({
      drop: true,
      removeAnnotations: [],
      event: { reason: "PlanSuperseded", type: "Normal", note: expect.stringContaining("the inputs changed") },
    });
    // The approval goes with the plan: a later plan of the same hash (same addresses and actions) was not approved.
    expect(planSupersession(facts({ currentHash: "h2:new", approvedPlanHash: "p2:old" }))).toMatchObject({
      removeAnnotations: ["captf.io/approve-plan", "captf.io/plan-approved-by"],
      event: { type: "Warning", note: expect.stringContaining("p2:old, approved,") },
    });
    expect(planSupersession(facts({ currentHash: "h2:new", approvedPlanHash: "p2:other" }))?.event.type).toBe("Normal");
  });

  it("drops the plan when applyPolicy is no longer Manual", () => {
    expect(planSupersession(facts({ manual: false }))).toMatchObject({
      drop: true,
      event: { note: expect.stringContaining("applyPolicy") },
    });
  });

  it("never drops while a Job runs, the object is paused or deleting, or its inputs do not render", () => {
    for (const extra of [{ jobRuns: true }, { paused: true }, { deleting: true }, { currentHash: undefined }])
      expect(planSupersession(facts({ currentHash: "h2:new", ...extra }))).toBeUndefined();
  });

  it("reports a plan a newer plan replaced, without dropping the newer one", () => {
    const newer = { ...shown, planHash: "p2:new", job: "plan-2", inputsHash: "h2:old" };
    expect(planSupersession(facts({ shown: newer, replacedBy: newer }))).toEqual({
      drop: false,
      removeAnnotations: [],
      event: { reason: "PlanSuperseded", type: "Normal", note: expect.stringContaining("p2:new of Job plan-2") },
    });
    // The same plan again replaces nothing; nothing was shown before, nothing is superseded.
    expect(planSupersession(facts({ replacedBy: shown }))).toBeUndefined();
    expect(planSupersession(facts({ shownBefore: undefined, shown: newer, replacedBy: newer }))).toBeUndefined();
  });

  it("has nothing to supersede when no plan is shown", () => {
    expect(planSupersession(facts({ shownBefore: undefined, shown: undefined, currentHash: "h2:new" }))).toBeUndefined();
  });
});
