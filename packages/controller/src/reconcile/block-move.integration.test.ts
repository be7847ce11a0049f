import { afterAll, beforeAll, expect, it } from "@jest/globals";
import { noopModuleDirectory } from "@captf/module-noop";
import { describeWithTools, waitFor } from "@captf/testkit";
import { machineAdapter } from "../kinds/adapters.js";
import { startJobExecutor, type JobExecutor } from "./job-executor.test-support.js";
import { createMachine, readMachine } from "./machine-fixture.test-support.js";
import { preparePlane, type PlaneClients } from "./plane.test-support.js";
import { reconcileWorkspace, type ReconcilerDeps } from "./workspace-reconciler.js";
import type { KubeObject, ResourceType } from "../runtime/kube-client.js";

const image = "registry.invalid/captf/noop-machine:v0.1.0";
const blockMove = "clusterctl.cluster.x-k8s.io/block-move";

// clusterctl move skips nothing on its own: an object whose Job runs carries block-move, set before
// the Job is created (so a move never copies an object mid-run) and removed once no Job runs.
describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager", "tofu", "go"], "clusterctl block-move", () => {
  const namespace = `move-${Date.now().toString(36)}`;
  let plane: PlaneClients;
  let executor: JobExecutor;

  beforeAll(async () => {
    plane = await preparePlane(namespace);
    executor = startJobExecutor({ kubeconfigPath: plane.kubeconfigPath, namespace, modules: { [image]: noopModuleDirectory("machine") } });
    await createMachine(plane, namespace, "m-move", image);
  }, 120_000);
  afterAll(() => executor?.close());

  it("is on the object before each Job is created, kept while it runs, and cleared once none runs", async () => {
    // What the object carried at the moment each Job was created.
    const atCreate: (string | undefined)[] = [];
    const client = new Proxy(plane.client, {
      get(target, property) {
        const value = Reflect.get(target, property) as (...args: unknown[]) => unknown;
        if (property !== "create") return typeof value === "function" ? value.bind(target) : value;
        return async (type: ResourceType, objectNamespace: string, body: KubeObject) => {
          if (type.kind === "Job") atCreate.push((await readMachine(plane, namespace, "m-move")).metadata.annotations?.[blockMove]);
          return target.create(type, objectNamespace, body);
        };
      },
    });
    const deps: ReconcilerDeps = { client };
    for (let pass = 0; pass < 4 && !(await readMachine(plane, namespace, "m-move")).status?.activeJob; pass++)
      await reconcileWorkspace(deps, machineAdapter, namespace, "m-move");
    expect(atCreate).toEqual(["true"]);

    // While the Job runs, passes keep it.
    await reconcileWorkspace(deps, machineAdapter, namespace, "m-move");
    expect((await readMachine(plane, namespace, "m-move")).metadata.annotations?.[blockMove]).toBe("true");

    // Jobs finish (a refresh may follow the apply): once a pass finds none running, the annotation goes.
    const allFinished = async () =>
      (await plane.batch.listNamespacedJob({ namespace })).items.every((job) =>
        job.status?.conditions?.some((c) => (c.type === "Complete" || c.type === "Failed") && c.status === "True"),
      );
    let machine = await readMachine(plane, namespace, "m-move");
    for (let pass = 0; pass < 10 && machine.status?.activeJob; pass++) {
      await waitFor(async () => (await executor.runPending(), (await allFinished()) ? true : undefined));
      await reconcileWorkspace(deps, machineAdapter, namespace, "m-move");
      machine = await readMachine(plane, namespace, "m-move");
    }
    expect(machine.status?.activeJob ?? null).toBeNull();
    expect(machine.metadata.annotations?.[blockMove]).toBeUndefined();
  }, 180_000);
});
