// Health: a machine whose module observes its instance unhealthy (read from the health server) is
// remediated by Cluster API's MachineHealthCheck and a replacement comes up Ready.
import { expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { waitFor } from "@captf/testkit";
import { applyObjects } from "../apply.js";
import { demoClusterName, demoNamespace } from "../demo-objects.js";
import { startHealthServer } from "../health-server.js";
import type { Machine, TerraformObject } from "../objects.js";
import { capi, infra, scenarioTimeout, type Scenario } from "./shared-plane.js";

export const healthRemediation: Scenario = (shared) => {
  it(
    "remediates a machine its module reports unhealthy, through Cluster API's MachineHealthCheck, and a replacement comes up",
    async () => {
      const { plane, custom, events, list, waitReady, machineTemplate, machineDeployment } = shared;
      const selector = { matchLabels: { "cluster.x-k8s.io/deployment-name": "demo-md-health" } };
      const health = await startHealthServer();
      try {
        await applyObjects(plane.applier, [
          machineTemplate("demo-md-health", {
            variables: { health_state_url: health.url },
            remediation: { annotateMachine: true, unhealthyThreshold: 1, healthCheckIntervalSeconds: 60 },
          }),
          machineDeployment("demo-md-health"),
          {
            apiVersion: "cluster.x-k8s.io/v1beta2",
            kind: "MachineHealthCheck",
            metadata: { name: "demo-md-health", namespace: demoNamespace },
            spec: { clusterName: demoClusterName, selector },
          } as unknown as k8s.KubernetesObject,
        ]);
        const healthMachines = async () =>
          (await list<TerraformObject>(infra, "terraformmachines")).filter((machine) =>
            machine.metadata.name.startsWith("demo-md-health-"),
          );
        await waitReady("the health machine Ready", async () => (await healthMachines()).length === 1);
        const victim = (await healthMachines())[0]!.metadata.name;
        const victimMachine = (await list<Machine>(capi, "machines")).find((machine) => machine.spec.infrastructureRef.name === victim)!
          .metadata.name;

        // What the module observes of its instance from now on: unhealthy (see the no-op machine's health_state_url).
        health.set(victim, { state: "running", healthy: false, message: "the e2e broke this instance", reasons: ["E2EBroken"] });
        await waitFor(
          async () => {
            const machine = (await list<Machine>(capi, "machines")).find((candidate) => candidate.metadata.name === victimMachine);
            const replacements = (await healthMachines()).filter((candidate) => candidate.metadata.name !== victim);
            return !machine && replacements.length === 1 ? true : undefined;
          },
          300_000,
          `${victim} remediated and replaced`,
        );
        await waitReady("the replacement Ready", async () => (await healthMachines()).length === 1);
        // captf asked for it: its RemediationRequested event about the TerraformMachine names the Machine it annotated.
        const requests = (await events.listNamespacedEvent({ namespace: demoNamespace })).items.filter(
          (event) =>
            event.regarding?.kind === "TerraformMachine" &&
            event.regarding.name === victim &&
            event.reason === "RemediationRequested" &&
            event.reportingController === "captf-manager",
        );
        expect(requests.map((event) => event.note)).toEqual([
          `asked Cluster API to replace Machine ${victimMachine}: InstanceUnhealthy after 1 unhealthy sample(s)`,
        ]);

        await custom.deleteNamespacedCustomObject({ ...capi, plural: "machinehealthchecks", name: "demo-md-health" });
        await custom.deleteNamespacedCustomObject({ ...capi, plural: "machinedeployments", name: "demo-md-health" });
        await waitFor(async () => ((await healthMachines()).length === 0 ? true : undefined), 180_000, "demo-md-health's machines gone");
      } finally {
        await health.close();
      }
    },
    scenarioTimeout,
  );
};
