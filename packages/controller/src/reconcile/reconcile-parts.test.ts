import { describe, expect, it } from "@jest/globals";
import type { V1Job, V1Lease } from "@kubernetes/client-node";
import { KubeApiError } from "../runtime/api-errors.js";
import { goneDuringPass } from "./workspace-controller.js";
import { mergeJobPolicy } from "../jobs/merge-job-policy.js";
import { driftDetectedCondition, effectiveDriftPolicy } from "./drift-policy.js";
import { jobsToPrune } from "./job-history.js";
import { jobSlotWait } from "./job-slots.js";
import { ConditionSet } from "../conditions/conditions.js";
import { changedOrResync } from "../runtime/controller.js";
import { lineageCheck } from "./workspace-phases.js";
import { changedBeyondOwnMarks, jobFinishedOrGone, queueResult } from "./workspace-controller.js";
import { durableInputsSecretName } from "./durable-inputs.js";
import { bookkeepingAnnotations, pinnedImageReference } from "./observe-jobs.js";
import { clusterLeaseName, leaseBackstopSeconds, leaseIsFree, runLeaseName } from "./run-lease.js";

const digest = `sha256:${"ab".repeat(32)}`;

describe("pinnedImageReference", () => {
  it.each([
    ["registry.example/captf/m:v1", `registry.example/captf/m@${digest}`, `registry.example/captf/m@${digest}`],
    ["registry.example/captf/m:v1", `docker-pullable://registry.example/captf/m@${digest}`, `registry.example/captf/m@${digest}`],
    ["registry.example:5000/m:v1", digest, `registry.example:5000/m@${digest}`],
    ["registry.example:5000/m", digest, `registry.example:5000/m@${digest}`],
    [`registry.example/m@${"sha256:" + "cd".repeat(32)}`, digest, `registry.example/m@${digest}`],
  ])("pins %s with image ID %s", (image, imageId, pinned) => {
    expect(pinnedImageReference(image, imageId)).toBe(pinned);
  });

  it("pins nothing from an image ID without a digest", () => {
    expect(pinnedImageReference("m:v1", "resolver://m:v1")).toBeUndefined();
    expect(pinnedImageReference("m:v1", "")).toBeUndefined();
  });
});

describe("bookkeepingAnnotations", () => {
  it("marks every finished Job bookkept, and the outcomes that are not plain success or failure", () => {
    expect(bookkeepingAnnotations("succeeded")).toEqual({ "captf.io/bookkept": "true" });
    expect(bookkeepingAnnotations("failed")).toEqual({ "captf.io/bookkept": "true" });
    expect(bookkeepingAnnotations("blocked")).toEqual({ "captf.io/bookkept": "true", "captf.io/destructive-plan-blocked": "true" });
    expect(bookkeepingAnnotations("interrupted")).toEqual({ "captf.io/bookkept": "true", "captf.io/interrupted": "true" });
    expect(bookkeepingAnnotations("plan-changed")).toEqual({ "captf.io/bookkept": "true", "captf.io/plan-changed": "true" });
  });
});

describe("run leases", () => {
  const now = Date.parse("2026-12-02T12:00:00Z");
  const lease = (holder: string | undefined, acquiredSecondsAgo: number, durationSeconds = leaseBackstopSeconds(3600)): V1Lease => ({
    metadata: {
      name: "captf-run-x",
      annotations: { "captf.io/lease-acquired-at": new Date(now - acquiredSecondsAgo * 1000).toISOString() },
    },
    spec: { ...(holder ? { holderIdentity: holder } : {}), leaseDurationSeconds: durationSeconds },
  });
  const running: V1Job = { status: { active: 1 } };
  const finished: V1Job = { status: { conditions: [{ type: "Complete", status: "True" }] } };

  it.each([
    ["no holder", true, lease(undefined, 0), undefined],
    ["a running holder Job", false, lease("job-a", 10), running],
    ["a finished holder Job", true, lease("job-a", 10), finished],
    ["a holder Job not created yet, within the grace minute", false, lease("job-a", 30), undefined],
    ["a holder Job that never appeared, past the grace minute", true, lease("job-a", 61), undefined],
    ["a running holder past the backstop", true, lease("job-a", 4600), running],
  ])("%s: free is %s", (_what, free, value, holderJob) => {
    expect(leaseIsFree(value, { holderJob, now })).toBe(free);
  });

  it("names the run lease after the state suffix and the cluster lease after a hash of namespace/cluster", () => {
    expect(runLeaseName("m-ns-m0-abc")).toBe("captf-run-m-ns-m0-abc");
    expect(clusterLeaseName("ns", "c1")).toMatch(/^captf-cluster-[0-9a-f]{16}$/);
    expect(clusterLeaseName("ns", "c1")).not.toBe(clusterLeaseName("ns", "c2"));
    expect(leaseBackstopSeconds(3600)).toBe(4500);
  });
});

