import { describe, expect, it } from "@jest/globals";
import {
  formatLabelSelector,
  LabelSelectorError,
  matchesLabels,
  parseLabelSelector,
  structuredSelectorRequirements,
} from "./label-selector.js";

describe("label selectors", () => {
  const labels = { app: "web", tier: "front", "cluster.x-k8s.io/cluster-name": "c1" };

  it.each([
    ["", true],
    ["app=web", true],
    ["app==web", true],
    ["app!=web", false],
    ["app=db", false],
    ["app in (db, web)", true],
    ["app notin (db,web)", false],
    ["missing notin (x)", true],
    ["tier", true],
    ["!tier", false],
    ["!missing", true],
    ["app=web,tier=front", true],
    ["app=web, tier in (back)", false],
    ["cluster.x-k8s.io/cluster-name=c1", true],
    ["app=", false],
  ])("%j on %j matches: %s", (selector, expected) => {
    expect(matchesLabels(parseLabelSelector(selector), labels)).toBe(expected);
  });

  it.each(["app=web,", "a b", "app in web", "=x", "app=web=x", "bad key=x"])("rejects %j", (selector) => {
    expect(() => parseLabelSelector(selector)).toThrow(LabelSelectorError);
  });

  it("round-trips to the server's syntax", () => {
    const text = "app=web,tier in (a,b),x!=y,k notin (1,2),e,!d";
    expect(formatLabelSelector(parseLabelSelector(text))).toBe(text);
  });

  it("converts structured selectors", () => {
    const requirements = structuredSelectorRequirements({
      matchLabels: { app: "web" },
      matchExpressions: [
        { key: "tier", operator: "In", values: ["front"] },
        { key: "gone", operator: "DoesNotExist" },
      ],
    });
    expect(formatLabelSelector(requirements)).toBe("app=web,tier=front,!gone");
    expect(matchesLabels(requirements, labels)).toBe(true);
    expect(() => structuredSelectorRequirements({ matchExpressions: [{ key: "a", operator: "Gt" }] })).toThrow(LabelSelectorError);
  });
});
