// Scale: the demo's MachineDeployment 3 → 5 → 2 (the removed machines destroyed), its MachinePool
// 3 → 1, then the autoscaler's bounds on the pool: the module's count written back to the MachinePool.
import { expect, it } from "@jest/globals";
import { annotations } from "@captf/contract/api";
import { demoNamespace } from "../demo-objects.js";
import type { Machine, MachinePool, TerraformObject } from "../objects.js";
import { capi, infra, mergePatch, scenarioTimeout, type Scenario } from "./shared-plane.js";

export const scale: Scenario = (shared) => {
  it(
    "scales a MachineDeployment 3 → 5 → 2, a MachinePool 3 → 1, and autoscales the pool with its replicas written back",
    async () => {
      const { custom, events, list, waitReady } = shared;
      const scale = (plural: string, name: string, replicas: number) =>
        custom.patchNamespacedCustomObject({ ...capi, plural, name, body: { spec: { replicas } } }, mergePatch);
      await scale("machinedeployments", "demo-md-0", 5);
      await waitReady("5 machines", async () => (await list<Machine>(capi, "machines")).length === 5);
      expect(await list<TerraformObject>(infra, "terraformmachines")).toHaveLength(5);

      await scale("machinedeployments", "demo-md-0", 2);
      await waitReady(
        "2 machines",
        async () =>
          (await list<Machine>(capi, "machines")).length === 2 && (await list<TerraformObject>(infra, "terraformmachines")).length === 2,
      );
      // The three removed machines were destroyed (their Jobs went with them: the events stay).
      const remaining = new Set((await list<TerraformObject>(infra, "terraformmachines")).map((machine) => machine.metadata.name));
      const destroyed = (await events.listNamespacedEvent({ namespace: demoNamespace })).items.filter(
        (event) => event.reason === "Destroyed" && event.regarding?.kind === "TerraformMachine" && !remaining.has(event.regarding.name!),
      );
      expect(new Set(destroyed.map((event) => event.regarding!.name)).size).toBe(3);

      await scale("machinepools", "demo-mp-0", 1);
      await waitReady("a pool of 1", async () => {
        const pool = (await custom.getNamespacedCustomObject({ ...capi, plural: "machinepools", name: "demo-mp-0" })) as MachinePool;
        return pool.spec.providerIDList?.length === 1 && pool.status?.readyReplicas === 1;
      });

      // Autoscaling: with the autoscaler's bounds on the MachinePool the module owns the count (the
      // no-op group clamps its 1 member into [2, 5]) and captf writes it back to the MachinePool.
      await custom.patchNamespacedCustomObject(
        {
          ...capi,
          plural: "machinepools",
          name: "demo-mp-0",
          body: { metadata: { annotations: { [annotations.autoscalerMinSize]: "2", [annotations.autoscalerMaxSize]: "5" } } },
        },
        mergePatch,
      );
      await waitReady("the autoscaled pool written back to 2", async () => {
        const pool = (await custom.getNamespacedCustomObject({ ...capi, plural: "machinepools", name: "demo-mp-0" })) as MachinePool;
        return (
          pool.metadata.annotations?.[annotations.replicasManagedBy] === "captf" &&
          pool.spec.replicas === 2 &&
          pool.status?.readyReplicas === 2
        );
      });
      const terraformPool = (await custom.getNamespacedCustomObject({
        ...infra,
        plural: "terraformmachinepools",
        name: "demo-mp-0",
      })) as TerraformObject;
      expect(terraformPool.status!.conditions!.find((condition) => condition.type === "AutoscalingActive")).toMatchObject({
        status: "True",
      });
    },
    scenarioTimeout,
  );
};
