import { describe, expect, it } from "@jest/globals";
import {
  appliedImageChain,
  backoffMs,
  consecutiveFailures,
  decideOperation,
  destroyInputsMismatchNote,
  imageFallbacks,
  jitterMs,
  jobRun,
  nextPendingRefreshes,
  type Decision,
  type FinishedJob,
  type Observed,
} from "./decide-operation.js";

const minute = 60_000;
const now = 1_000 * minute;

function observed(overrides: Partial<Observed> = {}): Observed {
  return {
    role: "cluster",
    uid: "uid-1",
    now,
    createdAt: now - 100 * minute,
    deleting: false,
    state: { kind: "present", inputsHash: "h2:a", health: "running" },
    currentInputsHash: "h2:a",
    jobs: [{ op: "apply", outcome: "succeeded", finishedAt: now - 5 * minute, inputsHash: "h2:a" }],
    drift: { intervalSeconds: 1800, action: "Report", detected: false, lastCheckAt: now - 10 * minute },
    health: { state: "running", pendingRefreshes: 0, lastRefreshAt: now - 4 * minute, appliedReadingDefinite: true },
    ...overrides,
  };
}

const failed = (op: FinishedJob["op"], minutesAgo: number, extra: Partial<FinishedJob> = {}): FinishedJob => ({
  op,
  outcome: "failed",
  finishedAt: now - minutesAgo * minute,
  ...extra,
});

