import { describe, expect, it } from "@jest/globals";
import { annotations, kinds } from "@captf/contract/api";
import { age, buildClusterTree, describeLastRun, formatClusterTree, readyFirst, type JobSummary } from "./describe.js";
import { approvalDecision, formatPlan, lastJob, lastPod, planCounts, restoreDecision } from "./decisions.js";
import { parseObjectReference, pluralOf, UsageError, type CaptfObject, type PlanPreview } from "./objects.js";

const now = Date.parse("2026-12-03T12:00:00Z");
const condition = (type: string, status: string, reason: string, message?: string) => ({
  type,
  status,
  reason,
  ...(message ? { message } : {}),
  lastTransitionTime: "2026-12-03T11:57:00Z",
});
const object = (
  kind: string,
  name: string,
  status: CaptfObject["status"] = {},
  annotationValues?: Record<string, string>,
): CaptfObject => ({
  kind,
  metadata: { name, namespace: "team-a", resourceVersion: "7", ...(annotationValues ? { annotations: annotationValues } : {}) },
  status,
});
const plan: PlanPreview = {
  inputsHash: "h2:abc",
  job: "c-demo-plan-a1",
  planHash: "p1:aaa",
  add: 2,
  change: 1,
  destroy: 0,
  resources: ["a.b (create)", "a.c (update)"],
  truncated: true,
  createdAt: "2026-12-03T11:00:00Z",
};
const job = (name: string, createdAt: string, running = true): JobSummary => ({
  name,
  ownerKind: kinds.cluster,
  ownerName: "demo",
  operation: "apply",
  attempt: Number(name.at(-1)),
  createdAt,
  running,
});

describe("the cluster tree", () => {
  const tree = buildClusterTree({
    cluster: "demo",
    namespace: "team-a",
    terraformCluster: object(kinds.cluster, "demo", {
      conditions: [condition("ApplyJobSucceeded", "True", "ApplySucceeded"), condition("Ready", "True", "Ready")],
      activeJob: { name: "c-demo-drift-a1", operation: "drift", attempt: 1, startTime: "2026-12-03T11:59:30Z" },
      lastRun: { job: "c-demo-apply-a3", operation: "apply" },
    }),
    identityName: "aws",
    machines: [
      object(kinds.machine, "demo-md-b", { conditions: [condition("Ready", "False", "NotReady", "first line\nsecond line")] }),
      object(kinds.machine, "demo-md-a"),
    ],
    pools: [object(kinds.machinePool, "demo-mp")],
    jobs: [
      job("c-demo-drift-a1", "2026-12-03T11:59:30Z"),
      job("c-demo-apply-a4", "2026-12-03T11:59:40Z"),
      job("c-demo-apply-a3", "2026-12-03T11:00:00Z", false),
    ],
  });

  it("puts Ready first, the identity before pools before machines, each sorted, and a missing identity as not found", () => {
    expect(tree.root.conditions.map((c) => c.type)).toEqual(["Ready", "ApplyJobSucceeded"]);
    expect(tree.root.children.map((child) => `${child.kind}/${child.name}${child.unreadable ? ` (${child.unreadable})` : ""}`)).toEqual([
      "TerraformClusterIdentity/aws (not found)",
      "TerraformMachinePool/demo-mp",
      "TerraformMachine/demo-md-a",
      "TerraformMachine/demo-md-b",
    ]);
    expect(tree.root.runningJobs.map((j) => j.name)).toEqual(["c-demo-drift-a1", "c-demo-apply-a4"]);
  });

  it("formats as a tree, listing a running Job the status does not name yet", () => {
    expect(formatClusterTree(tree, now)).toBe(
      [
        "Cluster team-a/demo",
        "TerraformCluster/demo",
        "│  Ready              True     Ready (3m)",
        "│  ApplyJobSucceeded  True     ApplySucceeded (3m)",
        "│  active Job: c-demo-drift-a1 (drift, attempt 1, started 30s ago)",
        "│  running Job: c-demo-apply-a4 (apply, attempt 4)",
        "│  last run: apply succeeded (Job c-demo-apply-a3)",
        "├─ TerraformClusterIdentity/aws",
        "│     not found",
        "├─ TerraformMachinePool/demo-mp",
        "│     no conditions yet",
        "├─ TerraformMachine/demo-md-a",
        "│     no conditions yet",
        "└─ TerraformMachine/demo-md-b",
        "      Ready  False    NotReady (3m)  first line",
        "",
      ].join("\n"),
    );
  });

  it("gives kubectl's coarse ages and one line per run", () => {
    expect([
      age("2026-12-03T11:59:59Z", now),
      age("2026-12-03T11:00:00Z", now),
      age("2026-12-03T06:00:00Z", now),
      age("2026-11-29T12:00:00Z", now),
      age(undefined, now),
      age("garbage", now),
    ]).toEqual(["1s", "60m", "6h", "4d", "", ""]);
    expect(describeLastRun({ job: "j", operation: "destroy", error: { kind: "interrupted" } })).toBe(
      "destroy failed (interrupted) (Job j)",
    );
    expect(readyFirst(undefined)).toEqual([]);
    const forbidden = buildClusterTree({
      cluster: "demo",
      namespace: "team-a",
      terraformCluster: object(kinds.cluster, "demo"),
      identityName: "aws",
      identityUnreadable: "not readable: forbidden",
      machines: [],
      pools: [],
      jobs: [],
    });
    expect(formatClusterTree(forbidden, now)).toContain("└─ TerraformClusterIdentity/aws\n      not readable: forbidden\n");
  });
});

