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
  let slots: JobSlots;
  /** Keys the controller's Job watches asked passes for. */
  const woken: string[] = [];

  beforeAll(async () => {
    plane = await preparePlane(namespace);
    client = new KubeClient(planeKubeConfig());
    jobCache = new Informer({ client, type: builtinTypes.job, namespace, logger: pino({ level: "silent" }) });
    slots = new JobSlots(slotJobCache(jobCache), { manager: limit, clusterDefault: 0 });
    deps = { ...planeReconcilerDeps(plane, "job-slots-test").deps, jobSlots: slots };
    // The machine controller's watches, on this informer as the manager wires them: the keys they start passes for.
    for (const watch of workspaceController(machineAdapter, deps).watches.filter((watch) => watch.type.plural === "jobs")) {
      const collect = (event: "add" | "update" | "delete") => (object: KubeObject, old?: KubeObject) => {
        if (!watch.predicate || watch.predicate(object, event, old)) woken.push(...watch.map(object, event, old));
      };
      jobCache.addHandlers({ add: (object) => collect("add")(object), update: (old, object) => collect("update")(object, old), delete: (object) => collect("delete")(object) });
    }
    jobCache.start();
    await waitFor(async () => (jobCache.hasSynced() ? true : undefined));
    for (const name of machines) await createMachine(plane, namespace, name, image);
  }, 120_000);
  afterAll(async () => {
    await jobCache?.stop();
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
    expect(condition(await readMachine(plane, namespace, waiting), "ApplyJobSucceeded")).toMatchObject({ status: "Unknown", reason: "WaitingForJobSlot" });

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
    const next = slots.wake("TerraformMachine", waiters.length);
    expect(next).toHaveLength(waiters.length - 1);
    expect(next).not.toContain(wokenWaiters[0]);
  }, 120_000);
});
