import { createHash } from "node:crypto";
import { gunzipSync, gzipSync } from "node:zlib";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import type * as k8s from "@kubernetes/client-node";
import { noopModuleDirectory } from "@captf/module-noop";
import { stateSecretName, stateSecretSuffix } from "@captf/render";
import { describeWithTools, waitFor } from "@captf/testkit";
import { Registry } from "prom-client";
import { clusterAdapter } from "../kinds/adapters.js";
import { CaptfMetrics } from "../metrics/captf-metrics.js";
import { backupSecretName } from "../state/state-backups.js";
import { startJobExecutor, type JobExecutor } from "./job-executor.test-support.js";
import {
  allJobsFinished,
  createTerraformCluster,
  mergePatchOptions,
  planeReconcilerDeps,
  preparePlane,
  type PlaneClients,
} from "./plane.test-support.js";
import { reconcileWorkspace, type ReconcilerDeps } from "./workspace-reconciler.js";
import type { TerraformCluster } from "../api/terraformcluster.js";
import type { ReadBack } from "./read-back.test-support.js";

const image = "registry.invalid/captf/backups-cluster:v1";
const infra = { group: "infrastructure.cluster.x-k8s.io", version: "v1alpha1" };

// State backups on the real API server, after a real apply (the runner and OpenTofu, the no-op cluster module):
// a serial new to the object whose state a backup holds already is counted `skipped` and not copied again; a
// state of a backed-up serial with other content is backed up beside the first as `-<digest8>` (as the public
// reference names it), never swallowed.
describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager", "tofu"], "state backups", () => {
  const namespace = `backups-${Date.now().toString(36)}`;
  const name = "backed";
  let plane: PlaneClients;
  let executor: JobExecutor;
  let eventsApi: k8s.EventsV1Api;
  let deps: ReconcilerDeps;
  const metrics = new CaptfMetrics(new Registry());

  beforeAll(async () => {
    plane = await preparePlane(namespace);
    const planeDeps = planeReconcilerDeps(plane, "state-backups-test");
    eventsApi = planeDeps.eventsApi;
    deps = { ...planeDeps.deps, metrics };
    executor = startJobExecutor({ kubeconfigPath: plane.kubeconfigPath, namespace, modules: { [image]: noopModuleDirectory("cluster") } });
    await createTerraformCluster(plane, namespace, name, { source: { image } });
    expect((await reconcileWorkspace(deps, clusterAdapter, namespace, name)).action).toBe("added finalizer");
    expect((await reconcileWorkspace(deps, clusterAdapter, namespace, name)).action).toMatch(/^started apply \(NoState\)/);
    await allJobsFinished(plane.batch, namespace, executor);
    expect((await reconcileWorkspace(deps, clusterAdapter, namespace, name)).action).toBe("UpToDate");
  }, 180_000);
  afterAll(() => executor?.close());

  const suffix = () => stateSecretSuffix({ role: "cluster", namespace, name });
  const getCluster = () =>
    plane.custom.getNamespacedCustomObject({ ...infra, namespace, plural: "terraformclusters", name }) as Promise<
      ReadBack<TerraformCluster>
    >;
  const backupNames = async () =>
    (await plane.core.listNamespacedSecret({ namespace, labelSelector: `captf.io/state-backup=true` })).items
      .map((s) => s.metadata!.name!)
      .sort();
  const backups = async (result: string) =>
    (await metrics.stateBackups.get()).values.find((sample) => sample.labels.result === result && sample.labels.kind === "TerraformCluster")
      ?.value ?? 0;

  it("counts a serial new to the object that a backup already holds as skipped, and copies nothing", async () => {
    const serial = (await getCluster()).status.observedStateSerial!;
    expect(await backupNames()).toEqual([backupSecretName(suffix(), serial, 0)]);
    expect(await backups("taken")).toBe(1);
    expect(await backups("skipped")).toBe(0);
    // The pass that took the backup lost its status: the next one reads the serial as new.
    await plane.custom.patchNamespacedCustomObjectStatus(
      { ...infra, namespace, plural: "terraformclusters", name, body: { status: { observedStateSerial: null } } },
      mergePatchOptions(),
    );
    expect((await reconcileWorkspace(deps, clusterAdapter, namespace, name)).action).toBe("UpToDate");
    expect(await backups("skipped")).toBe(1);
    expect(await backups("taken")).toBe(1);
    expect(await backupNames()).toEqual([backupSecretName(suffix(), serial, 0)]);
    expect((await getCluster()).status.observedStateSerial).toBe(serial);
    // Once seen, the serial is not counted again.
    expect((await reconcileWorkspace(deps, clusterAdapter, namespace, name)).action).toBe("UpToDate");
    expect(await backups("skipped")).toBe(1);
  }, 60_000);

  it("backs up another state of a backed-up serial beside the first, as -<digest8>, leaving the first as it was", async () => {
    const serial = (await getCluster()).status.observedStateSerial!;
    const first = await plane.core.readNamespacedSecret({ namespace, name: backupSecretName(suffix(), serial, 0) });
    // The same state document stored with other bytes (compressed anew): a state of this serial with other content.
    const live = await plane.core.readNamespacedSecret({ namespace, name: stateSecretName(suffix()) });
    const stored = Buffer.from(live.data!.tfstate!, "base64");
    const recompressed = gzipSync(gunzipSync(stored), { level: 1 });
    expect(recompressed.equals(stored)).toBe(false);
    await plane.core.patchNamespacedSecret(
      { namespace, name: stateSecretName(suffix()), body: { data: { tfstate: recompressed.toString("base64") } } },
      mergePatchOptions(),
    );

    expect((await reconcileWorkspace(deps, clusterAdapter, namespace, name)).action).toBe("UpToDate");
    const digest = createHash("sha256").update(recompressed).digest("hex");
    const besideName = `${backupSecretName(suffix(), serial, 0)}-${digest.slice(0, 8)}`;
    expect(await backupNames()).toEqual([backupSecretName(suffix(), serial, 0), besideName].sort());
    const beside = await plane.core.readNamespacedSecret({ namespace, name: besideName });
    expect(Buffer.from(beside.data!.tfstate!, "base64").equals(recompressed)).toBe(true);
    expect(beside.metadata!.annotations).toMatchObject({
      "captf.io/state-backup-serial": String(serial),
      "captf.io/state-backup-digest": digest,
      "captf.io/state-backup-set": besideName,
    });
    const unchanged = await plane.core.readNamespacedSecret({ namespace, name: backupSecretName(suffix(), serial, 0) });
    expect(unchanged.data).toEqual(first.data);
    expect(unchanged.metadata!.resourceVersion).toBe(first.metadata!.resourceVersion);
    expect(await backups("taken")).toBe(2);
    expect((await getCluster()).status.stateBackups!.map((backup) => backup.serial)).toEqual([serial, serial]);
    const notes = await waitFor(
      async () => {
        const found = (await eventsApi.listNamespacedEvent({ namespace })).items
          .filter((event) => event.regarding?.name === name && event.reason === "StateBackedUp")
          .map((event) => event.note);
        return found.length >= 2 ? found : undefined;
      },
      10_000,
      "two StateBackedUp events",
    );
    expect(notes).toContainEqual(expect.stringContaining(`as ${besideName}, beside another state of that serial`));
    // Read again, the state is where a backup holds it: nothing more is taken.
    expect((await reconcileWorkspace(deps, clusterAdapter, namespace, name)).action).toBe("UpToDate");
    expect(await backups("taken")).toBe(2);
  }, 60_000);
});
