// Plan approval: a cluster input change under applyPolicy Manual shows its plan in status.plan and
// applies nothing until captf.io/approve-plan names the plan's hash; then one apply, and both clear.
import { expect, it } from "@jest/globals";
import { waitFor } from "@captf/testkit";
import { labels } from "@captf/contract/api";
import { demoClusterName } from "../demo-objects.js";
import type { TerraformObject } from "../objects.js";
import { infra, mergePatch, scenarioTimeout, type Scenario } from "./shared-plane.js";

export const approvePlan: Scenario = (shared) => {
  it(
    "holds a cluster input change under applyPolicy Manual until its plan is approved",
    async () => {
      const { custom, captfJobs, waitReady } = shared;
      const clusterJobs = async (op: string) =>
        (await captfJobs()).filter(
          (job) => job.metadata!.labels![labels.ownerKind] === "TerraformCluster" && job.metadata!.labels![labels.op] === op,
        ).length;
      const appliesBefore = await clusterJobs("apply");
      await custom.patchNamespacedCustomObject(
        {
          ...infra,
          plural: "terraformclusters",
          name: demoClusterName,
          body: { spec: { applyPolicy: "Manual", variables: { notes: "resized by the e2e" } } },
        },
        mergePatch,
      );
      const planned = await waitFor(
        async () => {
          const cluster = (await custom.getNamespacedCustomObject({
            ...infra,
            plural: "terraformclusters",
            name: demoClusterName,
          })) as TerraformObject;
          const waiting = (cluster.status?.conditions ?? []).some(
            (condition) => condition.type === "ApplyJobSucceeded" && condition.reason === "PlanAwaitingApproval",
          );
          return waiting && cluster.status?.plan?.planHash ? cluster : undefined;
        },
        180_000,
        "the plan shown in status.plan, awaiting approval",
      );
      expect(planned.status!.plan!.planHash).toMatch(/^p1:[0-9a-f]{64}$/);
      expect(JSON.stringify(planned.status!.plan)).toMatch(/terraform_data\.load_balancer/);
      expect(await clusterJobs("apply")).toBe(appliesBefore);

      await custom.patchNamespacedCustomObject(
        {
          ...infra,
          plural: "terraformclusters",
          name: demoClusterName,
          body: { metadata: { annotations: { "captf.io/approve-plan": planned.status!.plan!.planHash } } },
        },
        mergePatch,
      );
      await waitFor(
        async () => {
          const cluster = (await custom.getNamespacedCustomObject({
            ...infra,
            plural: "terraformclusters",
            name: demoClusterName,
          })) as TerraformObject;
          const applied =
            !cluster.status?.plan &&
            !cluster.metadata.annotations?.["captf.io/approve-plan"] &&
            (cluster.status?.conditions ?? []).some((condition) => condition.type === "Ready" && condition.status === "True");
          return applied ? true : undefined;
        },
        180_000,
        "the approved plan applied, status.plan and the approval cleared",
      );
      expect(await clusterJobs("apply")).toBe(appliesBefore + 1);
      await waitReady("the demo Ready after the approved apply");
    },
    scenarioTimeout,
  );
};
