import { describe, expect, it } from "@jest/globals";
import type { V1Lease, V1Pod } from "@kubernetes/client-node";
import { isOwnRunnerPod, jobName, previousSchemeJobName } from "../jobs/build-job.js";
import { judgeStateLock, lockInfoAnnotation, stateLockedMessage } from "./state-lock.js";

const owner = { role: "machine" as const, name: "m1" };
const request = {
  owner: { ...owner, namespace: "ns", uid: "u", clusterName: "c" },
  op: "apply" as const,
  attempt: 2,
  inputsHash: "h2:abc",
};
const ownPod = `${jobName(request)}-x7k2p`;

function lease(holder: string | undefined, info?: Record<string, string> | string): V1Lease {
  const annotation: Record<string, string> =
    info === undefined ? {} : { [lockInfoAnnotation]: typeof info === "string" ? info : JSON.stringify(info) };
  return { metadata: { name: "lock-tfstate-default-x-m", annotations: annotation }, spec: holder ? { holderIdentity: holder } : {} };
}
const pod = (phase: string): V1Pod => ({ metadata: { name: ownPod }, status: { phase } });

describe("isOwnRunnerPod", () => {
  it("knows the pods of this object's Jobs, any op and attempt, under either name scheme", () => {
    expect(isOwnRunnerPod(owner, ownPod)).toBe(true);
    expect(isOwnRunnerPod(owner, `${previousSchemeJobName({ ...request, op: "destroy", attempt: 7 })}-abcde`)).toBe(true);
    const long = { role: "machine" as const, name: "a".repeat(60) };
    expect(isOwnRunnerPod(long, `${jobName({ ...request, owner: { ...request.owner, name: long.name } })}-b2c4d`)).toBe(true);
  });

  it("refuses anything else: another object's pod, a workstation, an unknown op, a pod without its suffix", () => {
    expect(isOwnRunnerPod({ role: "machine", name: "m2" }, ownPod)).toBe(false);
    expect(isOwnRunnerPod({ role: "cluster", name: "m1" }, ownPod)).toBe(false);
    expect(isOwnRunnerPod(owner, "laptop")).toBe(false);
    expect(isOwnRunnerPod(owner, "captf-m-m1-bogus-a1-abcdef-x7k2p")).toBe(false);
    expect(isOwnRunnerPod(owner, jobName(request))).toBe(false);
  });
});

describe("judgeStateLock", () => {
  it("finds a lease without a holder, or none, free", () => {
    expect(judgeStateLock(undefined, owner, undefined)).toEqual({ kind: "free" });
    expect(judgeStateLock(lease(undefined), owner, undefined)).toEqual({ kind: "free" });
  });

  it("reports any holder but the object's own runner as foreign, with what the lock info says", () => {
    const foreign = judgeStateLock(
      lease("id-1", { ID: "id-1", Operation: "OperationTypeApply", Who: "alice@laptop", Created: "2026-12-03T08:00:00Z" }),
      owner,
      undefined,
    );
    expect(foreign).toEqual({ kind: "foreign", holder: "alice@laptop", operation: "OperationTypeApply", since: "2026-12-03T08:00:00Z" });
    expect(stateLockedMessage(foreign as Extract<typeof foreign, { kind: "foreign" }>)).toMatch(
      /^the state lock is held by alice@laptop \(OperationTypeApply, since 2026-12-03T08:00:00Z\)/,
    );
    expect(judgeStateLock(lease("id-2", "not json"), owner, undefined)).toEqual({ kind: "foreign", holder: "id-2" });
  });

  it("leaves a lock of its own runner alone while the pod lives, terminating included", () => {
    const held = lease("id-3", { ID: "id-3", Who: `runner@${ownPod}` });
    expect(judgeStateLock(held, owner, pod("Running"))).toEqual({ kind: "alive", pod: ownPod });
    expect(judgeStateLock(held, owner, { ...pod("Running"), metadata: { name: ownPod, deletionTimestamp: new Date() } })).toEqual({
      kind: "alive",
      pod: ownPod,
    });
  });

  it("finds a lock of its own runner stale once the pod is gone or ended, and unlocks by the lock ID, else the holder", () => {
    const held = lease("id-4", { ID: "id-4", Who: `runner@${ownPod}` });
    expect(judgeStateLock(held, owner, undefined)).toEqual({ kind: "stale", unlockId: "id-4", pod: ownPod });
    expect(judgeStateLock(held, owner, pod("Failed"))).toEqual({ kind: "stale", unlockId: "id-4", pod: ownPod });
    expect(judgeStateLock(held, owner, pod("Succeeded"))).toMatchObject({ kind: "stale" });
    expect(judgeStateLock(lease("holder-5", { Who: `runner@${ownPod}` }), owner, undefined)).toMatchObject({
      kind: "stale",
      unlockId: "holder-5",
    });
  });
});
