import { describe, expect, it } from "@jest/globals";
import { annotations } from "@captf/contract/api";
import { approverPatch, recordedApprover } from "./approver.js";
import { reviewApproverRequest, type AdmissionRequest } from "./server.js";

const annotated = (values?: Record<string, string>) => ({ metadata: values ? { annotations: values } : {} });
const approval = (hash: string, by?: string) =>
  annotated({ [annotations.approvePlan]: hash, ...(by ? { [annotations.planApprovedBy]: by } : {}) });
const path = "/metadata/annotations/captf.io~1plan-approved-by";

describe("the approver record", () => {
  it("is the requester for a new or changed approval, the old record otherwise, and nothing without an approval", () => {
    expect(recordedApprover(undefined, approval("p1:a"), "alice")).toBe("alice");
    expect(recordedApprover(approval("p1:a", "alice"), approval("p1:b"), "bob")).toBe("bob");
    expect(recordedApprover(approval("p1:a", "alice"), approval("p1:a", "mallory"), "mallory")).toBe("alice");
    expect(recordedApprover(approval("p1:a", "alice"), annotated({ [annotations.planApprovedBy]: "alice" }), "captf")).toBeUndefined();
  });

  it("patches only what differs, adding the annotations map when there is none", () => {
    expect(approverPatch(undefined, approval("p1:a", "alice"), "alice")).toEqual([]);
    expect(approverPatch(undefined, approval("p1:a"), "alice")).toEqual([{ op: "add", path, value: "alice" }]);
    expect(approverPatch(approval("p1:a", "alice"), approval("p1:a", "mallory"), "mallory")).toEqual([
      { op: "replace", path, value: "alice" },
    ]);
    expect(approverPatch(approval("p1:a", "alice"), annotated({ [annotations.planApprovedBy]: "alice" }), "x")).toEqual([
      { op: "remove", path },
    ]);
    expect(approverPatch(approval("p1:a", "alice"), annotated(), "x")).toEqual([]);
    // An approval with no annotations map cannot exist, but a forged record on an object without approval is removed.
    expect(approverPatch(undefined, annotated({ [annotations.planApprovedBy]: "mallory" }), "mallory")).toEqual([{ op: "remove", path }]);
  });

  it("answers with a base64 JSON Patch, and admits status writes and other kinds untouched", () => {
    const request: AdmissionRequest = {
      uid: "u1",
      kind: { group: "infrastructure.cluster.x-k8s.io", version: "v1alpha1", kind: "TerraformCluster" },
      operation: "UPDATE",
      userInfo: { username: "bob" },
      object: approval("p1:b"),
      oldObject: approval("p1:a", "alice"),
    };
    const answer = reviewApproverRequest(request);
    expect(answer).toMatchObject({ uid: "u1", allowed: true, patchType: "JSONPatch" });
    expect(JSON.parse(Buffer.from(answer.patch!, "base64").toString())).toEqual([{ op: "add", path, value: "bob" }]);
    expect(reviewApproverRequest({ ...request, subResource: "status" })).toEqual({ uid: "u1", allowed: true });
    expect(reviewApproverRequest({ ...request, kind: { ...request.kind, kind: "TerraformMachine" } })).toEqual({
      uid: "u1",
      allowed: true,
    });
  });
});
