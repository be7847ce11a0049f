import { describe, expect, it } from "@jest/globals";
import { failedOnClosedIdleConnection, isReplayable } from "./stale-connection.js";

describe("isReplayable", () => {
  it.each([
    ["GET", undefined, true],
    ["HEAD", undefined, true],
    ["PUT", { metadata: { name: "s", resourceVersion: "7" } }, true],
    ["PUT", { metadata: { name: "s" } }, false],
    ["PUT", { metadata: { name: "s", resourceVersion: "" } }, false],
    ["DELETE", { preconditions: { uid: "u-1" } }, true],
    ["DELETE", { preconditions: { resourceVersion: "7" } }, true],
    ["DELETE", { propagationPolicy: "Background" }, false],
    ["DELETE", undefined, false],
    ["POST", { metadata: { name: "s", resourceVersion: "7" } }, false],
    ["PATCH", { metadata: { resourceVersion: "7" } }, false],
  ])("%s %j: %s", (method, body, replayable) => {
    expect(isReplayable(method, body)).toBe(replayable);
  });
});

describe("failedOnClosedIdleConnection", () => {
  const reset = Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });
  it.each([
    ["a reset reused connection, nothing answered", reset, true, 0, true],
    ["EPIPE on a reused connection", Object.assign(new Error("write EPIPE"), { code: "EPIPE" }), true, 0, true],
    ["a fresh connection", reset, false, 0, false],
    ["part of an answer read", reset, true, 12, false],
    ["a timeout", new Error("GET /api: no answer within 30000 ms"), true, 0, false],
    ["a refused connection", Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }), true, 0, false],
  ])("%s: %s", (_case, error, reused, answered, expected) => {
    expect(failedOnClosedIdleConnection(error, reused, answered)).toBe(expected);
  });
});
