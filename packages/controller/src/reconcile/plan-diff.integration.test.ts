import { execFile } from "node:child_process";
import { rmSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { planDiffDataKey, planDiffSecretName, type PlanDiff } from "@captf/contract/plan-diff";
import { stateSecretName, stateSecretSuffix } from "@captf/render";
import { describeWithTools } from "@captf/testkit";
import { clusterAdapter } from "../kinds/adapters.js";
import { startJobExecutor, type JobExecutor } from "./job-executor.test-support.js";
import {
  allJobsFinished,
  createTerraformCluster,
  extendedClusterModule,
  mergePatchOptions,
  preparePlane,
  skewablePasses,
  type PlaneClients,
} from "./plane.test-support.js";
import type { TerraformCluster } from "../api/terraformcluster.js";
import type { ReadBack } from "./read-back.test-support.js";

const tofuImage = "registry.invalid/captf/diffed-cluster:v0.1.0";
const terraformImage = "registry.invalid/captf/diffed-cluster-tf:v0.1.0";
const infra = { group: "infrastructure.cluster.x-k8s.io", version: "v1alpha1" };
const capi = { group: "cluster.x-k8s.io", version: "v1beta2" };
const plugin = fileURLToPath(new URL("../../../kubectl-captf/bin/kubectl-captf.js", import.meta.url));
type Cluster = ReadBack<TerraformCluster>;

// The canaries: a sensitive variable's values, from a variablesFrom Secret, before and after the change planned.
const oldCanary = "CANARY-plan-diff-old-7f3a9c";
const newCanary = "CANARY-plan-diff-new-2b8e41";

// A plan Job under applyPolicy Manual keeps its plan's diff in the object's plan diff Secret, through the Job's state broker
// (real kube-apiserver, the runner's bundle, OpenTofu and Terraform 1.5.7), and kubectl captf plan show --diff prints it.
describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager", "tofu", "terraform", "go"], "plan diffs", () => {
  const namespace = `plan-diff-${Date.now().toString(36)}`;
  let plane: PlaneClients;
  let passes: ReturnType<typeof skewablePasses>;
  let executor: JobExecutor;
  let module = "";

  beforeAll(async () => {
    plane = await preparePlane(namespace);
    passes = skewablePasses(plane, namespace, "plan-diff-test");
    // The no-op cluster module with a resource of a sensitive variable, one of a plain one, and one its generation replaces.
    module = extendedClusterModule("captf-diffed-module-", {
      "diffed.tf":
        'variable "password" {\n  type      = string\n  sensitive = true\n}\n\n' +
        'variable "size" {\n  type    = string\n  default = "1"\n}\n\n' +
        'resource "terraform_data" "secret" {\n  input = var.password\n}\n\n' +
        'resource "terraform_data" "sized" {\n  input = { size = var.size, tags = ["a", var.size] }\n}\n\n' +
        'variable "generation" {\n  type    = string\n  default = "1"\n}\n\n' +
        'resource "terraform_data" "generation" {\n  triggers_replace = [var.generation]\n}\n',
    });
    executor = startJobExecutor({
      kubeconfigPath: plane.kubeconfigPath,
      namespace,
      modules: { [tofuImage]: module, [terraformImage]: module },
      runtimes: { [terraformImage]: "terraform" },
    });
  }, 180_000);
  afterAll(() => {
    executor?.close();
    if (module) rmSync(module, { recursive: true, force: true });
  });

  const get = (name: string) =>
    plane.custom.getNamespacedCustomObject({ ...infra, namespace, plural: "terraformclusters", name }) as Promise<Cluster>;
  const pass = async (name: string) => (await passes.pass(clusterAdapter, name)).action;
  const runJobs = () => allJobsFinished(plane.batch, namespace, executor);
  const kubectlCaptf = (...args: string[]) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        [plugin, ...args, "-n", namespace],
        { env: { ...process.env, KUBECONFIG: plane.kubeconfigPath } },
        (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
      );
    });
  const writeVariables = async (name: string, password: string, create: boolean) => {
    const body = {
      metadata: { name, labels: { "captf.io/variables": "true" } },
      stringData: { password },
    };
    if (create) await plane.core.createNamespacedSecret({ namespace, body });
    else await plane.core.replaceNamespacedSecret({ namespace, name, body });
  };

  /** Provisions a Manual cluster with the old canary, then changes the canary and the size: a plan waits for approval. */
  async function planAChange(name: string, image: string): Promise<Cluster> {
    await writeVariables(`${name}-vars`, oldCanary, true);
    await createTerraformCluster(plane, namespace, name, {
      applyPolicy: "Manual",
      source: { image },
      variables: { size: "1" },
      variablesFrom: [{ secretRef: { name: `${name}-vars` } }],
    });
    expect(await pass(name)).toBe("added finalizer");
    expect(await pass(name)).toMatch(/^started apply \(NoState\)/);
    await runJobs();
    await pass(name);
    expect((await get(name)).status.initialization).toEqual({ provisioned: true });
    await plane.custom.patchNamespacedCustomObjectStatus(
      { ...capi, namespace, plural: "clusters", name, body: { status: { initialization: { controlPlaneInitialized: true } } } },
      mergePatchOptions(),
    );
    await writeVariables(`${name}-vars`, newCanary, false);
    await plane.custom.patchNamespacedCustomObject(
      { ...infra, namespace, plural: "terraformclusters", name, body: { spec: { variables: { size: "2" } } } },
      mergePatchOptions(),
    );
    expect(await pass(name)).toMatch(/^started plan \(InputsChanged/);
    await runJobs();
    expect(await pass(name)).toBe("PlanAwaitingApproval");
    return get(name);
  }

  async function keptDiff(cluster: string): Promise<{ secret: k8s.V1Secret; diff: PlanDiff }> {
    const name = planDiffSecretName({ namespace, kind: "TerraformCluster", name: cluster });
    const secret = await plane.core.readNamespacedSecret({ namespace, name });
    return { secret, diff: JSON.parse(gunzipSync(Buffer.from(secret.data![planDiffDataKey]!, "base64")).toString("utf8")) as PlanDiff };
  }

  async function expectNoCanaryAnywhere(cluster: string, printed: string[]): Promise<void> {
    const { secret } = await keptDiff(cluster);
    const events = (await passes.eventsApi.listNamespacedEvent({ namespace })).items.map((event) => `${event.reason} ${event.note}`);
    const logs = [...executor.logs.values()];
    for (const [where, text] of [
      ["the diff Secret", gunzipSync(Buffer.from(secret.data![planDiffDataKey]!, "base64")).toString("utf8")],
      ["kubectl captf's output", printed.join("\n")],
      ["events", events.join("\n")],
      ["status", JSON.stringify((await get(cluster)).status)],
      ["the Jobs' logs", logs.join("\n")],
    ] as const) {
      expect([where, text.includes(oldCanary) || text.includes(newCanary)]).toEqual([where, false]);
    }
    // The canaries were there to find: the plan Job's log shows the module's sensitive value redacted.
    expect(logs.join("\n")).toContain("(sensitive value)");
  }

  it.each([
    ["diffed", "OpenTofu", tofuImage],
    ["diffed-tf", "Terraform 1.5.7", terraformImage],
  ])(
    "keeps %s's plan diff masked beside the object, and plan show --diff prints it (%s)",
    async (name, _runtime, image) => {
      const cluster = await planAChange(name, image);
      const pending = cluster.status.plan!;
      const { secret, diff } = await keptDiff(name);
      expect(secret.metadata).toMatchObject({
        labels: { "captf.infrastructure.cluster.x-k8s.io/owner-kind": "TerraformCluster" },
        ownerReferences: [expect.objectContaining({ kind: "TerraformCluster", name, uid: cluster.metadata.uid })],
      });
      expect(diff).toMatchObject({ planHash: pending.planHash, job: pending.job });
      const secretChange = diff.resources.find((resource) => resource.address.endsWith("terraform_data.secret"))!;
      expect(secretChange).toMatchObject({
        actions: ["update"],
        before: { input: { "captf:masked": "sensitive" } },
        after: { input: { "captf:masked": "sensitive-changed" }, output: { "captf:masked": "unknown" } },
      });

      const text = await kubectlCaptf("plan", "show", `terraformcluster/${name}`, "--diff");
      expect(text).toMatchObject({ code: 0, stderr: "" });
      expect(text.stdout).toContain(`TerraformCluster ${namespace}/${name}: plan ${pending.planHash}, made by Job ${pending.job}`);
      expect(text.stdout).toMatch(
        / {2}~ resource "terraform_data" "sized" \{\n {8}id {5}= "[0-9a-f-]+"\n {6}~ input {2}= \{\n {10}~ size = "1" -> "2"\n/,
      );
      expect(text.stdout).toMatch(/ {10}~ tags = \[\n {16}"a",\n {14}- "1",\n {14}\+ "2",\n {12}\]/);
      expect(text.stdout).toMatch(/ {2}~ resource "terraform_data" "secret" \{\n(.*\n)* {6}~ input {2}= \(sensitive value\)\n/);
      expect(text.stdout).toContain("~ output = (sensitive value) -> (known after apply)");
      expect(text.stdout).toContain("Plan: 0 to add, 3 to change, 0 to destroy.");
      const json = await kubectlCaptf("plan", "show", `terraformcluster/${name}`, "--diff", "-o", "json");
      expect(json.code).toBe(0);
      expect(JSON.parse(json.stdout)).toEqual({
        object: { kind: "TerraformCluster", namespace, name },
        plan: { planHash: pending.planHash, job: pending.job },
        diff,
      });
      await expectNoCanaryAnywhere(name, [text.stdout, json.stdout]);

      // Approved and applied: nothing waits, and plan show --diff says so.
      await plane.custom.patchNamespacedCustomObject(
        {
          ...infra,
          namespace,
          plural: "terraformclusters",
          name,
          body: { metadata: { annotations: { "captf.io/approve-plan": pending.planHash } } },
        },
        mergePatchOptions(),
      );
      expect(await pass(name)).toMatch(/^started apply/);
      await runJobs();
      expect(await pass(name)).toBe("UpToDate");
      // The canary was the module's to use: the state (which keeps sensitive values in plain) holds the new one.
      const stateSecret = stateSecretName(stateSecretSuffix({ role: "cluster", namespace, name }));
      const state = await plane.core.readNamespacedSecret({ namespace, name: stateSecret });
      expect(gunzipSync(Buffer.from(state.data!.tfstate!, "base64")).toString("utf8")).toContain(newCanary);
      const applied = await kubectlCaptf("plan", "show", `terraformcluster/${name}`, "--diff");
      expect(applied).toMatchObject({ code: 1, stdout: "" });
      expect(applied.stderr).toContain(`TerraformCluster ${namespace}/${name} has no plan waiting for approval (status.plan is empty)`);
    },
    300_000,
  );

  it("says when the diff kept is not the pending plan's", async () => {
    // A plan of other inputs pending (as status.plan shows it while the Secret still holds the applied plan's diff).
    const { diff } = await keptDiff("diffed");
    await plane.custom.patchNamespacedCustomObjectStatus(
      {
        ...infra,
        namespace,
        plural: "terraformclusters",
        name: "diffed",
        body: { status: { plan: { planHash: "p1:another", job: "c-diffed-plan-a9", inputsHash: "h2:other" } } },
      },
      mergePatchOptions(),
    );
    const shown = await kubectlCaptf("plan", "show", "terraformcluster/diffed", "--diff");
    expect(shown.code).toBe(1);
    expect(shown.stderr).toContain(
      `the diff kept is of plan ${diff.planHash} (Job ${diff.job}), not of the pending plan p1:another (Job c-diffed-plan-a9)`,
    );
  }, 60_000);

  it("shows the plan an apply was blocked before (DestructivePlanBlocked), with no plan waiting for approval", async () => {
    await writeVariables("guarded-vars", oldCanary, true);
    await createTerraformCluster(plane, namespace, "guarded", {
      source: { image: tofuImage },
      variablesFrom: [{ secretRef: { name: "guarded-vars" } }],
    });
    expect(await pass("guarded")).toBe("added finalizer");
    expect(await pass("guarded")).toMatch(/^started apply \(NoState\)/);
    await runJobs();
    await pass("guarded");
    await plane.custom.patchNamespacedCustomObject(
      { ...infra, namespace, plural: "terraformclusters", name: "guarded", body: { spec: { variables: { generation: "2" } } } },
      mergePatchOptions(),
    );
    expect(await pass("guarded")).toMatch(/^started apply \(InputsChanged\)/);
    await runJobs();
    expect(await pass("guarded")).toBe("DestructivePlanBlocked");
    const blocked = await get("guarded");
    expect(blocked.status.plan).toBeUndefined();
    const job = blocked.status.lastRun!.job;

    const text = await kubectlCaptf("plan", "show", "terraformcluster/guarded", "--diff");
    expect(text).toMatchObject({ code: 0, stderr: "" });
    expect(text.stdout).toMatch(
      new RegExp(`^TerraformCluster ${namespace}/guarded: plan p1:[0-9a-f]{64}, made by Job ${job}, which it stopped before destroying`),
    );
    expect(text.stdout).toMatch(
      / {2}# module\.role\.terraform_data\.generation must be replaced\n-\/\+ resource "terraform_data" "generation" \{\n/,
    );
    expect(text.stdout).toMatch(/ {6}~ triggers_replace = \[\n {10}- "1",\n {10}\+ "2",\n {8}\]/);
    const json = JSON.parse((await kubectlCaptf("plan", "show", "terraformcluster/guarded", "--diff", "-o", "json")).stdout) as {
      plan: { job: string; blocked?: boolean };
    };
    expect(json.plan).toMatchObject({ job, blocked: true });
    expect(text.stdout).not.toContain(oldCanary);
  }, 180_000);
});
