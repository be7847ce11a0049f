import { describe, expect, it } from "@jest/globals";
import {
  blockedSummary,
  destructiveChanges,
  parsePlanDocument,
  planChangedSummary,
  planHash,
  planHashLines,
  planSensitiveValues,
  PlanUnreadableError,
  summarizeDrift,
  summarizePlan,
  type PlanDocument,
} from "./plan.js";
import { emptyPlanHash, maxPlanResources } from "@captf/contract/run-result";

/** The worked example of docs/runner.md ("The plan hash"). */
const example: PlanDocument = parsePlanDocument(
  JSON.stringify({
    format_version: "1.2",
    resource_changes: [
      {
        address: "module.role.terraform_data.thing",
        change: { actions: ["delete", "create"], before: { input: "a" }, after: { input: "b" } },
      },
      { address: "module.role.terraform_data.keep", change: { actions: ["no-op"] } },
      { address: "module.role.terraform_data.label", change: { actions: ["update"] } },
    ],
    output_changes: { provider_id: { actions: ["update"] }, health: { actions: ["no-op"] } },
  }),
);

describe("planHash", () => {
  it("hashes the sorted address|actions lines of every change, outputs included (the documented example)", () => {
    expect(planHashLines(example)).toEqual([
      "module.role.terraform_data.label|update",
      "module.role.terraform_data.thing|delete,create",
      "output.provider_id|update",
    ]);
    expect(planHash(example)).toBe("p1:fd0f67fc317ac3a20d673793e5c2bdf7abae5c91148bbf72d8de688777cf9c44");
  });

  it("does not depend on the order the runtime lists changes in, nor on their values", () => {
    const reordered: PlanDocument = {
      resource_changes: [...example.resource_changes]
        .reverse()
        .map((entry) => ({ ...entry, change: { ...entry.change, after: { input: "other" } } })),
      output_changes: example.output_changes,
    };
    expect(planHash(reordered)).toBe(planHash(example));
  });

  it("tells the two replacement orders apart", () => {
    const createFirst: PlanDocument = {
      resource_changes: [{ address: "a.b", change: { actions: ["create", "delete"] } }],
      output_changes: {},
    };
    const deleteFirst: PlanDocument = {
      resource_changes: [{ address: "a.b", change: { actions: ["delete", "create"] } }],
      output_changes: {},
    };
    expect(planHash(createFirst)).not.toBe(planHash(deleteFirst));
  });

  it("marks imports and moves after the actions", () => {
    const plan = parsePlanDocument(
      JSON.stringify({
        resource_changes: [
          { address: "a.imported", change: { actions: ["no-op"], importing: { id: "i-1" } } },
          { address: "a.moved", previous_address: "a.old", change: { actions: ["update"] } },
        ],
      }),
    );
    expect(planHashLines(plan)).toEqual(["a.imported|import", "a.moved|update,move"]);
    expect(summarizePlan(plan).resources).toEqual(["a.imported (import)", "a.moved (update, move)"]);
  });

  it("gives a plan that only imports or moves a hash of its own, never the empty one", () => {
    const importOnly = parsePlanDocument(
      JSON.stringify({ resource_changes: [{ address: "a.i", change: { actions: ["no-op"], importing: { id: "i-1" } } }] }),
    );
    const moveOnly = parsePlanDocument(
      JSON.stringify({ resource_changes: [{ address: "a.m", previous_address: "a.old", change: { actions: ["no-op"] } }] }),
    );
    expect(planHash(importOnly)).not.toBe(emptyPlanHash);
    expect(planHash(moveOnly)).not.toBe(emptyPlanHash);
    expect(planHash(importOnly)).not.toBe(planHash(moveOnly));
  });

  it("gives the empty hash to a plan that changes nothing", () => {
    expect(planHash({ resource_changes: [{ address: "a.b", change: { actions: ["no-op"] } }], output_changes: {} })).toBe(emptyPlanHash);
  });
});

describe("summarizePlan", () => {
  it("counts a replacement as one add and one destroy and lists entries by address, never values", () => {
    const summary = summarizePlan(example);
    expect(summary).toEqual({
      hash: planHash(example),
      add: 1,
      change: 1,
      destroy: 1,
      outputs: 1,
      resources: ["module.role.terraform_data.label (update)", "module.role.terraform_data.thing (replace)"],
      truncated: false,
    });
    expect(JSON.stringify(summary)).not.toContain('"b"');
  });

  it("counts imports and moves apart from adds, changes and destroys", () => {
    const plan = parsePlanDocument(
      JSON.stringify({
        resource_changes: [
          { address: "a.imported", change: { actions: ["no-op"], importing: { id: "i-1" } } },
          { address: "a.imported_changed", change: { actions: ["update"], importing: { id: "i-2" } } },
          { address: "a.moved", previous_address: "a.old", change: { actions: ["no-op"] } },
        ],
      }),
    );
    expect(summarizePlan(plan)).toMatchObject({ add: 0, change: 1, destroy: 0, import: 2, move: 1 });
    expect(summarizePlan(example)).not.toHaveProperty("import");
    expect(summarizePlan(example)).not.toHaveProperty("move");
  });

  it(`keeps at most ${maxPlanResources} entries and says it truncated`, () => {
    const plan: PlanDocument = {
      resource_changes: Array.from({ length: 60 }, (_, index) => ({
        address: `a.r${String(index).padStart(2, "0")}`,
        change: { actions: ["create"] },
      })),
      output_changes: {},
    };
    const summary = summarizePlan(plan);
    expect(summary.add).toBe(60);
    expect(summary.resources).toHaveLength(maxPlanResources);
    expect(summary.resources[0]).toBe("a.r00 (create)");
    expect(summary.truncated).toBe(true);
  });
});

