import { afterAll, beforeAll, expect, it } from "@jest/globals";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { describeWithTools, waitFor } from "@captf/testkit";
import { machineAdapter } from "../kinds/adapters.js";
import { startJobExecutor, type JobExecutor } from "./job-executor.test-support.js";
import { preparePlane, type PlaneClients } from "./plane.test-support.js";
import { condition, createMachine, readMachine } from "./machine-fixture.test-support.js";
import { reconcileWorkspace, type ReconcilerDeps } from "./workspace-reconciler.js";

const unpullable = "registry.invalid/captf/missing-machine:v0.1.0";
const noModule = "registry.invalid/captf/empty-machine:v0.1.0";
// A module image that cannot be pulled, or that breaks the image contract, fails its Job with its
// own reason and is retried with backoff; it never waits out the one-hour deadline.
describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager", "tofu", "go"], "module images that cannot run", () => {
  const pullNamespace = `pull-${Date.now().toString(36)}`;
  const layoutNamespace = `layout-${Date.now().toString(36)}`;
  let pullPlane: PlaneClients;
  let layoutPlane: PlaneClients;
  let executor: JobExecutor;
  const emptyModule = mkdtempSync(join(tmpdir(), "captf-empty-module-"));

  beforeAll(async () => {
    pullPlane = await preparePlane(pullNamespace);
    layoutPlane = await preparePlane(layoutNamespace);
    executor = startJobExecutor({
      kubeconfigPath: layoutPlane.kubeconfigPath,
      namespace: layoutNamespace,
      modules: { [noModule]: emptyModule },
    });
    await createMachine(pullPlane, pullNamespace, "m-pull", unpullable);
    await createMachine(layoutPlane, layoutNamespace, "m-layout", noModule);
  }, 120_000);
  afterAll(() => {
    executor?.close();
    rmSync(emptyModule, { recursive: true, force: true });
  });

  it("fails a Job whose image is not pulled for 2 minutes with ImagePullFailed, marked, and backs off", async () => {
    const { core, batch } = pullPlane;
    let clock = Date.now();
    const deps: ReconcilerDeps = { client: pullPlane.client, now: () => clock };
    for (let pass = 0; pass < 4 && !(await readMachine(pullPlane, pullNamespace, "m-pull")).status?.activeJob; pass++)
      await reconcileWorkspace(deps, machineAdapter, pullNamespace, "m-pull");
    const jobName = (await readMachine(pullPlane, pullNamespace, "m-pull")).status!.activeJob!.name;
    const pod = await waitFor(
      async () => (await core.listNamespacedPod({ namespace: pullNamespace, labelSelector: `job-name=${jobName}` })).items[0],
      60_000,
      "the Job's Pod",
    );
    // What a kubelet reports while it cannot pull the module image.
    const startTime = new Date(clock).toISOString();
    await core.patchNamespacedPodStatus(
      {
        name: pod.metadata!.name!,
        namespace: pullNamespace,
        body: {
          status: {
            phase: "Pending",
            startTime,
            containerStatuses: [
              {
                name: "source",
                image: unpullable,
                imageID: "",
                ready: false,
                restartCount: 0,
                state: { waiting: { reason: "ImagePullBackOff", message: `Back-off pulling image "${unpullable}"` } },
              },
            ],
          },
        },
      },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
    );

    // Within the pull deadline the Job is left to the kubelet's retries.
    clock += 60_000;
    await reconcileWorkspace(deps, machineAdapter, pullNamespace, "m-pull");
    expect(
      (await batch.readNamespacedJob({ name: jobName, namespace: pullNamespace })).metadata?.annotations?.["captf.io/image-pull-failed"],
    ).toBeUndefined();

    // Past it, the Job is marked and fails.
    clock += 61_000;
    const failing = await reconcileWorkspace(deps, machineAdapter, pullNamespace, "m-pull");
    expect(failing.action).toContain("ImagePullBackOff");
    const failed = await waitFor(
      async () => {
        const job = await batch.readNamespacedJob({ name: jobName, namespace: pullNamespace });
        return job.status?.conditions?.some((c) => c.type === "Failed" && c.status === "True") ? job : undefined;
      },
      60_000,
      "the Job failed",
    );
    expect(failed.metadata?.annotations?.["captf.io/image-pull-failed"]).toBe("true");

    // Bookkeeping: ImagePullFailed, and the failure counts toward backoff: no new Job within a minute of it.
    clock = Date.parse(String(failed.status?.conditions?.find((c) => c.type === "Failed")?.lastTransitionTime)) + 30_000;
    const bookkept = await reconcileWorkspace(deps, machineAdapter, pullNamespace, "m-pull");
    expect(bookkept.action).toBe("NoStateBackoff");
    const machine = await readMachine(pullPlane, pullNamespace, "m-pull");
    expect(condition(machine, "ApplyJobSucceeded")).toMatchObject({ status: "False", reason: "ImagePullFailed" });
    expect(condition(machine, "ApplyJobSucceeded")?.message).toContain(unpullable);
    expect((await batch.listNamespacedJob({ namespace: pullNamespace })).items).toHaveLength(1);

    // After the backoff the apply is retried.
    clock += 60_000;
    const retried = await reconcileWorkspace(deps, machineAdapter, pullNamespace, "m-pull");
    expect(retried.action).toMatch(/^started apply/);
  }, 180_000);

  it("reports ImageInvalid when the runner finds no module in the image", async () => {
    const deps: ReconcilerDeps = { client: layoutPlane.client };
    let machine = await readMachine(layoutPlane, layoutNamespace, "m-layout");
    for (let pass = 0; pass < 12 && !condition(machine, "ApplyJobSucceeded"); pass++) {
      await reconcileWorkspace(deps, machineAdapter, layoutNamespace, "m-layout");
      // Like a kubelet: run each Pod once it exists, until every Job finished.
      await waitFor(async () => {
        await executor.runPending();
        return (await layoutPlane.batch.listNamespacedJob({ namespace: layoutNamespace })).items.every((job) =>
          job.status?.conditions?.some((c) => c.status === "True"),
        )
          ? true
          : undefined;
      });
      machine = await readMachine(layoutPlane, layoutNamespace, "m-layout");
    }
    expect(condition(machine, "ApplyJobSucceeded")).toMatchObject({ status: "False", reason: "ImageInvalid" });
    expect(condition(machine, "ApplyJobSucceeded")?.message).toContain(noModule);
  }, 180_000);
});
