import { describe, expect, it } from "@jest/globals";
import {
  eventRecordingLine,
  findNamesAsserted,
  findNamesProduced,
  literalPattern,
  metricLabelValueNames,
  metricsDeclaredIn,
  metricUsePattern,
  propertyPattern,
  type DeclaredName,
  type FileCoverage,
} from "./names-produced.js";

/**
 * Coverage of a source as istanbul writes it, simplified: each non-blank line one statement, run once if
 * listed in `ran`; `functions` are [first line, last line] (the name's column is the first non-blank one).
 */
function coverageOf(source: string, ran: number[], functions: [number, number][] = []): FileCoverage {
  const lines = source.split("\n");
  const statementMap: FileCoverage["statementMap"] = {};
  const s: FileCoverage["s"] = {};
  for (const [index, line] of lines.entries()) {
    if (line.trim() === "") continue;
    const column = line.length - line.trimStart().length;
    statementMap[String(index)] = { start: { line: index + 1, column }, end: { line: index + 1, column: line.length } };
    s[String(index)] = ran.includes(index + 1) ? 1 : 0;
  }
  const fnMap: FileCoverage["fnMap"] = {};
  for (const [index, [from, to]] of functions.entries()) {
    const first = lines[from - 1] ?? "";
    const column = first.length - first.trimStart().length;
    fnMap[String(index)] = {
      decl: { start: { line: from, column }, end: { line: from, column: column + 1 } },
      loc: { start: { line: from, column }, end: { line: to, column: (lines[to - 1] ?? "").length } },
    };
  }
  return { statementMap, s, fnMap };
}

const find = (declared: DeclaredName[], files: Record<string, [string, FileCoverage]>, reserved: Record<string, string> = {}) =>
  findNamesProduced({
    declared,
    sources: new Map(Object.entries(files).map(([path, [text]]) => [path, text])),
    coverage: new Map(Object.entries(files).map(([path, [, coverage]]) => [path, coverage])),
    reserved,
  });

const source = [
  "export function pass() {",
  '  void events.record(subject, "JobInterrupted", note);',
  '  void events.record(subject, "PlanSuperseded", note);',
  "  const value = {",
  '    reason: "DriftPending",',
  "    hash: annotations.inputsHash, metrics: this.jobs.inc({ kind }) };",
  "}",
].join("\n");
const passCoverage = coverageOf(source, [1, 2, 4, 6], [[1, 7]]);
const declared = [
  { id: "event:JobInterrupted", patterns: [literalPattern("JobInterrupted")], context: eventRecordingLine },
  { id: "event:PlanSuperseded", patterns: [literalPattern("PlanSuperseded")], context: eventRecordingLine },
  { id: "condition-reason:DriftPending", patterns: [literalPattern("DriftPending")] },
  { id: "annotation:captf.io/inputs-hash", patterns: [propertyPattern("annotations", "inputsHash")] },
  { id: "metric:captf_jobs_total", patterns: [metricUsePattern("jobs")] },
];