const table: [string, Partial<Observed>, Partial<Decision>][] = [
  [
    "a running Job is waited for",
    { activeJob: { name: "j", op: "apply" } },
    { op: undefined, reason: "JobActive", requeueAfterMs: minute },
  ],
  [
    "a restore request comes before an apply",
    { restoreRequested: true, currentInputsHash: "h2:b" },
    { op: "restore", reason: "RestoreRequested" },
  ],
  [
    "a restore request restores a lost state",
    { restoreRequested: true, state: { kind: "unreadable" } },
    { op: "restore", reason: "RestoreRequested" },
  ],
  ["deletion wins over a restore request", { restoreRequested: true, deleting: true }, { op: "destroy", reason: "Deleting" }],
  [
    "a deletion held by a lost state runs the restore asked for",
    { restoreRequested: true, deleting: true, state: { kind: "unreadable" } },
    { op: "restore", reason: "RestoreRequested" },
  ],
  [
    "deleting with unreadable state holds",
    { deleting: true, state: { kind: "unreadable" } },
    { reason: "DeletionHeld", requeueAfterMs: minute },
  ],
  [
    "deleting without state drops the finalizer",
    { deleting: true, state: { kind: "absent" } },
    { dropFinalizer: true, reason: "DeletingWithoutState" },
  ],
  [
    "deleting with a state of no resources drops the finalizer and the empty state, without a destroy",
    { deleting: true, state: { kind: "present", managedResources: 0 } },
    { dropFinalizer: true, cleanupState: true, reason: "DeletingWithoutState" },
  ],
  [
    "deleting with a state of resources destroys them",
    { deleting: true, state: { kind: "present", managedResources: 2 } },
    { op: "destroy", reason: "Deleting" },
  ],
  ["deleting destroys", { deleting: true }, { op: "destroy", reason: "Deleting" }],
  [
    "a deleting cluster waits for its machines and pools",
    { deleting: true, dependents: 2 },
    { op: undefined, reason: "DependentsExist", requeueAfterMs: minute / 2 },
  ],
  ["a deleting cluster without dependents destroys", { deleting: true, dependents: 0 }, { op: "destroy", reason: "Deleting" }],
  ["a deleting machine ignores dependents", { role: "machine", deleting: true, dependents: 2 }, { op: "destroy", reason: "Deleting" }],
  [
    "a successful destroy ends the deletion",
    {
      deleting: true,
      jobs: [
        { op: "apply", outcome: "succeeded", finishedAt: now - 9 * minute },
        { op: "destroy", outcome: "succeeded", finishedAt: now - minute },
      ],
    },
    { op: undefined, dropFinalizer: true, cleanupState: true, reason: "Destroyed" },
  ],
  [
    "a failed destroy is retried after its backoff",
    { deleting: true, jobs: [failed("destroy", 3)] },
    { op: "destroy", reason: "Deleting" },
  ],
  ["unreadable state runs nothing", { state: { kind: "unreadable" } }, { op: undefined, reason: "StateUnreadable" }],
  ["no state applies", { state: { kind: "absent" }, jobs: [] }, { op: "apply", reason: "NoState" }],
  ["state without a hash applies", { state: { kind: "present" } }, { op: "apply", reason: "StateWithoutInputsHash" }],
  ["changed inputs re-apply a cluster, guarded", { currentInputsHash: "h2:b" }, { op: "apply", reason: "InputsChanged", guard: {} }],
  ["changed inputs never re-apply a machine", { role: "machine", currentInputsHash: "h2:b" }, { op: undefined }],
  [
    "a pool applies changed inputs unguarded while its cluster exports are unchanged",
    { role: "machinepool", currentInputsHash: "h2:b" },
    { op: "apply", reason: "InputsChanged", guard: undefined },
  ],
  [
    "a pool rendering changed cluster exports applies guarded",
    { role: "machinepool", currentInputsHash: "h2:b", approvalHash: "h2:pb", exportsChanged: true },
    { op: "apply", reason: "InputsChanged", guard: {} },
  ],
  [
    "a pool's approval names its approval hash",
    { role: "machinepool", currentInputsHash: "h2:b", approvalHash: "h2:pb", approvedDestructiveHash: "h2:pb", exportsChanged: true },
    { op: "apply", guard: { allowDeletesHash: "h2:pb" } },
  ],
  [
    "a pool whose change of the exports may be partly applied applies guarded, even with the applied exports",
    { role: "machinepool", currentInputsHash: "h2:b", approvalHash: "h2:pb", exportsChanged: false, exportsPartlyApplied: true },
    { op: "apply", reason: "InputsChanged", guard: {} },
  ],
  [
    "a pool with the applied exports and nothing partly applied applies unguarded",
    { role: "machinepool", currentInputsHash: "h2:b", approvalHash: "h2:pb", exportsChanged: false },
    { op: "apply", reason: "InputsChanged", guard: undefined },
  ],
  [
    "a blocked pool apply waits for approval",
    {
      role: "machinepool",
      currentInputsHash: "h2:b",
      approvalHash: "h2:pb",
      exportsChanged: true,
      jobs: [{ op: "apply", outcome: "blocked", finishedAt: now - minute, inputsHash: "h2:b" }],
    },
    { op: undefined, reason: "DestructivePlanBlocked" },
  ],
  [
    "a blocked pool apply still waits after its bootstrap data rotated",
    {
      role: "machinepool",
      currentInputsHash: "h2:c",
      approvalHash: "h2:pb",
      exportsChanged: true,
      jobs: [{ op: "apply", outcome: "blocked", finishedAt: now - minute, inputsHash: "h2:b", approvalHash: "h2:pb" }],
    },
    { op: undefined, reason: "DestructivePlanBlocked" },
  ],
  [
    "a blocked pool apply is retried for other inputs",
    {
      role: "machinepool",
      currentInputsHash: "h2:c",
      approvalHash: "h2:pc",
      exportsChanged: true,
      jobs: [{ op: "apply", outcome: "blocked", finishedAt: now - minute, inputsHash: "h2:b", approvalHash: "h2:pb" }],
    },
    { op: "apply", reason: "InputsChanged", guard: {} },
  ],
  [
    "changed inputs re-apply a pool, unguarded here",
    {
      role: "machinepool",
      currentInputsHash: "h2:b",
      pool: { membershipRefreshIntervalSeconds: 60, providerIDCount: 3, statusReplicas: 3 },
    },
    { op: "apply", reason: "InputsChanged", guard: undefined },
  ],
  ["a failed apply is retried after its backoff", { jobs: [failed("apply", 2)] }, { op: "apply", reason: "LastApplyFailed" }],
  [
    "an apply that vanished while it ran leaves the current inputs due, guarded",
    { interruptedApply: true },
    { op: "apply", reason: "ApplyInterrupted", guard: {} },
  ],
  ["a machine has no interrupted applies", { role: "machine", interruptedApply: true }, { op: undefined }],
  [
    "an apply whose state was not saved holds everything: no retry, drift or refresh",
    {
      jobs: [{ op: "apply", outcome: "state-save", finishedAt: now - 60 * minute, inputsHash: "h2:a" }],
      drift: { intervalSeconds: 60, action: "Remediate", detected: true, lastCheckAt: now - 90 * minute },
    },
    { op: undefined, reason: "StateNotSaved", requeueAfterMs: 10 * minute },
  ],
  [
    "an apply whose state was not saved holds a pool after its bootstrap data rotated",
    {
      role: "machinepool",
      currentInputsHash: "h2:c",
      approvalHash: "h2:pb",
      jobs: [{ op: "apply", outcome: "state-save", finishedAt: now - minute, inputsHash: "h2:b", approvalHash: "h2:pb" }],
    },
    { op: undefined, reason: "StateNotSaved" },
  ],
  [
    "an apply whose state was not saved holds a machine, whose inputs are pinned",
    {
      role: "machine",
      currentInputsHash: undefined,
      state: { kind: "absent" },
      jobs: [{ op: "apply", outcome: "state-save", finishedAt: now - minute, inputsHash: "h2:a" }],
    },
    { op: undefined, reason: "StateNotSaved" },
  ],
  [
    "changed inputs end the hold of a state not saved",
    { currentInputsHash: "h2:b", jobs: [{ op: "apply", outcome: "state-save", finishedAt: now - minute, inputsHash: "h2:a" }] },
    { op: "apply", reason: "InputsChanged", guard: {} },
  ],
  [
    "a failed apply waits out its backoff",
    { jobs: [failed("apply", 0.5)] },
    { op: undefined, reason: "LastApplyFailedBackoff", requeueAfterMs: minute / 2 },
  ],
  [
    "a blocked apply of the same inputs waits for approval",
    { currentInputsHash: "h2:b", jobs: [{ op: "apply", outcome: "blocked", finishedAt: now - minute, inputsHash: "h2:b" }] },
    { op: undefined, reason: "DestructivePlanBlocked" },
  ],
  [
    "an approved blocked apply runs with the approval",
    {
      currentInputsHash: "h2:b",
      approvedDestructiveHash: "h2:b",
      jobs: [{ op: "apply", outcome: "blocked", finishedAt: now - minute, inputsHash: "h2:b" }],
    },
    { op: "apply", reason: "InputsChanged", guard: { allowDeletesHash: "h2:b" } },
  ],
  [
    "Manual: changed inputs need a plan first",
    { applyPolicy: "Manual", currentInputsHash: "h2:b" },
    { op: "plan", reason: "InputsChangedPlanNeeded" },
  ],
  [
    "Manual: an unapproved plan waits",
    { applyPolicy: "Manual", currentInputsHash: "h2:b", plan: { inputsHash: "h2:b", planHash: "p1:x", empty: false } },
    { op: undefined, reason: "PlanAwaitingApproval" },
  ],
  [
    "Manual: an approved plan applies only that plan",
    {
      applyPolicy: "Manual",
      currentInputsHash: "h2:b",
      plan: { inputsHash: "h2:b", planHash: "p1:x", empty: false },
      approvedPlanHash: "p1:x",
    },
    { op: "apply", expectPlan: "p1:x" },
  ],
  [
    "Manual: an empty plan never waits",
    { applyPolicy: "Manual", currentInputsHash: "h2:b", plan: { inputsHash: "h2:b", planHash: "p1:e", empty: true } },
    { op: "apply", expectPlan: "p1:e" },
  ],
  [
    "Manual: the first apply is not gated",
    { applyPolicy: "Manual", state: { kind: "absent" }, jobs: [] },
    { op: "apply", reason: "NoState" },
  ],
  [
    "drift with Remediate re-applies",
    { drift: { intervalSeconds: 1800, action: "Remediate", detected: true, lastCheckAt: now - minute } },
    { op: "apply", reason: "DriftRemediation", remediation: true },
  ],
  [
    "drift with Report only reports",
    { drift: { intervalSeconds: 1800, action: "Report", detected: true, lastCheckAt: now - minute } },
    { op: undefined, reason: "UpToDate" },
  ],
  [
    "drift is checked one interval after the last check",
    { drift: { intervalSeconds: 1800, action: "Report", detected: false, lastCheckAt: now - 31 * minute } },
    { op: "drift", reason: "DriftDue" },
  ],
  [
    "a machine is refreshed after an apply without a definite reading",
    { role: "machine", health: { state: "pending", pendingRefreshes: 0, appliedReadingDefinite: false } },
    { op: "refresh", reason: "RefreshAfterApply" },
  ],
  [
    "pending health backs off",
    { role: "machine", health: { state: "pending", pendingRefreshes: 3, lastRefreshAt: now - 2 * minute } },
    { op: undefined, reason: "UpToDate" },
  ],
  [
    "pending health is read again when due",
    { role: "machine", health: { state: "pending", pendingRefreshes: 0, lastRefreshAt: now - 2 * minute } },
    { op: "refresh", reason: "HealthPending" },
  ],
  [
    "a pool whose apply read fewer members than its replicas is refreshed right after",
    {
      role: "machinepool",
      pool: { membershipRefreshIntervalSeconds: 60, providerIDCount: 1, statusReplicas: 3 },
      jobs: [{ op: "apply", outcome: "succeeded", finishedAt: now - 10_000, inputsHash: "h2:a" }],
      health: { state: "running", pendingRefreshes: 0, appliedReadingDefinite: false },
    },
    { op: "refresh", reason: "RefreshAfterApply" },
  ],
  [
    "a pool whose apply read every member is not refreshed until its interval",
    {
      role: "machinepool",
      pool: { membershipRefreshIntervalSeconds: 60, providerIDCount: 3, statusReplicas: 3 },
      jobs: [{ op: "apply", outcome: "succeeded", finishedAt: now - 10_000, inputsHash: "h2:a" }],
      health: { state: "running", pendingRefreshes: 0, appliedReadingDefinite: true },
    },
    { op: undefined, reason: "UpToDate" },
  ],
  [
    "a converging pool is read every 30 s",
    {
      role: "machinepool",
      pool: { membershipRefreshIntervalSeconds: 60, providerIDCount: 1, statusReplicas: 3 },
      health: { state: "running", pendingRefreshes: 0, lastRefreshAt: now - 31_000 },
    },
    { op: "refresh", reason: "MembershipConverging" },
  ],
  [
    "a settled pool is read on its interval",
    {
      role: "machinepool",
      pool: { membershipRefreshIntervalSeconds: 60, providerIDCount: 3, statusReplicas: 3 },
      health: { state: "running", pendingRefreshes: 0, lastRefreshAt: now - 2 * minute },
    },
    { op: "refresh", reason: "MembershipRefreshDue" },
  ],
];

