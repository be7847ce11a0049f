import { describe, expect, it } from "@jest/globals";
import type { V1RoleBinding } from "@kubernetes/client-node";
import { apiError, fakeClient } from "../runtime/fake-client.test-support.js";
import { ensureRunnerRbac, planRunnerRoleBinding, runnerRoleRef, serviceAccountOverrideCondition } from "./runner-rbac.js";

const runner = { kind: "ServiceAccount", name: "captf-runner", namespace: "team-a" };
const managed = { "captf.io/managed": "true" };

function binding(overrides: Partial<V1RoleBinding> & { labels?: Record<string, string> } = {}): V1RoleBinding {
  return {
    metadata: {
      name: "captf-runner",
      namespace: "team-a",
      resourceVersion: "3",
      labels: overrides.labels ?? managed,
      managedFields: [{ manager: "x" }],
    },
    roleRef: overrides.roleRef ?? runnerRoleRef,
    subjects: overrides.subjects ?? [runner],
  };
}

describe("planRunnerRoleBinding", () => {
  it("creates the binding of captf-runner to the ClusterRole captf-runner, labelled managed", () => {
    expect(planRunnerRoleBinding(undefined, "team-a")).toEqual({
      action: "create",
      roleBinding: {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "RoleBinding",
        metadata: { name: "captf-runner", namespace: "team-a", labels: managed },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "captf-runner" },
        subjects: [runner],
      },
    });
  });

  it.each<[string, V1RoleBinding, string]>([
    ["captf's own, current", binding(), "keep"],
    [
      "captf's own, with more subjects",
      binding({ subjects: [{ kind: "ServiceAccount", name: "custom", namespace: "team-a" }, runner] }),
      "keep",
    ],
    ["someone else's that binds the same", binding({ labels: {} }), "keep"],
    [
      "captf's own, without the runner",
      binding({ subjects: [{ kind: "ServiceAccount", name: "custom", namespace: "team-a" }] }),
      "replace",
    ],
    [
      "captf's own, bound to another role",
      binding({ roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "old" } }),
      "recreate",
    ],
    [
      "someone else's that binds another role",
      binding({ labels: {}, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "admin" } }),
      "conflict",
    ],
    [
      "someone else's that binds other subjects",
      binding({ labels: { app: "x" }, subjects: [{ kind: "User", name: "mallory" }] }),
      "conflict",
    ],
  ])("%s: %s", (_title, existing, action) => {
    expect(planRunnerRoleBinding(existing, "team-a").action).toBe(action);
  });

  it("adds the runner to captf's binding and keeps the other subjects", () => {
    const custom = { kind: "ServiceAccount", name: "custom", namespace: "team-a" };
    const plan = planRunnerRoleBinding(binding({ subjects: [custom] }), "team-a");
    expect(plan).toMatchObject({ action: "replace", roleBinding: { subjects: [custom, runner], metadata: { resourceVersion: "3" } } });
    expect(plan.action === "replace" && plan.roleBinding.metadata?.managedFields).toBeUndefined();
  });

  it("recreates captf's binding with the ClusterRole when its roleRef changed", () => {
    const plan = planRunnerRoleBinding(
      binding({ roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "old" } }),
      "team-a",
    );
    expect(plan).toMatchObject({
      action: "recreate",
      roleBinding: { roleRef: runnerRoleRef, subjects: [runner], metadata: { labels: managed } },
    });
  });

  it("says what a conflicting binding binds", () => {
    const plan = planRunnerRoleBinding(
      binding({ labels: {}, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "admin" } }),
      "team-a",
    );
    expect(plan.action === "conflict" && plan.why).toBe(
      "RoleBinding team-a/captf-runner exists, was not made by captf and binds ClusterRole admin rather than ClusterRole " +
        "captf-runner to ServiceAccount captf-runner; captf never takes it over: delete or rename it",
    );
  });
});

describe("serviceAccountOverrideCondition", () => {
  it("lets Jobs run only as a ServiceAccount that exists and is labelled captf.io/runner=true", () => {
    expect(serviceAccountOverrideCondition("own", "ns", undefined)).toMatchObject({
      status: "False",
      reason: "ServiceAccountNotOptedIn",
      message: expect.stringContaining("does not exist"),
    });
    expect(
      serviceAccountOverrideCondition("own", "ns", { metadata: { name: "own", labels: { "captf.io/runner": "false" } } }),
    ).toMatchObject({ status: "False", reason: "ServiceAccountNotOptedIn" });
    expect(
      serviceAccountOverrideCondition("own", "ns", { metadata: { name: "own", labels: { "captf.io/runner": "true" } } }),
    ).toMatchObject({ status: "True", reason: "RBACReady" });
  });
});

describe("ensureRunnerRbac", () => {
  const alreadyExists = () => apiError(409, 'rolebindings.rbac.authorization.k8s.io "captf-runner" already exists', "AlreadyExists");

  it("is ready when another writer created the binding between its read and its create: it plans again on what was written", async () => {
    let reads = 0;
    const client = fakeClient({
      "get serviceaccounts": () => ({ metadata: { name: "captf-runner", namespace: "team-a" } }),
      "get rolebindings": () => {
        reads++;
        if (reads === 1) throw apiError(404, "not found", "NotFound");
        return binding();
      },
      "create rolebindings": () => {
        throw alreadyExists();
      },
    });
    expect(await ensureRunnerRbac({ client }, "team-a")).toMatchObject({ type: "RunnerRBACReady", status: "True", reason: "RBACReady" });
    expect(client.calls).toEqual([
      "get serviceaccounts captf-runner",
      "get rolebindings captf-runner",
      "create rolebindings captf-runner",
      "get rolebindings captf-runner",
    ]);
  });

  it("reports RBACFailed, to be retried, when the binding changes under it twice", async () => {
    const client = fakeClient({
      "get serviceaccounts": () => ({ metadata: { name: "captf-runner", namespace: "team-a" } }),
      "get rolebindings": () => {
        throw apiError(404, "not found", "NotFound");
      },
      "create rolebindings": () => {
        throw alreadyExists();
      },
    });
    expect(await ensureRunnerRbac({ client }, "team-a")).toMatchObject({
      status: "False",
      reason: "RBACFailed",
      message: "RoleBinding team-a/captf-runner changed while it was being written, will retry",
    });
    expect(client.calls.filter((call) => call.startsWith("create"))).toHaveLength(2);
  });
});
