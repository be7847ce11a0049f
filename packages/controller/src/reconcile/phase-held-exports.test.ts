// The held-exports phase: only a pool's ready inputs are looked at; a pool whose pending change of the exports is no longer wanted
// drops the approval it named.
import { describe, expect, it } from "@jest/globals";
import { annotations } from "@captf/contract/api";
import { workspaceResourceType } from "../api/resource-types.js";
import { poolAdapter } from "../kinds/adapters.js";
import { FakeObjects } from "../runtime/fake-client.test-support.js";
import { passNamespace, passOwner } from "./phase-pass.test-support.js";
import type { DurableInputs } from "./durable-inputs.js";
import { reconcileHeldExports } from "./phase-held-exports.js";
import { reconcilePass } from "./reconcile-pass.test-support.js";
import type { InputsOutcome, WorkspaceObject } from "./types.js";

const now = Date.parse("2026-12-07T10:00:00Z");
const inputs: InputsOutcome = {
  kind: "ready",
  rendered: { root: { "main.tf.json": "{}", "terraform.tfvars.json": "{}" }, hash: "h2:new", approvalHash: "h2:new", exportsHash: "e:1" },
};

describe("reconcileHeldExports", () => {
  it("a machine's inputs are never held", async () => {
    const server = new FakeObjects();
    const pass = reconcilePass(server.client, { now, facts: { inputs } });
    pass.durable = { pendingClusterOutputs: { exportsHash: "e:2", approvalHash: "a:2", job: "p-apply-1" } } as DurableInputs;
    expect(await reconcileHeldExports(pass)).toEqual({ kind: "continue" });
    expect(pass.facts.inputs).toBe(inputs);
    expect(pass.scope.heldExports).toBeUndefined();
    expect(server.writes).toEqual([]);
  });

  it("a pool back at the exports it applied: the held change is withdrawn and its approval removed from the object", async () => {
    const poolType = workspaceResourceType(poolAdapter);
    const object: WorkspaceObject = {
      metadata: {
        name: passOwner.name,
        namespace: passNamespace,
        uid: passOwner.uid,
        annotations: { [annotations.approveDestructivePlan]: "a:2" },
      },
      spec: { source: { image: "registry.example/p:v1" } },
      status: { conditions: [] },
    };
    const server = new FakeObjects();
    server.seed(poolType, passNamespace, object);
    const pass = reconcilePass(server.client, { now, adapter: poolAdapter, object, facts: { inputs } });
    pass.durable = {
      pendingClusterOutputs: { exportsHash: "e:2", approvalHash: "a:2", job: "p-apply-1" },
      appliedClusterOutputsHash: "e:1",
    } as DurableInputs;
    expect(await reconcileHeldExports(pass)).toEqual({ kind: "continue" });
    const stored = (await server.get(poolType, passNamespace, passOwner.name)) as WorkspaceObject;
    expect(stored.metadata.annotations).toEqual({});
    expect(pass.scope.heldExports).toBeUndefined();
    expect(pass.facts.inputs).toBe(inputs);
  });
});