describe("findNamesProduced", () => {
  it(
    "names produced on statements that ran; the rest unproduced unless reserved; reservations of produced or undeclared names " +
      "are stale",
    () => {
      const finding = find(
        declared,
        { "/src/a.ts": [source, passCoverage] },
        { "event:PlanSuperseded": "not emitted yet", "annotation:captf.io/inputs-hash": "stale", "event:Gone": "renamed" },
      );
      expect(Object.fromEntries(finding.produced)).toEqual({
        "event:JobInterrupted": "/src/a.ts:2",
        "annotation:captf.io/inputs-hash": "/src/a.ts:6",
        "metric:captf_jobs_total": "/src/a.ts:6",
      });
      expect(finding.unproduced).toEqual(["condition-reason:DriftPending"]);
      expect(Object.fromEntries(finding.namedUntested)).toEqual({
        "event:PlanSuperseded": "/src/a.ts:3",
        "condition-reason:DriftPending": "/src/a.ts:5",
      });
      expect(finding.staleReservations).toEqual(["annotation:captf.io/inputs-hash", "event:Gone"]);
    },
  );

  it("a file without coverage produces nothing", () => {
    const finding = findNamesProduced({ declared, sources: new Map([["/src/a.ts", source]]), coverage: new Map(), reserved: {} });
    expect(finding.produced.size).toBe(0);
    expect(finding.unproduced).toHaveLength(declared.length);
  });

  it("a name counts only if the statement naming it ran, not another statement on its line", () => {
    const text = ["function pass() {", '  if (changed) void events.record(subject, "InputsChanged", note);', "}"].join("\n");
    const recordColumn = text.indexOf("void") - text.indexOf("\n") - 1;
    const coverage: FileCoverage = {
      statementMap: {
        if: { start: { line: 2, column: 2 }, end: { line: 2, column: 70 } },
        record: { start: { line: 2, column: recordColumn }, end: { line: 2, column: 70 } },
      },
      s: { if: 4, record: 0 },
      fnMap: {
        pass: {
          decl: { start: { line: 1, column: 9 }, end: { line: 1, column: 13 } },
          loc: { start: { line: 1, column: 0 }, end: { line: 3, column: 1 } },
        },
      },
    };
    const finding = find([{ id: "event:InputsChanged", patterns: [literalPattern("InputsChanged")], context: eventRecordingLine }], {
      "/src/a.ts": [text, coverage],
    });
    expect(finding.unproduced).toEqual(["event:InputsChanged"]);
  });

  it("an event reason counts only on a line that records an event, never as a decision or condition of the same word", () => {
    const text = [
      "function decide(state) {",
      '  if (state.unreadable) return { reason: "StateUnreadable", requeueAfterMs: 5000 };',
      '  if (state.locked) void events.record(subject, "StateLocked", holder);',
      '  outcome.events.push({ reason: "PlanReady", note: "plan ready" });',
      '  return { status: "False", reason: "StateLost", message: "gone" };',
      "}",
    ].join("\n");
    const event = (reason: string) => ({ id: `event:${reason}`, patterns: [literalPattern(reason)], context: eventRecordingLine });
    const finding = find([event("StateUnreadable"), event("StateLocked"), event("PlanReady"), event("StateLost")], {
      "/src/decide.ts": [text, coverageOf(text, [1, 2, 3, 4, 5], [[1, 6]])],
    });
    expect(Object.fromEntries(finding.produced)).toEqual({
      "event:StateLocked": "/src/decide.ts:3",
      "event:PlanReady": "/src/decide.ts:4",
    });
    expect(finding.unproduced).toEqual(["event:StateUnreadable", "event:StateLost"]);
  });

  it("an event reason counts inside a recording call written over several lines, not inside a condition's", () => {
    const text = [
      "/** The plan's events (a quote in a comment: it's no string). */",
      "export function record(events, state) {",
      "  events.emit(",
      '    "Normal",',
      '    "PlanReady",',
      "    note,",
      "  );",
      "  outcome.events.push({",
      '    reason: "PlanApplied",',
      "    note: text,",
      "  });",
      "  return {",
      '    status: "False",',
      '    reason: "StateLost",',
      "    message: text,",
      "  };",
      "}",
    ].join("\n");
    const event = (reason: string) => ({ id: `event:${reason}`, patterns: [literalPattern(reason)], context: eventRecordingLine });
    const finding = find([event("PlanReady"), event("PlanApplied"), event("StateLost")], {
      "/src/record.ts": [text, coverageOf(text, [3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16], [[2, 17]])],
    });
    expect(Object.fromEntries(finding.produced)).toEqual({
      "event:PlanReady": "/src/record.ts:5",
      "event:PlanApplied": "/src/record.ts:9",
    });
    expect(finding.unproduced).toEqual(["event:StateLost"]);
  });

  it("an if whose recording body is on the next line produces the reason only when the body ran", () => {
    const text = [
      "export function waited(reason, previous) {",
      '  if (reason !== previous && reason === "WaitingForJobSlot")',
      "    void events.record(subject, reason, note);",
      '  if (reason === "WaitingForRunLease")',
      "    void events.record(subject, reason, note);",
      "}",
    ].join("\n");
    const event = (reason: string) => ({ id: `event:${reason}`, patterns: [literalPattern(reason)], context: eventRecordingLine });
    const finding = find([event("WaitingForJobSlot"), event("WaitingForRunLease")], {
      "/src/waits.ts": [text, coverageOf(text, [2, 3, 4], [[1, 6]])],
    });
    expect(Object.fromEntries(finding.produced)).toEqual({ "event:WaitingForJobSlot": "/src/waits.ts:2" });
    expect(finding.unproduced).toEqual(["event:WaitingForRunLease"]);
  });

  it("a module-level list produces its names only where a statement that ran uses it", () => {
    const text = [
      'const eventedWaits = ["WaitingForRunLease", "WaitingForJobSlot"];',
      'const terminalWaits = ["DestroyFailed"];',
      "export function waited(reason) {",
      "  if (eventedWaits.includes(reason)) void events.record(subject, reason, note);",
      "}",
    ].join("\n");
    const event = (reason: string) => ({ id: `event:${reason}`, patterns: [literalPattern(reason)], context: eventRecordingLine });
    const names = [event("WaitingForRunLease"), { id: "condition-reason:DestroyFailed", patterns: [literalPattern("DestroyFailed")] }];
    // Imported (the lists ran) and the pass recorded a wait.
    expect(Object.fromEntries(find(names, { "/src/waits.ts": [text, coverageOf(text, [1, 2, 3, 4], [[3, 5]])] }).produced)).toEqual({
      "event:WaitingForRunLease": "/src/waits.ts:4",
    });
    // Imported only: the lists ran, nothing used them.
    expect(find(names, { "/src/waits.ts": [text, coverageOf(text, [1, 2], [[3, 5]])] }).unproduced).toEqual([
      "event:WaitingForRunLease",
      "condition-reason:DestroyFailed",
    ]);
  });

  it("a module-level list exported and used in another file produces its names there", () => {
    const table = 'export const waitReasons = ["WaitingForJobSlot"];';
    const user = [
      'import { waitReasons } from "./table.js";',
      "export function check(reason) {",
      "  return waitReasons.includes(reason);",
      "}",
    ].join("\n");
    const names = [{ id: "condition-reason:WaitingForJobSlot", patterns: [literalPattern("WaitingForJobSlot")] }];
    const files = (ran: number[]): Record<string, [string, FileCoverage]> => ({
      "/src/table.ts": [table, coverageOf(table, [1])],
      "/src/user.ts": [user, coverageOf(user, ran, [[2, 4]])],
    });
    expect(Object.fromEntries(find(names, files([1, 2, 3])).produced)).toEqual({ "condition-reason:WaitingForJobSlot": "/src/user.ts:3" });
    expect(find(names, files([1, 2])).unproduced).toEqual(["condition-reason:WaitingForJobSlot"]);
  });

  describe("metrics", () => {
    const metricsClass = [
      "export class Metrics {",
      "  constructor(registry) {",
      '    this.jobs = counter("captf_jobs_total", "Finished Jobs", ["kind"]);',
      '    this.jobErrors = counter("captf_job_errors_total", "Failed Jobs", ["kind"]);',
      "    this.jobsActive = new Gauge({",
      '      name: "captf_jobs_active",',
      "      collect() {",
      "        for (const { kind, count } of activeJobs()) this.set({ kind }, count);",
      "      },",
      "    });",
      '    this.ready = gauge("captf_ready", "Ready", object);',
      '    this.infrastructureHealthy = gauge("captf_infrastructure_healthy", "Healthy", object);',
      "  }",
      "  jobFailed(kind) {",
      "    this.jobErrors.inc({ kind });",
      "  }",
      "  objectStatus(kind, status) {",
      "    if (status.ready !== undefined) this.ready.set({ kind }, status.ready);",
      "    if (status.healthy !== undefined) this.infrastructureHealthy.set({ kind }, status.healthy);",
      "  }",
      "}",
    ].join("\n");
    const declaredMetrics = metricsDeclaredIn(metricsClass, "/src/metrics/");
    // A unit test of the class ran every line of it.
    const classCoverage = coverageOf(
      metricsClass,
      Array.from({ length: 21 }, (_, index) => index + 1),
      [
        [2, 13],
        [7, 9],
        [14, 16],
        [17, 20],
      ],
    );

    it("reads each metric's declaration as its own statement: a collect() of the next metric is not the earlier one's", () => {
      expect(declaredMetrics.map((metric) => metric.id)).toEqual([
        "metric:captf_jobs_total",
        "metric:captf_job_errors_total",
        "metric:captf_jobs_active",
        "metric:captf_ready",
        "metric:captf_infrastructure_healthy",
      ]);
      const finding = find(declaredMetrics, { "/src/metrics/metrics.ts": [metricsClass, classCoverage] });
      expect(Object.fromEntries(finding.produced)).toEqual({ "metric:captf_jobs_active": "/src/metrics/metrics.ts:8" });
      expect(finding.unproduced).toContain("metric:captf_jobs_total");
      expect(finding.unproduced).toContain("metric:captf_job_errors_total");
    });

    it(
      "a helper of the metrics class produces a metric only where code outside the metrics folder calls it on a tested path, " +
        "passing its optional field",
      () => {
        const pass = [
          "export function reconcile(metrics) {",
          "  metrics.objectStatus(kind, { ready: 1 });",
          "  if (failed) metrics.jobFailed(kind);",
          "}",
          "export function later(metrics) {",
          "  metrics.objectStatus(kind, { healthy: 1 });",
          "}",
        ].join("\n");
        const finding = find(declaredMetrics, {
          "/src/metrics/metrics.ts": [metricsClass, classCoverage],
          "/src/reconcile/pass.ts": [
            pass,
            coverageOf(
              pass,
              [1, 2, 5],
              [
                [1, 4],
                [5, 7],
              ],
            ),
          ],
        });
        expect(finding.produced.get("metric:captf_ready")).toBe("/src/reconcile/pass.ts:2");
        expect(finding.unproduced).toEqual([
          "metric:captf_jobs_total",
          "metric:captf_job_errors_total",
          "metric:captf_infrastructure_healthy",
        ]);
        expect(finding.namedUntested.get("metric:captf_job_errors_total")).toBe("/src/metrics/metrics.ts:15");
      },
    );
  });

  it("patterns match the ways code names things, not their look-alikes", () => {
    expect(literalPattern("Paused").test('reason: "Paused"')).toBe(true);
    expect(literalPattern("Paused").test('reason: "NotPaused"')).toBe(false);
    expect(propertyPattern("labels", "op").test("labels.op]")).toBe(true);
    expect(propertyPattern("labels", "op").test("labels.opName")).toBe(false);
    expect(metricUsePattern("jobQueue").test("deps.metrics?.jobQueue.observe({ kind }, 3)")).toBe(true);
    expect(metricUsePattern("jobQueue").test("this.jobQueue = histogram(")).toBe(false);
    expect(eventRecordingLine.test('void events.record(subject, "JobFailed", note)')).toBe(true);
    expect(eventRecordingLine.test('{ reason: "IdentitySecretFound", type: "Normal", note }')).toBe(true);
    expect(eventRecordingLine.test('return { status: "False", reason: "StateLost", message }')).toBe(false);
  });
});

