import { describe, expect, it } from "@jest/globals";
import { decideRemediation, effectiveRemediation, nextUnhealthySamples } from "./machine-remediation.js";

describe("machine remediation", () => {
  it("merges the machine's policy over the cluster's defaults over the built-in ones", () => {
    expect(effectiveRemediation(undefined, undefined)).toEqual({
      annotateMachine: false,
      unhealthyThreshold: 3,
      healthCheckIntervalSeconds: 300,
    });
    expect(effectiveRemediation({ unhealthyThreshold: 2 }, { annotateMachine: true, unhealthyThreshold: 5 })).toEqual({
      annotateMachine: true,
      unhealthyThreshold: 2,
      healthCheckIntervalSeconds: 300,
    });
  });

  it.each([
    [2, "Healthy", 0],
    [2, "InstanceUnhealthy", 3],
    [0, "InstanceDegraded", 1],
    [1, "InstanceStopped", 2],
    [2, "InstancePending", 2],
    [2, "HealthUnknown", 2],
    [2, "InstanceTerminated", 2],
  ])("after %i samples, a %s reading makes %i", (previous, reason, next) => {
    expect(nextUnhealthySamples(previous, reason)).toBe(next);
  });

  const on = { annotateMachine: true, unhealthyThreshold: 3, healthCheckIntervalSeconds: 300 };
  it.each([
    ["below the threshold", on, 2, "InstanceUnhealthy", undefined, undefined],
    ["at the threshold", on, 3, "InstanceUnhealthy", undefined, { request: "InstanceUnhealthy" }],
    ["terminated, at once", on, 0, "InstanceTerminated", undefined, { request: "InstanceTerminated" }],
    ["already requested", on, 5, "InstanceUnhealthy", { "captf.io/remediation-requested": "InstanceUnhealthy" }, undefined],
    [
      "healthy again: withdraw captf's request",
      on,
      0,
      "Healthy",
      { "captf.io/remediation-requested": "InstanceUnhealthy" },
      { withdraw: true },
    ],
    ["healthy, nothing requested", on, 0, "Healthy", undefined, undefined],
    ["annotateMachine off", { ...on, annotateMachine: false }, 9, "InstanceUnhealthy", undefined, undefined],
  ])("%s", (_what, policy, samples, reason, machineAnnotations, change) => {
    expect(decideRemediation(policy, samples, reason, machineAnnotations)).toEqual(change);
  });
});
