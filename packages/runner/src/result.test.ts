import { describe, expect, it } from "@jest/globals";
import { shrinkResult } from "./result.js";
import { maxResultBytes, type RunResult } from "@captf/contract/run-result";

function base(): RunResult {
  return {
    version: 1,
    op: "plan",
    image: { ref: "registry.example/module:v1", providersMirror: true },
    runtime: { command: ["/captf/runtime"], version: "1.12.6" },
    steps: [
      { name: "init", exit: 0, seconds: 1.2 },
      { name: "validate", exit: 0, seconds: 0.4 },
      { name: "plan", exit: 2, seconds: 3.1 },
      { name: "show-json", exit: 0, seconds: 0.3 },
    ],
    drift: null,
    error: null,
  };
}

/** A shrunk result read back; these cases keep a full document (the minimal form has its own test). */
const parse = (text: string) => JSON.parse(text) as RunResult;

describe("shrinkResult", () => {
  it("writes a small result unchanged, keys in the documented order", () => {
    const result = { ...base(), changes: { add: 1, change: 0, destroy: 0 } };
    const text = shrinkResult(result);
    expect(parse(text)).toEqual(result);
    expect(Object.keys(parse(text))).toEqual(["version", "op", "image", "runtime", "steps", "drift", "error", "changes"]);
  });

  it("drops changes first", () => {
    // Without changes the document is exactly 4096 bytes.
    const ref = "x".repeat(maxResultBytes - Buffer.byteLength(JSON.stringify({ ...base(), image: { ref: "", providersMirror: false } })));
    const result: RunResult = { ...base(), image: { ref, providersMirror: false }, changes: { add: 1, change: 0, destroy: 0 } };
    const shrunk = parse(shrinkResult(result));
    expect(shrunk.changes).toBeUndefined();
    expect(shrunk.image.ref).toBe(ref);
  });

  it("then halves the error summary, then the plan's resources (marking them truncated)", () => {
    const resources = Array.from(
      { length: 50 },
      (_, index) => `module.role.some_long_resource_type.instance_number_${index}_${"n".repeat(50)} (create)`,
    );
    const result: RunResult = {
      ...base(),
      error: { kind: "plan-changed", step: null, summary: "s".repeat(512) },
      plan: { hash: "p1:abc", add: 50, change: 0, destroy: 0, resources, truncated: false },
    };
    const text = shrinkResult(result);
    const shrunk = parse(text);
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(maxResultBytes);
    expect(shrunk.error?.summary).toBe("");
    expect(shrunk.plan?.resources.length).toBeLessThan(50);
    expect(shrunk.plan?.resources[0]).toBe(resources[0]);
    expect(shrunk.plan?.truncated).toBe(true);
    expect(shrunk.steps).toHaveLength(4);
  });

  it("then drops drift resources, then middle steps", () => {
    const result: RunResult = {
      ...base(),
      op: "drift",
      drift: {
        detected: true,
        add: 0,
        change: 20,
        destroy: 0,
        resources: Array.from({ length: 20 }, (_, index) => `a.${"r".repeat(100)}${index}`),
      },
      steps: Array.from({ length: 80 }, (_, index) => ({ name: `step-with-a-long-name-${index}`, exit: 0, seconds: 1.25 })),
    };
    const shrunk = parse(shrinkResult(result));
    expect(shrunk.drift).toEqual({ detected: true, add: 0, change: 20, destroy: 0, resources: [] });
    expect(shrunk.steps[0]?.name).toBe("step-with-a-long-name-0");
    expect(shrunk.steps.at(-1)?.name).toBe("step-with-a-long-name-79");
    expect(shrunk.steps.length).toBeLessThan(80);
  });

  it("finally keeps only version, op, the error kind and the plan's hash and counts", () => {
    const result: RunResult = {
      ...base(),
      runtime: { command: ["x".repeat(5000)], version: "1.12.6" },
      error: { kind: "blocked", step: null, summary: "the plan deletes or replaces 1 resource(s): a.b (delete)" },
      plan: { hash: "p1:abc", add: 0, change: 0, destroy: 1, resources: ["a.b (delete)"], truncated: false },
    };
    expect(parse(shrinkResult(result))).toEqual({
      version: 1,
      op: "plan",
      error: { kind: "blocked" },
      plan: { hash: "p1:abc", add: 0, change: 0, destroy: 1, truncated: true },
    });
  });

  it("keeps a plan's import, move and output counts in the shrunk form too", () => {
    const result: RunResult = {
      ...base(),
      runtime: { command: ["x".repeat(5000)], version: "1.12.6" },
      plan: {
        hash: "p1:def",
        add: 0,
        change: 0,
        destroy: 0,
        import: 1,
        move: 2,
        outputs: 3,
        resources: ["a.b (import)"],
        truncated: false,
      },
    };
    expect(parse(shrinkResult(result))).toEqual({
      version: 1,
      op: "plan",
      error: null,
      plan: { hash: "p1:def", add: 0, change: 0, destroy: 0, import: 1, move: 2, outputs: 3, truncated: true },
    });
  });
});
