import { describe, expect, it } from "@jest/globals";
import type { AllowedNamespaces } from "../api/terraformclusteridentity.js";
import { allowanceNeedsLabels, namespaceAllowance, type NamespaceLabels } from "./allowed-namespaces.js";

const team = { labels: { team: "a", env: "prod" } };

describe("namespaceAllowance", () => {
  it.each<[string, AllowedNamespaces | undefined, NamespaceLabels | undefined, false | "list" | "selector"]>([
    ["unset allows none", undefined, team, false],
    ["a listed namespace", { list: ["other", "ns"] }, team, "list"],
    ["a listed namespace, whose labels are not needed", { list: ["ns"] }, undefined, "list"],
    ["an unlisted namespace", { list: ["other"] }, team, false],
    ["selector {} allows every namespace", { selector: {} }, team, "selector"],
    ["selector {} allows even a namespace that does not exist", { selector: {} }, undefined, "selector"],
    ["empty matchLabels is an empty selector", { selector: { matchLabels: {} } }, undefined, "selector"],
    ["matching labels", { selector: { matchLabels: { team: "a" } } }, team, "selector"],
    [
      "a matching expression",
      { selector: { matchExpressions: [{ key: "env", operator: "In", values: ["prod", "stage"] }] } },
      team,
      "selector",
    ],
    ["labels that do not match", { selector: { matchLabels: { team: "b" } } }, team, false],
    ["a namespace without labels", { selector: { matchExpressions: [{ key: "team", operator: "Exists" }] } }, {}, false],
    ["a missing namespace with a selector", { selector: { matchLabels: { team: "a" } } }, undefined, false],
    ["list OR selector: listed", { list: ["ns"], selector: { matchLabels: { team: "b" } } }, team, "list"],
    ["list OR selector: matched", { list: ["other"], selector: { matchLabels: { team: "a" } } }, team, "selector"],
    ["an invalid operator denies", { selector: { matchExpressions: [{ key: "team", operator: "Matches", values: ["a"] }] } }, team, false],
    ["In without values denies", { selector: { matchExpressions: [{ key: "team", operator: "NotIn" }] } }, team, false],
    ["an invalid label key denies", { selector: { matchLabels: { "bad key": "a" } } }, { labels: { "bad key": "a" } }, false],
  ])("%s", (_title, allowed, namespace, expected) => {
    const result = namespaceAllowance(allowed, "ns", namespace);
    if (expected === false) expect(result).toEqual({ allowed: false, why: expect.any(String) });
    else expect(result).toEqual({ allowed: true, by: expected });
  });

  it("says why a namespace is denied", () => {
    expect(namespaceAllowance(undefined, "ns", team)).toEqual({
      allowed: false,
      why: "spec.allowedNamespaces is unset, so no namespace may use it",
    });
    expect(namespaceAllowance({ list: ["x"], selector: { matchLabels: { team: "b" } } }, "ns", team)).toEqual({
      allowed: false,
      why: "spec.allowedNamespaces.list does not name ns and the labels of namespace ns do not match spec.allowedNamespaces.selector",
    });
    expect(namespaceAllowance({ selector: { matchLabels: { team: "b" } } }, "ns", undefined)).toEqual({
      allowed: false,
      why: "namespace ns does not exist, so spec.allowedNamespaces.selector cannot match it",
    });
    const invalid = namespaceAllowance({ selector: { matchExpressions: [{ key: "team", operator: "Matches" }] } }, "ns", team);
    expect(!invalid.allowed && invalid.why).toContain("spec.allowedNamespaces.selector is invalid and matches nothing");
  });
});

describe("allowanceNeedsLabels", () => {
  it.each<[AllowedNamespaces | undefined, boolean]>([
    [undefined, false],
    [{ list: ["ns"] }, false],
    [{ selector: {} }, false],
    [{ list: ["ns"], selector: { matchLabels: { team: "a" } } }, false],
    [{ list: ["other"], selector: { matchLabels: { team: "a" } } }, true],
    [{ selector: { matchLabels: { team: "a" } } }, true],
  ])("%j → %s", (allowed, expected) => {
    expect(allowanceNeedsLabels(allowed, "ns")).toBe(expected);
  });
});