describe("findNamesAsserted", () => {
  const names: DeclaredName[] = [
    { id: "event:JobInterrupted", patterns: [literalPattern("JobInterrupted")] },
    { id: "condition-reason:DriftPending", patterns: [literalPattern("DriftPending")] },
    { id: "condition-reason:NoDrift", patterns: [literalPattern("NoDrift")] },
    { id: "annotation:captf.io/inputs-hash", patterns: [propertyPattern("annotations", "inputsHash")] },
    {
      id: "metric:captf_jobs_total",
      patterns: [metricUsePattern("jobs")],
      assertedBy: [/(?<![\w])captf_jobs_total(?![\w])/],
    },
    { id: "condition-reason:StateLost", patterns: [literalPattern("StateLost")] },
    { id: "condition-reason:DriftReported", patterns: [literalPattern("DriftReported")] },
  ];
  const test = [
    'const object = { metadata: { annotations: { x: "StateLost" } } }; // an input, never compared',
    'it("records", async () => {',
    "  expect(events.map((event) => event.reason)).toEqual([",
    '    "JobInterrupted",',
    "  ]);",
    '  await eventually(() => conditionOf(object, "DriftStatus")?.reason === "DriftPending");',
    "  expect(await scrape()).toContain('captf_jobs_total{kind=\"TerraformMachine\"} 1');",
    "});",
    "const cases = [",
    '  ["clean", { reason: "NoDrift" }],',
    "];",
    'it.each(cases)("%s", (_, expected) => expect(decide()).toMatchObject(expected));',
    'it.each<[string, { reason: string }]>([["late", { reason: "DriftReported" }]])("%s", (_, want) => expect(x()).toEqual(want));',
    "// annotations.inputsHash in a comment is no expectation",
  ].join("\n");

  it("counts a name inside an expectation, an assertion helper or a table of cases an expectation reads, and nothing else", () => {
    const asserted = findNamesAsserted({ declared: names, tests: new Map([["/src/pass.test.ts", test]]) });
    expect(Object.fromEntries(asserted)).toEqual({
      "event:JobInterrupted": "/src/pass.test.ts:4",
      "condition-reason:DriftPending": "/src/pass.test.ts:6",
      "metric:captf_jobs_total": "/src/pass.test.ts:7",
      "condition-reason:NoDrift": "/src/pass.test.ts:10",
      "condition-reason:DriftReported": "/src/pass.test.ts:13",
    });
  });

  it("counts a metric label value only where an expectation reads a series of its metric with that value", () => {
    const declared = [
      ...metricLabelValueNames({ label: "result", metrics: ["captf_state_backups_total"], values: ["taken", "skipped", "pruned"] }),
      ...metricLabelValueNames({ label: "op", values: ["apply", "plan"] }),
    ];
    const suite = [
      'const taken = { kind: "TerraformMachine", result: "taken" };',
      'const pruned = { kind: "TerraformMachine", result: "pruned" }; // read by no expectation',
      'it("backs up", async () => {',
      '  expect(await seriesValue(registry, "captf_state_backups_total", taken)).toBe(1);',
      '  expect(await scrape()).toContain(\'captf_jobs_total{kind="TerraformMachine",op="apply"} 1\');',
      '  expect(plan.result).toBe("skipped"); // the value, but of no metric',
      '  expect(decide()).toMatchObject({ op: "plan" }); // an op, but of no metric',
      "});",
    ].join("\n");
    const asserted = findNamesAsserted({ declared, tests: new Map([["/src/backups.test.ts", suite]]) });
    expect(Object.fromEntries(asserted)).toEqual({
      'metric-label:captf_state_backups_total{result="taken"}': "/src/backups.test.ts:4",
      'metric-label:captf_*{op="apply"}': "/src/backups.test.ts:5",
    });
  });
});
