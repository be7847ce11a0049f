// The outputs phase on the testkit's fake API server: a machine's outputs onto its contract fields (providerID latched into the spec,
// ProviderIDSet), provisioned with OutputsValid and InfrastructureHealthy, and clusterctl move unblocked once no Job runs.
import { describe, expect, it } from "@jest/globals";
import { annotations } from "@captf/contract/api";
import { decodeOutputs } from "@captf/contract";
import { workspaceResourceType } from "../api/resource-types.js";
import { machineAdapter } from "../kinds/adapters.js";
import { FakeObjects } from "../runtime/fake-client.test-support.js";
import { passNamespace, passOwner } from "./phase-pass.test-support.js";
import { reconcileOutputs } from "./phase-outputs.js";
import { reconcilePass } from "./reconcile-pass.test-support.js";
import { machineOutputs, stateWith } from "./state.test-support.js";
import type { WorkspaceObject } from "./types.js";

const now = Date.parse("2026-12-07T10:00:00Z");
const machineType = workspaceResourceType(machineAdapter);

function machineOnServer(notes: Record<string, string> = {}) {
  const object: WorkspaceObject = {
    metadata: { name: passOwner.name, namespace: passNamespace, uid: passOwner.uid, annotations: notes, generation: 1 },
    spec: { source: { image: "registry.example/m:v1" } },
    status: { conditions: [] },
  };
  const server = new FakeObjects();
  server.seed(machineType, passNamespace, object);
  return { server, object };
}

describe("reconcileOutputs", () => {
  it("latches the providerID into the spec, provisions the machine and computes its output conditions", async () => {
    const { server, object } = machineOnServer();
    const decoding = decodeOutputs("machine", machineOutputs, undefined, { fromState: true });
    const pass = reconcilePass(server.client, {
      now,
      object,
      facts: { state: stateWith(machineOutputs), decoding, decision: { reason: "UpToDate" }, action: "UpToDate" },
    });
    expect(await reconcileOutputs(pass)).toEqual({ kind: "continue" });
    const stored = (await server.get(machineType, passNamespace, passOwner.name)) as WorkspaceObject;
    expect(stored.spec.providerID).toBe("noop:///ns/m");
    expect(pass.scope.provisioned).toBe(true);
    expect(pass.scope.outputs?.outputsValid?.status).toBe("True");
    expect(pass.scope.outputs?.health.status).toBe("True");
    expect(pass.scope.fields.observedStateSerial).toBe(3);
    expect(pass.recorded).toEqual(["ProviderIDSet"]);
  });

  it("no Job runs: the block-move annotation goes; without outputs the object stays unprovisioned", async () => {
    const { server, object } = machineOnServer({ [annotations.blockMove]: "true" });
    const pass = reconcilePass(server.client, { now, object, facts: { decision: { reason: "UpToDate" }, action: "UpToDate" } });
    await reconcileOutputs(pass);
    const stored = (await server.get(machineType, passNamespace, passOwner.name)) as WorkspaceObject;
    expect(stored.metadata.annotations).toEqual({});
    expect(pass.scope.provisioned).toBe(false);
    expect(pass.recorded).toEqual([]);
  });

  it("a Job runs: move stays blocked, no write", async () => {
    const { server, object } = machineOnServer({ [annotations.blockMove]: "true" });
    const pass = reconcilePass(server.client, {
      now,
      object,
      facts: { decision: { reason: "InputsChanged" }, action: "started", active: { name: "m-apply-1" } as never },
    });
    await reconcileOutputs(pass);
    expect(server.writes).toEqual([]);
  });
});
