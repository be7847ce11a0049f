import { describe, expect, it } from "@jest/globals";
import type { RunResult } from "@captf/contract/run-result";
import type { StateReading } from "../state/decode-state.js";
import { computeStatus, readyInputs, readySummary, type PassOutcome, type StatusScope } from "./compute-status.js";
import type { Condition } from "../conditions/conditions.js";
import type { ObservedJob } from "./observe-jobs.js";

const now = Date.parse("2026-12-01T00:00:00Z");
const earlier = "2026-11-30T00:00:00Z";
const stateOk = (inputsHash?: string): StateReading =>
  ({
    kind: "ok",
    state: { serial: 3, lineage: "l", outputs: {}, managedResources: 1, ...(inputsHash ? { inputsHash } : {}) },
  }) as unknown as StateReading;

function scopeOf(overrides: Partial<StatusScope> = {}): StatusScope {
  return {
    role: "machine",
    kind: "TerraformMachine",
    now,
    previous: undefined,
    paused: false,
    deleting: false,
    clusterName: "c",
    pinned: false,
    inputs: { kind: "ready", rendered: { hash: "h2:current" } },
    credentials: [],
    restores: [],
    ownerConditions: [],
    provisioned: false,
    fields: {},
    ...overrides,
  };
}

function job(overrides: Partial<ObservedJob> & Pick<ObservedJob, "op">): ObservedJob {
  return {
    job: { metadata: { name: "j" } },
    name: "j",
    attempt: 1,
    bookkept: false,
    deadlineExceeded: false,
    remediation: false,
    ...overrides,
  };
}

const result = (extra: Partial<RunResult> = {}): RunResult =>
  ({
    version: 1,
    op: "apply",
    image: { ref: "m", providersMirror: false },
    runtime: { command: ["tofu"], version: "1" },
    steps: [],
    drift: null,
    error: null,
    ...extra,
  }) as unknown as RunResult;

/** The condition of `type` computeStatus writes for these facts. */
function conditionOf(type: string, scope: StatusScope, outcome: PassOutcome = {}): Partial<Condition> | undefined {
  const conditions = computeStatus(scope, outcome).conditions as Condition[];
  const found = conditions.find((condition) => condition.type === type);
  return found && { status: found.status, reason: found.reason };
}

const previousOf = (...conditions: [string, Condition["status"], string][]): Condition[] =>
  conditions.map(([type, status, reason]) => ({ type, status, reason, message: "", lastTransitionTime: earlier }));

describe("computeStatus: InputsApplied", () => {
  it.each<[string, Partial<StatusScope>, PassOutcome, Partial<Condition> | undefined]>([
    [
      "the state holds the current inputs hash",
      { state: stateOk("h2:current"), currentHash: "h2:current" },
      {},
      { status: "True", reason: "InputsApplied" },
    ],
    [
      "a pinned machine is compared with the hash it applied",
      { pinned: true, inputs: { kind: "none" }, state: stateOk("h2:pinned"), currentHash: "h2:pinned" },
      {},
      { status: "True", reason: "InputsApplied" },
    ],
    [
      "no state yet and an apply due",
      { state: { kind: "absent" }, currentHash: "h2:current" },
      { decision: { reason: "NoState", op: "apply" } },
      { status: "False", reason: "ApplyPending" },
    ],
    [
      "an apply of them runs",
      { state: stateOk("h2:old"), currentHash: "h2:current" },
      { active: { name: "a", op: "apply", attempt: 1, remediation: false } },
      { status: "False", reason: "ApplyRunning" },
    ],
    [
      "a plan waits for approval",
      { state: stateOk("h2:old"), currentHash: "h2:current" },
      { decision: { reason: "PlanAwaitingApproval" } },
      { status: "False", reason: "AwaitingApproval" },
    ],
    [
      "a destructive plan waits for approval",
      { state: stateOk("h2:old"), currentHash: "h2:current" },
      { decision: { reason: "DestructivePlanBlocked" } },
      { status: "False", reason: "AwaitingApproval" },
    ],
    [
      "their apply failed",
      {
        state: stateOk("h2:old"),
        currentHash: "h2:current",
        newestJob: job({ op: "apply", outcome: "failed", inputsHash: "h2:current", finishedAt: now }),
      },
      { decision: { reason: "InputsChangedBackoff" } },
      { status: "False", reason: "InputsApplyFailed" },
    ],
    [
      "an interrupted apply is on record",
      { role: "cluster", state: stateOk("h2:current"), currentHash: "h2:current", interruptedApply: true },
      {},
      { status: "False", reason: "ApplyPending" },
    ],
    [
      "the inputs cannot be built",
      {
        state: { kind: "absent" },
        inputs: { kind: "pending", reason: "WaitingForBootstrapData", message: "m", condition: "DependenciesReady", status: "Unknown" },
      },
      {},
      { status: "Unknown", reason: "InputsUnavailable" },
    ],
    [
      "deleting: left as it is",
      { deleting: true, deletionPolicy: "Destroy", state: stateOk("h2:current"), currentHash: "h2:current" },
      {},
      undefined,
    ],
    ["paused: left as it is", { paused: true, state: stateOk("h2:current"), currentHash: "h2:current" }, {}, undefined],
    ["before the state was read: left as it is", { currentHash: "h2:current" }, {}, undefined],
  ])("%s", (_name, facts, outcome, expected) => {
    expect(conditionOf("InputsApplied", scopeOf(facts), outcome)).toEqual(expected);
  });
});