describe("decideOperation", () => {
  it.each(table)("%s", (_, overrides, expected) => {
    const decision = decideOperation(observed(overrides));
    for (const [key, value] of Object.entries(expected)) expect([key, decision[key as keyof Decision]]).toEqual([key, value]);
  });

  it("requeues an up-to-date object at its next deadline", () => {
    const decision = decideOperation(observed());
    expect(decision.op).toBeUndefined();
    expect(decision.reason).toBe("UpToDate");
    const driftDue = 20 * minute + jitterMs("uid-1", 30 * minute);
    expect(decision.requeueAfterMs).toBe(driftDue);
  });

  it("is pure: the same observation gives the same decision", () => {
    for (const [, overrides] of table) expect(decideOperation(observed(overrides))).toEqual(decideOperation(observed(overrides)));
  });
});

describe("backoff", () => {
  it("doubles from 1 m and caps at 10 m, straight 10 m at the failed limit", () => {
    expect([1, 2, 3, 4].map((n) => backoffMs(n, 3) / minute)).toEqual([1, 2, 10, 10]);
    expect([1, 2, 3, 4, 5, 6].map((n) => backoffMs(n, 5) / minute)).toEqual([1, 2, 4, 8, 10, 10]);
    expect(backoffMs(0, 3)).toBe(0);
  });

  it("counts failures since the newest success, not interruptions, blocks or plan changes", () => {
    const jobs: FinishedJob[] = [
      failed("apply", 1),
      { op: "apply", outcome: "interrupted", finishedAt: now - 2 * minute },
      failed("apply", 3),
      { op: "apply", outcome: "blocked", finishedAt: now - 4 * minute },
      { op: "apply", outcome: "succeeded", finishedAt: now - 5 * minute },
      failed("apply", 6),
      failed("drift", 0.1),
    ];
    expect(consecutiveFailures(jobs, "apply")).toEqual({ count: 2, newestFinishedAt: now - minute });
  });

  it("spreads objects by a jitter below a tenth of the interval", () => {
    const values = ["a", "b", "c", "d"].map((uid) => jitterMs(uid, 10 * minute));
    for (const value of values) expect(value).toBeLessThan(minute);
    expect(new Set(values).size).toBe(4);
  });
});

