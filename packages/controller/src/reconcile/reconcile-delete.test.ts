// reconcileDelete and the externally managed release on the testkit's fake API server: what a deleting object leaves behind,
// the events and the finalizer write, and that the pass writes no status once the object is let go.
import { describe, expect, it } from "@jest/globals";
import { annotations, finalizers, labels } from "@captf/contract/api";
import { stateLockLeaseName } from "@captf/render";
import type { V1Secret } from "@kubernetes/client-node";
import { machineAdapter } from "../kinds/adapters.js";
import { workspaceResourceType } from "../api/resource-types.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import { FakeObjects } from "../runtime/fake-client.test-support.js";
import { seriesValue } from "../metrics/series.test-support.js";
import { backendSuffixLabel } from "../state/read-state.js";
import { passNamespace, passOwner } from "./phase-pass.test-support.js";
import { reconcilePass } from "./reconcile-pass.test-support.js";
import { releaseExternallyManaged, reconcileDelete, retainsNow } from "./reconcile-delete.js";
import { runLeaseName } from "./run-lease.js";
import type { WorkspaceObject } from "./types.js";

const now = Date.parse("2026-12-07T10:00:00Z");
const finalizer = finalizers.TerraformMachine;
const suffix = "m-suffix";
const machineType = workspaceResourceType(machineAdapter);

/** A deleting machine holding captf's finalizer (and another controller's), as the API server stores it. */
function deletingMachine(extra: Partial<WorkspaceObject["metadata"]> = {}): WorkspaceObject {
  return {
    metadata: {
      name: passOwner.name,
      namespace: passNamespace,
      uid: passOwner.uid,
      deletionTimestamp: "2026-12-07T09:59:00Z",
      finalizers: ["other.example/keep", finalizer],
      ...extra,
    },
    spec: { source: { image: "registry.example/m:v1" } },
    status: { conditions: [] },
  };
}

function serverWith(object: WorkspaceObject): FakeObjects {
  const server = new FakeObjects();
  server.seed(machineType, passNamespace, object);
  server.seed(builtinTypes.secret, passNamespace, {
    metadata: { name: "tfstate-default-m-suffix", labels: { [backendSuffixLabel]: suffix } },
  });
  server.seed(builtinTypes.lease, passNamespace, { metadata: { name: runLeaseName(suffix) } });
  return server;
}

const stored = async (server: FakeObjects) => (await server.get(machineType, passNamespace, passOwner.name)) as WorkspaceObject;

describe("reconcileDelete", () => {
  it("goes on for an object that is not deleting, or whose decision keeps its finalizer", async () => {
    const server = serverWith(deletingMachine({ deletionTimestamp: undefined }));
    const pass = reconcilePass(server.client, { now, facts: { decision: { reason: "UpToDate" } } });
    expect(await reconcileDelete(pass)).toEqual({ kind: "continue" });
    expect(server.writes).toEqual([]);
  });

  it("Retain: keeps the state labelled with the object's uid, drops the run lease and the finalizer, and counts no decision", async () => {
    const object = deletingMachine();
    const server = serverWith(object);
    const pass = reconcilePass(server.client, {
      now,
      object,
      scope: { deleting: true },
      facts: { deletionPolicy: "Retain", decision: { reason: "Destroying", op: "destroy" } },
    });
    expect(retainsNow(pass)).toBe(true);
    const step = await reconcileDelete(pass);
    expect(step).toEqual({ kind: "leave", result: { action: "retained infrastructure, removed finalizer" } });
    const state = (await server.get(builtinTypes.secret, passNamespace, "tfstate-default-m-suffix")) as V1Secret;
    expect(state.metadata?.labels?.[labels.retainedFromUid]).toBe(passOwner.uid);
    expect((await stored(server)).metadata.finalizers).toEqual(["other.example/keep"]);
    expect(server.writes).toContain(`delete leases/${runLeaseName(suffix)}`);
    expect(pass.recorded).toEqual(["InfrastructureRetained"]);
    expect(await seriesValue(pass.registry, "captf_reconcile_op_decisions_total")).toBe(0);
  });

  it.each([
    ["a Job runs", { active: { name: "j" } }, {}],
    ["the cluster still has machines", { dependents: 2 }, {}],
    ["a retained state is in the way", { retainedBy: ["uid-old"] }, {}],
    ["it is paused", {}, { paused: true }],
  ])("Retain waits while %s", (_what, facts, scope) => {
    const pass = reconcilePass(new FakeObjects().client, {
      now,
      scope: { deleting: true, ...scope },
      facts: { deletionPolicy: "Retain", ...(facts as object) },
    });
    expect(retainsNow(pass)).toBe(false);
  });

  it("after the destroy: deletes the state, the run lease and a free state lock, then the finalizer; the decision is counted", async () => {
    const object = deletingMachine();
    const server = serverWith(object);
    server.seed(builtinTypes.lease, passNamespace, { metadata: { name: stateLockLeaseName(suffix) } });
    const pass = reconcilePass(server.client, {
      now,
      object,
      scope: { deleting: true },
      facts: { deletionPolicy: "Destroy", decision: { reason: "Destroyed", dropFinalizer: true, cleanupState: true } },
    });
    expect(await reconcileDelete(pass)).toEqual({ kind: "leave", result: { action: "removed finalizer" } });
    expect(server.writes).toEqual([
      "delete secrets/tfstate-default-m-suffix",
      `delete leases/${runLeaseName(suffix)}`,
      `delete leases/${stateLockLeaseName(suffix)}`,
      `patch ${machineType.plural}/${passOwner.name}`,
    ]);
    expect((await stored(server)).metadata.finalizers).toEqual(["other.example/keep"]);
    expect(pass.recorded).toEqual(["Destroyed", "FinalizerRemoved"]);
    expect(pass.outcome.decision?.reason).toBe("Destroyed");
    expect(await seriesValue(pass.registry, "captf_reconcile_op_decisions_total", { reason: "Destroyed" })).toBe(1);
  });
});

describe("releaseExternallyManaged", () => {
  it("hands a live object off without a write", async () => {
    const object = deletingMachine({ deletionTimestamp: undefined, annotations: { [annotations.managedBy]: "other" } });
    const server = serverWith(object);
    const pass = reconcilePass(server.client, { now, object });
    expect(await releaseExternallyManaged(pass)).toEqual({ action: "externally managed" });
    expect(server.writes).toEqual([]);
  });

  it("deleted while it held captf's finalizer: keeps its state for that manager and removes only captf's finalizer", async () => {
    const object = deletingMachine({ annotations: { [annotations.managedBy]: "other" } });
    const server = serverWith(object);
    const pass = reconcilePass(server.client, { now, object });
    expect(await releaseExternallyManaged(pass)).toEqual({ action: "externally managed: released, removed finalizer" });
    expect((await stored(server)).metadata.finalizers).toEqual(["other.example/keep"]);
    expect(pass.recorded).toEqual(["ExternallyManagedReleased"]);
  });
});
