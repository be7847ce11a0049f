import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import type * as k8s from "@kubernetes/client-node";
import { noopModuleDirectory } from "@captf/module-noop";
import { stateSecretSuffix } from "@captf/render";
import { describeWithTools, waitFor } from "@captf/testkit";
import { machineAdapter } from "../kinds/adapters.js";
import { startJobExecutor, type JobExecutor } from "./job-executor.test-support.js";
import { condition, createMachine, readMachine } from "./machine-fixture.test-support.js";
import { allJobsFinished, mergePatchOptions, planeReconcilerDeps, preparePlane, type PlaneClients } from "./plane.test-support.js";
import { runLeaseName } from "./run-lease.js";
import { podRefusalAfterMs } from "./workspace-phases.js";
import { reconcileWorkspace, type ReconcilerDeps } from "./workspace-reconciler.js";

const image = "registry.invalid/captf/noop-machine:v0.1.0";
const infra = { group: "infrastructure.cluster.x-k8s.io", version: "v1alpha1", plural: "terraformmachines" };
const capi = { group: "cluster.x-k8s.io", version: "v1beta2", plural: "clusters" };
const opLabel = "captf.infrastructure.cluster.x-k8s.io/op";

// Limits the reference states and captf beats (issue 32 §4), on the real API server (its ResourceQuota admission plugin,
// kube-controller-manager's quota controller) with real Jobs and the real runner: a Job a ResourceQuota refuses, a paused object being
// deleted, and an object arriving without its status as clusterctl move leaves it.
describeWithTools(
  ["etcd", "kube-apiserver", "kube-controller-manager", "tofu", "go"],
  "limits a namespace or a pause puts on a pass",
  () => {
    const run = Date.now().toString(36);
    let plane: PlaneClients;
    let deps: ReconcilerDeps;
    let eventsApi: k8s.EventsV1Api;

    beforeAll(async () => {
      plane = await preparePlane(`quota-${run}`);
      ({ deps, eventsApi } = planeReconcilerDeps(plane, "limits-test"));
    }, 120_000);

    const jobsOf = async (namespace: string, op?: string) =>
      (await plane.batch.listNamespacedJob({ namespace })).items.filter((job) => !op || job.metadata?.labels?.[opLabel] === op);
    const eventsOf = async (namespace: string, name: string, reason: string) =>
      (await eventsApi.listNamespacedEvent({ namespace })).items.filter(
        (event) => event.regarding?.name === name && event.reason === reason && event.reportingController === "captf-manager",
      );
    /** Passes until one answers an action `done` accepts (the first adds the finalizer). */
    const passUntil = async (namespace: string, name: string, done: (action: string) => boolean, passes = 6) => {
      const actions: string[] = [];
      for (let pass = 0; pass < passes; pass++) {
        const result = await reconcileWorkspace(deps, machineAdapter, namespace, name);
        actions.push(result.action);
        if (done(result.action)) return result;
      }
      throw new Error(`no pass of ${namespace}/${name} answered as expected: ${actions.join("; ")}`);
    };

    /** A namespace of its own with a machine of the no-op module and an executor for its Jobs, closed after its tests. */
    const machineNamespace = (namespace: string, name: string, machineSpec: Record<string, unknown> = {}) => {
      const setup = { executor: undefined as JobExecutor | undefined };
      beforeAll(async () => {
        await plane.core.createNamespace({ body: { metadata: { name: namespace } } });
        const modules = { [image]: noopModuleDirectory("machine") };
        setup.executor = startJobExecutor({ kubeconfigPath: plane.kubeconfigPath, namespace, modules });
        await createMachine(plane, namespace, name, image, { machineSpec });
      }, 120_000);
      afterAll(() => setup.executor?.close());
      return setup;
    };
    /** Passes, running their Jobs, until the machine is Ready. */
    const provision = async (namespace: string, name: string, executor: JobExecutor) => {
      for (let pass = 0; pass < 8; pass++) {
        await reconcileWorkspace(deps, machineAdapter, namespace, name);
        if ((await readMachine(plane, namespace, name)).status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")) break;
        if (await executor.runPending()) await allJobsFinished(plane.batch, namespace, executor);
      }
      const machine = (await readMachine(plane, namespace, name)) as Awaited<ReturnType<typeof readMachine>> & {
        metadata: { uid: string };
        spec: { providerID?: string };
      };
      expect(condition(machine, "Ready")).toMatchObject({ status: "True" });
      return machine;
    };

    describe("a Job create a ResourceQuota refuses", () => {
      const namespace = `quota-${run}`;
      /** The quota's hard limit as the quota controller last recorded it (what the admission plugin checks creates against). */
      const recordedLimit = async () =>
        (await plane.core.readNamespacedResourceQuota({ namespace, name: "jobs" })).status?.hard?.["count/jobs.batch"];

      it("waits JobQuotaExceeded naming the quota, with one Warning event, the run lease released, and tries again later", async () => {
        await plane.core.createNamespacedResourceQuota({
          namespace,
          body: { metadata: { name: "jobs" }, spec: { hard: { "count/jobs.batch": "0" } } },
        });
        // Until the quota controller has recorded the limit, the plugin refuses every Job as "status unknown for quota".
        await waitFor(async () => ((await recordedLimit()) === "0" ? true : undefined), 60_000, "the quota controller's status.hard");
        await createMachine(plane, namespace, "q", image);

        const first = await passUntil(namespace, "q", (action) => action !== "added finalizer");
        expect(first).toMatchObject({ action: "waiting: JobQuotaExceeded", requeueAfterMs: 10_000 });
        const refused = condition(await readMachine(plane, namespace, "q"), "ApplyJobSucceeded")!;
        expect(refused).toMatchObject({ status: "Unknown", reason: "JobQuotaExceeded" });
        expect(refused.message).toMatch(
          new RegExp(
            "^the ResourceQuota jobs refused Job captf-m-q-apply-\\S+: exceeded quota: jobs, requested: count/jobs.batch=1, " +
              "used: count/jobs.batch=0, limited: count/jobs.batch=0; tried again in 10 s or on the next change$",
          ),
        );
        expect(await jobsOf(namespace)).toEqual([]);
        // A refused create proves no Job exists: the run lease is given back at once.
        const suffix = stateSecretSuffix({ role: "machine", namespace, name: "q" });
        await expect(plane.coordination.readNamespacedLease({ namespace, name: runLeaseName(suffix) })).rejects.toMatchObject({
          code: 404,
        });

        // Still refused: the wait doubles, and the event is not recorded again.
        const second = await reconcileWorkspace(deps, machineAdapter, namespace, "q");
        expect(second).toMatchObject({ action: "waiting: JobQuotaExceeded", requeueAfterMs: 20_000 });
        expect(condition(await readMachine(plane, namespace, "q"), "ApplyJobSucceeded")!.message).toContain("tried again in 20 s");
        const events = await waitFor(async () => {
          const found = await eventsOf(namespace, "q", "JobQuotaExceeded");
          return found.length > 0 ? found : undefined;
        });
        expect(events.map((event) => [event.type, event.note])).toEqual([["Warning", refused.message]]);
      }, 120_000);

      it("creates the Job on the pass its requeue brings once the quota is raised (a quota change starts no pass)", async () => {
        await plane.core.patchNamespacedResourceQuota(
          { namespace, name: "jobs", body: { spec: { hard: { "count/jobs.batch": "5" } } } },
          mergePatchOptions(),
        );
        await waitFor(async () => ((await recordedLimit()) === "5" ? true : undefined), 60_000, "the raised limit recorded");
        const retried = await reconcileWorkspace(deps, machineAdapter, namespace, "q");
        expect(retried.action).toMatch(/^started apply \(.+\) as captf-m-q-apply-/);
        const machine = await readMachine(plane, namespace, "q");
        expect((await jobsOf(namespace, "apply")).map((job) => job.metadata!.name)).toEqual([machine.status!.activeJob!.name]);
        // The wait is over once the Job runs.
        expect(condition(machine, "ApplyJobSucceeded")).toMatchObject({
          status: "Unknown",
          reason: "NoApplyYet",
          message: `apply Job ${machine.status!.activeJob!.name} runs; no apply has finished yet`,
        });
        expect(await eventsOf(namespace, "q", "JobQuotaExceeded")).toHaveLength(1);
      }, 120_000);
    });

    describe("a Job's Pod a quota or a LimitRange refuses (the Job itself is admitted)", () => {
      /** The Job controller's FailedCreate notes on a Job, once there is one. */
      const failedCreates = (namespace: string, job: string) =>
        waitFor(
          async () => {
            const notes = (await plane.core.listNamespacedEvent({ namespace, fieldSelector: `involvedObject.name=${job}` })).items
              .filter((event) => event.reason === "FailedCreate")
              .map((event) => event.message!);
            return notes.length > 0 ? notes : undefined;
          },
          60_000,
          `a FailedCreate event on Job ${job}`,
        );
      /** The first Job's start, then a pass a while later: the Job controller has had its time to create the Pod. */
      const startAndLookAgain = async (namespace: string, name: string) => {
        await passUntil(namespace, name, (action) => action.startsWith("started apply"));
        const job = (await readMachine(plane, namespace, name)).status!.activeJob!.name;
        const notes = await failedCreates(namespace, job);
        const later = { ...deps, now: () => Date.now() + podRefusalAfterMs };
        return { job, notes, result: await reconcileWorkspace(later, machineAdapter, namespace, name), later };
      };

      describe("a quota of Pods", () => {
        const namespace = `pod-quota-${run}`;
        const setup = machineNamespace(namespace, "pq");

        it("waits JobQuotaExceeded naming the quota while the Job has no Pod, and applies once the quota is raised", async () => {
          await plane.core.createNamespacedResourceQuota({
            namespace,
            body: { metadata: { name: "pods" }, spec: { hard: { pods: "0" } } },
          });
          const recorded = async () => (await plane.core.readNamespacedResourceQuota({ namespace, name: "pods" })).status?.hard?.pods;
          await waitFor(async () => ((await recorded()) === "0" ? true : undefined), 60_000, "the quota controller's status.hard");

          const { job, notes, result, later } = await startAndLookAgain(namespace, "pq");
          expect(notes[0]).toMatch(
            /^Error creating: pods "\S+" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=0, limited: pods=0$/,
          );
          expect(result).toMatchObject({ action: `waiting: JobQuotaExceeded (the Pod of Job ${job})`, requeueAfterMs: 30_000 });
          const message =
            `the ResourceQuota pods refused the Pod of Job ${job}: exceeded quota: pods, requested: pods=1, used: pods=0, ` +
            "limited: pods=0; the Job controller tries again until the Job's deadline";
          const machine = await readMachine(plane, namespace, "pq");
          expect(condition(machine, "ApplyJobSucceeded")).toMatchObject({ status: "Unknown", reason: "JobQuotaExceeded", message });
          expect(machine.status!.activeJob!.name).toBe(job);
          await reconcileWorkspace(later, machineAdapter, namespace, "pq");
          const events = await waitFor(async () => {
            const found = await eventsOf(namespace, "pq", "JobQuotaExceeded");
            return found.length > 0 ? found : undefined;
          });
          expect(events.map((event) => [event.type, event.note])).toEqual([["Warning", message]]);

          // Raised: the Job controller creates the Pod on its own next try, and the apply runs.
          await plane.core.patchNamespacedResourceQuota(
            { namespace, name: "pods", body: { spec: { hard: { pods: "10" } } } },
            mergePatchOptions(),
          );
          await waitFor(
            async () =>
              (await plane.core.listNamespacedPod({ namespace, labelSelector: `job-name=${job}` })).items.length > 0 ? true : undefined,
            180_000,
            `the Pod of Job ${job}`,
          );
          await provision(namespace, "pq", setup.executor!);
          expect(await eventsOf(namespace, "pq", "JobQuotaExceeded")).toHaveLength(1);
        }, 300_000);
      });

      describe("a LimitRange", () => {
        const namespace = `limit-range-${run}`;
        machineNamespace(namespace, "lr", { jobs: { resources: { limits: { cpu: "200m" } } } });

        it("waits JobQuotaExceeded saying which bound the Pod breaks (a LimitRange names no object)", async () => {
          await plane.core.createNamespacedLimitRange({
            namespace,
            body: { metadata: { name: "cpu" }, spec: { limits: [{ type: "Container", max: { cpu: "100m" } }] } },
          });
          const { job, notes, result } = await startAndLookAgain(namespace, "lr");
          expect(notes[0]).toMatch(/^Error creating: pods "\S+" is forbidden: maximum cpu usage per Container is 100m, but limit is 200m$/);
          expect(result.action).toBe(`waiting: JobQuotaExceeded (the Pod of Job ${job})`);
          expect(condition(await readMachine(plane, namespace, "lr"), "ApplyJobSucceeded")).toMatchObject({
            status: "Unknown",
            reason: "JobQuotaExceeded",
            message:
              `a LimitRange of the namespace refused the Pod of Job ${job}: maximum cpu usage per Container is 100m, but limit is ` +
              "200m; the Job controller tries again until the Job's deadline",
          });
        }, 120_000);
      });
    });

    describe("a paused machine being deleted", () => {
      const namespace = `paused-deletion-${run}`;
      const setup = machineNamespace(namespace, "p");

      const deleting = async () => condition(await readMachine(plane, namespace, "p"), "Deleting");

      it("says DeletionPaused naming what pauses it, keeps its finalizer, runs no destroy; resumed, it is destroyed and gone", async () => {
        // Provisioned first: its deletion has infrastructure to destroy.
        const executor = setup.executor!;
        await provision(namespace, "p", executor);

        await plane.custom.patchNamespacedCustomObject(
          { ...infra, namespace, name: "p", body: { metadata: { annotations: { "cluster.x-k8s.io/paused": "" } } } },
          mergePatchOptions(),
        );
        await plane.custom.deleteNamespacedCustomObject({ ...infra, namespace, name: "p" });
        expect((await reconcileWorkspace(deps, machineAdapter, namespace, "p")).action).toBe("Paused");
        expect(await deleting()).toEqual(
          expect.objectContaining({
            status: "True",
            reason: "DeletionPaused",
            message: "deletion waits: the object is paused (annotation cluster.x-k8s.io/paused); it goes on once reconciliation resumes",
          }),
        );
        expect((await readMachine(plane, namespace, "p")).metadata).toMatchObject({
          finalizers: ["terraformmachine.infrastructure.cluster.x-k8s.io"],
        });

        // Paused by its Cluster instead: the condition names the Cluster.
        await plane.custom.patchNamespacedCustomObject(
          { ...capi, namespace, name: "ext", body: { spec: { paused: true } } },
          mergePatchOptions(),
        );
        await plane.custom.patchNamespacedCustomObject(
          { ...infra, namespace, name: "p", body: { metadata: { annotations: { "cluster.x-k8s.io/paused": null } } } },
          mergePatchOptions(),
        );
        expect((await reconcileWorkspace(deps, machineAdapter, namespace, "p")).action).toBe("Paused");
        expect(await deleting()).toMatchObject({
          status: "True",
          reason: "DeletionPaused",
          message: "deletion waits: the Cluster ext is paused (spec.paused); it goes on once reconciliation resumes",
        });
        expect(await jobsOf(namespace, "destroy")).toEqual([]);
        expect(await eventsOf(namespace, "p", "DeletionStarted")).toHaveLength(1);

        await plane.custom.patchNamespacedCustomObject(
          { ...capi, namespace, name: "ext", body: { spec: { paused: false } } },
          mergePatchOptions(),
        );
        const actions: string[] = [];
        for (let pass = 0; pass < 8 && actions.at(-1) !== "gone"; pass++) {
          const result = await reconcileWorkspace(deps, machineAdapter, namespace, "p");
          actions.push(result.action);
          if (await executor.runPending()) await allJobsFinished(plane.batch, namespace, executor);
        }
        expect(actions).toEqual(expect.arrayContaining([expect.stringMatching(/^started destroy/), "removed finalizer"]));
        await expect(readMachine(plane, namespace, "p")).rejects.toMatchObject({ code: 404 });
        expect(await eventsOf(namespace, "p", "Destroyed")).toHaveLength(1);
        expect(await eventsOf(namespace, "p", "DeletionStarted")).toHaveLength(1);
      }, 300_000);
    });

    describe("a machine as clusterctl move leaves it on the target", () => {
      const namespace = `moved-${run}`;
      const setup = machineNamespace(namespace, "mv");

      // clusterctl creates the object without its status and moves no Job; its state, durable inputs and backups arrive owned by it
      // (the e2e's move scenario checks that with the real clusterctl). Here the status and Jobs go on the same plane.
      it("rebuilds its status from the state and durable inputs it finds, without applying again", async () => {
        const executor = setup.executor!;
        const provisioned = await provision(namespace, "mv", executor);
        const suffix = stateSecretSuffix({ role: "machine", namespace, name: "mv" });
        const stateBefore = await plane.core.readNamespacedSecret({ namespace, name: `tfstate-default-${suffix}` });

        await plane.batch.deleteCollectionNamespacedJob({ namespace, propagationPolicy: "Background" });
        await waitFor(async () => ((await jobsOf(namespace)).length === 0 ? true : undefined), 60_000, "the Jobs gone");
        await plane.custom.patchNamespacedCustomObjectStatus(
          { ...infra, namespace, name: "mv", body: { status: null } },
          mergePatchOptions(),
        );
        expect((await readMachine(plane, namespace, "mv")).status).toBeUndefined();

        const actions: string[] = [];
        for (let pass = 0; pass < 3; pass++) {
          actions.push((await reconcileWorkspace(deps, machineAdapter, namespace, "mv")).action);
          if (await executor.runPending()) await allJobsFinished(plane.batch, namespace, executor);
        }
        expect(actions.filter((action) => action.startsWith("started apply"))).toEqual([]);
        expect(await jobsOf(namespace, "apply")).toEqual([]);
        const rebuilt = (await readMachine(plane, namespace, "mv")) as typeof provisioned & { status: { initialization?: unknown } };
        expect(condition(rebuilt, "InputsApplied")).toMatchObject({ status: "True", reason: "InputsApplied" });
        expect(rebuilt.status.initialization).toEqual({ provisioned: true });
        expect(rebuilt.spec.providerID).toBe(provisioned.spec.providerID);
        const stateAfter = await plane.core.readNamespacedSecret({ namespace, name: `tfstate-default-${suffix}` });
        expect(stateAfter.metadata?.labels?.["clusterctl.cluster.x-k8s.io/move"]).toBe("");
        // Owned by the machine before and after (clusterctl rewrites the reference to the object it creates on the target).
        const owners = (secret: k8s.V1Secret) => secret.metadata?.ownerReferences?.map((reference) => [reference.kind, reference.uid]);
        expect(owners(stateBefore)).toEqual([["TerraformMachine", provisioned.metadata.uid]]);
        expect(owners(stateAfter)).toEqual(owners(stateBefore));
      }, 300_000);
    });
  },
);
