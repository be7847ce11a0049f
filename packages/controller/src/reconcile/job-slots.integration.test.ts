import { afterAll, beforeAll, expect, it } from "@jest/globals";
import { pino } from "pino";
import { describeWithTools, waitFor } from "@captf/testkit";
import { labels } from "@captf/contract/api";
import { machineAdapter } from "../kinds/adapters.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import { Informer } from "../runtime/informer.js";
import { KubeClient, type KubeObject } from "../runtime/kube-client.js";
import { planeKubeConfig } from "../runtime/runtime.test-support.js";
import { JobSlots, slotJobCache } from "./job-slots.js";
import { managedSecretSelector } from "./manager-cache.js";
import { jobNameLabel } from "./observe-jobs.js";
import { workspaceController } from "./workspace-controller.js";
import { condition, createMachine, readMachine } from "./machine-fixture.test-support.js";
import { planeReconcilerDeps, preparePlane, type PlaneClients } from "./plane.test-support.js";
import { reconcileWorkspace, type ReconcilerDeps } from "./workspace-reconciler.js";

const image = "registry.invalid/captf/noop-machine:v0.1.0";
const limit = 2;
const machines = ["m0", "m1", "m2", "m3", "m4", "m5"];

// --max-active-jobs under concurrent passes, counted from a real Job informer as the manager counts:
// the passes that see a free slot all await leases and writes before their Job exists, and none
// of their Jobs is in the cache yet when the others look.
describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager"], "Job slots under concurrent passes", () => {
  const namespace = `job-slots-${Date.now().toString(36)}`;
  let plane: PlaneClients;
  let deps: ReconcilerDeps;
  let client: KubeClient;
  let jobCache: Informer<KubeObject>;
  let podCache: Informer<KubeObject>;
  let slots: JobSlots;
  /** Keys the controller's Job and Pod watches asked passes for. */
  const woken: string[] = [];
  /** The same, with the resource whose event asked. */
  const wokenBy: { plural: string; key: string }[] = [];

  beforeAll(async () => {
    plane = await preparePlane(namespace);
    client = new KubeClient(planeKubeConfig());
    jobCache = new Informer({ client, type: builtinTypes.job, namespace, logger: pino({ level: "silent" }) });
    podCache = new Informer({
      client,
      type: builtinTypes.pod,
      namespace,
      labelSelector: managedSecretSelector,
      logger: pino({ level: "silent" }),
    });
    podCache.indexLabel(jobNameLabel);
    slots = new JobSlots(slotJobCache(jobCache, { informer: podCache, labelSelector: managedSecretSelector }), {
      manager: limit,
      clusterDefault: 0,
    });
    deps = { ...planeReconcilerDeps(plane, "job-slots-test").deps, jobSlots: slots };
    // The machine controller's Job and Pod watches, on these informers as the manager wires them: the keys they start passes for.
    for (const watch of workspaceController(machineAdapter, deps).watches.filter((watch) => ["jobs", "pods"].includes(watch.type.plural))) {
      if (watch.type.plural === "pods") expect(watch.labelSelector).toBe(managedSecretSelector);
      const collect = (event: "add" | "update" | "delete") => (object: KubeObject, old?: KubeObject) => {
        if (watch.predicate && !watch.predicate(object, event, old)) return;
        const keys = watch.map(object, event, old);
        woken.push(...keys);
        wokenBy.push(...keys.map((key) => ({ plural: watch.type.plural, key })));
      };
      const informer = watch.type.plural === "pods" ? podCache : jobCache;
      informer.addHandlers({
        add: (object) => collect("add")(object),
        update: (old, object) => collect("update")(object, old),
        delete: (object) => collect("delete")(object),
      });
    }
    jobCache.start();
    podCache.start();
    await waitFor(async () => (jobCache.hasSynced() && podCache.hasSynced() ? true : undefined));
    for (const name of machines) await createMachine(plane, namespace, name, image);
  }, 120_000);
  afterAll(async () => {
    await jobCache?.stop();
    await podCache?.stop();
    client?.close();
  });

  it(`starts at most ${limit} Jobs when ${machines.length} passes start at once, and the others wait for a slot`, async () => {
    for (const name of machines) expect((await reconcileWorkspace(deps, machineAdapter, namespace, name)).action).toBe("added finalizer");
    const results = await Promise.all(machines.map((name) => reconcileWorkspace(deps, machineAdapter, namespace, name)));
    const actions = results.map((result) => result.action);
    expect(actions.filter((action) => action.startsWith("started apply"))).toHaveLength(limit);
    // A pass that started a Job looks at it again in a minute, as at a running one (no pass comes from its appearing).
    for (const result of results.filter((result) => result.action.startsWith("started apply"))) expect(result.requeueAfterMs).toBe(60_000);
    expect(actions.filter((action) => action === "waiting: WaitingForJobSlot")).toHaveLength(machines.length - limit);
    expect((await plane.batch.listNamespacedJob({ namespace })).items).toHaveLength(limit);

    // Again, once the cache shows the Jobs: the slots counted there, the waiting passes' reservations given back.
    await waitFor(async () => (jobCache.list().length === limit ? true : undefined));
    const again = await Promise.all(machines.map(async (name) => (await reconcileWorkspace(deps, machineAdapter, namespace, name)).action));
    expect(again.filter((action) => action.startsWith("started"))).toHaveLength(0);
    expect((await plane.batch.listNamespacedJob({ namespace })).items).toHaveLength(limit);
    const waiting = machines.find((_, index) => actions[index] === "waiting: WaitingForJobSlot")!;
    expect(condition(await readMachine(plane, namespace, waiting), "ApplyJobSucceeded")).toMatchObject({
      status: "Unknown",
      reason: "WaitingForJobSlot",
    });

    // A running Job goes: its owner's pass, and the one machine that has waited longest for a slot, which starts its apply.
    const waiters = machines.filter((_, index) => actions[index] === "waiting: WaitingForJobSlot").map((name) => `${namespace}/${name}`);
    woken.length = 0;
    const [running] = (await plane.batch.listNamespacedJob({ namespace })).items;
    await plane.batch.deleteNamespacedJob({ namespace, name: running!.metadata!.name!, propagationPolicy: "Background" });
    await waitFor(async () => (woken.length >= 2 ? true : undefined), 30_000, "the Job's owner and a waiter woken");
    await new Promise((resolve) => setTimeout(resolve, 500));
    const owner = `${namespace}/${running!.metadata!.labels![labels.ownerName]}`;
    const wokenWaiters = woken.filter((key) => waiters.includes(key));
    expect(woken.filter((key) => key !== owner)).toEqual(wokenWaiters);
    expect(wokenWaiters).toHaveLength(1);
    await waitFor(async () => (jobCache.list().length === limit - 1 ? true : undefined));
    expect((await reconcileWorkspace(deps, machineAdapter, namespace, wokenWaiters[0]!.split("/")[1]!)).action).toMatch(/^started apply/);
    // The next freed slot goes to another in line, not again to the one that took this one.
    const stillWaiting = waiters.filter((key) => key !== wokenWaiters[0]);

    // A running Job's Pod ends (a kubelet reports it Succeeded): its slot frees then, a second or more before the Job
    // controller marks the Job Complete, and only the Pod's event wakes a waiter.
    await waitFor(
      async () => (jobCache.list().length === limit && podCache.list().length === limit ? true : undefined),
      30_000,
      "a Pod for each running Job",
    );
    const [ending] = podCache.list();
    const endingJob = ending!.metadata!.labels![jobNameLabel]!;
    wokenBy.length = 0;
    await client.patch(
      builtinTypes.pod,
      namespace,
      ending!.metadata!.name!,
      {
        status: {
          phase: "Succeeded",
          containerStatuses: [
            {
              name: "source",
              image,
              imageID: "",
              ready: false,
              restartCount: 0,
              state: { terminated: { exitCode: 0, reason: "Completed" } },
            },
          ],
        },
      },
      "strategic",
      { subresource: "status" },
    );
    // (The Job's own owner is woken too once the Job is marked Complete: not a waiter.)
    const wokenWaiting = (inLine = stillWaiting) => wokenBy.filter((entry) => inLine.includes(entry.key));
    await waitFor(async () => (wokenWaiting().length >= 1 ? true : undefined), 30_000, "a waiter woken by the Pod's end");
    expect(wokenWaiting()).toEqual([{ plural: "pods", key: expect.any(String) }]);
    const podWoken = wokenWaiting()[0]!.key;
    expect(stillWaiting).toContain(podWoken);
    const notWoken = stillWaiting.find((key) => key !== podWoken)!;
    // Free for the woken waiter; kept for it from anyone else.
    const ownerKey = (key: string) => `${namespace}/TerraformMachine/${key.split("/")[1]}`;
    expect(slots.usage(namespace, "", ownerKey(podWoken)).total).toBe(limit - 1);
    expect(slots.usage(namespace, "", ownerKey(notWoken)).total).toBe(limit);
    const jobFinished = await waitFor(
      async () => {
        const current = jobCache.get(namespace, endingJob) as { status?: { conditions?: { type: string; status: string }[] } } | undefined;
        return current?.status?.conditions?.some(
          (c) => ["Complete", "SuccessCriteriaMet", "Failed"].includes(c.type) && c.status === "True",
        )
          ? true
          : undefined;
      },
      60_000,
      "the Job controller marking the Job finished",
    );
    expect(jobFinished).toBe(true);
    // The Job's finish wakes the Job's owner, not a second waiter for the same slot.
    expect(wokenWaiting()).toEqual([{ plural: "pods", key: podWoken }]);
    // A pass that was not woken (its own backstop) finds the freed slot kept for the woken waiter; the woken one takes it.
    expect((await reconcileWorkspace(deps, machineAdapter, namespace, notWoken.split("/")[1]!)).action).toBe("waiting: WaitingForJobSlot");
    expect((await reconcileWorkspace(deps, machineAdapter, namespace, podWoken.split("/")[1]!)).action).toMatch(/^started apply/);

    // The next freed slot goes to the next in line, not again to those that took one.
    wokenBy.length = 0;
    const [another] = (await plane.batch.listNamespacedJob({ namespace })).items.filter(
      (job) => !job.status?.conditions?.some((c) => c.status === "True"),
    );
    await plane.batch.deleteNamespacedJob({ namespace, name: another!.metadata!.name!, propagationPolicy: "Background" });
    const inLine = stillWaiting.filter((key) => key !== podWoken);
    await waitFor(async () => (wokenWaiting(inLine).length >= 1 ? true : undefined), 30_000, "the next waiter woken");
    expect(wokenWaiting(inLine)).toEqual([{ plural: "jobs", key: expect.any(String) }]);
  }, 180_000);
});
