import { afterAll, beforeAll, expect, it } from "@jest/globals";
import { cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type * as k8s from "@kubernetes/client-node";
import { noopModuleDirectory } from "@captf/module-noop";
import { describeWithTools, waitFor } from "@captf/testkit";
import { machineAdapter } from "../kinds/adapters.js";
import { startJobExecutor, type JobExecutor } from "./job-executor.test-support.js";
import { condition, createMachine, readMachine } from "./machine-fixture.test-support.js";
import { allJobsFinished, planeReconcilerDeps, preparePlane, type PlaneClients } from "./plane.test-support.js";
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

// A machine that sets no Job policy of its own inherits its cluster's spec.defaults.jobs for history and
// backoff too: failedJobsHistoryLimit 1 makes the first failure back off 10 min (with the default 3,
// 1 min) and prunes the older failed Job once a second one failed. The module refuses every apply
// (a failing precondition), run by the real runner and OpenTofu; the pass clock moves past the backoff.
describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager", "tofu"], "a cluster's Job defaults on its machines", () => {
  const namespace = `history-${Date.now().toString(36)}`;
  const failingImage = "registry.invalid/captf/refusing-machine:v1";
  const work = mkdtempSync(join(tmpdir(), "captf-history-"));
  let plane: PlaneClients;
  let executor: JobExecutor;
  let eventsApi: k8s.EventsV1Api;
  let deps: ReconcilerDeps;
  let skew = 0;

  beforeAll(async () => {
    const moduleDir = join(work, "machine");
    cpSync(noopModuleDirectory("machine"), moduleDir, { recursive: true });
    writeFileSync(
      join(moduleDir, "refused.tf"),
      'resource "terraform_data" "refused" {\n  lifecycle {\n    precondition {\n      condition     = false\n' +
        '      error_message = "refused by the test"\n    }\n  }\n}\n',
    );
    plane = await preparePlane(namespace);
    const planeDeps = planeReconcilerDeps(plane, "job-history-test");
    eventsApi = planeDeps.eventsApi;
    deps = { ...planeDeps.deps, now: () => Date.now() + skew };
    executor = startJobExecutor({ kubeconfigPath: plane.kubeconfigPath, namespace, modules: { [failingImage]: moduleDir } });
    await createMachine(plane, namespace, "m-history", failingImage, {
      clusterSpec: { defaults: { jobs: { failedJobsHistoryLimit: 1 } } },
    });
  }, 120_000);
  afterAll(() => {
    executor?.close();
    rmSync(work, { recursive: true, force: true });
  });

  const jobNames = async () =>
    (await plane.batch.listNamespacedJob({ namespace })).items
      .sort((a, b) => Date.parse(String(a.metadata!.creationTimestamp)) - Date.parse(String(b.metadata!.creationTimestamp)))
      .map((job) => job.metadata!.name!);
  /** The JobCreated notes on the machine, read back from the API server, once there are `count`. */
  const jobCreatedNotes = (count: number) =>
    waitFor(
      async () => {
        const notes = (await eventsApi.listNamespacedEvent({ namespace })).items
          .filter((event) => event.regarding?.name === "m-history" && event.reason === "JobCreated")
          .map((event) => event.note);
        return notes.length >= count ? notes : undefined;
      },
      10_000,
      `${count} JobCreated event(s)`,
    );
  const runJobs = async () => {
    await executor.runPending();
    await allJobsFinished(plane.batch, namespace, executor);
  };

  it("the cluster's failedJobsHistoryLimit bounds the backoff and prunes the machine's older failed Job; JobCreated names the " +
    "attempt, the image and why", async () => {
    expect((await reconcileWorkspace(deps, machineAdapter, namespace, "m-history")).action).toBe("added finalizer");
    expect((await reconcileWorkspace(deps, machineAdapter, namespace, "m-history")).action).toMatch(/^started apply \(NoState\)/);
    const [first] = await jobNames();
    expect(await jobCreatedNotes(1)).toEqual([`started apply attempt 1 as Job ${first} with image ${failingImage}, because NoState`]);
    await runJobs();

    // One failure reaches the inherited limit of 1: the retry waits RetryMax (10 min), not 1 min.
    const backingOff = await reconcileWorkspace(deps, machineAdapter, namespace, "m-history");
    // The refused apply left a state without an inputs hash: that is why the next apply is due.
    expect(backingOff.action).toBe("StateWithoutInputsHashBackoff");
    expect(backingOff.requeueAfterMs).toBeGreaterThan(9 * 60_000);
    expect(condition(await readMachine(plane, namespace, "m-history"), "ApplyJobSucceeded")).toMatchObject({ status: "False" });

    skew = 11 * 60_000;
    expect((await reconcileWorkspace(deps, machineAdapter, namespace, "m-history")).action).toMatch(
      /^started apply \(StateWithoutInputsHash\)/,
    );
    skew = 0;
    const second = (await jobNames()).find((name) => name !== first)!;
    expect((await jobCreatedNotes(2))[1]).toBe(
      `started apply attempt 2 as Job ${second} with image ${failingImage}, because StateWithoutInputsHash`,
    );
    await runJobs();

    // The second failure is bookkept; only the newest failed Job stays (failedJobsHistoryLimit 1 from the cluster's defaults).
    expect((await reconcileWorkspace(deps, machineAdapter, namespace, "m-history")).action).toBe("StateWithoutInputsHashBackoff");
    await waitFor(async () => ((await jobNames()).join() === second ? true : undefined), 10_000, `only Job ${second} left`);
  }, 300_000);
});
