import { describe, expect, it } from "@jest/globals";
import { KubeApiError } from "../runtime/api-errors.js";
import {
  podRefusalMessage,
  podRefusalOf,
  previousQuotaRetryMs,
  quotaRefusalMessage,
  quotaRefusalOf,
  quotaRetryBaseMs,
  quotaRetryMaxMs,
  quotaRetryMs,
} from "./quota-refusal.js";

/** A 403 as the API server sends it: the Status's message, also the error's. */
const forbidden = (message: string) => new KubeApiError(403, { reason: "Forbidden", message, code: 403 } as never, message);

const job = "captf-apply-m-0-1-2f3c";

describe("quotaRefusalOf", () => {
  // The ResourceQuota admission plugin's refusals as kube-apiserver 1.36 words them (the first as quota.integration.test.ts sees it).
  it.each([
    [
      `jobs.batch "${job}" is forbidden: exceeded quota: jobs, requested: count/jobs.batch=1, used: count/jobs.batch=0, ` +
        "limited: count/jobs.batch=0",
      "jobs",
      "exceeded quota: jobs, requested: count/jobs.batch=1, used: count/jobs.batch=0, limited: count/jobs.batch=0",
    ],
    [`jobs.batch "${job}" is forbidden: status unknown for quota: team-quota, resource: count/jobs.batch`, "team-quota", undefined],
    [`pods "${job}-x" is forbidden: failed quota: compute: must specify limits.cpu for: source`, "compute", undefined],
  ])("names the ResourceQuota of %j", (message, name, detail) => {
    const refusal = quotaRefusalOf(forbidden(message));
    expect(refusal).toMatchObject({ kind: "ResourceQuota", name });
    expect(refusal!.detail).toBe(detail ?? message.replace(/^.*? is forbidden: /, ""));
  });

  it("reads a LimitRange's refusal, which names no object", () => {
    const message = `pods "${job}-x" is forbidden: maximum cpu usage per Container is 100m, but limit is 200m`;
    expect(quotaRefusalOf(forbidden(message))).toEqual({
      kind: "LimitRange",
      detail: "maximum cpu usage per Container is 100m, but limit is 200m",
    });
  });

  it("leaves every other error alone: another 403, other codes, errors that are not the API server's", () => {
    expect(quotaRefusalOf(forbidden('jobs.batch is forbidden: User "x" cannot create resource "jobs"'))).toBeUndefined();
    expect(quotaRefusalOf(new KubeApiError(422, undefined, "exceeded quota: jobs"))).toBeUndefined();
    expect(quotaRefusalOf(new Error("exceeded quota: jobs"))).toBeUndefined();
  });
});

describe("podRefusalOf", () => {
  // The Job controller's FailedCreate notes, as reference-limits.integration.test.ts sees them.
  const pod = `pods "${job}-x7k2p" is forbidden`;

  it("reads which quota or LimitRange refused the Job's Pod", () => {
    expect(podRefusalOf(`Error creating: ${pod}: exceeded quota: pods, requested: pods=1, used: pods=0, limited: pods=0`)).toEqual({
      kind: "ResourceQuota",
      name: "pods",
      detail: "exceeded quota: pods, requested: pods=1, used: pods=0, limited: pods=0",
    });
    expect(podRefusalOf(`Error creating: ${pod}: maximum cpu usage per Container is 100m, but limit is 200m`)).toEqual({
      kind: "LimitRange",
      detail: "maximum cpu usage per Container is 100m, but limit is 200m",
    });
  });

  it("leaves other creation failures alone", () => {
    expect(podRefusalOf(`Error creating: ${pod}: error looking up service account ns/captf-runner: not found`)).toBeUndefined();
    expect(podRefusalOf("Error creating: Internal error occurred: exceeded quota: pods")).toBeUndefined();
  });

  it("says what refused the Pod and that the Job controller keeps trying", () => {
    expect(podRefusalMessage({ kind: "ResourceQuota", name: "pods", detail: "exceeded quota: pods" }, job)).toBe(
      `the ResourceQuota pods refused the Pod of Job ${job}: exceeded quota: pods; the Job controller tries again until the Job's deadline`,
    );
  });
});

describe("the quota wait's retries", () => {
  it("waits 10 s after a first refusal, then doubles the wait its message announced, up to 2 min", () => {
    const waits: number[] = [];
    let previous: { reason: string; message: string } | undefined = { reason: "JobNotStarted", message: "" };
    for (let refusal = 0; refusal < 7; refusal++) {
      const retryMs = quotaRetryMs(previousQuotaRetryMs(previous));
      waits.push(retryMs / 1000);
      previous = {
        reason: "JobQuotaExceeded",
        message: quotaRefusalMessage({ kind: "ResourceQuota", name: "jobs", detail: "d" }, job, retryMs),
      };
    }
    expect(waits).toEqual([10, 20, 40, 80, 120, 120, 120]);
    expect([quotaRetryBaseMs, quotaRetryMaxMs]).toEqual([10_000, 120_000]);
  });

  it("starts over after any other reason, or a message that announces no wait", () => {
    expect(previousQuotaRetryMs(undefined)).toBeUndefined();
    expect(previousQuotaRetryMs({ reason: "WaitingForRunLease", message: "tried again in 40 s" })).toBeUndefined();
    expect(previousQuotaRetryMs({ reason: "JobQuotaExceeded", message: "refused" })).toBeUndefined();
    expect(quotaRetryMs(undefined)).toBe(10_000);
  });

  it("says which quota refused which Job, why, and when it is tried again", () => {
    expect(quotaRefusalMessage({ kind: "ResourceQuota", name: "jobs", detail: "exceeded quota: jobs" }, job, 20_000)).toBe(
      `the ResourceQuota jobs refused Job ${job}: exceeded quota: jobs; tried again in 20 s or on the next change`,
    );
    expect(quotaRefusalMessage({ kind: "LimitRange", detail: "maximum cpu usage per Container is 1" }, job, 10_000)).toBe(
      `a LimitRange of the namespace refused Job ${job}: maximum cpu usage per Container is 1; tried again in 10 s or on the next change`,
    );
  });
});
