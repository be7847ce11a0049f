import { describe, expect, it } from "@jest/globals";
import { isDnsLabel, isDnsSubdomain, labelSelectorProblems, qualifiedNameProblem, templateMetadataProblems } from "./kubernetes-names.js";

describe("DNS names", () => {
  it.each([
    ["team-a", true, true],
    ["a.b.c", false, true],
    ["Team", false, false],
    ["-a", false, false],
    ["a".repeat(64), false, true],
  ])("%s: label %s, subdomain %s", (name, label, subdomain) => {
    expect(isDnsLabel(name)).toBe(label);
    expect(isDnsSubdomain(name)).toBe(subdomain);
  });
});

describe("qualifiedNameProblem", () => {
  it.each(["team", "cluster.x-k8s.io/cluster-name", "A_b.c-D"])("accepts %s", (key) => expect(qualifiedNameProblem(key)).toBeUndefined());
  it.each([
    ["a/b/c", "more than one /"],
    ["Bad_Prefix/x", "prefix must be a DNS subdomain"],
    ["example.com/", "name part must be 1 to 63 characters"],
    ["-x", "starting and ending with an alphanumeric"],
  ])("refuses %s", (key, problem) => expect(qualifiedNameProblem(key)).toContain(problem));
});

describe("templateMetadataProblems", () => {
  it("names the bad label key, the bad label value and an oversized annotation set", () => {
    const problems = templateMetadataProblems("spec.template.metadata", {
      labels: { "bad key": "v", ok: "not ok!" },
      annotations: { "example.com/big": "x".repeat(300 * 1024) },
    });
    expect(problems).toEqual([
      'spec.template.metadata.labels: key "bad key" is not a valid label key: its name part must be alphanumerics, -, _ or ., ' +
        "starting and ending with an alphanumeric",
      'spec.template.metadata.labels["ok"]: the value is not a valid label value: it must be alphanumerics, -, _ or ., starting ' +
        "and ending with an alphanumeric",
      expect.stringContaining("spec.template.metadata.annotations: 307215 bytes in all, more than the 262144 Kubernetes allows"),
    ]);
  });

  it("accepts valid metadata and none at all", () => {
    expect(
      templateMetadataProblems("m", { labels: { team: "platform", empty: "" }, annotations: { "a.io/b": "anything goes here!" } }),
    ).toEqual([]);
    expect(templateMetadataProblems("m", undefined)).toEqual([]);
  });
});

describe("labelSelectorProblems", () => {
  it("accepts {} and well-formed selectors", () => {
    expect(labelSelectorProblems("s", {})).toEqual([]);
    expect(
      labelSelectorProblems("s", {
        matchLabels: { env: "prod" },
        matchExpressions: [
          { key: "tier", operator: "In", values: ["a", "b"] },
          { key: "gone", operator: "DoesNotExist" },
        ],
      }),
    ).toEqual([]);
  });

  it.each([
    [{ matchExpressions: [{ key: "k", operator: "In" }] }, "s.matchExpressions[0].values: operator In needs at least one value"],
    [
      { matchExpressions: [{ key: "k", operator: "Exists", values: ["x"] }] },
      "s.matchExpressions[0].values: operator Exists takes no values; remove them",
    ],
    [
      { matchExpressions: [{ key: "k", operator: "Matches", values: ["x"] }] },
      's.matchExpressions[0].operator: "Matches" is not In, NotIn, Exists or DoesNotExist',
    ],
    [{ matchExpressions: [{ key: "a b", operator: "Exists" }] }, 's.matchExpressions[0].key: "a b" is not a valid label key'],
    [{ matchLabels: { "a b": "x" } }, 's.matchLabels: key "a b" is not a valid label key'],
    [{ matchLabels: { k: "x y" } }, 's.matchLabels["k"]: not a valid label value'],
    [
      { matchExpressions: [{ key: "k", operator: "In", values: ["x y"] }] },
      's.matchExpressions[0].values: "x y" is not a valid label value',
    ],
  ])("refuses %j", (selector, problem) => {
    expect(labelSelectorProblems("s", selector)).toEqual([expect.stringContaining(problem)]);
  });
});
