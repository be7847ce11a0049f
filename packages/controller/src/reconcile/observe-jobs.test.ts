import { describe, expect, it } from "@jest/globals";
import type { RunResult } from "@captf/contract/run-result";
import type { V1Job, V1Pod } from "@kubernetes/client-node";
import { fakeClient } from "../runtime/fake-client.test-support.js";
import { bookkeepingAnnotations, jobPod, outcomeOf, type ObservedJob } from "./observe-jobs.js";

const failedJob = (reason = "BackoffLimitExceeded", annotations: Record<string, string> = {}) => ({
  metadata: { annotations },
  status: { conditions: [{ type: "Failed", status: "True", reason }] },
});
const stepFailure = { steps: [], error: { kind: "step", step: "apply", summary: "boom" } } as unknown as RunResult;
const interrupted = { steps: [], error: { kind: "interrupted", summary: "terminated" } } as unknown as RunResult;
const keptPod = { metadata: {}, status: { phase: "Failed" } };

describe("outcomeOf", () => {
  it("a complete Job succeeded", () => {
    expect(outcomeOf({ metadata: {}, status: { conditions: [{ type: "Complete", status: "True" }] } }, undefined, keptPod)).toBe(
      "succeeded",
    );
  });
  it("a failed step is a failure; the runner's own interruption is an interruption", () => {
    expect(outcomeOf(failedJob(), stepFailure, keptPod)).toBe("failed");
    expect(outcomeOf(failedJob(), interrupted, keptPod)).toBe("interrupted");
  });
  it("a failed Job whose Pod is gone, deleting or disrupted was stopped from outside: an interruption, retried without backoff", () => {
    expect(outcomeOf(failedJob(), undefined, undefined)).toBe("interrupted");
    expect(outcomeOf(failedJob(), undefined, { metadata: { deletionTimestamp: new Date() }, status: {} })).toBe("interrupted");
    expect(
      outcomeOf(failedJob(), undefined, { metadata: {}, status: { conditions: [{ type: "DisruptionTarget", status: "True" }] } }),
    ).toBe("interrupted");
  });
  it("a failed Job whose Pod is kept without a result failed (for example a crash before the runner wrote one)", () => {
    expect(outcomeOf(failedJob(), undefined, keptPod)).toBe("failed");
  });
  it("a deadline kill and an image not pulled in time are failures even without their Pod", () => {
    expect(outcomeOf(failedJob("DeadlineExceeded"), interrupted, undefined)).toBe("failed");
    expect(outcomeOf(failedJob("BackoffLimitExceeded", { "captf.io/image-pull-failed": "true" }), undefined, undefined)).toBe("failed");
  });
});

describe("plan Jobs at bookkeeping", () => {
  const completePlanJob = {
    metadata: { labels: { "captf.infrastructure.cluster.x-k8s.io/op": "plan" } },
    status: { conditions: [{ type: "Complete", status: "True" }] },
  };
  const plan = { hash: "p2:abc", add: 1, change: 0, destroy: 0, resources: [] };
  const planned = { steps: [], error: null, plan } as unknown as RunResult;
  const noPlan = { steps: [], error: null } as unknown as RunResult;
  const observed = (op: ObservedJob["op"], result: RunResult | undefined, job: object = completePlanJob) =>
    ({ op, result, job }) as unknown as Pick<ObservedJob, "job" | "op" | "result">;

  it("a plan Job that succeeded without a readable plan failed, and is marked captf.io/plan-unreadable", () => {
    expect(outcomeOf(completePlanJob, noPlan, keptPod)).toBe("failed");
    expect(outcomeOf(completePlanJob, undefined, keptPod)).toBe("failed");
    expect(bookkeepingAnnotations("failed", observed("plan", noPlan))).toEqual({
      "captf.io/bookkept": "true",
      "captf.io/plan-unreadable": "true",
    });
  });

  it("a plan Job with its plan succeeded and records the plan's hash", () => {
    expect(outcomeOf(completePlanJob, planned, keptPod)).toBe("succeeded");
    expect(bookkeepingAnnotations("succeeded", observed("plan", planned))).toEqual({
      "captf.io/bookkept": "true",
      "captf.io/plan-hash": "p2:abc",
    });
  });

  it("a blocked or plan-changed apply records the plan it stopped at; a succeeded apply does not", () => {
    const failedApply = {
      metadata: { labels: { "captf.infrastructure.cluster.x-k8s.io/op": "apply" } },
      status: { conditions: [{ type: "Failed", status: "True" }] },
    };
    expect(bookkeepingAnnotations("blocked", observed("apply", planned, failedApply))).toEqual({
      "captf.io/bookkept": "true",
      "captf.io/destructive-plan-blocked": "true",
      "captf.io/plan-hash": "p2:abc",
    });
    expect(bookkeepingAnnotations("plan-changed", observed("apply", planned, failedApply))).toEqual({
      "captf.io/bookkept": "true",
      "captf.io/plan-changed": "true",
      "captf.io/plan-hash": "p2:abc",
    });
    expect(bookkeepingAnnotations("succeeded", observed("apply", planned, { ...completePlanJob, metadata: {} }))).toEqual({
      "captf.io/bookkept": "true",
    });
    expect(outcomeOf({ metadata: {}, status: { conditions: [{ type: "Complete", status: "True" }] } }, undefined, keptPod)).toBe(
      "succeeded",
    );
  });
});

describe("jobPod", () => {
  const job: V1Job = { metadata: { name: "captf-m-a-destroy-a1-abcdef", uid: "job-2" } };
  const podOf = (name: string, jobUid: string): V1Pod => ({
    metadata: {
      name,
      ownerReferences: [{ apiVersion: "batch/v1", kind: "Job", name: "captf-m-a-destroy-a1-abcdef", uid: jobUid, controller: true }],
    },
  });
  const listing = (pods: V1Pod[]) => {
    const client = fakeClient({ "list pods": () => ({ items: pods }) });
    return jobPod({ client }, "ns", job);
  };

  it("is the Pod of this Job, not one an earlier Job of the same name left (deleted for an image it could not pull)", async () => {
    expect(await listing([podOf("old", "job-1"), podOf("new", "job-2")])).toMatchObject({ metadata: { name: "new" } });
  });

  it("is none while only the earlier Job's Pod is there", async () => {
    expect(await listing([podOf("old", "job-1")])).toBeUndefined();
  });
});
