// The retained-state phase on the testkit's fake API server: a deleting object leaves the retained state as it is, one that asks
// adopts it, any other holds with one RetainedStateFound event.
import { describe, expect, it } from "@jest/globals";
import { finalizers, labels } from "@captf/contract/api";
import type { V1Secret } from "@kubernetes/client-node";
import { workspaceResourceType } from "../api/resource-types.js";
import { machineAdapter } from "../kinds/adapters.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import { FakeObjects } from "../runtime/fake-client.test-support.js";
import { backendSuffixLabel } from "../state/read-state.js";
import type { Condition } from "../conditions/conditions.js";
import { passNamespace, passOwner } from "./phase-pass.test-support.js";
import { reconcileRetainedState } from "./phase-retained-state.js";
import { reconcilePass } from "./reconcile-pass.test-support.js";
import type { WorkspaceObject } from "./types.js";

const now = Date.parse("2026-12-07T10:00:00Z");
const machineType = workspaceResourceType(machineAdapter);
const stateName = "tfstate-default-m-suffix";

function setup(object: Partial<WorkspaceObject["metadata"]>, spec: Partial<WorkspaceObject["spec"]> = {}) {
  const machine: WorkspaceObject = {
    metadata: { name: passOwner.name, namespace: passNamespace, uid: passOwner.uid, finalizers: [finalizers.TerraformMachine], ...object },
    spec: { source: { image: "registry.example/m:v1" }, ...spec },
    status: { conditions: [] },
  };
  const server = new FakeObjects();
  server.seed(machineType, passNamespace, machine);
  server.seed(builtinTypes.secret, passNamespace, {
    metadata: { name: stateName, labels: { [backendSuffixLabel]: "m-suffix", [labels.retainedFromUid]: "uid-old" } },
  });
  return { server, machine };
}

describe("reconcileRetainedState", () => {
  it("goes on when no retained state is in the way", async () => {
    const { server, machine } = setup({});
    const pass = reconcilePass(server.client, { now, object: machine });
    expect(await reconcileRetainedState(pass)).toEqual({ kind: "continue" });
    expect(server.writes).toEqual([]);
  });

  it("deleting: removes the finalizer and leaves the retained state as it is, with no status", async () => {
    const { server, machine } = setup({ deletionTimestamp: "2026-12-07T09:00:00Z" });
    const pass = reconcilePass(server.client, { now, object: machine, scope: { deleting: true }, facts: { retainedBy: ["uid-old"] } });
    expect(await reconcileRetainedState(pass)).toEqual({ kind: "leave", result: { action: "removed finalizer" } });
    expect(((await server.get(machineType, passNamespace, passOwner.name)) as WorkspaceObject).metadata.finalizers).toEqual([]);
    expect(pass.recorded).toEqual(["FinalizerRemoved"]);
  });

  it("adoptRetainedState: takes the state over and ends the pass with an immediate requeue", async () => {
    const { server, machine } = setup({}, { adoptRetainedState: true });
    const pass = reconcilePass(server.client, { now, object: machine, facts: { retainedBy: ["uid-old"] } });
    expect(await reconcileRetainedState(pass)).toEqual({ kind: "end", result: { action: "adopted retained state", requeueAfterMs: 0 } });
    const state = (await server.get(builtinTypes.secret, passNamespace, stateName)) as V1Secret;
    expect(state.metadata?.labels?.[labels.retainedFromUid]).toBeUndefined();
    expect(pass.recorded).toEqual(["RetainedStateAdopted"]);
  });

  it("holds: the status names the retainer, the event is recorded once per hold", async () => {
    const { server, machine } = setup({});
    const pass = reconcilePass(server.client, { now, object: machine, facts: { retainedBy: ["uid-old"] } });
    expect(await reconcileRetainedState(pass)).toEqual({ kind: "continue" });
    expect(pass.scope.retainedBy).toEqual(["uid-old"]);
    expect(pass.recorded).toEqual(["RetainedStateFound"]);
    const held = [{ type: "StateReadable", status: "False", reason: "RetainedStateFound" }] as Condition[];
    const again = reconcilePass(server.client, { now, object: machine, scope: { previous: held }, facts: { retainedBy: ["uid-old"] } });
    await reconcileRetainedState(again);
    expect(again.recorded).toEqual([]);
    expect(server.writes).toEqual([]);
  });
});
