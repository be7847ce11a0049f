import { afterAll, beforeAll, expect, it } from "@jest/globals";
import { pino } from "pino";
import { describeWithTools, waitFor } from "@captf/testkit";
import { machineAdapter } from "../kinds/adapters.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import { Informer } from "../runtime/informer.js";
import { KubeClient, type KubeObject } from "../runtime/kube-client.js";
import { planeKubeConfig } from "../runtime/runtime.test-support.js";
import { JobSlots, type SlotJob } from "./job-slots.js";
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

  beforeAll(async () => {
    plane = await preparePlane(namespace);
    client = new KubeClient(planeKubeConfig());
    jobCache = new Informer({ client, type: builtinTypes.job, namespace, logger: pino({ level: "silent" }) });
    jobCache.start();
    await waitFor(async () => (jobCache.hasSynced() ? true : undefined));
    deps = { ...planeReconcilerDeps(plane, "job-slots-test").deps, jobSlots: new JobSlots(() => jobCache.list() as SlotJob[], { manager: limit, clusterDefault: 0 }) };
    for (const name of machines) await createMachine(plane, namespace, name, image);
  }, 120_000);
  afterAll(async () => {
    await jobCache?.stop();
    client?.close();
  });

  it(`starts at most ${limit} Jobs when ${machines.length} passes start at once, and the others wait for a slot`, async () => {
    for (const name of machines) expect((await reconcileWorkspace(deps, machineAdapter, namespace, name)).action).toBe("added finalizer");
    const actions = await Promise.all(machines.map(async (name) => (await reconcileWorkspace(deps, machineAdapter, namespace, name)).action));
    expect(actions.filter((action) => action.startsWith("started apply"))).toHaveLength(limit);
    expect(actions.filter((action) => action === "waiting: WaitingForJobSlot")).toHaveLength(machines.length - limit);
    expect((await plane.batch.listNamespacedJob({ namespace })).items).toHaveLength(limit);

    // Again, once the cache shows the Jobs: the slots counted there, the waiting passes' reservations given back.
    await waitFor(async () => (jobCache.list().length === limit ? true : undefined));
    const again = await Promise.all(machines.map(async (name) => (await reconcileWorkspace(deps, machineAdapter, namespace, name)).action));
    expect(again.filter((action) => action.startsWith("started"))).toHaveLength(0);
    expect((await plane.batch.listNamespacedJob({ namespace })).items).toHaveLength(limit);
    const waiting = machines.find((_, index) => actions[index] === "waiting: WaitingForJobSlot")!;
    expect(condition(await readMachine(plane, namespace, waiting), "ApplyJobSucceeded")).toMatchObject({ status: "Unknown", reason: "WaitingForJobSlot" });
  }, 120_000);
});