describe("durableInputsSecretName", () => {
  it("is captf-inputs-<kind>-<name>, kept at 253 characters as the reference keeps it when longer", () => {
    expect(durableInputsSecretName("machine", "m-0")).toBe("captf-inputs-m-m-0");
    expect(durableInputsSecretName("machinepool", "p")).toBe("captf-inputs-mp-p");
    const long = durableInputsSecretName("cluster", "c".repeat(250));
    expect(long).toMatch(new RegExp(`^captf-inputs-c-${"c".repeat(253 - 15 - 17)}-[0-9a-f]{16}$`));
  });
});

describe("mergeJobPolicy", () => {
  it("takes the object's fields over the cluster defaults, merges env by name and unions pull secrets", () => {
    const merged = mergeJobPolicy(
      { activeDeadlineSeconds: 1800, env: [{ name: "A", value: "own" }], imagePullSecrets: [{ name: "own" }, { name: "shared" }] },
      {
        activeDeadlineSeconds: 900,
        lockTimeoutSeconds: 60,
        env: [
          { name: "A", value: "cluster" },
          { name: "B", value: "cluster" },
        ],
        imagePullSecrets: [{ name: "shared" }],
      },
    );
    expect(merged).toEqual({
      activeDeadlineSeconds: 1800,
      lockTimeoutSeconds: 60,
      env: [
        { name: "A", value: "own" },
        { name: "B", value: "cluster" },
      ],
      imagePullSecrets: [{ name: "shared" }, { name: "own" }],
    });
    expect(mergeJobPolicy(undefined, undefined)).toEqual({});
  });
});

describe("ConditionSet", () => {
  it("keeps lastTransitionTime while the status stays, moves it when the status changes, keeps conditions not computed", () => {
    const set = new ConditionSet();
    set.set("Ready", { status: "False", reason: "NotReady", message: "still applying" });
    set.set("Paused", { status: "False", reason: "NotPaused" });
    const previous = [
      { type: "Ready", status: "False" as const, reason: "NotReady", message: "", lastTransitionTime: "2026-12-01T00:00:00Z" },
      { type: "Paused", status: "True" as const, reason: "Paused", message: "", lastTransitionTime: "2026-12-01T00:00:00Z" },
      { type: "DriftDetected", status: "False" as const, reason: "NoDrift", message: "", lastTransitionTime: "2026-12-01T00:00:00Z" },
    ];
    const written = set.toStatus(previous, Date.parse("2026-12-02T10:00:00.123Z"), 4);
    expect(written).toEqual([
      {
        type: "Ready",
        status: "False",
        reason: "NotReady",
        message: "still applying",
        lastTransitionTime: "2026-12-01T00:00:00Z",
        observedGeneration: 4,
      },
      {
        type: "Paused",
        status: "False",
        reason: "NotPaused",
        message: "",
        lastTransitionTime: "2026-12-02T10:00:00Z",
        observedGeneration: 4,
      },
      previous[2],
    ]);
  });
});

