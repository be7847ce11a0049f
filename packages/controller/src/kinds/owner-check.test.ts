import { describe, expect, it } from "@jest/globals";
import { ownerMismatch, type OwnerFacts } from "./owner-check.js";

const object = { kind: "TerraformMachine", metadata: { name: "m-0", namespace: "ns", labels: { "cluster.x-k8s.io/cluster-name": "c1" } } };
const owner = (
  infrastructureRef: OwnerFacts["owner"]["infrastructureRef"],
  extra: Partial<OwnerFacts["owner"]> = {},
): OwnerFacts["owner"] => ({
  kind: "Machine",
  metadata: { name: "machine-a", namespace: "ns", uid: "uid-a" },
  infrastructureRef,
  clusterName: "c1",
  ...extra,
});

describe("ownerMismatch", () => {
  it("accepts an owner that points back at the object, with the same UID and cluster", () => {
    expect(
      ownerMismatch({
        owner: owner({ apiGroup: "infrastructure.cluster.x-k8s.io", kind: "TerraformMachine", name: "m-0" }),
        ownerReferenceUid: "uid-a",
        object,
      }),
    ).toBeUndefined();
  });

  it.each([
    ["no infrastructureRef", owner(undefined), "does not reference this TerraformMachine"],
    ["another object's name", owner({ kind: "TerraformMachine", name: "m-1" }), "does not reference this TerraformMachine"],
    ["another kind", owner({ kind: "DockerMachine", name: "m-0" }), "does not reference this TerraformMachine"],
    [
      "another API group",
      owner({ apiGroup: "infrastructure.example.com", kind: "TerraformMachine", name: "m-0" }),
      "does not reference this TerraformMachine",
    ],
    ["another cluster", owner({ kind: "TerraformMachine", name: "m-0" }, { clusterName: "c2" }), "labelled for cluster c1"],
  ])("refuses %s", (_what, value, message) => {
    const result = ownerMismatch({ owner: value, object });
    expect(result).toMatchObject({ pending: true, reason: "OwnerMismatch" });
    expect(result!.message).toContain(message);
  });

  it("refuses an owner reference whose UID is another object's", () => {
    expect(
      ownerMismatch({ owner: owner({ kind: "TerraformMachine", name: "m-0" }), ownerReferenceUid: "uid-old", object })?.message,
    ).toContain("UID uid-old");
  });
});