describe("plans", () => {
  it("counts what the plan does, import, move and output changes only when present", () => {
    expect(planCounts(plan)).toBe("add 2, change 1, destroy 0");
    expect(planCounts({ ...plan, import: 1, move: 2, outputChanges: 3 })).toBe(
      "add 2, change 1, destroy 0, import 1, move 2, output changes 3",
    );
  });

  it("shows the plan with the command that approves exactly it, or who approved it", () => {
    const pending = object(kinds.cluster, "demo", { plan });
    expect(formatPlan(pending, plan, "tfc/demo")).toBe(
      [
        "TerraformCluster team-a/demo: plan p1:aaa",
        "  add 2, change 1, destroy 0",
        "  made by Job c-demo-plan-a1 at 2026-12-03T11:00:00Z for inputs h2:abc",
        "  resources:",
        "    a.b (create)",
        "    a.c (update)",
        "    … (more resources than status.plan lists)",
        "what it changes: kubectl captf plan show tfc/demo --diff",
        "approve it: kubectl captf plan approve tfc/demo --hash p1:aaa",
        "",
      ].join("\n"),
    );
    const approved = object(
      kinds.cluster,
      "demo",
      { plan },
      { [annotations.approvePlan]: "p1:aaa", [annotations.planApprovedBy]: "alice" },
    );
    expect(formatPlan(approved, plan, "tfc/demo")).toContain("approved by alice: the manager applies it if it plans the same again\n");
  });

  it("approves only the plan shown, and says when it is approved already", () => {
    const pending = object(kinds.cluster, "demo", { plan });
    expect(approvalDecision(pending, "p1:aaa")).toEqual({ ok: { planHash: "p1:aaa", alreadyApproved: false } });
    expect(approvalDecision(pending, undefined)).toEqual({ ok: { planHash: "p1:aaa", alreadyApproved: false } });
    expect(approvalDecision(pending, "p1:bbb")).toEqual({
      refused: expect.stringContaining("changed since it was shown: it is now p1:aaa (add 2, change 1, destroy 0), not p1:bbb"),
    });
    expect(approvalDecision(object(kinds.cluster, "demo", { plan }, { [annotations.approvePlan]: "p1:aaa" }), "p1:aaa")).toEqual({
      ok: { planHash: "p1:aaa", alreadyApproved: true },
    });
    expect(approvalDecision(object(kinds.cluster, "demo"), undefined)).toEqual({
      refused: "TerraformCluster team-a/demo has no plan waiting for approval (status.plan is empty)",
    });
    expect(approvalDecision(object(kinds.machinePool, "pool"), undefined)).toEqual({ refused: expect.stringContaining("has no plans") });
  });
});

describe("restores", () => {
  const backedUp = (extra: CaptfObject["status"] = {}, annotationValues?: Record<string, string>) =>
    object(
      kinds.machinePool,
      "pool",
      {
        stateBackups: [
          { serial: 7, takenAt: "2026-12-03T10:00:00Z", bytes: 100 },
          { serial: 5, takenAt: "2026-12-02T10:00:00Z", bytes: 90 },
        ],
        ...extra,
      },
      annotationValues,
    );

  it("restores a listed serial once", () => {
    expect(restoreDecision(backedUp(), 5)).toEqual({ ok: { serial: 5, alreadyRequested: false } });
    expect(restoreDecision(backedUp({}, { [annotations.restoreState]: "5" }), 5)).toEqual({ ok: { serial: 5, alreadyRequested: true } });
    expect(restoreDecision(backedUp(), 6)).toEqual({
      refused: "TerraformMachinePool team-a/pool has no backup of serial 6 in status.stateBackups (it lists 7, 5)",
    });
    expect(restoreDecision(object(kinds.machine, "m"), 1)).toEqual({ refused: expect.stringContaining("(it lists no backups)") });
    expect(restoreDecision(backedUp({ lastRestoredSerial: 7 }), 7)).toEqual({ refused: expect.stringContaining("was restored already") });
    expect(restoreDecision(backedUp(), 0)).toEqual({ refused: expect.stringContaining("not a state serial") });
  });
});

describe("the last Job and pod", () => {
  it("is the newest by creation, then attempt, then name", () => {
    expect(
      lastJob([
        job("c-demo-apply-a1", "2026-12-03T10:00:00Z"),
        job("c-demo-apply-a3", "2026-12-03T11:00:00Z"),
        job("c-demo-apply-a2", "2026-12-03T11:00:00Z"),
      ])?.name,
    ).toBe("c-demo-apply-a3");
    expect(lastJob([])).toBeUndefined();
    expect(
      lastPod([
        { name: "b", createdAt: "2026-12-03T10:00:00Z" },
        { name: "a", createdAt: "2026-12-03T11:00:00Z" },
      ])?.name,
    ).toBe("a");
  });
});

describe("object references", () => {
  it("accepts a kind in any case, singular or plural, with or without the group", () => {
    for (const text of [
      "TerraformCluster/demo",
      "terraformcluster/demo",
      "terraformclusters/demo",
      "terraformclusters.infrastructure.cluster.x-k8s.io/demo",
    ]) {
      expect(parseObjectReference(text)).toEqual({ kind: kinds.cluster, name: "demo" });
    }
    expect(parseObjectReference("TerraformMachinePools/p")).toEqual({ kind: kinds.machinePool, name: "p" });
    for (const text of ["demo", "terraformcluster/", "machine/demo", "terraformclusteridentity/aws", "terraformcluster/a/b"])
      expect(() => parseObjectReference(text)).toThrow(UsageError);
  });

  it("names the plural resources as the CRDs do", () => {
    expect([kinds.cluster, kinds.machinePool, kinds.clusterIdentity].map(pluralOf)).toEqual([
      "terraformclusters",
      "terraformmachinepools",
      "terraformclusteridentities",
    ]);
  });
});
