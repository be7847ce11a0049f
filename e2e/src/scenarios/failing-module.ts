// A failing module: an apply the module fails (an undeclared variable) and an image that cannot be
// pulled are each reported on ApplyJobSucceeded, and each machine recovers when its
// MachineDeployment rolls to a fixed template.
import { expect, it } from "@jest/globals";
import { waitFor } from "@captf/testkit";
import { applyObjects } from "../apply.js";
import type { Machine, TerraformObject } from "../objects.js";
import { capi, infra, mergePatch, scenarioTimeout, type Scenario } from "./shared-plane.js";

export const failingModule: Scenario = (shared) => {
  it(
    "reports a module whose apply fails, and recovers when the MachineDeployment rolls to a fixed template",
    async () => {
      const { plane, custom, list, waitReady, machineTemplate, machineDeployment } = shared;
      // The module declares no such variable: its Job fails as any broken module's would.
      await applyObjects(plane.applier, [
        machineTemplate("demo-md-fail", { variables: { no_such_variable: "x" } }),
        machineDeployment("demo-md-fail"),
      ]);
      const failed = await waitFor(
        async () => {
          const machine = (await list<TerraformObject>(infra, "terraformmachines")).find((candidate) =>
            candidate.metadata.name.startsWith("demo-md-fail-"),
          );
          const condition = machine?.status?.conditions?.find((candidate) => candidate.type === "ApplyJobSucceeded");
          return machine && condition?.status === "False" ? { machine, condition } : undefined;
        },
        240_000,
        "the failing machine's ApplyJobSucceeded=False",
      );
      expect(failed.condition.reason).toBe("ApplyFailed");
      expect(failed.condition.message).toMatch(/no_such_variable/);
      expect(failed.machine.status!.conditions!.find((condition) => condition.type === "Ready")!.status).toBe("False");

      await applyObjects(plane.applier, [machineTemplate("demo-md-fail-fixed")]);
      await custom.patchNamespacedCustomObject(
        {
          ...capi,
          plural: "machinedeployments",
          name: "demo-md-fail",
          body: { spec: { template: { spec: { infrastructureRef: { name: "demo-md-fail-fixed" } } } } },
        },
        mergePatch,
      );
      await waitReady("the fixed machine Ready, the broken one gone", async () => {
        const machines = (await list<TerraformObject>(infra, "terraformmachines")).filter((candidate) =>
          candidate.metadata.name.startsWith("demo-md-fail-"),
        );
        return machines.length === 1 && machines[0]!.metadata.name !== failed.machine.metadata.name;
      });
      await custom.deleteNamespacedCustomObject({ ...capi, plural: "machinedeployments", name: "demo-md-fail" });
      await waitFor(
        async () =>
          (await list<Machine>(capi, "machines")).some((machine) => machine.metadata.name.startsWith("demo-md-fail-")) ? undefined : true,
        180_000,
        "demo-md-fail's machines gone",
      );
    },
    scenarioTimeout,
  );

  it(
    "reports a module image that cannot be pulled as ImagePullFailed, and recovers when the template names one that can",
    async () => {
      const { plane, custom, list, waitReady, machineTemplate, machineDeployment } = shared;
      const missing = plane.images.modules.machine.replace(/:[^:/]+$/, ":does-not-exist");
      await applyObjects(plane.applier, [
        machineTemplate("demo-md-noimage", { source: { image: missing } }),
        machineDeployment("demo-md-noimage"),
      ]);
      const noImageMachines = async () =>
        (await list<TerraformObject>(infra, "terraformmachines")).filter((machine) => machine.metadata.name.startsWith("demo-md-noimage-"));
      const failed = await waitFor(
        async () => {
          const machine = (await noImageMachines())[0];
          const condition = machine?.status?.conditions?.find((candidate) => candidate.type === "ApplyJobSucceeded");
          return machine && condition?.reason === "ImagePullFailed" ? { machine, condition } : undefined;
        },
        360_000,
        "ApplyJobSucceeded=False/ImagePullFailed on the machine whose image does not exist",
      );
      expect(failed.condition.status).toBe("False");
      expect(failed.condition.message).toContain("does-not-exist");

      await applyObjects(plane.applier, [machineTemplate("demo-md-noimage-fixed")]);
      await custom.patchNamespacedCustomObject(
        {
          ...capi,
          plural: "machinedeployments",
          name: "demo-md-noimage",
          body: { spec: { template: { spec: { infrastructureRef: { name: "demo-md-noimage-fixed" } } } } },
        },
        mergePatch,
      );
      await waitReady("the machine of the fixed template Ready, the one without an image gone", async () => {
        const machines = await noImageMachines();
        return machines.length === 1 && machines[0]!.metadata.name !== failed.machine.metadata.name;
      });
      await custom.deleteNamespacedCustomObject({ ...capi, plural: "machinedeployments", name: "demo-md-noimage" });
      await waitFor(async () => ((await noImageMachines()).length === 0 ? true : undefined), 180_000, "demo-md-noimage's machines gone");
    },
    scenarioTimeout,
  );
};
