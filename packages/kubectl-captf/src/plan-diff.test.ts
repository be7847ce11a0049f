import { readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "@jest/globals";
import type { PlanDiff, PlanDiffResource } from "@captf/contract/plan-diff";
import type { CaptfObject } from "./objects.js";
import { planDiffDecision, type KeptDiff } from "./plan-diff.js";
import { formatPlanDiff, formatResourceDiff, planTotals } from "./plan-diff-format.js";

const testdata = (file: string) => readFileSync(new URL(`testdata/${file}`, import.meta.url), "utf8");
// The runner's diff of a real OpenTofu 1.12.6 plan (runner/src/testdata/plan-diff; plan-diff.test.ts there checks it is the runner's).
const kept = JSON.parse(testdata("plan-diff-tofu-1.12.6.json")) as PlanDiff;

describe("a plan diff printed", () => {
  it("reads as OpenTofu's own plan output, but for the one old value OpenTofu prints though it was sensitive", () => {
    // tofu plan's text of the same plan, from "OpenTofu will perform the following actions:" to its outputs.
    const tofu = testdata("tofu-1.12.6-plan.txt").trimEnd();
    expect(tofu).toContain('~ output = "CANARY-old-pw-1" -> (known after apply)');
    const expected = tofu.replace(
      '~ output = "CANARY-old-pw-1" -> (known after apply)',
      "~ output = (sensitive value) -> (known after apply)",
    );
    expect(formatPlanDiff(kept).trimEnd()).toBe(expected);
    expect(formatPlanDiff(kept)).not.toContain("CANARY");
  });

  const resource = (entry: Partial<PlanDiffResource>): PlanDiffResource => ({
    address: "x.a",
    mode: "managed",
    type: "x",
    name: "a",
    actions: ["update"],
    before: {},
    after: {},
    ...entry,
  });

  it("prints the symbol and heading of each kind of change", () => {
    expect(formatResourceDiff(resource({ actions: ["create", "delete"], before: { v: "1" }, after: { v: "2" } }))).toEqual([
      "  # x.a must be replaced",
      '+/- resource "x" "a" {',
      '      ~ v = "1" -> "2"',
      "    }",
    ]);
    expect(
      formatResourceDiff(resource({ mode: "data", actions: ["read"], before: null, after: { id: { "captf:masked": "unknown" } } })),
    ).toEqual(["  # x.a will be read during apply", ' <= data "x" "a" {', "      + id = (known after apply)", "    }"]);
    expect(
      formatResourceDiff(
        resource({ actions: ["no-op"], previousAddress: "x.old", importing: true, before: { id: "i" }, after: { id: "i" } }),
      ),
    ).toEqual(["  # x.old has moved to x.a", "  # x.a will be imported", '    resource "x" "a" {', '        id = "i"', "    }"]);
  });

  it("prints nested blocks, lists of objects and hidden values inside them", () => {
    const lines = formatResourceDiff(
      resource({
        before: { rule: [{ port: 22, secret: { "captf:masked": "sensitive" } }], meta: { a: "1" } },
        after: { rule: [{ port: 22, secret: { "captf:masked": "sensitive" } }, { port: 443 }], meta: { a: "1", "b c": true } },
      }),
    );
    expect(lines).toEqual([
      "  # x.a will be updated in-place",
      '  ~ resource "x" "a" {',
      "      ~ meta = {",
      '          + "b c" = true',
      "            # (1 unchanged attribute hidden)",
      "        }",
      "      ~ rule = [",
      "            {",
      "                port   = 22",
      "                secret = (sensitive value)",
      "            },",
      "          + {",
      "              + port = 443",
      "            },",
      "        ]",
      "    }",
    ]);
  });

  it("counts as the CLI's Plan line does", () => {
    expect(planTotals(kept)).toBe("Plan: 2 to add, 2 to change, 2 to destroy.");
    expect(planTotals({ ...kept, resources: [resource({ actions: ["no-op"], importing: true })] })).toBe(
      "Plan: 1 to import, 0 to add, 0 to change, 0 to destroy.",
    );
  });
});

describe("which diff plan show --diff shows", () => {
  const cluster = (plan?: { planHash: string; job: string }): CaptfObject => ({
    kind: "TerraformCluster",
    metadata: { name: "demo", namespace: "team-a" },
    status: plan ? { plan: { ...plan, inputsHash: "h2:i" } } : {},
  });
  const pending = cluster({ planHash: "p1:x", job: "j" });
  const gz = (document: unknown): KeptDiff => ({ data: gzipSync(JSON.stringify(document)) });
  const logs = "kubectl captf logs terraformcluster/demo";

  it("the one of the plan pending", () => {
    expect(planDiffDecision(pending, gz(kept), logs)).toEqual({ ok: { plan: { planHash: "p1:x", job: "j", blocked: false }, diff: kept } });
  });

  // A machine's last apply stopped before destroying (DestructivePlanBlocked): its Job's diff, whatever its kind.
  const blocked = (job: string): CaptfObject => ({
    kind: "TerraformMachine",
    metadata: { name: "m", namespace: "team-a" },
    status: { lastRun: { job, operation: "apply", error: { kind: "blocked", summary: "the plan deletes or replaces 1 resource(s)" } } },
  });

  it("the one of the plan the last apply was blocked before, when no plan waits", () => {
    expect(planDiffDecision(blocked("j"), gz(kept), logs)).toEqual({
      ok: { plan: { planHash: "p1:x", job: "j", blocked: true }, diff: kept },
    });
  });

  it.each<[string, CaptfObject, KeptDiff, RegExp]>([
    ["no plan pending", cluster(), gz(kept), /has no plan waiting for approval.*and its last apply was not blocked/],
    [
      "another Job's diff than the blocked one",
      blocked("k"),
      gz(kept),
      /the diff kept is of plan p1:x \(Job j\), not of .*the plan Job k was blocked before/,
    ],
    [
      "no Secret",
      pending,
      { missing: "not-found", secret: "captf-plan-diff-1" },
      /no diff is kept for .*captf-plan-diff-1 does not exist.*PlanDiffNotKept.*logs/,
    ],
    ["a Secret without the diff", pending, { missing: "no-data", secret: "s" }, /Secret s has no diff\.json\.gz/],
    [
      "a Secret the user may not read",
      pending,
      { missing: "forbidden", secret: "s" },
      /kept in Secret s, which you may not read: .*get on that Secret/,
    ],
    [
      "a superseded or newer plan's diff",
      cluster({ planHash: "p1:y", job: "k" }),
      gz(kept),
      /the diff kept is of plan p1:x \(Job j\), not of the pending .*plan p1:y \(Job k\)/,
    ],
    [
      "a diff too large to keep",
      pending,
      gz({ ...kept, resources: [], outputs: [], omitted: "the plan's diff is 9 bytes" }),
      /was not kept: the plan's diff is 9 bytes; kubectl captf logs/,
    ],
    ["a Secret of something else", pending, { data: Buffer.from("not gzip") }, /could not be read: /],
    ["a diff of another version", pending, gz({ ...kept, version: 2 }), /could not be read: version 2 is not 1/],
  ])("refuses with why when there is %s", (_case, object, keptDiff, why) => {
    const decision = planDiffDecision(object, keptDiff, logs);
    expect("refused" in decision && decision.refused).toMatch(why);
  });
});
