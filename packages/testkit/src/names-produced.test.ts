import { describe, expect, it } from "@jest/globals";
import { coveredLines, findNamesProduced, literalPattern, metricUsePattern, propertyPattern, type FileCoverage } from "./names-produced.js";

// Statements: 1 on line 1 (ran), 2 on line 2 (not run), 3 spanning lines 3–5 (ran) with 4 on line 4 inside it (not run).
const coverage: FileCoverage = {
  statementMap: {
    "1": { start: { line: 1 }, end: { line: 1 } },
    "2": { start: { line: 2 }, end: { line: 2 } },
    "3": { start: { line: 3 }, end: { line: 5 } },
    "4": { start: { line: 4 }, end: { line: 4 } },
  },
  s: { "1": 3, "2": 0, "3": 1, "4": 0 },
};
const source = [
  'void events.record(subject, "JobInterrupted", note);',
  'void events.record(subject, "PlanSuperseded", note);',
  "const value = {",
  '  reason: "DriftPending",',
  '  hash: annotations.inputsHash, metrics: this.jobs.inc({ kind }) };',
].join("\n");
const declared = [
  { id: "event:JobInterrupted", patterns: [literalPattern("JobInterrupted")] },
  { id: "event:PlanSuperseded", patterns: [literalPattern("PlanSuperseded")] },
  { id: "condition-reason:DriftPending", patterns: [literalPattern("DriftPending")] },
  { id: "annotation:captf.io/inputs-hash", patterns: [propertyPattern("annotations", "inputsHash")] },
  { id: "metric:captf_jobs_total", patterns: [metricUsePattern("jobs")] },
];

describe("findNamesProduced", () => {
  it("a line runs when its innermost statement ran", () => {
    expect([...coveredLines(coverage)].sort()).toEqual([1, 3, 5]);
  });

  it("names produced on lines that ran; the rest unproduced unless reserved; reservations of produced or undeclared names are stale", () => {
    const finding = findNamesProduced({
      declared,
      sources: new Map([["/src/a.ts", source]]),
      coverage: new Map([["/src/a.ts", coverage]]),
      reserved: { "event:PlanSuperseded": "not emitted yet", "annotation:captf.io/inputs-hash": "stale", "event:Gone": "renamed" },
    });
    expect(Object.fromEntries(finding.produced)).toEqual({
      "event:JobInterrupted": "/src/a.ts:1",
      "annotation:captf.io/inputs-hash": "/src/a.ts:5",
      "metric:captf_jobs_total": "/src/a.ts:5",
    });
    expect(finding.unproduced).toEqual(["condition-reason:DriftPending"]);
    expect(Object.fromEntries(finding.namedUntested)).toEqual({ "event:PlanSuperseded": "/src/a.ts:2", "condition-reason:DriftPending": "/src/a.ts:4" });
    expect(finding.staleReservations).toEqual(["annotation:captf.io/inputs-hash", "event:Gone"]);
  });

  it("a file without coverage produces nothing", () => {
    const finding = findNamesProduced({ declared, sources: new Map([["/src/a.ts", source]]), coverage: new Map(), reserved: {} });
    expect(finding.produced.size).toBe(0);
    expect(finding.unproduced).toHaveLength(declared.length);
  });

  it("patterns match the ways code names things, not their look-alikes", () => {
    expect(literalPattern("Paused").test('reason: "Paused"')).toBe(true);
    expect(literalPattern("Paused").test('reason: "NotPaused"')).toBe(false);
    expect(propertyPattern("labels", "op").test("labels.op]")).toBe(true);
    expect(propertyPattern("labels", "op").test("labels.opName")).toBe(false);
    expect(metricUsePattern("jobQueue").test("deps.metrics?.jobQueue.observe({ kind }, 3)")).toBe(true);
    expect(metricUsePattern("jobQueue").test("this.jobQueue = histogram(")).toBe(false);
  });
});