describe("pending health", () => {
  it("counts consecutive pending samples, restarts on an apply and clears on another reading", () => {
    expect(nextPendingRefreshes(0, "pending", { applied: true, sampled: false })).toBe(0);
    expect(nextPendingRefreshes(0, "pending", { applied: false, sampled: true })).toBe(1);
    expect(nextPendingRefreshes(3, "pending", { applied: false, sampled: true })).toBe(4);
    expect(nextPendingRefreshes(3, "pending", { applied: false, sampled: false })).toBe(3);
    expect(nextPendingRefreshes(3, "pending", { applied: true, sampled: false })).toBe(0);
    expect(nextPendingRefreshes(3, "running", { applied: false, sampled: true })).toBe(0);
  });

  it("refreshes 30 s, 1 m, 2 m, 4 m, then every 5 m after each pending refresh (plus the jitter)", () => {
    const steps = [30_000, 60_000, 120_000, 240_000, 300_000, 300_000];
    [1, 2, 3, 4, 5, 9].forEach((pendingRefreshes, index) => {
      const decision = decideOperation(
        observed({
          role: "machine",
          drift: { intervalSeconds: 0, action: "Report", detected: false },
          health: { state: "pending", pendingRefreshes, lastRefreshAt: now },
        }),
      );
      expect(decision).toEqual({ reason: "UpToDate", requeueAfterMs: steps[index]! + jitterMs("uid-1", steps[index]!) });
    });
  });
});

