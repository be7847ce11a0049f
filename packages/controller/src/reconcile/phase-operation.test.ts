// The act phase on the testkit's fake API server: a decision without an operation only records itself; an apply takes the run
// lease, blocks clusterctl move, writes the durable inputs and creates the Job with its per-run Secret, which becomes the running Job.
import { describe, expect, it } from "@jest/globals";
import { annotations } from "@captf/contract/api";
import { workspaceResourceType } from "../api/resource-types.js";
import { runSecretName } from "../jobs/build-job.js";
import { machineAdapter } from "../kinds/adapters.js";
import { seriesValue } from "../metrics/series.test-support.js";
import { FakeObjects } from "../runtime/fake-client.test-support.js";
import { durableInputsSecretName } from "./durable-inputs.js";
import { passNamespace, passOwner } from "./phase-pass.test-support.js";
import { reconcileOperation } from "./phase-operation.js";
import { reconcilePass } from "./reconcile-pass.test-support.js";
import { runLeaseName } from "./run-lease.js";
import type { InputsOutcome, WorkspaceObject } from "./types.js";

const now = Date.parse("2026-12-07T10:00:00Z");
const machineType = workspaceResourceType(machineAdapter);
const inputs: InputsOutcome = {
  kind: "ready",
  rendered: { root: { "main.tf.json": "{}", "terraform.tfvars.json": "{}" }, hash: "h2:new", approvalHash: "h2:new" },
};

describe("reconcileOperation", () => {
  it("a decision without an operation: its reason is the action, its requeue the pass's, counted, no write", async () => {
    const server = new FakeObjects();
    const pass = reconcilePass(server.client, { now, facts: { decision: { reason: "UpToDate", requeueAfterMs: 60_000 } } });
    expect(await reconcileOperation(pass)).toEqual({ kind: "continue" });
    expect(pass.facts.action).toBe("UpToDate");
    expect(pass.facts.requeueAfterMs).toBe(60_000);
    expect(pass.outcome.decision).toEqual({ reason: "UpToDate", requeueAfterMs: 60_000 });
    expect(await seriesValue(pass.registry, "captf_reconcile_op_decisions_total", { op: "none", reason: "UpToDate" })).toBe(1);
    expect(server.writes).toEqual([]);
  });

  it("an apply: the lease, the block-move mark, the durable inputs, the Job and its per-run Secret, in that order", async () => {
    const object: WorkspaceObject = {
      metadata: { name: passOwner.name, namespace: passNamespace, uid: passOwner.uid },
      spec: { source: { image: "registry.example/m:v1" } },
      status: { conditions: [] },
    };
    const server = new FakeObjects();
    server.seed(machineType, passNamespace, object);
    const pass = reconcilePass(server.client, {
      now,
      object,
      facts: { decision: { reason: "InputsChanged", op: "apply" }, inputs, currentHash: "h2:new" },
    });
    await reconcileOperation(pass);
    const job = pass.facts.active!;
    expect(pass.facts.action).toBe(`started apply (InputsChanged) as ${job.name}`);
    expect(server.writes).toEqual([
      `create leases/${runLeaseName("m-suffix")}`,
      `patch ${machineType.plural}/${passOwner.name}`,
      `create secrets/${durableInputsSecretName("machine", passOwner.name)}`,
      `create jobs/${job.name}`,
      `create secrets/${runSecretName(job.name)}`,
    ]);
    const stored = (await server.get(machineType, passNamespace, passOwner.name)) as WorkspaceObject;
    expect(stored.metadata.annotations?.[annotations.blockMove]).toBe("true");
    expect(pass.outcome.active).toMatchObject({ name: job.name, op: "apply", attempt: 1, remediation: false });
    expect(pass.recorded).toContain("JobCreated");
  });
});
