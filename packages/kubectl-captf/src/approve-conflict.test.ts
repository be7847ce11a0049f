// The approval's write precondition, with a fake API: a status write between the read and the
// write (409 on the resourceVersion) makes the command read again, and it approves only the plan
// it first read. The real API server's 409 on a stale resourceVersion is Kubernetes' own contract.
import { describe, expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { annotations, kinds } from "@captf/contract/api";
import { approvePlan } from "./commands.js";
import type { Connection } from "./kube.js";
import { Refusal, type CaptfObject } from "./objects.js";

function withPlan(planHash: string, resourceVersion: string): Omit<CaptfObject, "kind"> {
  return {
    metadata: { name: "demo", namespace: "team-a", resourceVersion },
    status: { plan: { inputsHash: "h2:x", job: "c-demo-plan-a1", planHash } },
  };
}

function fakeConnection(reads: Omit<CaptfObject, "kind">[]) {
  const patches: unknown[] = [];
  const connection = {
    namespace: "team-a",
    objects: {
      getNamespacedCustomObject: async () => reads.shift(),
      patchNamespacedCustomObject: async (request: {
        body: { metadata: { resourceVersion: string; annotations: Record<string, string> } };
      }) => {
        patches.push(request.body);
        if (request.body.metadata.resourceVersion === "1")
          throw new k8s.ApiException(409, "Conflict", '{"kind":"Status","reason":"Conflict"}', {});
        return { metadata: { name: "demo", namespace: "team-a", annotations: request.body.metadata.annotations } };
      },
    },
    authentication: { createSelfSubjectReview: async () => ({ status: { userInfo: { username: "alice" } } }) },
    events: { createNamespacedEvent: async () => ({}) },
  } as unknown as Connection;
  return { connection, patches };
}

describe("plan approve after a conflicting write", () => {
  it("approves on the second attempt when the plan is still the one read first", async () => {
    const { connection, patches } = fakeConnection([withPlan("p1:aaa", "1"), withPlan("p1:aaa", "2")]);
    let out = "";
    await approvePlan(connection, { kind: kinds.cluster, name: "demo" }, undefined, "text", { write: (text: string) => (out += text) });
    expect(patches).toEqual([
      { metadata: { resourceVersion: "1", annotations: { [annotations.approvePlan]: "p1:aaa" } } },
      { metadata: { resourceVersion: "2", annotations: { [annotations.approvePlan]: "p1:aaa" } } },
    ]);
    expect(out).toContain("approved plan p1:aaa of TerraformCluster team-a/demo");
  });

  it("refuses, writing nothing more, when the plan changed in between", async () => {
    const { connection, patches } = fakeConnection([withPlan("p1:aaa", "1"), withPlan("p1:bbb", "2")]);
    await expect(
      approvePlan(connection, { kind: kinds.cluster, name: "demo" }, undefined, "text", { write: () => undefined }),
    ).rejects.toThrow(
      new Refusal(
        "the plan of TerraformCluster team-a/demo changed since it was shown: it is now p1:bbb (add 0, change 0, destroy 0), " +
          "not p1:aaa; review it with plan show and approve that hash",
      ),
    );
    expect(patches).toHaveLength(1);
  });
});
