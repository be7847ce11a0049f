// Bring-up: the demo (e2e/manifests/demo) reaches Cluster API's own readiness with one apply Job
// per object (the cluster's at most two), the manager under its own ServiceAccount and never refused.
// Every later scenario starts from this demo.
import { expect, it } from "@jest/globals";
import { annotations, labels } from "@captf/contract/api";
import { applyObjects } from "../apply.js";
import { managerNamespace } from "../captf-install.js";
import { demoClusterName, demoNamespace, demoObjects, demoVariables } from "../demo-objects.js";
import type { Cluster, Machine, MachinePool, TerraformObject } from "../objects.js";
import { capi, infra, scenarioTimeout, type Scenario } from "./shared-plane.js";

export const bringUp: Scenario = (shared) => {
  it(
    "brings the demo up to Cluster API's own readiness, one Job per object",
    async () => {
      const { plane, custom, core, planeLog, secrets, list, captfJobs, waitReady } = shared;
      const started = Date.now();
      await applyObjects(plane.applier, demoObjects(demoVariables(plane.images, secrets)));
      await waitReady("the demo Ready as Cluster API reports it");
      const seconds = (Date.now() - started) / 1000;
      planeLog.push(`demo ready in ${seconds.toFixed(1)} s`);

      const cluster = (await custom.getNamespacedCustomObject({ ...capi, plural: "clusters", name: demoClusterName })) as Cluster;
      expect(cluster.status!.initialization).toMatchObject({ infrastructureProvisioned: true, controlPlaneInitialized: true });
      expect(cluster.spec.controlPlaneEndpoint).toEqual({ host: "noop-demo.invalid", port: 6443 });
      const machines = await list<Machine>(capi, "machines");
      expect(machines).toHaveLength(3);
      for (const machine of machines) {
        expect(machine.spec.providerID).toMatch(new RegExp(`^noop:///${demoNamespace}/demo-md-0-`));
        expect(machine.status!.nodeRef!.name).toBeTruthy();
      }
      const pool = (await custom.getNamespacedCustomObject({ ...capi, plural: "machinepools", name: "demo-mp-0" })) as MachinePool;
      expect(pool.spec.providerIDList).toHaveLength(3);
      expect(pool.status!.readyReplicas).toBe(3);

      // One apply per object, plus at most the cluster's re-apply once its control plane is
      // initialized; no refresh: every apply's own reading is definite (the pool's lists all its members).
      // Per object: each machine and the pool exactly one apply (the pool's cluster failure domains come
      // from the cluster's state with its exports, so they no longer arrive a pass later), the cluster at most two.
      const jobs = await captfJobs();
      const perObject = new Map<string, string[]>();
      for (const job of jobs) {
        const key = `${job.metadata!.labels![labels.ownerKind]}/${job.metadata!.labels![labels.ownerName]}`;
        perObject.set(key, [...(perObject.get(key) ?? []), job.metadata!.labels![labels.op]!]);
      }
      // On a failure, each Job's op, outcome and inputs hash say why an object ran more than once.
      const breakdown = JSON.stringify(
        jobs.map(
          (job) =>
            `${job.metadata!.labels![labels.ownerName]}:${job.metadata!.labels![labels.op]}:` +
            `${job.status?.succeeded ? "ok" : "failed"}:${job.metadata!.annotations?.[annotations.inputsHash]?.slice(0, 12) ?? "-"}`,
        ),
      );
      const applies = (key: string) => (perObject.get(key) ?? []).filter((op) => op === "apply").length;
      for (const machine of await list<TerraformObject>(infra, "terraformmachines"))
        expect({ breakdown, applies: applies(`TerraformMachine/${machine.metadata.name}`) }).toEqual({ breakdown, applies: 1 });
      expect([1, 2]).toContain(applies(`TerraformCluster/${demoClusterName}`));
      expect({ breakdown, applies: applies("TerraformMachinePool/demo-mp-0") }).toEqual({ breakdown, applies: 1 });
      expect(
        jobs
          .filter((job) => job.metadata!.labels![labels.op] !== "apply")
          .map((job) => `${job.metadata!.labels![labels.ownerKind]}:${job.metadata!.labels![labels.op]}`),
      ).toEqual([]);
      // The manager ran with its own ServiceAccount and was never refused.
      const managerPod = (await core.listNamespacedPod({ namespace: managerNamespace })).items[0]!;
      expect(managerPod.spec!.serviceAccountName).toBe("captf-controller-manager");
      expect(await plane.managerLog()).not.toMatch(/forbidden/i);
    },
    scenarioTimeout,
  );
};