describe("summarizeDrift", () => {
  it("counts resources only: outputs and reads are not drift", () => {
    const plan: PlanDocument = {
      resource_changes: [
        { address: "a.read", change: { actions: ["read"] } },
        { address: "a.gone", change: { actions: ["delete"] } },
      ],
      output_changes: { x: { actions: ["update"] } },
    };
    expect(summarizeDrift(plan)).toEqual({ detected: true, add: 0, change: 0, destroy: 1, resources: ["a.gone"] });
    expect(summarizeDrift({ resource_changes: [], output_changes: { x: { actions: ["update"] } } }).detected).toBe(false);
  });

  it("does not count imports and moves: they come from the configuration", () => {
    const plan = parsePlanDocument(
      JSON.stringify({
        resource_changes: [
          { address: "a.imported", change: { actions: ["no-op"], importing: { id: "i-1" } } },
          { address: "a.moved", previous_address: "a.old", change: { actions: ["no-op"] } },
        ],
      }),
    );
    expect(summarizeDrift(plan)).toEqual({ detected: false, add: 0, change: 0, destroy: 0, resources: [] });
    expect(destructiveChanges(plan)).toEqual([]);
  });
});

describe("destructiveChanges and blockedSummary", () => {
  it("names every delete and replacement, sorted", () => {
    expect(destructiveChanges(example)).toEqual(["module.role.terraform_data.thing (replace)"]);
    expect(blockedSummary(["a.x (delete)", "a.y (replace)"])).toBe(
      "the plan deletes or replaces 2 resource(s): a.x (delete), a.y (replace)",
    );
  });

  it("lists as many as fit in 512 bytes and counts the rest", () => {
    const many = Array.from({ length: 40 }, (_, index) => `module.role.some_resource_type.with_a_long_name_${index} (delete)`);
    const summary = blockedSummary(many);
    expect(Buffer.byteLength(summary)).toBeLessThanOrEqual(512);
    expect(summary).toMatch(/^the plan deletes or replaces 40 resource\(s\): module\.role/);
    expect(summary).toMatch(/ and \d+ more$/);
  });
});

describe("planChangedSummary", () => {
  it("names both hashes and the new counts", () => {
    expect(planChangedSummary("p1:old", summarizePlan(example))).toBe(
      `the plan changed since it was approved: approved p1:old, now ${planHash(example)} (1 to add, 1 to change, 1 to destroy, ` +
        `1 output(s) to change); nothing was applied`,
    );
  });
});

describe("planSensitiveValues", () => {
  it("collects marked string leaves of resource changes and read data sources, not of outputs", () => {
    const plan = parsePlanDocument(
      JSON.stringify({
        resource_changes: [
          {
            address: "a.r",
            change: {
              actions: ["update"],
              before: { token: "old-token-value", list: ["x-public", "x-secret"], plain: "visible" },
              after: { token: "new-token-value", nested: { key: "nested-secret" } },
              before_sensitive: { token: true, list: [false, true] },
              after_sensitive: { token: true, nested: true },
            },
          },
        ],
        output_changes: { o: { actions: ["update"], after: "output-secret", after_sensitive: true } },
        prior_state: {
          values: {
            root_module: {
              child_modules: [{ resources: [{ mode: "data", values: { pw: "data-secret" }, sensitive_values: { pw: true } }] }],
            },
          },
        },
      }),
    );
    expect(planSensitiveValues(plan).sort()).toEqual(["data-secret", "nested-secret", "new-token-value", "old-token-value", "x-secret"]);
  });
});

describe("parsePlanDocument", () => {
  it("skips a warning printed before the document", () => {
    expect(parsePlanDocument('Warning: something\n\n{"resource_changes":[]}').resource_changes).toEqual([]);
  });

  it.each(["not json", "[]", '{"resource_changes":{}}', '{"resource_changes":[{"address":"a","change":{}}]}'])(
    "rejects %j, naming the image contract",
    (text) => {
      expect(() => parsePlanDocument(text)).toThrow(PlanUnreadableError);
      expect(() => parsePlanDocument(text)).toThrow(/image contract/);
    },
  );
});
