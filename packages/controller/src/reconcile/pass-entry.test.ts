// The start of a pass on the testkit's fake API server: the object read as a copy, and captf's finalizer (added in its own write,
// a conflict requeued, a deleting object without it done with).
import { describe, expect, it } from "@jest/globals";
import { finalizers } from "@captf/contract/api";
import { workspaceResourceType } from "../api/resource-types.js";
import { machineAdapter } from "../kinds/adapters.js";
import { apiError, FakeObjects } from "../runtime/fake-client.test-support.js";
import type { KubeApi } from "../runtime/kube-client.js";
import { finalizerConflict } from "./finalizer.js";
import { readPassObject, reconcileFinalizer } from "./pass-entry.js";
import { passNamespace, passOwner } from "./phase-pass.test-support.js";
import type { WorkspaceObject } from "./types.js";

const machineType = workspaceResourceType(machineAdapter);
const finalizer = finalizers.TerraformMachine;

function machine(metadata: Partial<WorkspaceObject["metadata"]> = {}): WorkspaceObject {
  return {
    metadata: { name: passOwner.name, namespace: passNamespace, uid: passOwner.uid, ...metadata },
    spec: { source: { image: "registry.example/m:v1" } },
  };
}

describe("readPassObject", () => {
  it("is a copy the pass may change, undefined once the object is gone", async () => {
    const server = new FakeObjects();
    server.seed(machineType, passNamespace, machine());
    const read = await readPassObject({ client: server.client }, machineAdapter, passNamespace, passOwner.name);
    expect(read?.metadata.uid).toBe(passOwner.uid);
    expect(await readPassObject({ client: server.client }, machineAdapter, passNamespace, "gone")).toBeUndefined();
  });
});

describe("reconcileFinalizer", () => {
  it("adds the finalizer first, in its own write, and ends the pass", async () => {
    const server = new FakeObjects();
    server.seed(machineType, passNamespace, machine({ finalizers: ["other.example/keep"] }));
    const object = (await server.get(machineType, passNamespace, passOwner.name)) as WorkspaceObject;
    expect(await reconcileFinalizer({ client: server.client }, machineAdapter, object)).toEqual({ action: "added finalizer" });
    const stored = (await server.get(machineType, passNamespace, passOwner.name)) as WorkspaceObject;
    expect(stored.metadata.finalizers).toEqual(["other.example/keep", finalizer]);
  });

  it("goes on (undefined) once the finalizer is there, and is done with a deleting object without it", async () => {
    const server = new FakeObjects();
    expect(await reconcileFinalizer({ client: server.client }, machineAdapter, machine({ finalizers: [finalizer] }))).toBeUndefined();
    const deleting = machine({ deletionTimestamp: "2026-12-07T10:00:00Z", finalizers: ["other.example/keep"] });
    expect(await reconcileFinalizer({ client: server.client }, machineAdapter, deleting)).toEqual({ action: "gone" });
    expect(server.writes).toEqual([]);
  });

  it("a finalizer write that conflicts is a lost race: requeued, not an error", async () => {
    const conflicting = {
      patch: async () => Promise.reject(apiError(409, "the object has been modified", "Conflict")),
    } as unknown as KubeApi;
    expect(await reconcileFinalizer({ client: conflicting }, machineAdapter, machine())).toEqual(finalizerConflict);
  });
});
