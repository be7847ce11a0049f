import { beforeAll, expect, it } from "@jest/globals";
import { describeWithTools } from "@captf/testkit";
import { machineAdapter } from "../kinds/adapters.js";
import { condition, createMachine, readMachine } from "./machine-fixture.test-support.js";
import { preparePlane, type PlaneClients } from "./plane.test-support.js";
import { reconcileWorkspace, type ReconcilerDeps } from "./workspace-reconciler.js";

const image = "registry.invalid/captf/noop-machine:v0.1.0";

// Each Job policy passes the webhook alone; merged, a machine's deadline and its cluster's lock
// timeout contradict each other: the pass reports JobPolicyInvalid and starts no Job.
describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager"], "the merged Job policy at reconcile", () => {
  const namespace = `policy-${Date.now().toString(36)}`;
  let plane: PlaneClients;

  beforeAll(async () => {
    plane = await preparePlane(namespace);
    await createMachine(plane, namespace, "m-policy", image, {
      clusterSpec: { defaults: { jobs: { lockTimeoutSeconds: 600 } } },
      machineSpec: { jobs: { activeDeadlineSeconds: 500 } },
    });
  }, 120_000);

  it("a lock timeout not below the deadline once merged is ApplyJobSucceeded=False/JobPolicyInvalid, naming both values, and no " +
    "Job", async () => {
    const deps: ReconcilerDeps = { client: plane.client };
    expect((await reconcileWorkspace(deps, machineAdapter, namespace, "m-policy")).action).toBe("added finalizer");
    const waiting = await reconcileWorkspace(deps, machineAdapter, namespace, "m-policy");
    expect(waiting).toEqual({ action: "waiting: JobPolicyInvalid", requeueAfterMs: 600_000 });
    const message = condition(await readMachine(plane, namespace, "m-policy"), "ApplyJobSucceeded");
    expect(message).toMatchObject({ status: "False", reason: "JobPolicyInvalid" });
    expect(message?.message).toContain("lockTimeoutSeconds 600 (configured)");
    expect(message?.message).toContain("activeDeadlineSeconds 500 (configured)");
    expect((await plane.batch.listNamespacedJob({ namespace })).items).toHaveLength(0);
  }, 60_000);
});