describe("jobsToPrune", () => {
  const job = (name: string, op: "apply" | "refresh", succeeded: boolean, finishedAt: number) => ({ name, op, succeeded, finishedAt });

  it("keeps the newest successes and failures of each operation up to the limits, deleting oldest first", () => {
    const jobs = [
      job("apply-1", "apply", true, 1),
      job("apply-2", "apply", false, 2),
      job("apply-3", "apply", true, 3),
      job("apply-4", "apply", true, 4),
      job("refresh-1", "refresh", true, 1),
      job("refresh-2", "refresh", true, 2),
    ];
    expect(jobsToPrune(jobs, { successfulJobsHistoryLimit: 1, failedJobsHistoryLimit: 0 }).sort()).toEqual([
      "apply-1",
      "apply-2",
      "apply-3",
      "refresh-1",
    ]);
    expect(jobsToPrune(jobs, { successfulJobsHistoryLimit: 3, failedJobsHistoryLimit: 3 })).toEqual([]);
  });

  it("keeps the newest success and the newest failure after it even at limits of 0", () => {
    const jobs = [job("a1", "apply", true, 1), job("a2", "apply", true, 2), job("a3", "apply", false, 3), job("a4", "apply", false, 4)];
    expect(jobsToPrune(jobs, { successfulJobsHistoryLimit: 0, failedJobsHistoryLimit: 0 }).sort()).toEqual(["a1", "a3"]);
  });

  it("drops a failure older than the newest success once the failed limit is reached", () => {
    const jobs = [job("a1", "apply", false, 1), job("a2", "apply", true, 2)];
    expect(jobsToPrune(jobs, { successfulJobsHistoryLimit: 3, failedJobsHistoryLimit: 0 })).toEqual(["a1"]);
    expect(jobsToPrune(jobs, { successfulJobsHistoryLimit: 3, failedJobsHistoryLimit: 1 })).toEqual([]);
  });
});

describe("effectiveDriftPolicy", () => {
  it.each([
    [
      "a cluster uses its own policy",
      "cluster",
      { intervalSeconds: 600, action: "Remediate" },
      { intervalSeconds: 60 },
      { intervalSeconds: 600, action: "Remediate" },
    ],
    [
      "a cluster without one uses the manager default",
      "cluster",
      undefined,
      { intervalSeconds: 60 },
      { intervalSeconds: 1800, action: "Report" },
    ],
    [
      "a machine inherits the cluster's interval and always reports",
      "machine",
      { action: "Remediate" },
      { intervalSeconds: 60, action: "Remediate" },
      { intervalSeconds: 60, action: "Report" },
    ],
    ["a machine may turn drift off", "machine", { intervalSeconds: 0 }, undefined, { intervalSeconds: 0, action: "Report" }],
    [
      "a pool ignores an inherited 0",
      "machinepool",
      undefined,
      { intervalSeconds: 0, action: "Remediate" },
      { intervalSeconds: 1800, action: "Remediate" },
    ],
    [
      "a pool's own policy wins",
      "machinepool",
      { intervalSeconds: 120, action: "Report" },
      { intervalSeconds: 60, action: "Remediate" },
      { intervalSeconds: 120, action: "Report" },
    ],
  ] as const)("%s", (_what, role, own, defaults, expected) => {
    expect(effectiveDriftPolicy(role, own, defaults, 1800)).toEqual(expected);
  });
});

describe("driftDetectedCondition", () => {
  const found = { detected: true, add: 0, change: 1, destroy: 0, resources: ["terraform_data.machine (update)"] };
  it("reports drift, or remediates it on clusters and pools with Remediate", () => {
    expect(driftDetectedCondition(found, "Report", "cluster")).toMatchObject({ status: "True", reason: "DriftReported" });
    expect(driftDetectedCondition(found, "Remediate", "machinepool")).toMatchObject({ status: "True", reason: "DriftRemediating" });
    expect(driftDetectedCondition(found, "Remediate", "machine")).toMatchObject({ status: "True", reason: "DriftReported" });
    expect(driftDetectedCondition(found, "Report", "cluster").message).toBe(
      "the infrastructure differs from the state (0 to add, 1 to change, 0 to destroy): terraform_data.machine (update)",
    );
    expect(driftDetectedCondition({ ...found, detected: false }, "Report", "cluster")).toEqual({ status: "False", reason: "NoDrift" });
  });
});

