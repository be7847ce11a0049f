// clusterctl move: an idle cluster moves to a second management plane whole (every object, its
// state Secrets, durable inputs, backups and credential mirror, the identity with its source Secret,
// nothing destroyed); a move started while a captf Job runs waits on block-move and
// completes with the Job's result. Moves the clusters clusterctl-generate.ts brought to Ready.
import { join } from "node:path";
import { afterAll, expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { waitFor } from "@captf/testkit";
import { pushImage } from "@captf/testkit/plane";
import { annotations } from "@captf/contract/api";
import { managerNamespace, moduleTag } from "../captf-install.js";
import { startClusterctl, startMoveTarget, type MoveTarget } from "../clusterctl.js";
import { listCaptfJobs } from "../progress.js";
import { busy, clusterctlClusters, decodedState, identityName, idle, infraApi, snapshot } from "./clusterctl-clusters.js";
import type { TerraformObject } from "../objects.js";
import { mergePatch, scenarioTimeout, type Scenario } from "./shared-plane.js";

const opLabel = "captf.infrastructure.cluster.x-k8s.io/op";

type Snapshot = Awaited<ReturnType<typeof snapshot>>;
/** The durable inputs Secrets of a snapshot: one per Terraform object. */
const durableInputs = (at: Snapshot) => Object.keys(at.owned).filter((name) => /^captf-inputs-(c|m|mp)-/.test(name));
const terraformObjects = (at: Snapshot) => Object.keys(at.objects).filter((key) => key.startsWith("Terraform")).length;

/** The e2e's identity and its source Secret on a plane. */
async function identityOn(kubeConfig: k8s.KubeConfig) {
  const identity = (await kubeConfig
    .makeApiClient(k8s.CustomObjectsApi)
    .getClusterCustomObject({ ...infraApi, plural: "terraformclusteridentities", name: identityName })) as { metadata: { uid: string } };
  const secret = await kubeConfig.makeApiClient(k8s.CoreV1Api).readNamespacedSecret({ namespace: managerNamespace, name: identityName });
  return { identity, secret };
}

export const clusterctlMove: Scenario = (shared) => {
  const { plane, progressTable, registry } = clusterctlClusters(shared);
  // The second management plane the moves go to, started by the first move.
  let target: MoveTarget | undefined;
  const move = (namespace: string) =>
    startClusterctl(plane().clusterctlRepository, plane().kubeconfigPath, [
      "move",
      "--namespace",
      namespace,
      `--to-kubeconfig=${target!.kubeconfigPath}`,
    ]);

  afterAll(async () => {
    await target?.stop();
  }, 120_000);

  it(
    "moves an idle cluster to a second management plane: every object and its state arrive, nothing is destroyed",
    async () => {
      target = await startMoveTarget(
        plane().clusterctlRepository,
        plane().images.manager,
        plane().install.objects.filter((object) => object.kind!.endsWith("WebhookConfiguration")),
      );
      const before = await snapshot(plane().kubeConfig, idle.namespace);
      expect(Object.keys(before.states)).toHaveLength(3);
      const run = move(idle.namespace);
      await run.done;
      shared.planeLog.push(`clusterctl move:\n${run.output()}`);

      const arrived = await snapshot(target.kubeConfig, idle.namespace);
      expect(Object.keys(arrived.objects).sort()).toEqual(Object.keys(before.objects).sort());
      for (const [key, object] of Object.entries(before.objects)) {
        if (key.startsWith("Terraform"))
          expect({ key, spec: arrived.objects[key]!.spec, status: arrived.objects[key]!.status }).toEqual({
            key,
            spec: object.spec,
            status: undefined,
          });
      }
      // Each state arrives whole: the same lineage, at the serial it had (or a later one, when the pool's periodic refresh
      // ran first and held the move).
      expect(Object.keys(arrived.states).sort()).toEqual(Object.keys(before.states).sort());
      for (const [name, tfstate] of Object.entries(before.states)) {
        const moved = decodedState(arrived.states[name]!);
        expect(moved.lineage).toBe(decodedState(tfstate).lineage);
        expect(moved.serial).toBeGreaterThanOrEqual(decodedState(tfstate).serial);
      }
      expect(arrived.objects[`Cluster/${idle.cluster}`]!.spec.paused ?? false).toBe(false);
      // What else captf keeps for each object arrives with it: its durable inputs, its state backups, the mirror of its credentials.
      expect(durableInputs(before)).toHaveLength(terraformObjects(before));
      expect(Object.keys(before.owned).some((name) => name.startsWith("captf-state-backup-"))).toBe(true);
      expect(Object.keys(before.owned)).toContain(`captf-creds-${identityName}`);
      // A state backup's content is fixed once taken, the durable inputs change only with an apply (which holds the move), and the
      // mirror with its source: each arrives as it was. A backup may be gone only as the oldest of its set, pruned when a refresh
      // that ran first took a newer one.
      for (const [name, data] of Object.entries(before.owned)) {
        if (name.startsWith("captf-state-backup-") && arrived.owned[name] === undefined) continue;
        expect({ name, data: arrived.owned[name] }).toEqual({ name, data });
      }
      expect(Object.keys(arrived.owned).some((name) => name.startsWith("captf-state-backup-"))).toBe(true);

      // The identity (its CRD is labelled move-hierarchy) arrives with the source Secret it owns; both stay on the source, which
      // other namespaces may still use.
      const [sourceIdentity, arrivedIdentity] = await Promise.all([identityOn(plane().kubeConfig), identityOn(target.kubeConfig)]);
      expect(arrivedIdentity.secret.data).toEqual(sourceIdentity.secret.data);
      expect(arrivedIdentity.secret.metadata!.ownerReferences).toEqual([
        expect.objectContaining({ kind: "TerraformClusterIdentity", name: identityName, uid: arrivedIdentity.identity.metadata.uid }),
      ]);
      expect(sourceIdentity.secret.metadata!.ownerReferences).toEqual([
        expect.objectContaining({ kind: "TerraformClusterIdentity", name: identityName, uid: sourceIdentity.identity.metadata.uid }),
      ]);

      expect(await snapshot(plane().kubeConfig, idle.namespace)).toEqual({ objects: {}, states: {}, owned: {} });
      const destroyed = (
        await plane().kubeConfig.makeApiClient(k8s.CoreV1Api).listNamespacedEvent({ namespace: idle.namespace })
      ).items.filter((event) => event.reason === "Destroyed");
      expect(destroyed.map((event) => event.message)).toEqual([]);
      const destroyJobs = (await listCaptfJobs(plane().kubeConfig, idle.namespace)).filter(
        (job) => job.metadata!.labels![opLabel] === "destroy",
      );
      expect(destroyJobs).toEqual([]);
    },
    scenarioTimeout,
  );

  it(
    "holds a move while a captf Job runs (block-move), and completes it with the Job's result once it ends",
    async () => {
      const custom = plane().kubeConfig.makeApiClient(k8s.CustomObjectsApi);
      const poolName = `${busy.cluster}-mp-0`;
      const poolState = async () =>
        Object.entries((await snapshot(plane().kubeConfig, busy.namespace)).states).find(([name]) => name.endsWith("-mp"))![1];
      const serialBefore = decodedState(await poolState()).serial;
      // A module image not in the registry yet: the pool's apply Job waits in its image pull, holding block-move, until the e2e pushes it.
      const heldImage = `${registry()}/captf/noop-machinepool:move-hold`;
      await custom.patchNamespacedCustomObject(
        {
          ...infraApi,
          namespace: busy.namespace,
          plural: "terraformmachinepools",
          name: poolName,
          body: { spec: { source: { image: heldImage } } },
        },
        mergePatch,
      );
      await waitFor(
        async () => {
          const pool = (await custom.getNamespacedCustomObject({
            ...infraApi,
            namespace: busy.namespace,
            plural: "terraformmachinepools",
            name: poolName,
          })) as TerraformObject;
          return pool.metadata.annotations?.[annotations.blockMove] !== undefined && pool.status?.activeJob?.operation === "apply"
            ? true
            : undefined;
        },
        120_000,
        `the pool's apply Job running, block-move set\n${await progressTable(busy)}`,
      );

      const run = move(busy.namespace);
      await waitFor(
        async () => (run.output().includes("Move blocked by clusterctl.cluster.x-k8s.io/block-move annotation") ? true : undefined),
        120_000,
        "clusterctl move waiting on block-move",
      ).catch((error) => {
        throw new Error(`${(error as Error).message}\n${run.output()}`);
      });
      // Held: nothing has reached the target yet.
      expect((await snapshot(target!.kubeConfig, busy.namespace)).objects).toEqual({});
      pushImage(join(plane().workDir, "oci"), `machinepool-${moduleTag}`, heldImage);
      await run.done;
      shared.planeLog.push(`clusterctl move (held):\n${run.output()}`);

      const arrived = await snapshot(target!.kubeConfig, busy.namespace);
      const pool = arrived.objects[`TerraformMachinePool/${poolName}`]!;
      expect(pool.spec.source!.image).toBe(heldImage);
      expect(pool.annotations[annotations.blockMove]).toBeUndefined();
      const state = Object.entries(arrived.states).find(([name]) => name.endsWith("-mp"))!;
      expect(decodedState(state[1]).serial).toBeGreaterThan(serialBefore);
      expect(durableInputs(arrived)).toHaveLength(terraformObjects(arrived));
      expect(await snapshot(plane().kubeConfig, busy.namespace)).toEqual({ objects: {}, states: {}, owned: {} });
    },
    scenarioTimeout,
  );
};
