// A TerraformMachine (TerraformMachinePool) created before Cluster API makes its Machine (MachinePool) its owner, as a
// MachineSet's scale-up does, on a running Manager against the real API server: the ownerReference landing starts the
// pass that creates the Job. Every timer a pass asks for is ten minutes here, so a pass that follows the patch came
// from a watch, not from the owner wait's requeue.
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { pino } from "pino";
import { describeWithTools, waitFor } from "@captf/testkit";
import { machineAdapter, poolAdapter } from "../kinds/adapters.js";
import type { Controller } from "../runtime/controller.js";
import { KubeClient } from "../runtime/kube-client.js";
import { Manager } from "../runtime/manager.js";
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
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(plane.kubeconfigPath);
    client = new KubeClient(kc);
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
  const ownedBy = (kind: string, owner: CapiObject) => ({
    metadata: {
      ownerReferences: [
        { apiVersion: "cluster.x-k8s.io/v1beta2", kind, name: owner.metadata.name, uid: owner.metadata.uid, controller: true },
      ],
    },
  });
  const applyJobs = async (owner: string) =>
    (await plane.batch.listNamespacedJob({ namespace })).items.filter(
      (job) =>
        job.metadata?.ownerReferences?.some((ref) => ref.name === owner) &&
        job.metadata?.labels?.["captf.infrastructure.cluster.x-k8s.io/op"] === "apply",
    );
  const passCount = (controller: string, name: string, count: number, what: string) =>
    waitFor(
      async () => (actionsOf(controller, name).length >= count ? true : undefined),
      30_000,
      `${what} (passes: ${actionsOf(controller, name).join(" | ")})`,
    );

  it("starts the TerraformMachine's apply when the Machine's ownerReference lands, after passes that waited for it", async () => {
    await create(infra, "terraformmachines", {
      apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
      kind: "TerraformMachine",
      metadata: { name: "m", labels: clusterLabel },
      spec: { source: { image: "registry.invalid/captf/noop-machine:v0.1.0" } },
    });
    await passCount("terraformmachine", "m", 2, "the finalizer and the owner wait");
    // The MachineSet's Machine appears a moment later, naming the TerraformMachine before it owns it.
    await plane.core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: "m-bootstrap" }, stringData: { value: "#cloud-config\n" } },
    });
    const machine = await create(capi, "machines", {
      apiVersion: "cluster.x-k8s.io/v1beta2",
      kind: "Machine",
      metadata: { name: "m", labels: clusterLabel },
      spec: {
        clusterName: "ext",
        bootstrap: { dataSecretName: "m-bootstrap" },
        infrastructureRef: { apiGroup: "infrastructure.cluster.x-k8s.io", kind: "TerraformMachine", name: "m" },
      },
    });
    await passCount("terraformmachine", "m", 3, "the Machine's pass");
    expect(await applyJobs("m")).toEqual([]);

    // The Machine controller sets itself as owner: only a watch can start the next pass before ten minutes.
    await plane.custom.patchNamespacedCustomObject(
      { ...infra, namespace, plural: "terraformmachines", name: "m", body: ownedBy("Machine", machine) },
      mergePatchOptions(),
    );
    await passCount("terraformmachine", "m", 4, "a pass after the ownerReference landed");
    const actions = actionsOf("terraformmachine", "m");
    expect(actions.slice(0, 3)).toEqual(["added finalizer", "waiting: WaitingForOwner", "waiting: WaitingForOwner"]);
    expect(actions[3]).toMatch(/^started apply/);
    expect(await applyJobs("m")).toHaveLength(1);
  }, 90_000);

  it("starts the TerraformMachinePool's apply when the MachinePool's ownerReference lands", async () => {
    await create(infra, "terraformmachinepools", {
      apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
      kind: "TerraformMachinePool",
      metadata: { name: "mp", labels: clusterLabel },
      spec: { source: { image: "registry.invalid/captf/noop-machinepool:v0.1.0" } },
    });
    await passCount("terraformmachinepool", "mp", 2, "the finalizer and the owner wait");
    await plane.core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: "mp-bootstrap" }, stringData: { value: "#cloud-config\n" } },
    });
    const machinePool = await create(capi, "machinepools", {
      apiVersion: "cluster.x-k8s.io/v1beta2",
      kind: "MachinePool",
      metadata: { name: "mp", labels: clusterLabel },
      spec: {
        clusterName: "ext",
        replicas: 2,
        template: {
          spec: {
            clusterName: "ext",
            bootstrap: { dataSecretName: "mp-bootstrap" },
            infrastructureRef: { apiGroup: "infrastructure.cluster.x-k8s.io", kind: "TerraformMachinePool", name: "mp" },
          },
        },
      },
    });
    await passCount("terraformmachinepool", "mp", 3, "the MachinePool's pass");
    expect(await applyJobs("mp")).toEqual([]);

    await plane.custom.patchNamespacedCustomObject(
      { ...infra, namespace, plural: "terraformmachinepools", name: "mp", body: ownedBy("MachinePool", machinePool) },
      mergePatchOptions(),
    );
    await passCount("terraformmachinepool", "mp", 4, "a pass after the ownerReference landed");
    const actions = actionsOf("terraformmachinepool", "mp");
    expect(actions.slice(0, 3)).toEqual(["added finalizer", "waiting: WaitingForOwner", "waiting: WaitingForOwner"]);
    expect(actions[3]).toMatch(/^started apply/);
    expect(await applyJobs("mp")).toHaveLength(1);
  }, 90_000);
});
