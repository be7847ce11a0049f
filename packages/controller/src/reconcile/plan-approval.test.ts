import { describe, expect, it } from "@jest/globals";
import { emptyPlanHash, type PlanSummary, type RunResult } from "@captf/contract/run-result";
import type { ObservedJob } from "./observe-jobs.js";
import { bookkeepPlans, observedPlan, previewCounts } from "./plan-approval.js";

const plan: PlanSummary = { hash: "p1:aa", add: 1, change: 2, destroy: 0, resources: ["module.role.x (create)"], truncated: false };
function job(op: "plan" | "apply", outcome: ObservedJob["outcome"], extra: { annotations?: Record<string, string>; args?: string[]; plan?: typeof plan; finishedAt?: number } = {}): ObservedJob {
  const result = { version: 1, op, image: { ref: "i", providersMirror: false }, runtime: { command: [], version: "1" }, steps: [], drift: null, error: null, ...(extra.plan ? { plan: extra.plan } : {}) } as unknown as RunResult;
  return {
    job: { metadata: { annotations: extra.annotations ?? {} }, spec: { template: { spec: { containers: [{ name: "source", args: extra.args ?? [] }] } } } },
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
    expect(outcome.plan).toEqual({ inputsHash: "h2:in", job: "plan-job", planHash: "p1:aa", add: 1, change: 2, destroy: 0, resources: ["module.role.x (create)"], createdAt: "2026-12-02T10:00:00Z" });
    expect(outcome.events.map((event) => event.reason)).toEqual(["PlanReady"]);
    expect(outcome.approvals).toEqual(["created"]);
  });

  it("clears the plan and consumes the approval (and the approver annotation the Job keeps) once the approved apply succeeds, naming the approver", () => {
    const outcome = bookkeepPlans([job("plan", "succeeded", { plan, finishedAt: 1 }), job("apply", "succeeded", { annotations: { "captf.io/approved-plan": "p1:aa", "captf.io/plan-approved-by": "alice" }, finishedAt: 2 })]);
    expect(outcome.plan).toBeNull();
    expect(outcome.removeAnnotations).toEqual(["captf.io/approve-plan", "captf.io/plan-approved-by"]);
    expect(outcome.events).toEqual([{ reason: "PlanApplied", note: "applied the approved plan p1:aa (approved by alice)" }]);
  });

  it("announces nothing as approved or applied when the apply ran an empty plan, which needs no approval", () => {
    const outcome = bookkeepPlans([job("apply", "succeeded", { annotations: { "captf.io/approved-plan": emptyPlanHash } })]);
    expect(outcome.plan).toBeNull();
    expect(outcome.events).toEqual([]);
    expect(outcome.approvals).toEqual([]);
  });

  it("shows the new plan of an apply that planned differently", () => {
    const outcome = bookkeepPlans([job("apply", "plan-changed", { annotations: { "captf.io/approved-plan": "p1:aa" }, plan: { ...plan, hash: "p1:bb" } })]);
    expect(outcome.plan).toMatchObject({ planHash: "p1:bb", job: "apply-job" });
    expect(outcome.approvals).toEqual(["changed"]);
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
    expect(observedPlan({ inputsHash: "h", job: "j", planHash: emptyPlanHash, add: 0, change: 0, destroy: 0 })).toEqual({ inputsHash: "h", planHash: emptyPlanHash, empty: true });
    expect(observedPlan({ inputsHash: "h", job: "j", planHash: "p1:x", add: 0, change: 0, destroy: 0, outputChanges: 1 })?.empty).toBe(false);
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
    expect(previewCounts({ inputsHash: "h", job: "j", planHash: "p1:x", add: 0, change: 0, destroy: 0, import: 1, move: 2 })).toBe("0 to add, 0 to change, 0 to destroy, 1 to import, 2 to move");
    const outcome = bookkeepPlans([job("plan", "succeeded", { plan: { ...plan, add: 0, change: 0, import: 1, move: 2 } })]);
    expect(outcome.plan).toMatchObject({ add: 0, change: 0, destroy: 0, import: 1, move: 2 });
    expect(outcome.events[0]!.note).toContain("(0 to add, 0 to change, 0 to destroy, 1 to import, 2 to move)");
  });
});
