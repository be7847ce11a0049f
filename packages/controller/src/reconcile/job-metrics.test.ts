import { describe, expect, it } from "@jest/globals";
import type { RunResult } from "@captf/contract/run-result";
import { jobError, retryNumber, stepLabel } from "./job-metrics.js";

const failedIn = (kind: string, step: string | null) => ({ error: { kind, step, summary: "s" } }) as unknown as RunResult;

describe("the error a finished Job is counted under", () => {
  it.each<[string, Parameters<typeof jobError>[0], ReturnType<typeof jobError>]>([
    ["a success is no error", { outcome: "succeeded", deadlineExceeded: false }, undefined],
    [
      "a failed step names the step",
      { outcome: "failed", deadlineExceeded: false, result: failedIn("step", "apply") },
      { errorKind: "step", step: "apply" },
    ],
    [
      "a step the metrics do not know is other",
      { outcome: "failed", deadlineExceeded: false, result: failedIn("step", "something-new") },
      { errorKind: "step", step: "other" },
    ],
    [
      "a blocked apply names no step",
      { outcome: "blocked", deadlineExceeded: false, result: failedIn("blocked", null) },
      { errorKind: "blocked", step: "none" },
    ],
    [
      "the deadline wins over what the runner said",
      { outcome: "failed", deadlineExceeded: true, result: failedIn("interrupted", null) },
      { errorKind: "deadline", step: "none" },
    ],
    [
      "stopped from outside without a result",
      { outcome: "interrupted", deadlineExceeded: false },
      { errorKind: "interrupted", step: "none" },
    ],
    [
      "failed without a result (an image never pulled)",
      { outcome: "failed", deadlineExceeded: false },
      { errorKind: "unknown", step: "none" },
    ],
  ])("%s", (_what, job, expected) => {
    expect(jobError(job)).toEqual(expected);
  });

  it("labels every step the runner reports", () => {
    for (const step of [
      "init",
      "force-unlock",
      "validate",
      "plan",
      "show-json",
      "apply",
      "apply-refresh-only",
      "destroy",
      "state-push",
      "state-list",
      "prepare",
    ])
      expect(stepLabel(step)).toBe(step);
  });
});

describe("the retry number of a succeeded Job", () => {
  const at = (minutes: number) => minutes * 60_000;
  it("counts the failures of its operation since the last success before it, plus one", () => {
    const jobs = [
      { op: "apply" as const, outcome: "succeeded" as const, finishedAt: at(1) },
      { op: "apply" as const, outcome: "failed" as const, finishedAt: at(2) },
      { op: "refresh" as const, outcome: "failed" as const, finishedAt: at(3) },
      { op: "apply" as const, outcome: "failed" as const, finishedAt: at(4) },
      { op: "apply" as const, outcome: "succeeded" as const, finishedAt: at(5) },
      { op: "apply" as const, outcome: "succeeded" as const, finishedAt: at(6) },
    ];
    expect(retryNumber(jobs[4]!, jobs)).toBe(3);
    expect(retryNumber(jobs[5]!, jobs)).toBe(1);
    expect(retryNumber(jobs[0]!, jobs)).toBe(1);
  });
});
