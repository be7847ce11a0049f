import { describe, expect, it } from "@jest/globals";
import type { Role } from "@captf/contract";
import { resolveIdentityName, type ClusterIdentitySpec, type ObjectIdentitySpec } from "./resolve-identity.js";

const own = { identityRef: { name: "own" } };
const cluster: ClusterIdentitySpec = { identityRef: { name: "cluster" }, defaults: { identityRef: { name: "defaults" } } };

describe("resolveIdentityName", () => {
  it.each<[string, Role, ObjectIdentitySpec, ClusterIdentitySpec | undefined, string, string]>([
    ["a cluster uses its own identityRef", "cluster", own, undefined, "own", "spec.identityRef"],
    ["a cluster ignores its own defaults", "cluster", { identityRef: { name: "own" } }, cluster, "own", "spec.identityRef"],
    ["a machine's own identityRef wins", "machine", own, cluster, "own", "spec.identityRef"],
    ["a machine falls back to the cluster's defaults", "machine", {}, cluster, "defaults", "cluster spec.defaults.identityRef"],
    ["then to the cluster's identityRef", "machine", {}, { identityRef: { name: "cluster" } }, "cluster", "cluster spec.identityRef"],
    [
      "a pool falls back the same way",
      "machinepool",
      {},
      { identityRef: { name: "cluster" }, defaults: {} },
      "cluster",
      "cluster spec.identityRef",
    ],
    [
      "an empty name counts as unset",
      "machinepool",
      { identityRef: { name: "" } },
      cluster,
      "defaults",
      "cluster spec.defaults.identityRef",
    ],
  ])("%s", (_title, role, objectSpec, clusterSpec, name, source) => {
    expect(resolveIdentityName(role, objectSpec, clusterSpec)).toEqual({ resolved: true, name, kind: "TerraformClusterIdentity", source });
  });

  it("keeps the kind Secret of a local Secret reference, wherever it was found", () => {
    expect(
      resolveIdentityName("machine", {}, { identityRef: { name: "c" }, defaults: { identityRef: { name: "local", kind: "Secret" } } }),
    ).toEqual({
      resolved: true,
      name: "local",
      kind: "Secret",
      source: "cluster spec.defaults.identityRef",
    });
  });

  it.each<[string, Role, ObjectIdentitySpec, ClusterIdentitySpec | undefined, string]>([
    ["a cluster without identityRef", "cluster", {}, undefined, "TerraformCluster sets no spec.identityRef"],
    [
      "a machine whose cluster names none",
      "machine",
      {},
      { defaults: {} },
      "TerraformMachine sets no spec.identityRef and its TerraformCluster sets neither",
    ],
    [
      "a pool whose cluster is unknown",
      "machinepool",
      {},
      undefined,
      "TerraformMachinePool sets no spec.identityRef and its TerraformCluster is not known",
    ],
  ])("%s: IdentityNotFound", (_title, role, objectSpec, clusterSpec, message) => {
    const result = resolveIdentityName(role, objectSpec, clusterSpec);
    expect(result).toMatchObject({
      resolved: false,
      reason: "IdentityNotFound",
      condition: { type: "IdentityAllowed", status: "False", reason: "IdentityNotFound" },
    });
    expect(!result.resolved && result.condition.message).toContain(message);
  });
});