describe("jobSlotWait", () => {
  it.each([
    ["no limits", "apply", { total: 99, cluster: 99 }, { manager: 0, cluster: 0 }, undefined],
    ["an apply below the manager's limit", "apply", { total: 9, cluster: 0 }, { manager: 10, cluster: 0 }, undefined],
    ["an apply at the manager's limit", "apply", { total: 10, cluster: 0 }, { manager: 10, cluster: 0 }, "--max-active-jobs is 10"],
    ["a drift at 80% of the manager's limit", "drift", { total: 8, cluster: 0 }, { manager: 10, cluster: 0 }, "at most 80%"],
    ["a refresh below 80%", "refresh", { total: 7, cluster: 0 }, { manager: 10, cluster: 0 }, undefined],
    ["an apply at the cluster's limit", "destroy", { total: 1, cluster: 2 }, { manager: 0, cluster: 2 }, "its limit is 2"],
  ] as const)("%s", (_what, op, usage, limits, message) => {
    const wait = jobSlotWait(op, usage, limits);
    if (message === undefined) expect(wait).toBeUndefined();
    else expect(wait).toContain(message);
  });
});

describe("the self watch", () => {
  it("starts no pass for a status-only write, but for a periodic resync and any spec or metadata change", () => {
    const object = (resourceVersion: string, generation = 1, annotations: Record<string, string> = {}) => ({
      metadata: { name: "m", resourceVersion, generation, annotations },
    });
    expect(changedOrResync(object("2"), "update", object("1"))).toBe(false);
    expect(changedOrResync(object("2"), "update", object("2"))).toBe(true);
    expect(changedOrResync(object("2", 2), "update", object("1"))).toBe(true);
    expect(changedOrResync(object("2", 1, { a: "b" }), "update", object("1"))).toBe(true);
    expect(changedOrResync(object("2"), "add")).toBe(true);
  });
});

describe("the watches of a kind's controller", () => {
  const job = (resourceVersion: string, finished: boolean, active = 0) => ({
    metadata: { name: "j", resourceVersion },
    status: { active, ...(finished ? { conditions: [{ type: "Complete", status: "True" }] } : {}) },
  });
  it(
    "start a pass for a Job that finishes or goes, appears finished, and on a resync, not for a Job that appears running, its " +
      "progress or its bookkeeping mark",
    () => {
      expect(jobFinishedOrGone(job("1", false), "add")).toBe(false);
      expect(jobFinishedOrGone(job("1", true), "add")).toBe(true);
      expect(jobFinishedOrGone(job("2", false, 1), "update", job("1", false))).toBe(false);
      expect(jobFinishedOrGone(job("3", true), "update", job("2", false, 1))).toBe(true);
      expect(jobFinishedOrGone(job("4", true), "update", job("3", true))).toBe(false);
      expect(jobFinishedOrGone(job("4", true), "update", job("4", true))).toBe(true);
      expect(jobFinishedOrGone(job("4", true), "delete")).toBe(true);
    },
  );

  it("start no pass for the object's own block-move annotation, but for any other annotation", () => {
    const object = (resourceVersion: string, annotations: Record<string, string>) => ({
      metadata: { name: "m", resourceVersion, generation: 1, annotations },
    });
    expect(changedBeyondOwnMarks(object("2", { "clusterctl.cluster.x-k8s.io/block-move": "true" }), "update", object("1", {}))).toBe(false);
    expect(changedBeyondOwnMarks(object("2", { "captf.io/restore-state": "3" }), "update", object("1", {}))).toBe(true);
    expect(changedBeyondOwnMarks(object("1", {}), "update", object("1", {}))).toBe(true);
  });

  it("start no pass for the provider IDs the pass wrote (nor the generation they bumped), but for any other spec change", () => {
    const machine = (resourceVersion: string, generation: number, spec: Record<string, unknown>) => ({
      metadata: { name: "m", resourceVersion, generation, annotations: {} },
      spec,
    });
    const before = machine("1", 1, { source: { image: "a" } });
    expect(changedBeyondOwnMarks(machine("2", 2, { source: { image: "a" }, providerID: "noop://m" }), "update", before)).toBe(false);
    expect(changedBeyondOwnMarks(machine("2", 2, { source: { image: "a" }, providerIDList: ["noop://m"] }), "update", before)).toBe(false);
    expect(changedBeyondOwnMarks(machine("2", 2, { source: { image: "b" }, providerID: "noop://m" }), "update", before)).toBe(true);
    expect(changedBeyondOwnMarks(machine("2", 2, { source: { image: "b" } }), "update", before)).toBe(true);
  });

  it("start a pass when Cluster API sets the owner after creation (only the ownerReferences change), none for a status write", () => {
    const machine = (resourceVersion: string, ownerReferences: { apiVersion: string; kind: string; name: string; uid: string }[]) => ({
      metadata: { name: "m", resourceVersion, generation: 1, ownerReferences },
    });
    const machineSet = { apiVersion: "cluster.x-k8s.io/v1beta2", kind: "MachineSet", name: "md-0-abc", uid: "u1" };
    const owner = { apiVersion: "cluster.x-k8s.io/v1beta2", kind: "Machine", name: "m", uid: "u2" };
    expect(changedBeyondOwnMarks(machine("2", [owner]), "update", machine("1", []))).toBe(true);
    expect(changedBeyondOwnMarks(machine("2", [owner]), "update", machine("1", [machineSet]))).toBe(true);
    expect(changedBeyondOwnMarks(machine("2", [owner]), "update", machine("1", [owner]))).toBe(false);
  });
});

