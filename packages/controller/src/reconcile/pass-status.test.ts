// The deferred status step on the testkit's fake API server: computed from the scope, patched only when that changes the status;
// a wait's event once per wait.
import { describe, expect, it } from "@jest/globals";
import { workspaceResourceType } from "../api/resource-types.js";
import type { Condition } from "../conditions/conditions.js";
import { machineAdapter } from "../kinds/adapters.js";
import { FakeObjects } from "../runtime/fake-client.test-support.js";
import { recordStatus, recordWaitEvent } from "./pass-status.js";
import { passNamespace, passOwner } from "./phase-pass.test-support.js";
import { reconcilePass } from "./reconcile-pass.test-support.js";
import type { WorkspaceObject } from "./types.js";

const now = Date.parse("2026-12-07T10:00:00Z");
const machineType = workspaceResourceType(machineAdapter);

describe("recordStatus", () => {
  it("patches the computed status once; the same status again is not sent", async () => {
    const object: WorkspaceObject = {
      metadata: { name: passOwner.name, namespace: passNamespace, uid: passOwner.uid },
      spec: { source: { image: "registry.example/m:v1" } },
      status: {},
    };
    const server = new FakeObjects();
    server.seed(machineType, passNamespace, object);
    const scope = {
      role: "machine",
      kind: "TerraformMachine",
      now,
      inputs: { kind: "none" },
      provisioned: false,
      pinned: false,
      clusterName: "",
    };
    const pass = reconcilePass(server.client, { now, object, scope: scope as never });
    await recordStatus(pass);
    expect(server.writes).toEqual([`patch-status ${machineType.plural}/${passOwner.name}`]);
    const written = pass.facts.written.conditions as Condition[];
    expect(written.find((c) => c.type === "Ready")?.status).toBeDefined();

    const stored = (await server.get(machineType, passNamespace, passOwner.name)) as WorkspaceObject;
    const again = reconcilePass(server.client, { now, object: stored, scope: { ...scope, previous: stored.status?.conditions } as never });
    await recordStatus(again);
    expect(server.writes).toHaveLength(1);
  });
});

describe("recordWaitEvent", () => {
  it("records a start wait once: not again while the condition already names it", () => {
    const wait = { type: "ApplyJobSucceeded", value: { status: "Unknown" as const, reason: "WaitingForRunLease", message: "held" } };
    const first = reconcilePass(new FakeObjects().client, { now });
    recordWaitEvent(first, wait);
    expect(first.recorded).toEqual(["WaitingForRunLease"]);
    const waiting = [{ type: "ApplyJobSucceeded", status: "Unknown", reason: "WaitingForRunLease" }] as Condition[];
    const later = reconcilePass(new FakeObjects().client, { now, scope: { previous: waiting } });
    recordWaitEvent(later, wait);
    expect(later.recorded).toEqual([]);
  });
});
