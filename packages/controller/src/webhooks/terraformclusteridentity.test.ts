import { describe, expect, it } from "@jest/globals";
import { identity } from "../api/examples.test-support.js";
import type { TerraformClusterIdentity } from "../api/terraformclusteridentity.js";
import { asUser, reasonsOf } from "./admission.test-support.js";
import {
  identityNeedsAccessReview,
  validateTerraformClusterIdentity,
  validateTerraformClusterIdentityDeletion,
} from "./terraformclusteridentity.js";

const mayRead = { ...asUser("alice"), secretAccess: { allowed: true } };

describe("validateTerraformClusterIdentity", () => {
  it("admits a valid identity whose author may read the Secret, and selector {} for every namespace", () => {
    expect(validateTerraformClusterIdentity(undefined, identity(), mayRead)).toEqual({ allowed: true });
    const everyNamespace = identity();
    everyNamespace.spec.allowedNamespaces = { selector: {} };
    expect(validateTerraformClusterIdentity(undefined, everyNamespace, mayRead)).toEqual({ allowed: true });
  });

  it.each<[string, (spec: TerraformClusterIdentity["spec"]) => void, string]>([
    [
      "allowedNamespaces {}",
      (s) => (s.allowedNamespaces = {}),
      "spec.allowedNamespaces {} is ambiguous and rejected: set list, or write selector: {} to allow every namespace",
    ],
    [
      "a list entry that is no namespace name",
      (s) => (s.allowedNamespaces = { list: ["Team_A"] }),
      'spec.allowedNamespaces.list[0]: "Team_A" is not a valid namespace name',
    ],
    [
      "a selector that does not parse",
      (s) => (s.allowedNamespaces = { selector: { matchExpressions: [{ key: "env", operator: "In" }] } }),
      "spec.allowedNamespaces.selector.matchExpressions[0].values: operator In needs at least one value",
    ],
    ["an empty Secret name", (s) => (s.secretRef.name = ""), "spec.secretRef.name is required"],
    ["an empty Secret namespace", (s) => (s.secretRef.namespace = ""), "spec.secretRef.namespace is required: it is never defaulted"],
    ["an invalid Secret name", (s) => (s.secretRef.name = "Creds"), 'spec.secretRef.name: "Creds" is not a valid Secret name'],
  ])("refuses %s", (_name, change, reason) => {
    const object = identity();
    change(object.spec);
    expect(reasonsOf(validateTerraformClusterIdentity(undefined, object, mayRead))).toEqual([expect.stringContaining(reason)]);
  });

  it("refuses an author who may not get the Secret, and a review that could not run", () => {
    expect(
      reasonsOf(validateTerraformClusterIdentity(undefined, identity(), { ...asUser("mallory"), secretAccess: { allowed: false } })),
    ).toEqual([
      'user "mallory" may not get Secret captf-system/aws: an identity may only expose a Secret its author can read; get that ' +
        "permission or reference another Secret",
    ]);
    expect(reasonsOf(validateTerraformClusterIdentity(undefined, identity(), asUser("mallory")))).toEqual([
      expect.stringContaining("could not be checked; retry"),
    ]);
  });

  it("reviews access on create and when secretRef or allowedNamespaces change, not for labels or requiredKeys", () => {
    const stored = identity();
    expect(identityNeedsAccessReview(undefined, stored)).toBe(true);
    const relabelled = structuredClone(stored);
    relabelled.metadata!.labels = { team: "platform" };
    relabelled.spec.requiredKeys = ["AWS_REGION"];
    expect(identityNeedsAccessReview(stored, relabelled)).toBe(false);
    expect(validateTerraformClusterIdentity(stored, relabelled, asUser("bob")).allowed).toBe(true);
    const widened = structuredClone(stored);
    widened.spec.allowedNamespaces = { selector: {} };
    expect(identityNeedsAccessReview(stored, widened)).toBe(true);
    const repointed = structuredClone(stored);
    repointed.spec.secretRef.name = "other";
    expect(identityNeedsAccessReview(stored, repointed)).toBe(true);
  });
});

describe("validateTerraformClusterIdentityDeletion", () => {
  it("admits deleting an unused identity with no mirrors", () => {
    expect(validateTerraformClusterIdentityDeletion(identity(), [])).toEqual({ allowed: true });
  });

  it("refuses while an object resolves to it, naming one, and while mirrors remain, listing them", () => {
    const object = identity("aws");
    object.status = { namespaces: ["team-a", "team-b"] };
    expect(
      reasonsOf(
        validateTerraformClusterIdentityDeletion(object, [
          { kind: "TerraformMachine", namespace: "team-a", name: "m1" },
          { kind: "TerraformCluster", namespace: "team-b", name: "c1" },
        ]),
      ),
    ).toEqual([
      "TerraformClusterIdentity aws is used by TerraformMachine team-a/m1 and 1 more; point them at another identity or delete them first",
      "TerraformClusterIdentity aws is still mirrored into team-a, team-b; wait for the manager to remove the mirrors once " +
        "nothing there uses it",
    ]);
  });
});