describe("lineageCheck", () => {
  const ok = (lineage: string) => ({
    kind: "ok" as const,
    state: { serial: 3, lineage, terraformVersion: "1.12.6", outputs: {}, managedResources: 1, bytes: 1, compressedBytes: 1, secrets: 1 },
  });

  it("passes a reading of the recorded lineage, and any reading before one is recorded or without a lineage", () => {
    expect(lineageCheck(ok("a"), "a")).toEqual(ok("a"));
    expect(lineageCheck(ok("b"), undefined)).toEqual(ok("b"));
    expect(lineageCheck(ok(""), "a")).toEqual(ok(""));
    expect(lineageCheck({ kind: "absent" }, "a")).toEqual({ kind: "absent" });
    expect(lineageCheck({ kind: "unreadable", reason: "StateCorrupt", message: "m" }, "a")).toEqual({
      kind: "unreadable",
      reason: "StateCorrupt",
      message: "m",
    });
  });

  it("makes a state of another lineage unreadable, naming both lineages and the ways out", () => {
    const held = lineageCheck(ok("b"), "a");
    expect(held).toMatchObject({ kind: "unreadable", reason: "StateLineageChanged" });
    expect(held.kind === "unreadable" && held.message).toMatch(
      /lineage is b, not a as recorded .*captf\.io\/state-lineage.*captf\.io\/restore-state=<serial>/,
    );
  });
});

describe("bookkeepingAnnotations of a state not saved", () => {
  it("marks the Job captf.io/state-not-saved, so later passes read the outcome without its Pod", () => {
    expect(bookkeepingAnnotations("state-save")).toEqual({ "captf.io/bookkept": "true", "captf.io/state-not-saved": "true" });
  });
});

describe("queueResult", () => {
  it("turns a requeue after 0 ms into a pass again at once, never into done", () => {
    expect(queueResult({ action: "adopted retained state", requeueAfterMs: 0 })).toEqual({ requeueAfterMillis: 0 });
    expect(queueResult({ action: "UpToDate", requeueAfterMs: 60_000 })).toEqual({ requeueAfterMillis: 60_000 });
    expect(queueResult({ action: "removed finalizer" })).toEqual({});
  });
});

describe("a pass whose object went meanwhile", () => {
  const notFound = (kind: string, name: string) =>
    new KubeApiError(
      404,
      {
        kind: "Status",
        reason: "NotFound",
        code: 404,
        message: `${kind} "${name}" not found`,
        details: { name, group: "infrastructure.cluster.x-k8s.io", kind },
      },
      `GET /apis/x: 404 ${kind} "${name}" not found`,
    );

  it("is gone when the API server says its own object is not found, failed for any other NotFound", () => {
    expect(goneDuringPass(notFound("terraformmachines", "m-1"), "terraformmachines", "m-1")).toEqual({ action: "gone" });
    expect(
      goneDuringPass(
        new KubeApiError(404, { reason: "NotFound", details: { name: "m-1", kind: "terraformmachines" } }, "not found"),
        "terraformmachines",
        "m-1",
      ),
    ).toEqual({ action: "gone" });
    expect(goneDuringPass(notFound("secrets", "m-1"), "terraformmachines", "m-1")).toBeUndefined();
    expect(goneDuringPass(notFound("terraformmachines", "m-2"), "terraformmachines", "m-1")).toBeUndefined();
    expect(goneDuringPass(new Error("boom"), "terraformmachines", "m-1")).toBeUndefined();
  });
});