describe("computeStatus: drift conditions", () => {
  const drift = { action: "Remediate" as const };
  const found = { detected: true, add: 0, change: 1, destroy: 0, resources: ["null_resource.a"] };
  it.each<[string, Partial<StatusScope>, PassOutcome, string, Partial<Condition> | undefined]>([
    ["first visit: DriftDetected not checked", { drift }, {}, "DriftDetected", { status: "Unknown", reason: "DriftNotChecked" }],
    ["first visit: DriftJobSucceeded not checked", { drift }, {}, "DriftJobSucceeded", { status: "Unknown", reason: "DriftNotChecked" }],
    [
      "a drift check runs",
      { drift, previous: previousOf(["DriftJobSucceeded", "Unknown", "DriftNotChecked"]) },
      { active: { name: "d", op: "drift", attempt: 1, remediation: false } },
      "DriftJobSucceeded",
      { status: "Unknown", reason: "DriftJobRunning" },
    ],
    [
      "a later check runs: the newest outcome stays",
      { drift, previous: previousOf(["DriftJobSucceeded", "True", "DriftChecked"]) },
      { active: { name: "d", op: "drift", attempt: 1, remediation: false } },
      "DriftJobSucceeded",
      { status: "True", reason: "DriftChecked" },
    ],
    [
      "a check that failed this pass is reported, though its retry started",
      { drift: { ...drift, newestCheck: job({ op: "drift", outcome: "failed", finishedAt: now }) } },
      { active: { name: "d2", op: "drift", attempt: 2, remediation: false } },
      "DriftJobSucceeded",
      { status: "False", reason: "DriftJobFailed" },
    ],
    [
      "a check found drift and its remediation apply started",
      {
        role: "cluster",
        drift: { ...drift, newestCheck: job({ op: "drift", outcome: "succeeded", finishedAt: now, result: result({ drift: found }) }) },
      },
      { active: { name: "a", op: "apply", attempt: 1, remediation: true } },
      "DriftDetected",
      { status: "True", reason: "DriftRemediating" },
    ],
    [
      "drift to remediate whose apply has not started",
      {
        role: "cluster",
        drift: { ...drift, newestCheck: job({ op: "drift", outcome: "succeeded", finishedAt: now, result: result({ drift: found }) }) },
      },
      {},
      "DriftDetected",
      { status: "True", reason: "DriftPending" },
    ],
    [
      "a remediation apply succeeded",
      { role: "cluster", drift: { ...drift, remediatedBy: "a" }, previous: previousOf(["DriftDetected", "True", "DriftRemediating"]) },
      {},
      "DriftDetected",
      { status: "False", reason: "NoDrift" },
    ],
    [
      "a check found none",
      {
        drift: {
          ...drift,
          newestCheck: job({
            op: "drift",
            outcome: "succeeded",
            finishedAt: now,
            result: result({ drift: { ...found, detected: false } }),
          }),
        },
      },
      {},
      "DriftJobSucceeded",
      { status: "True", reason: "DriftChecked" },
    ],
    [
      "a check reached its deadline",
      { drift: { ...drift, newestCheck: job({ op: "drift", outcome: "failed", finishedAt: now, deadlineExceeded: true }) } },
      {},
      "DriftJobSucceeded",
      { status: "False", reason: "DriftJobDeadlineExceeded" },
    ],
    [
      "a check failed",
      { drift: { ...drift, newestCheck: job({ op: "drift", outcome: "failed", finishedAt: now }) } },
      {},
      "DriftJobSucceeded",
      { status: "False", reason: "DriftJobFailed" },
    ],
    ["no drift phase ran: left as it is", {}, {}, "DriftDetected", undefined],
  ])("%s", (_name, facts, outcome, type, expected) => {
    expect(conditionOf(type, scopeOf(facts), outcome)).toEqual(expected);
  });
});