describe("jobRun: what a decided Job runs with", () => {
  const jobs = [
    { op: "apply" as const, attempt: 1, outcome: "succeeded" as const, finishedAt: 1_000 },
    { op: "drift" as const, attempt: 2, outcome: "succeeded" as const, finishedAt: 5_000 },
    { op: "drift" as const, attempt: 1, outcome: "succeeded" as const, finishedAt: 3_000 },
  ];
  const facts = {
    jobs,
    image: "m:v2",
    currentInputsHash: "h2:now",
    stateInputsHash: "h2:state",
    applied: { inputsHash: "h2:applied", image: "m:v1", imageDigest: "m@sha256:aa" },
  };
  it.each([
    [
      "an apply runs the spec's image and the current hash",
      { reason: "InputsChanged", op: "apply" as const },
      facts,
      { attempt: 2, inputsHash: "h2:now", image: "m:v2", digestUnknown: false },
    ],
    [
      "a plan too",
      { reason: "InputsChangedPlanNeeded", op: "plan" as const },
      facts,
      { attempt: 1, inputsHash: "h2:now", image: "m:v2", digestUnknown: false },
    ],
    [
      "a drift check runs the pinned digest on the state's hash, named after the last check",
      { reason: "DriftDue", op: "drift" as const },
      facts,
      { attempt: 3, inputsHash: "h2:state", image: "m@sha256:aa", tick: "5000" },
    ],
    [
      "a refresh without a pinned digest runs the applied reference",
      { reason: "RefreshAfterApply", op: "refresh" as const },
      { ...facts, applied: { image: "m:v1" } },
      { attempt: 1, image: "m:v1", digestUnknown: true, tick: "0" },
    ],
    [
      "a destroy without a state hash carries the applied one",
      { reason: "Deleting", op: "destroy" as const },
      { jobs, image: "m:v2", applied: { inputsHash: "h2:applied" } },
      { inputsHash: "h2:applied", image: "m:v2", digestUnknown: true },
    ],
    [
      "a remediation apply is named after the finding",
      { reason: "DriftRemediation", op: "apply" as const, remediation: true },
      facts,
      { tick: "remediate/5000" },
    ],
    [
      "a restore carries its backup's hash and is named after it",
      { reason: "RestoreRequested", op: "restore" as const },
      { ...facts, restore: { inputsHash: "h2:backup", firstSecret: "b-1" } },
      { inputsHash: "h2:backup", tick: "restore/b-1" },
    ],
    [
      "a restore of a backup without a hash carries none",
      { reason: "RestoreRequested", op: "restore" as const },
      { ...facts, restore: { firstSecret: "b-1" } },
      { inputsHash: "h2:none" },
    ],
    [
      "a drift check skips a pinned digest that could not be pulled for the applied reference, its digest still known",
      { reason: "DriftDue", op: "drift" as const },
      { ...facts, applied: { ...facts.applied, unpullableImages: ["m@sha256:aa"] } },
      { image: "m:v1", digestUnknown: false, tick: "5000", fallbackFrom: ["m@sha256:aa"] },
    ],
    [
      "a destroy falls back to the spec's image when the digest and the applied reference could not be pulled",
      { reason: "Deleting", op: "destroy" as const },
      { ...facts, stateInputsHash: "h2:applied", applied: { ...facts.applied, unpullableImages: ["m@sha256:aa", "m:v1"] } },
      { image: "m:v2", inputsHash: "h2:applied", fallbackFrom: ["m@sha256:aa", "m:v1"] },
    ],
    [
      "with every image unpullable a destroy runs the spec's (only the operator can fix it)",
      { reason: "Deleting", op: "destroy" as const },
      { ...facts, stateInputsHash: "h2:applied", applied: { ...facts.applied, unpullableImages: ["m@sha256:aa", "m:v1", "m:v2"] } },
      { image: "m:v2" },
    ],
    [
      "an apply runs the spec's image even when it is listed unpullable",
      { reason: "InputsChanged", op: "apply" as const },
      { ...facts, applied: { ...facts.applied, unpullableImages: ["m:v2"] } },
      { image: "m:v2" },
    ],
  ])("%s", (_name, decision, given, expected) => {
    expect(jobRun(decision, given)).toMatchObject(expected);
  });

  it.each([
    ["the pinned digest", { reason: "DriftDue", op: "drift" as const }, facts],
    [
      "an apply, whatever could not be pulled",
      { reason: "InputsChanged", op: "apply" as const },
      { ...facts, applied: { ...facts.applied, unpullableImages: ["m@sha256:aa"] } },
    ],
  ])("no fallback for %s", (_name, decision, given) => {
    expect(jobRun(decision, given).fallbackFrom).toBeUndefined();
  });

  it.each([
    [
      "the inputs of an apply that failed after the state's",
      { ...facts, stateInputsHash: "h2:state", applied: { inputsHash: "h2:failed" } },
      { rendered: "h2:failed", state: "h2:state" },
    ],
    ["a state that records no inputs hash", { ...facts, stateInputsHash: undefined }, { rendered: "h2:applied" }],
    [
      "a cluster without durable inputs: the current ones",
      { jobs, image: "m:v2", currentInputsHash: "h2:now", stateInputsHash: "h2:state" },
      { rendered: "h2:now", state: "h2:state" },
    ],
  ])("a destroy renders inputs the state does not record: %s", (_name, given, mismatch) => {
    expect(jobRun({ reason: "Deleting", op: "destroy" }, given).destroyInputsMismatch).toEqual(mismatch);
  });

  it.each([
    ["the durable inputs hold what the state records", { ...facts, stateInputsHash: "h2:applied" }, "destroy" as const],
    ["no hash to render", { jobs, image: "m:v2", applied: {} }, "destroy" as const],
    ["a drift check renders the durable inputs but destroys nothing", facts, "drift" as const],
  ])("no mismatch when %s", (_name, given, op) => {
    expect(jobRun({ reason: "x", op }, given).destroyInputsMismatch).toBeUndefined();
  });
});

