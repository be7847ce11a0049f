// A TerraformMachine (TerraformMachinePool) created before Cluster API makes its Machine (MachinePool) its owner, as a
// MachineSet's scale-up does, on a running Manager against the real API server: the ownerReference landing starts the
// pass that creates the Job. Every timer a pass asks for is ten minutes here, so a pass that follows the patch came
// from a watch, not from the owner wait's requeue.
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import { pino } from "pino";
import { describeWithTools, waitFor } from "@captf/testkit";
import { machineAdapter, poolAdapter } from "../kinds/adapters.js";
import type { Controller } from "../runtime/controller.js";
import { KubeClient } from "../runtime/kube-client.js";
import { Manager } from "../runtime/manager.js";
import { planeKubeConfig } from "../runtime/runtime.test-support.js";
import { createExternalCluster } from "./machine-fixture.test-support.js";
import { mergePatchOptions, planeReconcilerDeps, preparePlane, type PlaneClients } from "./plane.test-support.js";
import type { CapiObject } from "./read-back.test-support.js";
import { workspaceController } from "./workspace-controller.js";

const tenMinutes = 10 * 60_000;
const infra = { group: "infrastructure.cluster.x-k8s.io", version: "v1alpha1" };
const capi = { group: "cluster.x-k8s.io", version: "v1beta2" };
const clusterLabel = { "cluster.x-k8s.io/cluster-name": "ext" };

/** The controller with every timer its passes ask for stretched to ten minutes (an at-once requeue stays at once). */
function withLongTimers(controller: Controller): Controller {
  return {
    ...controller,
    async reconcile(key, context) {
      const outcome = await controller.reconcile(key, context);
      const after = outcome?.requeueAfterMillis;
      return after ? { requeueAfterMillis: Math.max(after, tenMinutes) } : outcome;
    },
  };
}

describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager", "go"], "an owner reference set after creation", () => {
  const namespace = `owner-ref-${Date.now().toString(36)}`;
  let plane: PlaneClients;
  let client: KubeClient;
  const stop = new AbortController();
  let running: Promise<unknown>;
  /** Each pass's action by the key it ran for, as the controllers log it, in order. */
  const passes: { controller: string; key: string; action: string }[] = [];
  const actionsOf = (controller: string, name: string) =>
    passes.filter((pass) => pass.controller === controller && pass.key === `${namespace}/${name}`).map((pass) => pass.action);

  beforeAll(async () => {
    plane = await preparePlane(namespace);
    await createExternalCluster(plane, namespace);
    client = new KubeClient(planeKubeConfig());
    const logger = pino(
      { level: "info" },
      {
        write: (line: string) => {
          const record = JSON.parse(line) as { msg?: string; controller?: string; key?: string; action?: string };
          if (record.msg === "reconciled" && record.controller && record.key && record.action)
            passes.push({ controller: record.controller, key: record.key, action: record.action });
        },
      },
    );
    const manager = new Manager({ client, logger, namespace, healthAddress: "", metricsAddress: "" });
    const { deps } = planeReconcilerDeps(plane, "owner-ref-test");
    for (const adapter of [machineAdapter, poolAdapter])
      manager.addController(withLongTimers(workspaceController(adapter, deps, { concurrency: 1, manager })));
    running = manager.run(stop.signal);
  }, 120_000);

  afterAll(async () => {
    stop.abort();
    await running;
    client?.close();
    await plane?.core.deleteNamespace({ name: namespace }).catch(() => undefined);
  });

  const create = (group: typeof infra | typeof capi, plural: string, body: Record<string, unknown>) =>
    plane.custom.createNamespacedCustomObject({ ...group, namespace, plural, body }) as Promise<CapiObject>;
  const applyJobs = async (owner: string) =>
    (await plane.batch.listNamespacedJob({ namespace, labelSelector: "captf.infrastructure.cluster.x-k8s.io/op=apply" })).items.filter(
      (job) => job.metadata?.ownerReferences?.some((ref) => ref.name === owner),
    );

  const infrastructureRef = (kind: string, name: string) => ({ apiGroup: "infrastructure.cluster.x-k8s.io", kind, name });
  const roles = [
    {
      kind: "TerraformMachine",
      owner: "Machine",
      name: "m",
      image: "registry.invalid/captf/noop-machine:v0.1.0",
      ownerSpec: (bootstrap: object) => ({ clusterName: "ext", bootstrap, infrastructureRef: infrastructureRef("TerraformMachine", "m") }),
    },
    {
      kind: "TerraformMachinePool",
      owner: "MachinePool",
      name: "mp",
      image: "registry.invalid/captf/noop-machinepool:v0.1.0",
      ownerSpec: (bootstrap: object) => ({
        clusterName: "ext",
        replicas: 2,
        template: { spec: { clusterName: "ext", bootstrap, infrastructureRef: infrastructureRef("TerraformMachinePool", "mp") } },
      }),
    },
  ];

  it.each(roles)(
    "starts the $kind's apply when its $owner's ownerReference lands, after passes that waited for it",
    async ({ kind, owner, name, image, ownerSpec }) => {
      const controller = kind.toLowerCase();
      const plural = `${controller}s`;
      const passesMade = (count: number, what: string) =>
        waitFor(
          async () => (actionsOf(controller, name).length >= count ? true : undefined),
          30_000,
          `${what} (passes: ${actionsOf(controller, name).join(" | ")})`,
        );
      await create(infra, plural, {
        apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
        kind,
        metadata: { name, labels: clusterLabel },
        spec: { source: { image } },
      });
      await passesMade(2, "the finalizer and the owner wait");
      // Its Machine (MachinePool) appears a moment later, naming it as infrastructure before it owns it.
      const bootstrap = `${name}-bootstrap`;
      await plane.core.createNamespacedSecret({
        namespace,
        body: { metadata: { name: bootstrap }, stringData: { value: "#cloud-config\n" } },
      });
      const ownerObject = await create(capi, `${owner.toLowerCase()}s`, {
        apiVersion: "cluster.x-k8s.io/v1beta2",
        kind: owner,
        metadata: { name, labels: clusterLabel },
        spec: ownerSpec({ dataSecretName: bootstrap }),
      });
      await passesMade(3, `the ${owner}'s pass`);
      expect(await applyJobs(name)).toEqual([]);

      // Cluster API sets the owner: only a watch can start the next pass before ten minutes.
      const ownerReferences = [
        { apiVersion: "cluster.x-k8s.io/v1beta2", kind: owner, name, uid: ownerObject.metadata.uid, controller: true },
      ];
      await plane.custom.patchNamespacedCustomObject(
        { ...infra, namespace, plural, name, body: { metadata: { ownerReferences } } },
        mergePatchOptions(),
      );
      await passesMade(4, "a pass after the ownerReference landed");
      const actions = actionsOf(controller, name);
      expect(actions.slice(0, 3)).toEqual(["added finalizer", "waiting: WaitingForOwner", "waiting: WaitingForOwner"]);
      expect(actions[3]).toMatch(/^started apply/);
      expect(await applyJobs(name)).toHaveLength(1);
    },
    90_000,
  );
});
