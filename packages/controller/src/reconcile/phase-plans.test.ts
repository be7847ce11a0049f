// The plans phase on the testkit's fake API server: an approved plan's apply consumes the approval (annotations removed from the
// object, PlanApplied), and a plan shown for other inputs is superseded and dropped from the status.
import { describe, expect, it } from "@jest/globals";
import { annotations } from "@captf/contract/api";
import { workspaceResourceType } from "../api/resource-types.js";
import { machineAdapter } from "../kinds/adapters.js";
import { FakeObjects } from "../runtime/fake-client.test-support.js";
import { seriesValue } from "../metrics/series.test-support.js";
import type { ObservedJob } from "./observe-jobs.js";
import { passNamespace, passOwner } from "./phase-pass.test-support.js";
import { reconcilePlans } from "./phase-plans.js";
import { machineJob, reconcilePass } from "./reconcile-pass.test-support.js";
import type { WorkspaceObject } from "./types.js";

const now = Date.parse("2026-12-07T10:00:00Z");
const machineType = workspaceResourceType(machineAdapter);
const shown = { inputsHash: "h2:old", job: "m-plan-1", planHash: "p1:abc", add: 1 };

function machine(notes: Record<string, string>, manual: boolean): WorkspaceObject {
  return {
    metadata: { name: passOwner.name, namespace: passNamespace, uid: passOwner.uid, annotations: notes },
    spec: { source: { image: "registry.example/m:v1" }, ...(manual ? { applyPolicy: "Manual" as const } : {}) },
    status: { conditions: [], plan: shown },
  };
}

describe("reconcilePlans", () => {
  it("an approved plan's apply succeeded: the approval goes from the object and the plan from the status", async () => {
    const object = machine({ [annotations.approvePlan]: "p1:abc", [annotations.planApprovedBy]: "alice" }, true);
    const server = new FakeObjects();
    server.seed(machineType, passNamespace, object);
    const job = machineJob("m-apply-1", "apply", { condition: "Complete", at: now - 1000 });
    job.metadata!.annotations = { [annotations.approvedPlan]: "p1:abc" };
    const applied = { job, name: "m-apply-1", op: "apply", attempt: 1, outcome: "succeeded", finishedAt: now - 1000 } as ObservedJob;
    const pass = reconcilePass(server.client, { now, object, facts: { toMark: [applied], currentHash: "h2:old" } });
    expect(await reconcilePlans(pass)).toEqual({ kind: "continue" });
    expect(pass.scope.fields.plan).toBeNull();
    expect(pass.facts.planShown).toBeUndefined();
    const stored = (await server.get(machineType, passNamespace, passOwner.name)) as WorkspaceObject;
    expect(stored.metadata.annotations).toEqual({});
    expect(pass.recorded).toEqual(["PlanApplied"]);
    expect(await seriesValue(pass.registry, "captf_plan_approvals_total", { result: "applied" })).toBe(1);
  });

  it("a plan made for other inputs is superseded: dropped from the status, PlanSuperseded", async () => {
    const object = machine({}, true);
    const server = new FakeObjects();
    server.seed(machineType, passNamespace, object);
    const pass = reconcilePass(server.client, { now, object, facts: { currentHash: "h2:new" } });
    await reconcilePlans(pass);
    expect(pass.scope.fields.plan).toBeNull();
    expect(pass.recorded).toEqual(["PlanSuperseded"]);
    expect(server.writes).toEqual([]);
  });

  it("keeps a plan shown for these inputs while the policy is Manual", async () => {
    const object = machine({}, true);
    const pass = reconcilePass(new FakeObjects().client, { now, object, facts: { currentHash: "h2:old" } });
    await reconcilePlans(pass);
    expect(pass.facts.planShown).toEqual(shown);
    expect(pass.scope.planShown).toEqual(shown);
    expect(pass.recorded).toEqual([]);
  });
});
