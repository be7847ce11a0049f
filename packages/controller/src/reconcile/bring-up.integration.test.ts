import { afterAll, beforeAll, expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { noopModuleDirectory } from "@captf/module-noop";
import { describeWithTools, waitFor } from "@captf/testkit";
import { clusterAdapter, clusterStateOutputs, machineAdapter } from "../kinds/adapters.js";
import { passReads } from "./pass-reads.js";
import { startJobExecutor, type JobExecutor } from "./job-executor.test-support.js";
import { allJobsFinished, planeReconcilerDeps, preparePlane, mergePatchOptions } from "./plane.test-support.js";
import { reconcileWorkspace, type ReconcilerDeps } from "./workspace-reconciler.js";
import type { TerraformCluster } from "../api/terraformcluster.js";
import type { TerraformMachine } from "../api/terraformmachine.js";
import type { ReadBack } from "./read-back.test-support.js";

const clusterImage = "registry.invalid/captf/noop-cluster:v0.1.0";
const machineImage = "registry.invalid/captf/noop-machine:v0.1.0";
const machines = ["cp-0", "cp-1", "cp-2", "md-0", "md-1", "md-2"];

// The public reference's bring-up figure: one TerraformCluster, six TerraformMachines and the
// cluster's no-change re-apply after control_plane_initialized flips take at most 8 Jobs.
describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager", "tofu", "go"], "bring-up of a cluster and six machines", () => {
  const namespace = `bringup-${Date.now().toString(36)}`;
  let deps: ReconcilerDeps;
  let custom: k8s.CustomObjectsApi;
  let batch: k8s.BatchV1Api;
  let core: k8s.CoreV1Api;
  let executor: JobExecutor;
  let eventsApi: k8s.EventsV1Api;
  const infra = { group: "infrastructure.cluster.x-k8s.io", version: "v1alpha1", namespace };
  const capi = { group: "cluster.x-k8s.io", version: "v1beta2", namespace };

  beforeAll(async () => {
    const plane = await preparePlane(namespace);
    ({ batch, custom, core } = plane);
    ({ deps, eventsApi } = planeReconcilerDeps(plane, "bring-up-test"));
    executor = startJobExecutor({
      kubeconfigPath: plane.kubeconfigPath,
      namespace,
      modules: { [clusterImage]: noopModuleDirectory("cluster"), [machineImage]: noopModuleDirectory("machine") },
    });
    const cluster = (await custom.createNamespacedCustomObject({
      ...capi,
      plural: "clusters",
      body: {
        apiVersion: "cluster.x-k8s.io/v1beta2",
        kind: "Cluster",
        metadata: { name: "c1" },
        spec: {
          clusterNetwork: { pods: { cidrBlocks: ["10.244.0.0/16"] }, services: { cidrBlocks: ["10.96.0.0/12"] } },
          infrastructureRef: { apiGroup: "infrastructure.cluster.x-k8s.io", kind: "TerraformCluster", name: "c1" },
        },
      },
    })) as { metadata: { uid: string } };
    await custom.createNamespacedCustomObject({
      ...infra,
      plural: "terraformclusters",
      body: {
        apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
        kind: "TerraformCluster",
        metadata: {
          name: "c1",
          labels: { "cluster.x-k8s.io/cluster-name": "c1" },
          ownerReferences: [{ apiVersion: "cluster.x-k8s.io/v1beta2", kind: "Cluster", name: "c1", uid: cluster.metadata.uid }],
        },
        spec: { source: { image: clusterImage }, identityRef: { name: "demo-identity" } },
      },
    });
    for (const name of machines) {
      await plane.core.createNamespacedSecret({
        namespace,
        body: {
          metadata: { name: `${name}-bootstrap` },
          stringData: { value: `#cloud-config\nhostname: ${name}\n`, format: "cloud-config" },
        },
      });
      const controlPlane = name.startsWith("cp-");
      const machine = (await custom.createNamespacedCustomObject({
        ...capi,
        plural: "machines",
        body: {
          apiVersion: "cluster.x-k8s.io/v1beta2",
          kind: "Machine",
          metadata: {
            name,
            labels: { "cluster.x-k8s.io/cluster-name": "c1", ...(controlPlane ? { "cluster.x-k8s.io/control-plane": "" } : {}) },
          },
          spec: {
            clusterName: "c1",
            version: "v1.36.2",
            bootstrap: { dataSecretName: `${name}-bootstrap` },
            infrastructureRef: { apiGroup: "infrastructure.cluster.x-k8s.io", kind: "TerraformMachine", name },
          },
        },
      })) as { metadata: { uid: string } };
      await custom.createNamespacedCustomObject({
        ...infra,
        plural: "terraformmachines",
        body: {
          apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
          kind: "TerraformMachine",
          metadata: {
            name,
            labels: { "cluster.x-k8s.io/cluster-name": "c1" },
            ownerReferences: [
              { apiVersion: "cluster.x-k8s.io/v1beta2", kind: "Machine", name, uid: machine.metadata.uid, controller: true },
            ],
          },
          spec: { source: { image: machineImage } },
        },
      });
    }
  }, 120_000);
  afterAll(() => executor?.close());

  async function settle(maxRounds = 10): Promise<void> {
    for (let round = 0; round < maxRounds; round++) {
      let started = 0;
      const results = [
        await reconcileWorkspace(deps, clusterAdapter, namespace, "c1"),
        ...(await Promise.all(machines.map((name) => reconcileWorkspace(deps, machineAdapter, namespace, name)))),
      ];
      for (const result of results) if (result.action.startsWith("started") || result.action === "added finalizer") started++;
      const ran = await executor.runPending();
      if (ran) await allJobsFinished(batch, namespace);
      if (started === 0 && ran === 0) return;
    }
    throw new Error(`not settled after ${maxRounds} rounds`);
  }

  const get = <T extends { status?: unknown }>(plural: string, name: string) =>
    custom.getNamespacedCustomObject({ ...infra, plural, name }) as Promise<ReadBack<T>>;

  it("provisions the cluster and every machine, then re-applies the cluster once without changes, in at most 8 Jobs", async () => {
    // Before the cluster's first apply its machines wait for its infrastructure, and start nothing.
    const first = machines[0]!;
    await reconcileWorkspace(deps, machineAdapter, namespace, first);
    await reconcileWorkspace(deps, machineAdapter, namespace, first);
    const waiting = (await get<TerraformMachine>("terraformmachines", first)).status.conditions!.find(
      (c: { type: string }) => c.type === "DependenciesReady",
    );
    expect(waiting).toMatchObject({
      status: "Unknown",
      reason: "WaitingForClusterInfrastructure",
      message: expect.stringContaining("has not applied its module yet"),
    });
    expect((await batch.listNamespacedJob({ namespace })).items).toEqual([]);
    await settle();
    const cluster = await get<TerraformCluster>("terraformclusters", "c1");
    expect(cluster.status.initialization).toEqual({ provisioned: true });
    expect(cluster.spec.controlPlaneEndpoint).toEqual({ host: "noop-c1.invalid", port: 6443 });
    expect(cluster.status.failureDomains).toEqual([{ name: "fd1", controlPlane: true }]);
    for (const name of machines) {
      const machine = await get<TerraformMachine>("terraformmachines", name);
      expect([name, machine.status?.initialization, machine.spec.providerID]).toEqual([
        name,
        { provisioned: true },
        `noop:///${namespace}/${name}`,
      ]);
    }

    // The control plane comes up (as a control-plane provider would report): the cluster's
    // control_plane_initialized input flips, so its inputs hash changes and it re-applies once,
    // guarded (plan first), without destroying anything.
    await custom.patchNamespacedCustomObjectStatus(
      { ...capi, plural: "clusters", name: "c1", body: { status: { initialization: { controlPlaneInitialized: true } } } },
      mergePatchOptions(),
    );
    await settle();

    const jobs = (await batch.listNamespacedJob({ namespace })).items;
    const byOp = jobs
      .map(
        (job) =>
          `${job.metadata?.labels?.["captf.infrastructure.cluster.x-k8s.io/owner-kind"]}/` +
          `${job.metadata?.labels?.["captf.infrastructure.cluster.x-k8s.io/op"]}`,
      )
      .sort();
    console.log(`bring-up: ${jobs.length} Jobs (${byOp.join(", ")})`);
    expect(byOp).toEqual(["TerraformCluster/apply", "TerraformCluster/apply", ...machines.map(() => "TerraformMachine/apply")]);
    expect(jobs.length).toBeLessThanOrEqual(8);
    const reapply = (await get<TerraformCluster>("terraformclusters", "c1")).status.lastRun!;
    expect(reapply.error).toBeUndefined();
    expect(reapply.steps!.map((step: { name: string }) => step.name)).toEqual(["init", "validate", "plan", "show-json", "apply"]);
  }, 300_000);

  it("gives machines and pools the cluster's exports and failure domains from one read of its state, never its status (which " +
    "lags the state)", async () => {
    // As between the cluster's apply and the pass that publishes its outputs: status has no failure domains yet.
    await custom.patchNamespacedCustomObjectStatus(
      { ...infra, plural: "terraformclusters", name: "c1", body: { status: { failureDomains: null } } },
      mergePatchOptions(),
    );
    expect((await get<TerraformCluster>("terraformclusters", "c1")).status.failureDomains).toBeUndefined();
    const outputs = await clusterStateOutputs(deps, passReads(deps.client, namespace), namespace, "c1");
    expect(outputs).toEqual({ exports: { backend_id: expect.stringMatching(/^noop-backend-/) }, failureDomainNames: ["fd1"] });
    await settle();
    expect((await get<TerraformCluster>("terraformclusters", "c1")).status.failureDomains).toEqual([{ name: "fd1", controlPlane: true }]);
  }, 120_000);

  it("holds a cluster apply while a machine's apply runs (WaitingForMachineOperations), and applies once it finished", async () => {
    await core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: "late-bootstrap" }, stringData: { value: "#cloud-config\n", format: "cloud-config" } },
    });
    const machine = (await custom.createNamespacedCustomObject({
      ...capi,
      plural: "machines",
      body: {
        apiVersion: "cluster.x-k8s.io/v1beta2",
        kind: "Machine",
        metadata: { name: "late", labels: { "cluster.x-k8s.io/cluster-name": "c1" } },
        spec: {
          clusterName: "c1",
          version: "v1.36.2",
          bootstrap: { dataSecretName: "late-bootstrap" },
          infrastructureRef: { apiGroup: "infrastructure.cluster.x-k8s.io", kind: "TerraformMachine", name: "late" },
        },
      },
    })) as { metadata: { uid: string } };
    await custom.createNamespacedCustomObject({
      ...infra,
      plural: "terraformmachines",
      body: {
        apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
        kind: "TerraformMachine",
        metadata: {
          name: "late",
          labels: { "cluster.x-k8s.io/cluster-name": "c1" },
          ownerReferences: [
            { apiVersion: "cluster.x-k8s.io/v1beta2", kind: "Machine", name: "late", uid: machine.metadata.uid, controller: true },
          ],
        },
        spec: { source: { image: machineImage } },
      },
    });
    await reconcileWorkspace(deps, machineAdapter, namespace, "late");
    expect((await reconcileWorkspace(deps, machineAdapter, namespace, "late")).action).toMatch(/^started apply/);
    // A cluster input changes while the machine's apply Job holds its run lease.
    await custom.patchNamespacedCustomObject(
      { ...infra, plural: "terraformclusters", name: "c1", body: { spec: { variables: { notes: "changed while a machine applies" } } } },
      mergePatchOptions(),
    );
    expect((await reconcileWorkspace(deps, clusterAdapter, namespace, "c1")).action).toMatch(/WaitingForMachineOperations/);
    const waiting = (await get<TerraformCluster>("terraformclusters", "c1")).status.conditions!.find(
      (c: { type: string }) => c.type === "ApplyJobSucceeded",
    );
    expect(waiting).toMatchObject({ status: "Unknown", reason: "WaitingForMachineOperations" });
    expect(waiting!.message).toMatch(/waiting for 1 machine or pool Job\(s\) to finish: captf-m-late-apply-/);
    // Once per wait, however many passes it lasts.
    expect((await reconcileWorkspace(deps, clusterAdapter, namespace, "c1")).action).toMatch(/WaitingForMachineOperations/);
    const waits = async () =>
      (await eventsApi.listNamespacedEvent({ namespace })).items.filter(
        (event) => event.regarding?.name === "c1" && event.reason === "WaitingForMachineOperations",
      );
    await waitFor(async () => ((await waits()).length > 0 ? true : undefined), 10_000, "the WaitingForMachineOperations event");
    expect((await waits()).map((event) => event.note)).toEqual([waiting!.message]);
    await executor.runPending();
    await allJobsFinished(batch, namespace);
    await reconcileWorkspace(deps, machineAdapter, namespace, "late");
    expect((await reconcileWorkspace(deps, clusterAdapter, namespace, "c1")).action).toMatch(/^started apply \(InputsChanged\)/);
    // Back to the six machines the teardown below expects.
    await custom.deleteNamespacedCustomObject({ ...infra, plural: "terraformmachines", name: "late" });
    for (let round = 0; round < 10 && (await reconcileWorkspace(deps, machineAdapter, namespace, "late")).action !== "gone"; round++) {
      await reconcileWorkspace(deps, clusterAdapter, namespace, "c1");
      if (await executor.runPending()) await allJobsFinished(batch, namespace);
    }
    await settle();
  }, 180_000);

  it("tears down machines first: the deleting cluster reports DeletionBlocked until they are destroyed, then destroys itself", async () => {
    await custom.deleteNamespacedCustomObject({ ...infra, plural: "terraformclusters", name: "c1" });
    for (const name of machines) await custom.deleteNamespacedCustomObject({ ...infra, plural: "terraformmachines", name });
    const blocked = await reconcileWorkspace(deps, clusterAdapter, namespace, "c1");
    expect(blocked).toMatchObject({ action: "DependentsExist", requeueAfterMs: 30_000 });
    const deletionBlocked = (await get<TerraformCluster>("terraformclusters", "c1")).status.conditions!.find(
      (c: { type: string }) => c.type === "DeletionBlocked",
    );
    expect(deletionBlocked).toMatchObject({ status: "True", reason: "DependentsExist" });
    expect(deletionBlocked!.message).toContain("6 TerraformMachine");

    const actions: string[] = [];
    for (let round = 0; round < 10; round++) {
      const results = [
        await reconcileWorkspace(deps, clusterAdapter, namespace, "c1"),
        ...(await Promise.all(machines.map((name) => reconcileWorkspace(deps, machineAdapter, namespace, name)))),
      ];
      actions.push(...results.map((result) => result.action));
      if (results.every((result) => result.action === "gone")) break;
      if (await executor.runPending()) await allJobsFinished(batch, namespace);
    }
    expect(actions.filter((action) => action.startsWith("started destroy"))).toHaveLength(7);
    // The cluster's destroy starts only after every machine dropped its finalizer.
    const clusterDestroy = actions.findIndex((action) => /^started destroy .* as captf-c-/.test(action));
    const lastMachineGone = actions.lastIndexOf("removed finalizer", clusterDestroy);
    expect(clusterDestroy).toBeGreaterThan(lastMachineGone);
    expect(actions.filter((action) => action === "removed finalizer")).toHaveLength(7);
  }, 300_000);
});
