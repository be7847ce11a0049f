import { describe, expect, it } from "@jest/globals";
import { decodeOutputs, type Health } from "@captf/contract";
import type { WorkspaceObject } from "../reconcile/workspace-reconciler.js";
import { machineAdapter, poolAdapter } from "./adapters.js";

// What each kind writes from its outputs in the pass's one spec patch and one status patch.
const running: Health = { state: "running", healthy: true, message: null, reasons: [] };
const object = (spec: Record<string, unknown> = {}): WorkspaceObject =>
  ({ metadata: { name: "o", namespace: "ns", uid: "u" }, spec: { source: { image: "i" }, ...spec } }) as WorkspaceObject;

describe("the pool's contract fields", () => {
  const outputs = (extra: Record<string, unknown> = {}) =>
    decodeOutputs("machinepool", {
      provider_id: "asg:///g-1",
      provider_id_list: ["b", "a"],
      replicas: 2,
      instances: [{ provider_id: "a", state: "running" }, { provider_id: "b" }],
      health: running,
      ...extra,
    });

  it("sets spec.providerID and providerIDList, and status.replicas and instances, on a new pool", () => {
    expect(poolAdapter.contractFields(object(), outputs())).toEqual({
      spec: { providerID: "asg:///g-1", providerIDList: ["a", "b"] },
      status: { replicas: 2, instances: [{ providerID: "a", state: "running" }, { providerID: "b" }] },
    });
  });

  it("writes no spec while the group's ID and its members are unchanged", () => {
    expect(poolAdapter.contractFields(object({ providerID: "asg:///g-1", providerIDList: ["a", "b"] }), outputs())).not.toHaveProperty(
      "spec",
    );
  });

  it("follows a new group ID; a null one keeps the last", () => {
    const current = object({ providerID: "asg:///g-0", providerIDList: ["a", "b"] });
    expect(poolAdapter.contractFields(current, outputs()).spec).toEqual({ providerID: "asg:///g-1" });
    expect(poolAdapter.contractFields(current, outputs({ provider_id: null }))).not.toHaveProperty("spec");
  });

  it("removes status.instances for an empty list (the CRD holds 1-1000), and leaves it alone for an invalid one", () => {
    expect(poolAdapter.contractFields(object(), outputs({ instances: [] })).status).toMatchObject({ instances: null });
    expect(poolAdapter.contractFields(object(), outputs({ instances: [{ state: "running" }] })).status).not.toHaveProperty("instances");
  });
});

describe("the machine's status.interruptible", () => {
  const outputs = (interruptible: unknown) =>
    decodeOutputs("machine", { provider_id: "noop:///ns/m", addresses: [], failure_domain: null, interruptible, health: running });

  it("is the module's value, false for null, and left alone for an invalid value", () => {
    expect(machineAdapter.contractFields(object(), outputs(true)).status).toMatchObject({ interruptible: true });
    expect(machineAdapter.contractFields(object(), outputs(null)).status).toMatchObject({ interruptible: false });
    expect(machineAdapter.contractFields(object(), outputs("yes")).status).not.toHaveProperty("interruptible");
  });
});
