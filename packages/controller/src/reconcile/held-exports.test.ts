import { describe, expect, it } from "@jest/globals";
import type { RunResult } from "@captf/contract/run-result";
import {
  exportsRecordOf,
  heldExportsMessage,
  holdsExports,
  parsePartialExports,
  parsePendingExports,
  pendingChangeGone,
  type FinishedPoolApply,
  type HoldFacts,
} from "./held-exports.js";

const applied = "h2:applied";
const changed = "h2:changed";
const pending = { exportsHash: changed, approvalHash: "h2:approve", job: "p-apply-2", summary: "terraform_data.bound: replace" };

function apply(overrides: Partial<FinishedPoolApply>): FinishedPoolApply {
  return { name: "p-apply-2", outcome: "succeeded", exportsHash: changed, held: false, imagePullFailed: false, ...overrides };
}
const failedIn = (kind: string, step: string | null): Pick<RunResult, "error"> =>
  ({ error: { kind, step, summary: "s" } }) as Pick<RunResult, "error">;

describe("what a finished pool apply records about its cluster's exports", () => {
  it.each<[string, Partial<FinishedPoolApply>, ReturnType<typeof exportsRecordOf>]>([
    ["a success records the exports it rendered as applied", {}, { kind: "applied", exportsHash: changed }],
    ["a held apply's success settles nothing", { held: true, exportsHash: applied }, undefined],
    [
      "a blocked change is pending, with the hash to approve and what it would replace",
      {
        outcome: "blocked",
        approvalHash: "h2:approve",
        result: { error: { kind: "blocked", step: null, summary: "terraform_data.bound: replace" } } as Pick<RunResult, "error">,
      },
      { kind: "pending", pending },
    ],
    [
      "a blocked apply of the applied exports changes no record",
      { outcome: "blocked", exportsHash: applied, approvalHash: "h2:approve" },
      undefined,
    ],
    [
      "a failure in the apply step may be partly applied",
      { outcome: "failed", result: failedIn("step", "apply") },
      { kind: "partial", partial: { exportsHash: changed, job: "p-apply-2" } },
    ],
    [
      "a runner that gave no result may have applied part",
      { outcome: "failed" },
      { kind: "partial", partial: { exportsHash: changed, job: "p-apply-2" } },
    ],
    [
      "an interrupted apply may have applied part",
      { outcome: "interrupted" },
      { kind: "partial", partial: { exportsHash: changed, job: "p-apply-2" } },
    ],
    ["a failure before the apply step changed nothing", { outcome: "failed", result: failedIn("step", "init") }, undefined],
    ["an image never pulled ran nothing", { outcome: "failed", imagePullFailed: true }, undefined],
    ["a Job from before the exports were recorded on Jobs", { exportsHash: undefined }, undefined],
  ])("%s", (_what, job, expected) => {
    expect(exportsRecordOf(apply(job), applied)).toEqual(expected);
  });
});

describe("whether a pool holds its exports", () => {
  const facts: HoldFacts = {
    pending,
    partial: undefined,
    current: { exportsHash: changed, approvalHash: "h2:approve" },
    applied: { exportsHash: applied, recorded: true },
    approvedHash: undefined,
  };
  it.each<[string, Partial<HoldFacts>, boolean]>([
    ["the pending change, unapproved", {}, true],
    [
      "the pending change with another edit of the pool (a new approval hash)",
      { current: { exportsHash: changed, approvalHash: "h2:edited" } },
      true,
    ],
    ["approved with the current approval hash", { approvedHash: "h2:approve" }, false],
    ["approved with an older approval hash: still held", { approvedHash: "h2:old" }, true],
    ["a change that may be partly applied holds nothing", { partial: { job: "p-apply-1" } }, false],
    ["the applied exports are not on record (too large): nothing to render", { applied: { exportsHash: applied, recorded: false } }, false],
    ["another change of the exports is a new change", { current: { exportsHash: "h2:third", approvalHash: "h2:x" } }, false],
    ["no change pending", { pending: undefined }, false],
  ])("%s", (_what, overrides, expected) => {
    expect(holdsExports({ ...facts, ...overrides })).toBe(expected);
  });

  it("names what waits and the approval of the current inputs", () => {
    expect(heldExportsMessage(pending, "h2:edited")).toBe(
      "Job p-apply-2 stopped before a change of the cluster's exports: terraform_data.bound: replace; approve it with " +
        "captf.io/approve-destructive-plan=h2:edited; until then the pool applies the exports of its last successful apply",
    );
  });
});

describe("a pending change the exports no longer are", () => {
  it("is withdrawn when the exports are back at the applied ones, and its approval goes", () => {
    expect(pendingChangeGone(pending, { exportsHash: applied }, applied, "h2:approve")).toEqual({ withdrawn: true, removeApproval: true });
  });
  it("is superseded by another change; an approval of something else stays", () => {
    expect(pendingChangeGone(pending, { exportsHash: "h2:third" }, applied, "h2:other")).toEqual({
      withdrawn: false,
      removeApproval: false,
    });
  });
  it("is still current", () => {
    expect(pendingChangeGone(pending, { exportsHash: changed }, applied, undefined)).toBeUndefined();
  });
});

describe("the records as annotation values", () => {
  it("reads a pending change back, and nothing from a value that names none", () => {
    expect(parsePendingExports(JSON.stringify(pending))).toEqual(pending);
    expect(parsePendingExports("{}")).toBeUndefined();
    expect(parsePendingExports("not json")).toBeUndefined();
    expect(parsePendingExports(undefined)).toBeUndefined();
  });
  it("counts a damaged partial record: it only ever makes the pool more careful", () => {
    expect(parsePartialExports(JSON.stringify({ exportsHash: changed, job: "j" }))).toEqual({ exportsHash: changed, job: "j" });
    expect(parsePartialExports("not json")).toEqual({});
    expect(parsePartialExports(undefined)).toBeUndefined();
  });
});
