// The deletion facts: the policy (own, the cluster's defaults, Destroy for a cluster), a deleting cluster's machines and pools
// counted live by its label, and DeletionStarted once, on the first pass that sees the deletion.
import { describe, expect, it } from "@jest/globals";
import { labels } from "@captf/contract/api";
import { terraformMachinePoolType, terraformMachineType } from "../api/resource-types.js";
import type { Condition } from "../conditions/conditions.js";
import { clusterAdapter } from "../kinds/adapters.js";
import { FakeObjects } from "../runtime/fake-client.test-support.js";
import { passNamespace } from "./phase-pass.test-support.js";
import { reconcileDeletionFacts } from "./phase-deletion-facts.js";
import { reconcilePass } from "./reconcile-pass.test-support.js";
import type { TerraformClusterObject } from "./pass-reads.js";

const now = Date.parse("2026-12-07T10:00:00Z");

describe("reconcileDeletionFacts", () => {
  it("a deleting cluster counts its machines and pools, resolves Destroy, and records DeletionStarted once", async () => {
    const server = new FakeObjects();
    const member = (name: string) => ({ metadata: { name, labels: { [labels.clusterName]: "c" } } });
    server.seed(terraformMachineType, passNamespace, member("m-0"));
    server.seed(terraformMachineType, passNamespace, member("m-1"));
    server.seed(terraformMachinePoolType, passNamespace, member("p-0"));
    server.seed(terraformMachineType, passNamespace, { metadata: { name: "other", labels: { [labels.clusterName]: "d" } } });
    const pass = reconcilePass(server.client, { now, adapter: clusterAdapter, clusterName: "c", scope: { deleting: true } });
    expect(await reconcileDeletionFacts(pass)).toEqual({ kind: "continue" });
    expect(pass.facts.dependents).toBe(3);
    expect(pass.scope.dependents).toBe(3);
    expect(pass.facts.deletionPolicy).toBe("Destroy");
    expect(pass.recorded).toEqual(["DeletionStarted"]);

    const seen = [{ type: "Deleting", status: "True", reason: "Deleting" }] as Condition[];
    const later = reconcilePass(server.client, {
      now,
      adapter: clusterAdapter,
      clusterName: "c",
      scope: { deleting: true, previous: seen },
    });
    await reconcileDeletionFacts(later);
    expect(later.recorded).toEqual([]);
  });

  it.each([
    ["its own policy", "Retain", undefined, "Retain"],
    ["its cluster's default", undefined, { spec: { defaults: { deletionPolicy: "Retain" } } }, "Retain"],
    ["no cluster found: unresolved", undefined, undefined, undefined],
  ] as const)("a machine takes %s", async (_what, own, cluster, policy) => {
    const pass = reconcilePass(new FakeObjects().client, {
      now,
      object: { spec: { source: { image: "i" }, ...(own ? { deletionPolicy: own } : {}) } },
      facts: { terraformCluster: cluster as TerraformClusterObject | undefined },
    });
    await reconcileDeletionFacts(pass);
    expect(pass.facts.deletionPolicy).toBe(policy);
    expect(pass.facts.dependents).toBe(0);
    expect(pass.recorded).toEqual([]);
  });
});
