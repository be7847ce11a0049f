import { describe, expect, it } from "@jest/globals";
import { applyMergePatch, mergePatchChanges, replacingMergePatch, sameJsonValue } from "./merge-patch.js";

describe("applyMergePatch", () => {
  it("removes a member set to null, merges objects and replaces anything else, leaving the target as it was", () => {
    const target = { keep: 1, drop: "x", nested: { a: 1, b: 2 }, list: [1, 2] };
    expect(applyMergePatch(target, { drop: null, nested: { b: null, c: 3 }, list: [3], added: { d: 4 } })).toEqual({
      keep: 1,
      nested: { a: 1, c: 3 },
      list: [3],
      added: { d: 4 },
    });
    expect(target).toEqual({ keep: 1, drop: "x", nested: { a: 1, b: 2 }, list: [1, 2] });
  });

  it("replaces a target that is not an object, and is replaced by a patch that is not one", () => {
    expect(applyMergePatch("flat", { a: 1 })).toEqual({ a: 1 });
    expect(applyMergePatch([1], { a: null })).toEqual({});
    expect(applyMergePatch({ a: 1 }, [2])).toEqual([2]);
    expect(applyMergePatch({ a: 1 }, "text")).toBe("text");
  });
});

describe("sameJsonValue", () => {
  it.each([
    ["key order", { a: 1, b: [1, { c: 2, d: 3 }] }, { b: [1, { d: 3, c: 2 }], a: 1 }, true],
    ["a member set to undefined", { a: 1, b: undefined }, { a: 1 }, true],
    ["a fraction", { n: 0.5 }, { n: 0.5 }, true],
    ["array order", [1, 2], [2, 1], false],
    ["a number and its string", { n: 1 }, { n: "1" }, false],
    ["undefined and null", undefined, null, false],
    ["undefined and undefined", undefined, undefined, true],
  ])("compares as JSON documents: %s", (_what, a, b, same) => {
    expect(sameJsonValue(a, b)).toBe(same);
  });
});

describe("a value replaced wholesale by a merge patch", () => {
  it.each([
    ["a key the module no longer exports", { vpc: "v", subnet: "s" }, { vpc: "v" }],
    ["a nested key dropped", { network: { vpc: "v", subnets: ["a", "b"] }, region: "r" }, { network: { vpc: "v" }, region: "r" }],
    ["a value that changes type", { network: { vpc: "v" } }, { network: "flat" }],
    ["an array that shrinks", { zones: ["a", "b", "c"] }, { zones: ["a"] }],
    ["no exports before", undefined, { vpc: "v" }],
    ["everything dropped", { vpc: "v" }, {}],
  ])("turns the old value into the new one: %s", (_what, current, next) => {
    expect(applyMergePatch(current, replacingMergePatch(current, next))).toEqual(next);
    // A plain merge patch would keep what the module dropped; this one must not.
    expect(mergePatchChanges(next, replacingMergePatch(next, next))).toBe(false);
  });
});

describe("the status patch is sent only when it changes the status", () => {
  it("tells a merge patch that changes nothing from one that does", () => {
    const current = { activeJob: { name: "j", attempt: 1 }, conditions: [{ type: "Ready", status: "True" }], replicas: 2 };
    expect(mergePatchChanges(current, { activeJob: { name: "j" }, conditions: [{ type: "Ready", status: "True" }] })).toBe(false);
    expect(mergePatchChanges(current, { unset: null, skipped: undefined })).toBe(false);
    expect(mergePatchChanges(current, { replicas: null })).toBe(true);
    expect(mergePatchChanges(current, { replicas: 3 })).toBe(true);
    expect(mergePatchChanges(current, { activeJob: { attempt: 2 } })).toBe(true);
    expect(mergePatchChanges(current, { conditions: [{ type: "Ready", status: "False" }] })).toBe(true);
    expect(mergePatchChanges(current, { newField: [] })).toBe(true);
    // The API server returns keys in its own (sorted) order.
    expect(
      mergePatchChanges(
        { conditions: [{ reason: "R", status: "True", type: "Ready" }] },
        { conditions: [{ type: "Ready", status: "True", reason: "R", message: undefined }] },
      ),
    ).toBe(false);
    expect(mergePatchChanges(current, { activeJob: null })).toBe(true);
    expect(mergePatchChanges({}, { activeJob: null })).toBe(false);
  });
});
