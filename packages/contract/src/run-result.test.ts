import { describe, expect, it } from "@jest/globals";
import {
  completeRunResult,
  emptyPlanHash,
  maxResultBytes,
  parseBrokerSummary,
  parseRunResult,
  planCounts,
  type RunResult,
} from "./run-result.js";

const result: RunResult = {
  version: 1,
  op: "apply",
  image: { ref: "registry.invalid/m:v1", providersMirror: false },
  runtime: { command: ["/captf/runtime"], version: "1.12.6" },
  steps: [
    { name: "init", exit: 0, seconds: 1.2 },
    { name: "plan", exit: 2, seconds: 3 },
  ],
  drift: null,
  error: { kind: "blocked", step: null, summary: "the plan deletes or replaces 1 resource(s): terraform_data.x (replace)" },
  plan: { hash: "p1:abc", add: 1, change: 0, destroy: 1, resources: ["terraform_data.x (replace)"], truncated: false },
};

describe("parseRunResult", () => {
  it("reads a result document and its shrunk minimal form", () => {
    expect(parseRunResult(JSON.stringify(result))).toEqual({ ok: true, result });
    const minimal = { version: 1, op: "plan", error: null, plan: { hash: emptyPlanHash, add: 0, change: 0, destroy: 0, truncated: false } };
    expect(parseRunResult(JSON.stringify(minimal))).toEqual({ ok: true, result: minimal });
  });

  it.each([
    ["nothing", undefined, /wrote no result/],
    ["a blank message", "  \n", /wrote no result/],
    ["a log line", "panic: CANARY-secret at main.go:1", /not a JSON result document/],
    ["an array", "[1]", /not an object/],
    ["another version", '{"version":2,"op":"apply"}', /version 2; this manager reads version 1/],
    ["an unknown op", '{"version":1,"op":"explode"}', /no known operation/],
    ["an unknown error kind", '{"version":1,"op":"apply","error":{"kind":"boom"}}', /error has no known kind/],
    ["bad steps", '{"version":1,"op":"apply","error":null,"steps":[{"name":1}]}', /steps are malformed/],
    ["a bad plan", '{"version":1,"op":"plan","error":null,"plan":{"hash":"p1:x","add":-1}}', /plan is malformed/],
    ["an oversized message", JSON.stringify({ ...result, pad: "x".repeat(maxResultBytes) }), /larger than 4096 bytes/],
  ])("refuses %s with a reason that does not quote it", (_, text, reason) => {
    const reading = parseRunResult(text);
    expect(reading).toMatchObject({ ok: false, reason: expect.stringMatching(reason) });
    expect(JSON.stringify(reading)).not.toContain("CANARY");
  });
});

describe("planCounts", () => {
  it("shows imports, moves and output changes apart from adds, changes and destroys, each only when there are some", () => {
    expect(planCounts({ add: 1, change: 0, destroy: 1 })).toBe("1 to add, 0 to change, 1 to destroy");
    expect(planCounts({ add: 0, change: 0, destroy: 0, import: 1, move: 2, outputs: 3 })).toBe(
      "0 to add, 0 to change, 0 to destroy, 1 to import, 2 to move, 3 output(s) to change",
    );
  });

  it("reads back a plan's import and move counts, and refuses a malformed one", () => {
    const counted = { ...result, plan: { ...result.plan!, import: 1, move: 2 } };
    expect(parseRunResult(JSON.stringify(counted))).toEqual({ ok: true, result: counted });
    expect(parseRunResult(JSON.stringify({ ...result, plan: { ...result.plan!, move: -1 } })).ok).toBe(false);
  });
});

describe("completeRunResult", () => {
  it("reads the runner's shrunk form as a full document that keeps the error's kind and the plan's hash", () => {
    const shrunk = parseRunResult(
      JSON.stringify({ version: 1, op: "plan", error: null, plan: { hash: "p1:abc", add: 1, change: 0, destroy: 1 } }),
    );
    if (!shrunk.ok) throw new Error(shrunk.reason);
    expect(completeRunResult(shrunk.result)).toEqual({
      version: 1,
      op: "plan",
      image: { ref: "", providersMirror: false },
      runtime: { command: [], version: "" },
      steps: [],
      drift: null,
      error: null,
      plan: { hash: "p1:abc", add: 1, change: 0, destroy: 1, resources: [], truncated: true },
    });
    const failed = parseRunResult(JSON.stringify({ version: 1, op: "apply", error: { kind: "step" } }));
    if (!failed.ok) throw new Error(failed.reason);
    expect(completeRunResult(failed.result)).toMatchObject({ error: { kind: "step", step: null, summary: "" }, steps: [] });
  });

  it("leaves a full document as it is", () => {
    expect(completeRunResult(result)).toBe(result);
  });
});

describe("parseBrokerSummary", () => {
  it("reads the broker's counts by target", () => {
    const text = JSON.stringify({
      requests: 9,
      allowed: 5,
      refused: 4,
      refusedByTarget: { other: 3, event: 1 },
      refusals: [{ method: "GET", path: "/x", target: "other", why: "no" }],
    });
    expect(parseBrokerSummary(text)).toEqual({ requests: 9, allowed: 5, refused: 4, refusedByTarget: { other: 3, event: 1 } });
  });

  it("reads nothing from a missing, foreign or malformed message", () => {
    expect(parseBrokerSummary(undefined)).toBeUndefined();
    expect(parseBrokerSummary("")).toBeUndefined();
    expect(parseBrokerSummary("not json")).toBeUndefined();
    expect(parseBrokerSummary(JSON.stringify({ version: 1, op: "apply" }))).toBeUndefined();
    expect(parseBrokerSummary(JSON.stringify({ requests: 1, allowed: 1, refused: -1, refusedByTarget: {} }))).toBeUndefined();
    expect(parseBrokerSummary(JSON.stringify({ requests: 1, allowed: 0, refused: 1, refusedByTarget: { other: "1" } }))).toBeUndefined();
  });
});