describe("computeStatus: one setter per condition", () => {
  it.each<[string, Partial<StatusScope>, PassOutcome, string, Partial<Condition> | undefined]>([
    [
      "a provisioned cluster with an endpoint",
      { role: "cluster", provisioned: true, endpointHost: "10.0.0.1" },
      {},
      "EndpointAvailable",
      { status: "True", reason: "EndpointAvailable" },
    ],
    [
      "a provisioned cluster without one",
      { role: "cluster", provisioned: true },
      {},
      "EndpointAvailable",
      { status: "False", reason: "WaitingForEndpoint" },
    ],
    ["a cluster not provisioned yet: no endpoint condition", { role: "cluster" }, {}, "EndpointAvailable", undefined],
    ["first visit: no apply yet", {}, {}, "ApplyJobSucceeded", { status: "Unknown", reason: "NoApplyYet" }],
    [
      "first visit that starts the apply: its outcome comes when it finishes",
      {},
      { active: { name: "a", op: "apply", attempt: 1, remediation: false } },
      "ApplyJobSucceeded",
      undefined,
    ],
    [
      "the first apply a quota held back runs: the wait is over",
      { previous: previousOf(["ApplyJobSucceeded", "Unknown", "JobQuotaExceeded"]) },
      { active: { name: "a", op: "apply", attempt: 1, remediation: false } },
      "ApplyJobSucceeded",
      { status: "Unknown", reason: "NoApplyYet" },
    ],
    [
      "a wait wins over the newest Job",
      { newestJob: job({ op: "apply", outcome: "succeeded", finishedAt: now, result: result() }) },
      { wait: { type: "ApplyJobSucceeded", value: { status: "Unknown", reason: "WaitingForRunLease" } } },
      "ApplyJobSucceeded",
      { status: "Unknown", reason: "WaitingForRunLease" },
    ],
    [
      "the newest apply succeeded",
      { newestJob: job({ op: "apply", outcome: "succeeded", finishedAt: now, result: result() }) },
      {},
      "ApplyJobSucceeded",
      { status: "True", reason: "ApplySucceeded" },
    ],
    [
      "a plan Job that succeeded without a readable plan",
      {
        newestJob: job({ op: "plan", outcome: "failed", finishedAt: now, result: result({ op: "plan" } as Partial<RunResult>) }),
        previous: previousOf(["ApplyJobSucceeded", "True", "ApplySucceeded"]),
      },
      {},
      "ApplyJobSucceeded",
      { status: "False", reason: "ApplyFailed" },
    ],
    [
      "a plan Job that showed its plan leaves the apply's outcome",
      {
        newestJob: job({
          op: "plan",
          outcome: "succeeded",
          finishedAt: now,
          result: result({ op: "plan", plan: { hash: "p1:x" } } as Partial<RunResult>),
        }),
        previous: previousOf(["ApplyJobSucceeded", "False", "ApplyFailed"]),
      },
      {},
      "ApplyJobSucceeded",
      { status: "False", reason: "ApplyFailed" },
    ],
    [
      "an apply vanished while it ran",
      { role: "cluster", vanishedApply: "a", previous: previousOf(["ApplyJobSucceeded", "True", "ApplySucceeded"]) },
      {},
      "ApplyJobSucceeded",
      { status: "False", reason: "ApplyFailed" },
    ],
    [
      "inputs too large",
      { inputs: { kind: "pending", reason: "InputsTooLarge", message: "m", condition: "ApplyJobSucceeded", status: "False" } },
      {},
      "ApplyJobSucceeded",
      { status: "False", reason: "InputsTooLarge" },
    ],
    [
      "inputs too large after a successful apply: the inputs, not that apply's success",
      {
        inputs: { kind: "pending", reason: "InputsTooLarge", message: "m", condition: "ApplyJobSucceeded", status: "False" },
        newestJob: job({ op: "apply", outcome: "succeeded", finishedAt: now, result: result() }),
      },
      {},
      "ApplyJobSucceeded",
      { status: "False", reason: "InputsTooLarge" },
    ],
    [
      "inputs too large while deleting: the destroy's outcome",
      {
        deleting: true,
        inputs: { kind: "pending", reason: "InputsTooLarge", message: "m", condition: "ApplyJobSucceeded", status: "False" },
        newestJob: job({ op: "destroy", outcome: "succeeded", finishedAt: now, result: result({ op: "destroy" } as Partial<RunResult>) }),
      },
      {},
      "ApplyJobSucceeded",
      { status: "True", reason: "DestroySucceeded" },
    ],
    [
      "inputs too large: the owners are there",
      { inputs: { kind: "pending", reason: "InputsTooLarge", message: "m", condition: "ApplyJobSucceeded", status: "False" } },
      {},
      "DependenciesReady",
      { status: "True", reason: "DependenciesReady" },
    ],
    ["no owner yet", { inputs: { kind: "none" } }, {}, "DependenciesReady", { status: "Unknown", reason: "WaitingForOwner" }],
    ["no owner while deleting: left as it is", { inputs: { kind: "none" }, deleting: true }, {}, "DependenciesReady", undefined],
    [
      "retained state in the way",
      { state: stateOk("h"), retainedBy: ["u1"] },
      {},
      "StateReadable",
      { status: "False", reason: "RetainedStateFound" },
    ],
    [
      "a foreign lock",
      { state: stateOk("h"), lock: { kind: "foreign", holder: "laptop" } },
      {},
      "StateReadable",
      { status: "False", reason: "StateLocked" },
    ],
    [
      "a lost state wins over a lock",
      { state: { kind: "absent" }, stateLost: true, lock: { kind: "foreign", holder: "laptop" } },
      {},
      "StateReadable",
      { status: "False", reason: "StateLost" },
    ],
    ["no state yet", { state: { kind: "absent" } }, {}, "StateReadable", { status: "Unknown", reason: "StateNotFound" }],
    [
      "a requested backup is missing",
      { restoreBackupNotFound: "7" },
      {},
      "RestoreJobSucceeded",
      { status: "False", reason: "RestoreBackupNotFound" },
    ],
    [
      "a restore succeeded",
      { restores: [{ job: "r", serial: 4, succeeded: true }] },
      {},
      "RestoreJobSucceeded",
      { status: "True", reason: "StateRestored" },
    ],
    [
      "a deleting cluster with machines",
      { role: "cluster", deleting: true, deletionPolicy: "Destroy", dependents: 2 },
      {},
      "DeletionBlocked",
      { status: "True", reason: "DependentsExist" },
    ],
    ["deleting without a resolvable policy", { deleting: true }, {}, "Deleting", { status: "True", reason: "DeletionPolicyUnresolved" }],
    [
      "a refused ServiceAccount wins over the resolver's RBAC",
      {
        credentials: [{ type: "RunnerRBACReady", value: { status: "True", reason: "RBACReady" } }],
        serviceAccount: { status: "False", reason: "ServiceAccountNotOptedIn" },
      },
      {},
      "RunnerRBACReady",
      { status: "False", reason: "ServiceAccountNotOptedIn" },
    ],
  ])("%s", (_name, facts, outcome, type, expected) => {
    expect(conditionOf(type, scopeOf(facts), outcome)).toEqual(expected);
  });

  it("says a paused object's deletion waits, naming what pauses it, instead of Deleting", () => {
    const deletingOf = (facts: Partial<StatusScope>) =>
      (computeStatus(scopeOf({ deleting: true, deletionPolicy: "Destroy", ...facts }), {}).conditions as Condition[]).find(
        (condition) => condition.type === "Deleting",
      );
    expect(deletingOf({ paused: true, pausedBy: "Cluster" })).toMatchObject({
      status: "True",
      reason: "DeletionPaused",
      message: "deletion waits: the Cluster c is paused (spec.paused); it goes on once reconciliation resumes",
    });
    expect(deletingOf({ paused: true, pausedBy: "annotation" })).toMatchObject({
      status: "True",
      reason: "DeletionPaused",
      message: "deletion waits: the object is paused (annotation cluster.x-k8s.io/paused); it goes on once reconciliation resumes",
    });
    expect(deletingOf({ paused: false })).toMatchObject({ status: "True", reason: "Deleting" });
    expect(conditionOf("Deleting", scopeOf({ paused: true, pausedBy: "Cluster" }))).toEqual({ status: "False", reason: "NotDeleting" });
  });

  it("keeps a condition it does not compute, and its transition time when the status stays", () => {
    const previous = previousOf(["AutoscalingActive", "True", "ReplicasManagedByModule"], ["Paused", "False", "NotPaused"]);
    const conditions = computeStatus(scopeOf({ previous }), {}).conditions as Condition[];
    expect(conditions.find((c) => c.type === "AutoscalingActive")).toEqual(previous[0]);
    expect(conditions.find((c) => c.type === "Paused")?.lastTransitionTime).toBe(earlier);
  });

  it("reports a finished destroy Job as the destroy's outcome: DestroySucceeded, or DestroyFailed with the runner's summary", () => {
    const deleting = { deleting: true, deletionPolicy: "Destroy" as const };
    const destroyed = job({
      op: "destroy",
      outcome: "succeeded",
      finishedAt: now,
      result: result({ op: "destroy" } as Partial<RunResult>),
    });
    expect(conditionOf("ApplyJobSucceeded", scopeOf({ ...deleting, newestJob: destroyed }))).toEqual({
      status: "True",
      reason: "DestroySucceeded",
    });
    const error = { kind: "step", step: "destroy", summary: "Error: deleting the instance: 403" };
    const failed = job({
      op: "destroy",
      outcome: "failed",
      finishedAt: now,
      result: result({ op: "destroy", error } as Partial<RunResult>),
    });
    const written = (computeStatus(scopeOf({ ...deleting, newestJob: failed }), {}).conditions as Condition[]).find(
      (condition) => condition.type === "ApplyJobSucceeded",
    );
    expect(written).toMatchObject({ status: "False", reason: "DestroyFailed", message: error.summary });
    // A destroy stopped before its runner reported.
    const vanished = job({ op: "destroy", outcome: "failed", finishedAt: now });
    expect(conditionOf("ApplyJobSucceeded", scopeOf({ ...deleting, newestJob: vanished }))).toEqual({
      status: "False",
      reason: "DestroyFailed",
    });
  });

  it("writes activeJob null when no Job runs, and the running Job otherwise", () => {
    expect(computeStatus(scopeOf(), {}).activeJob).toBeNull();
    expect(computeStatus(scopeOf(), { active: { name: "a", op: "apply", attempt: 2, remediation: false } }).activeJob).toEqual({
      name: "a",
      operation: "apply",
      attempt: 2,
    });
  });
});

