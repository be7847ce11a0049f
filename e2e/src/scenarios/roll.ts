// Roll: a new version on the demo's MachineDeployment replaces every TerraformMachine.
import { expect, it } from "@jest/globals";
import type { Machine, TerraformObject } from "../objects.js";
import { capi, infra, mergePatch, scenarioTimeout, type Scenario } from "./shared-plane.js";

export const roll: Scenario = (shared) => {
  it(
    "rolls the MachineDeployment to a new version with new TerraformMachines",
    async () => {
      const { custom, list, waitReady } = shared;
      const before = new Set((await list<TerraformObject>(infra, "terraformmachines")).map((machine) => machine.metadata.name));
      await custom.patchNamespacedCustomObject(
        { ...capi, plural: "machinedeployments", name: "demo-md-0", body: { spec: { template: { spec: { version: "v1.36.4" } } } } },
        mergePatch,
      );
      await waitReady("the roll to v1.36.4", async () => {
        const machines = await list<Machine>(capi, "machines");
        return machines.length === 2 && machines.every((machine) => machine.spec.version === "v1.36.4");
      });
      const after = (await list<TerraformObject>(infra, "terraformmachines")).map((machine) => machine.metadata.name);
      expect(after).toHaveLength(2);
      for (const name of after) expect(before.has(name)).toBe(false);
    },
    scenarioTimeout,
  );
};
