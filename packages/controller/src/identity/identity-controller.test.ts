import { describe, expect, it } from "@jest/globals";
import type { CoreV1Api, CustomObjectsApi } from "@kubernetes/client-node";
import { identityController } from "./identity-controller.js";

describe("identityController", () => {
  const controller = identityController({ core: {} as CoreV1Api, custom: {} as CustomObjectsApi });

  it("reconciles the cluster-scoped TerraformClusterIdentity, skipping its own status writes", () => {
    expect(controller).toMatchObject({ name: "terraformclusteridentity", kind: "TerraformClusterIdentity", concurrency: 1 });
    const [self] = controller.watches;
    expect(self?.type).toMatchObject({ plural: "terraformclusteridentities", namespaced: false });
    const identity = { metadata: { name: "aws", generation: 1, labels: {} } };
    expect(self?.map(identity, "add")).toEqual(["aws"]);
    expect(self?.predicate?.(identity, "update", { metadata: { name: "aws", generation: 1, labels: {} } })).toBe(false);
    expect(self?.predicate?.(identity, "update", { metadata: { name: "aws", generation: 0, labels: {} } })).toBe(true);
  });

  it("wakes the identity a mirror Secret names, watching only labelled mirrors", () => {
    const mirrors = controller.watches[1]!;
    expect(mirrors.type).toMatchObject({ plural: "secrets", group: "" });
    expect(mirrors.labelSelector).toBe("captf.io/mirrored=true,captf.io/managed=true");
    expect(mirrors.map({ metadata: { namespace: "team-a", name: "captf-creds-aws", annotations: { "captf.io/identity": "aws" } } }, "delete")).toEqual(["aws"]);
    expect(mirrors.map({ metadata: { namespace: "team-a", name: "captf-creds-x" } }, "add")).toEqual([]);
  });
});