describe("Ready as the summary", () => {
  const healthy = previousOf(["InfrastructureHealthy", "True", "Healthy"], ["Deleting", "False", "NotDeleting"]);
  it.each<[string, StatusScope["role"], boolean, Condition[], Partial<Condition>]>([
    ["a provisioned machine in good health", "machine", true, healthy, { status: "True", reason: "Ready" }],
    [
      "a provisioned machine whose health is unknown",
      "machine",
      true,
      previousOf(["InfrastructureHealthy", "Unknown", "HealthUnknown"]),
      { status: "False", reason: "NotReady" },
    ],
    [
      "a provisioned cluster whose re-apply failed stays ready",
      "cluster",
      true,
      [...healthy, ...previousOf(["ApplyJobSucceeded", "False", "ApplyFailed"])],
      { status: "True", reason: "Ready" },
    ],
    [
      "a provisioned pool whose re-apply failed is not",
      "machinepool",
      true,
      [...healthy, ...previousOf(["ApplyJobSucceeded", "False", "ApplyFailed"])],
      { status: "False", reason: "NotReady" },
    ],
    [
      "a deleting machine is not",
      "machine",
      true,
      previousOf(["InfrastructureHealthy", "True", "Healthy"], ["Deleting", "True", "Deleting"]),
      { status: "False", reason: "NotReady" },
    ],
    ["before provisioning an absent input is not good", "machine", false, healthy, { status: "False", reason: "NotReady" }],
  ])("%s", (_name, role, provisioned, conditions, expected) => {
    expect(readySummary(conditions, readyInputs(role, provisioned))).toMatchObject(expected);
  });

  it("names the inputs that are not good", () => {
    expect(readySummary(previousOf(["InfrastructureHealthy", "False", "InstanceStopped"]), readyInputs("machine", true)).message).toBe(
      "InfrastructureHealthy is False (InstanceStopped)",
    );
  });

  it("is the summary computeStatus writes", () => {
    const scope = scopeOf({
      provisioned: true,
      outputs: { outputsValid: { status: "True", reason: "OutputsValid" }, health: { status: "True", reason: "Healthy" } },
    });
    expect(conditionOf("Ready", scope)).toEqual({ status: "True", reason: "Ready" });
    expect(computeStatus(scope, {}).initialization).toEqual({ provisioned: true });
  });
});
