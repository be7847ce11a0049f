// Plan approval: a cluster input change under applyPolicy Manual shows its plan in status.plan and
// applies nothing until captf.io/approve-plan names the plan's hash; then one apply, and both clear.
// The plan Job kept the plan's diff, masked, and kubectl captf plan show --diff prints it.
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";
import { expect, it } from "@jest/globals";
import { waitFor } from "@captf/testkit";
import { labels } from "@captf/contract/api";
import { planDiffDataKey, planDiffSecretName } from "@captf/contract/plan-diff";
import { demoClusterName, demoNamespace } from "../demo-objects.js";
import type { TerraformObject } from "../objects.js";
import { infra, mergePatch, scenarioTimeout, type Scenario, type SharedPlane } from "./shared-plane.js";

const plugin = fileURLToPath(new URL("../../../packages/kubectl-captf/bin/kubectl-captf.js", import.meta.url));

/** The pending plan's diff as the plan Job's runner kept it (through its broker, with the Job's own token), and as the plugin prints it. */
async function keptPlanDiff(shared: SharedPlane): Promise<{ kept: string; printed: string }> {
  const name = planDiffSecretName({ namespace: demoNamespace, kind: "TerraformCluster", name: demoClusterName });
  const secret = await shared.core.readNamespacedSecret({ namespace: demoNamespace, name });
  const kept = gunzipSync(Buffer.from(secret.data![planDiffDataKey]!, "base64")).toString("utf8");
  const printed = await new Promise<string>((resolve, reject) =>
    execFile(
      process.execPath,
      [plugin, "plan", "show", `terraformcluster/${demoClusterName}`, "--diff", "-n", demoNamespace],
      { env: { ...process.env, KUBECONFIG: shared.plane.kubeconfigPath } },
      (error, stdout, stderr) => (error ? reject(new Error(`kubectl captf plan show --diff: ${stderr}`)) : resolve(stdout)),
    ),
  );
  return { kept, printed };
}

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
      const { kept, printed } = await keptPlanDiff(shared);
      expect(JSON.parse(kept)).toMatchObject({ planHash: planned.status!.plan!.planHash, job: planned.status!.plan!.job });
      expect(printed).toContain(`plan ${planned.status!.plan!.planHash}, made by Job ${planned.status!.plan!.job}`);
      expect(printed).toMatch(/~ resource "terraform_data" "load_balancer" \{/);
      const { credential, variable, bootstrap } = shared.secrets;
      for (const value of [credential, variable, bootstrap])
        expect([kept.includes(value), printed.includes(value)]).toEqual([false, false]);

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