describe("image fallback", () => {
  it.each([
    ["digest, applied reference, spec image", { image: "m:v1", imageDigest: "m@sha256:aa" }, "m:v2", ["m@sha256:aa", "m:v1", "m:v2"]],
    [
      "each once: the spec still names the applied reference",
      { image: "m:v1", imageDigest: "m@sha256:aa" },
      "m:v1",
      ["m@sha256:aa", "m:v1"],
    ],
    ["no digest pinned", { image: "m:v1" }, "m:v2", ["m:v1", "m:v2"]],
    ["no durable inputs", undefined, "m:v2", ["m:v2"]],
  ])("the applied chain: %s", (_name, applied, spec, chain) => {
    expect(appliedImageChain(applied, spec)).toEqual(chain);
  });

  const chain = ["m@sha256:aa", "m:v1", "m:v2"];
  it.each([
    ["the pinned digest", "m@sha256:aa", [], ["m:v1", "m:v2"]],
    ["the applied reference, the digest already unpullable", "m:v1", ["m@sha256:aa"], ["m:v2"]],
    ["the last image", "m:v2", ["m@sha256:aa", "m:v1"], []],
    ["an image outside the chain (the spec changed since)", "m:old", [], chain],
  ])("what is left after %s", (_name, image, unpullable, left) => {
    expect(imageFallbacks(chain, image, unpullable)).toEqual(left);
  });
});

describe("destroyInputsMismatchNote", () => {
  it("names the Job, the failed apply it follows and both hashes", () => {
    expect(
      destroyInputsMismatchNote("captf-c-a-destroy-a1-abcdef", { rendered: "h2:new", state: "h2:old" }, "captf-c-a-apply-a2-123456"),
    ).toBe(
      "destroy Job captf-c-a-destroy-a1-abcdef renders the inputs of apply Job captf-c-a-apply-a2-123456, which failed and may have " +
        "changed resources (h2:new); the state records h2:old",
    );
  });

  it("says the inputs were the last applied, and that the state records no hash", () => {
    expect(destroyInputsMismatchNote("j", { rendered: "h2:new" }, undefined)).toBe(
      "destroy Job j renders the inputs last applied (h2:new); the state records no inputs hash",
    );
  });
});
