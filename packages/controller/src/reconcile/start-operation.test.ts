// The act step (startOperation) on the testkit's fake API server: what holds an operation back before any write (its inputs, its
// credentials, the root it runs, the Job policy, a ServiceAccount, a Job slot), and a started Job's writes, note and annotations.
import { describe, expect, it } from "@jest/globals";
import { annotations } from "@captf/contract/api";
import type { V1Job } from "@kubernetes/client-node";
import { workspaceResourceType } from "../api/resource-types.js";
import { machineAdapter } from "../kinds/adapters.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import { FakeObjects } from "../runtime/fake-client.test-support.js";
import type { Decision, JobRun } from "./decide-operation.js";
import { passNamespace, passOwner } from "./phase-pass.test-support.js";
import { reconcilePass } from "./reconcile-pass.test-support.js";
import { jobCreatedNote, startOperation, type StartRequest } from "./start-operation.js";
import type { InputsOutcome, WorkspaceObject } from "./types.js";

const now = Date.parse("2026-12-07T10:00:00Z");
const machineType = workspaceResourceType(machineAdapter);
const ready: InputsOutcome = {
  kind: "ready",
  rendered: { root: { "main.tf.json": "{}", "terraform.tfvars.json": "{}" }, hash: "h2:new", approvalHash: "h2:new" },
};
const applyRun: JobRun = { op: "apply", attempt: 1, inputsHash: "h2:new", image: "registry.example/m:v1", digestUnknown: false };

function request(
  server: FakeObjects,
  overrides: Partial<StartRequest<"machine">> = {},
  decision: Decision = { reason: "InputsChanged", op: "apply" },
) {
  const object: WorkspaceObject = {
    metadata: { name: passOwner.name, namespace: passNamespace, uid: passOwner.uid },
    spec: { source: { image: "registry.example/m:v1" } },
    status: { conditions: [] },
  };
  server.seed(machineType, passNamespace, object);
  const pass = reconcilePass(server.client, { now, object });
  const start: StartRequest<"machine"> = {
    ...(pass as unknown as StartRequest<"machine">),
    decision,
    run: applyRun,
    inputs: ready,
    credentials: undefined,
    terraformCluster: undefined,
    restoreSet: undefined,
    jobPolicy: {},
    serviceAccountRefusal: undefined,
    forceUnlock: undefined,
    afterFailedApply: undefined,
    appliedInputsHash: undefined,
    ...overrides,
  };
  return { start, recorded: pass.recorded };
}

describe("startOperation: what holds an operation back, before any write", () => {
  it.each([
    [
      "inputs too large",
      { inputs: { kind: "pending", reason: "InputsTooLarge", message: "m", condition: "ApplyJobSucceeded", status: "False" } },
      {
        action: "waiting: InputsTooLarge",
        requeueAfterMs: 600_000,
      },
    ],
    ["no Cluster API owner", { inputs: { kind: "none" } }, { action: "waiting: WaitingForOwner", requeueAfterMs: 30_000 }],
    [
      "credentials not ready",
      {
        credentials: {
          ready: false,
          conditions: [{ type: "IdentityAllowed", value: { status: "False", reason: "NamespaceNotAllowed", message: "no" } }],
        },
      },
      {
        action: "waiting: IdentityNotAllowed",
        requeueAfterMs: 30_000,
        wait: { type: "ApplyJobSucceeded", value: { status: "False", reason: "IdentityNotAllowed", message: "no" } },
      },
    ],
    [
      "a destroy without durable inputs",
      { run: { ...applyRun, op: "destroy" }, inputs: { kind: "none" } },
      {
        action: "waiting: DestroyFailed",
        requeueAfterMs: 600_000,
        wait: {
          type: "ApplyJobSucceeded",
          value: {
            status: "False",
            reason: "DestroyFailed",
            message: "the durable inputs Secret of this TerraformMachine is missing: restore it (or its state) before it can be destroyed",
          },
        },
      },
    ],
    [
      "a ServiceAccount not opted in",
      { serviceAccountRefusal: { status: "False", reason: "ServiceAccountNotOptedIn", message: "label it" } },
      {
        action: "waiting: ServiceAccountNotOptedIn",
        requeueAfterMs: 30_000,
        wait: { type: "RunnerRBACReady", value: { status: "False", reason: "ServiceAccountNotOptedIn", message: "label it" } },
      },
    ],
  ] as [string, Partial<StartRequest<"machine">>, object][])("%s", async (_what, overrides, outcome) => {
    const server = new FakeObjects();
    const { start } = request(server, overrides);
    expect(await startOperation(start)).toEqual(outcome);
    expect(server.writes).toEqual([]);
  });

  it("a full manager: waits for a Job slot, named on the condition, with no write", async () => {
    const server = new FakeObjects();
    const { start } = request(server);
    start.deps.jobSlots = { managerLimit: 1, clusterDefaultLimit: 0, usage: () => ({ total: 1, cluster: 0 }) };
    const outcome = await startOperation(start);
    expect(outcome.action).toBe("waiting: WaitingForJobSlot");
    expect(outcome.wait).toMatchObject({ type: "ApplyJobSucceeded", value: { status: "Unknown", reason: "WaitingForJobSlot" } });
    expect(server.writes).toEqual([]);
  });
});

describe("startOperation: a Job started", () => {
  it("creates the Job with the annotations of its pass and the note JobCreated says", async () => {
    const server = new FakeObjects();
    const { start, recorded } = request(
      server,
      { afterFailedApply: "m-apply-1" },
      { reason: "DriftDetected", op: "apply", remediation: true },
    );
    start.run = { ...applyRun, attempt: 2 };
    const outcome = await startOperation(start);
    const name = outcome.job!.name;
    expect(outcome).toMatchObject({ action: `started apply (DriftDetected) as ${name}`, job: { op: "apply", attempt: 2 } });
    const job = (await server.get(builtinTypes.job, passNamespace, name)) as V1Job;
    expect(job.metadata?.annotations).toMatchObject({
      [annotations.driftRemediation]: "true",
      [annotations.afterFailedApply]: "m-apply-1",
    });
    expect(recorded[0]).toBe("JobCreated");
    expect(jobCreatedNote({ op: "apply", attempt: 2, image: "i", job: name, why: "DriftDetected" })).toBe(
      `started apply attempt 2 as Job ${name} with image i, because DriftDetected`,
    );
  });

  it("adopts the Job an earlier pass created when the create conflicts (the answer was lost), read live", async () => {
    const first = new FakeObjects();
    const created = (await startOperation(request(first).start)).job!.name;
    const server = new FakeObjects();
    const existing = { metadata: { name: created, namespace: passNamespace, uid: "earlier-job" } };
    server.seed(builtinTypes.job, passNamespace, existing);
    const outcome = await startOperation(request(server).start);
    expect(outcome.job?.name).toBe(created);
    expect(((await server.get(builtinTypes.job, passNamespace, created)) as V1Job).metadata?.uid).toBe("earlier-job");
  });
});
