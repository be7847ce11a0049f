import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { noopModuleDirectory } from "@captf/module-noop";
import { stateSecretName, stateSecretSuffix } from "@captf/render";
import { describeWithTools, waitFor } from "@captf/testkit";
import { Registry } from "prom-client";
import { recordingEvents } from "../events/recording-events.test-support.js";
import { CaptfMetrics } from "../metrics/captf-metrics.js";
import { seriesValue } from "../metrics/series.test-support.js";
import { clusterAdapter, machineAdapter, poolAdapter } from "../kinds/adapters.js";
import { startJobExecutor, type JobExecutor } from "./job-executor.test-support.js";
import { createMachine, createMachinePool } from "./machine-fixture.test-support.js";
import { allJobsFinished, preparePlane, type PlaneClients, mergePatchOptions } from "./plane.test-support.js";
import { durableInputsSecretName } from "./durable-inputs.js";
import { reconcileWorkspace, type ReconcilerDeps } from "./workspace-reconciler.js";
import type { TerraformCluster } from "../api/terraformcluster.js";
import type { TerraformMachinePool } from "../api/terraformmachinepool.js";
import type { ReadBack } from "./read-back.test-support.js";

type Json = Record<string, unknown>;
type Cluster = ReadBack<TerraformCluster>;
type Pool = ReadBack<TerraformMachinePool>;

const infra = { group: "infrastructure.cluster.x-k8s.io", version: "v1alpha1" };
const capi = { group: "cluster.x-k8s.io", version: "v1beta2" };
const opLabel = "captf.infrastructure.cluster.x-k8s.io/op";

// TerraformClusters whose modules publish what the contract allows at its edges, on the real API
// server with real Jobs and the real runner: the no-op cluster module, each test changing one output.
describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager", "tofu", "go"], "cluster modules at the contract's edges", () => {
  const namespace = `clustermod-${Date.now().toString(36)}`;
  const work = mkdtempSync(join(tmpdir(), "captf-cluster-modules-"));
  const modules: Record<string, string> = {};
  const { events, recorded } = recordingEvents();
  // The manager's metrics, read by their exposed names.
  const registry = new Registry();
  const metrics = new CaptfMetrics(registry);
  let plane: PlaneClients;
  let deps: ReconcilerDeps;
  let executor: JobExecutor;
  let skew = 0;

  /** A no-op module of the role with output values replaced and files added. */
  function noopVariant(
    name: string,
    role: "cluster" | "machinepool",
    change: { outputs?: Record<string, string>; files?: Record<string, string> },
  ): string {
    const dir = join(work, name);
    cpSync(noopModuleDirectory(role), dir, { recursive: true });
    const outputsFile = join(dir, "outputs.tf");
    let outputs = readFileSync(outputsFile, "utf8");
    for (const [output, value] of Object.entries(change.outputs ?? {})) {
      const pattern = new RegExp(`(output "${output}" \\{[^]*?value\\s*=\\s*)(\\[[^]*?\\]|\\{[^]*?\\n  \\}|[^\\n]*)\\n`);
      const replaced = outputs.replace(pattern, `$1${value}\n`);
      if (replaced === outputs) throw new Error(`output ${output} not found in the no-op ${role} module`);
      outputs = replaced;
    }
    writeFileSync(outputsFile, outputs);
    for (const [file, content] of Object.entries(change.files ?? {})) writeFileSync(join(dir, file), content);
    return dir;
  }

  beforeAll(async () => {
    plane = await preparePlane(namespace);
    deps = { client: plane.client, events, metrics, now: () => Date.now() + skew };
    modules["registry.invalid/captf/no-domains:v1"] = noopVariant("no-domains", "cluster", { outputs: { failure_domains: "[]" } });
    modules["registry.invalid/captf/fractional-exports:v1"] = noopVariant("fractional-exports", "cluster", {
      outputs: { exports: "{ ratio = 0.5 }" },
    });
    // Its configuration follows a marker file: the state differs from it (drift) once the marker is there.
    modules["registry.invalid/captf/drifting:v1"] = noopVariant("drifting", "cluster", {
      files: {
        "drifting.tf":
          'resource "terraform_data" "drifting" {\n  input = fileexists("${path.module}/../drift-${var.captf_object.name}")\n}\n',
      },
    });
    // A cluster exporting a user variable, and a pool that replaces a resource whenever the exports change.
    modules["registry.invalid/captf/exporting:v1"] = noopVariant("exporting", "cluster", {
      outputs: { exports: "{ generation = var.generation }" },
      files: { "generation.tf": 'variable "generation" {\n  type    = string\n  default = "1"\n}\n' },
    });
    // Exports `extra` only while its variable is set: a key the module stops exporting.
    modules["registry.invalid/captf/dropping-exports:v1"] = noopVariant("dropping-exports", "cluster", {
      outputs: { exports: 'merge({ base = "b" }, var.extra == "" ? {} : { extra = var.extra })' },
      files: { "extra.tf": 'variable "extra" {\n  type    = string\n  default = "x"\n}\n' },
    });
    modules["registry.invalid/captf/export-bound-pool:v1"] = noopVariant("export-bound-pool", "machinepool", {
      files: { "bound.tf": 'resource "terraform_data" "bound" {\n  triggers_replace = var.captf_cluster_outputs\n}\n' },
    });
    // A pool whose apply fails in its apply step (a precondition known only then) while the exports say "fail".
    modules["registry.invalid/captf/export-failing-pool:v1"] = noopVariant("export-failing-pool", "machinepool", {
      files: {
        "failing.tf": [
          'resource "terraform_data" "exports" {\n  input = var.captf_cluster_outputs\n}\n',
          'resource "terraform_data" "check" {\n  input = terraform_data.exports.output\n  lifecycle {\n    precondition ' +
            '{\n      condition     = try(terraform_data.exports.output.generation, "") != "fail"\n      error_message = "the ' +
            'exports say fail"\n    }\n  }\n}\n',
        ].join(""),
      },
    });
    // Its plan fails while var.fail is "yes" (a precondition): a re-apply that fails.
    modules["registry.invalid/captf/failing-cluster:v1"] = noopVariant("failing-cluster", "cluster", {
      files: {
        "fail.tf":
          'variable "fail" {\n  type    = string\n  default = "no"\n}\n\nresource "terraform_data" "check" {\n  input = ' +
          'var.fail\n  lifecycle {\n    precondition {\n      condition     = var.fail != "yes"\n      error_message = "the ' +
          'test asked this apply to fail"\n    }\n  }\n}\n',
      },
    });
    modules["registry.invalid/captf/noop-cluster:v1"] = noopModuleDirectory("cluster");
    executor = startJobExecutor({ kubeconfigPath: plane.kubeconfigPath, namespace, modules });
  }, 120_000);
  afterAll(() => {
    executor?.close();
    rmSync(work, { recursive: true, force: true });
  });

  async function createCluster(name: string, image: string, spec: Json = {}): Promise<void> {
    const cluster = (await plane.custom.createNamespacedCustomObject({
      ...capi,
      namespace,
      plural: "clusters",
      body: {
        apiVersion: "cluster.x-k8s.io/v1beta2",
        kind: "Cluster",
        metadata: { name },
        spec: { infrastructureRef: { apiGroup: "infrastructure.cluster.x-k8s.io", kind: "TerraformCluster", name } },
      },
    })) as { metadata: { uid: string } };
    await plane.custom.createNamespacedCustomObject({
      ...infra,
      namespace,
      plural: "terraformclusters",
      body: {
        apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
        kind: "TerraformCluster",
        metadata: {
          name,
          labels: { "cluster.x-k8s.io/cluster-name": name },
          ownerReferences: [{ apiVersion: "cluster.x-k8s.io/v1beta2", kind: "Cluster", name, uid: cluster.metadata.uid }],
        },
        spec: { source: { image }, identityRef: { name: "unused" }, ...spec },
      },
    });
  }

  const getCluster = (name: string) =>
    plane.custom.getNamespacedCustomObject({ ...infra, namespace, plural: "terraformclusters", name }) as Promise<Cluster>;
  const condition = (object: Cluster | Pool, type: string) => (object.status?.conditions ?? []).find((c) => c.type === type);
  const jobsOf = async (name: string) =>
    (await plane.batch.listNamespacedJob({ namespace, labelSelector: `captf.infrastructure.cluster.x-k8s.io/owner-name=${name}` })).items;

  async function drive(name: string, until: (cluster: Cluster) => boolean, maxPasses = 10): Promise<string[]> {
    const actions: string[] = [];
    for (let pass = 0; pass < maxPasses; pass++) {
      actions.push((await reconcileWorkspace(deps, clusterAdapter, namespace, name)).action);
      if (until(await getCluster(name))) return actions;
      if (await executor.runPending()) await allJobsFinished(plane.batch, namespace);
    }
    throw new Error(`${name} did not converge: ${actions.join(" | ")}\nstatus: ${JSON.stringify((await getCluster(name)).status)}`);
  }

  describe("exports", () => {
    it("a fraction in exports: the cluster's OutputsValid is False, its machines and pools wait with WaitingForClusterExports " +
      "and start no Job", async () => {
      await createCluster("frac", "registry.invalid/captf/fractional-exports:v1");
      await drive("frac", (c) => condition(c, "OutputsValid")?.status === "False");
      expect(condition(await getCluster("frac"), "OutputsValid")).toMatchObject({
        reason: "OutputsInvalid",
        message: expect.stringContaining("fractional or exponent number at /ratio"),
      });

      // The cluster is there already: createMachine keeps it.
      await createMachine(plane, namespace, "frac-m", "registry.invalid/captf/noop-machine:v1", { clusterName: "frac" });
      await createMachinePool(plane, namespace, "frac-p", { clusterName: "frac", image: "registry.invalid/captf/noop-machinepool:v1" });

      for (const [adapter, plural, name] of [
        [machineAdapter, "terraformmachines", "frac-m"],
        [poolAdapter, "terraformmachinepools", "frac-p"],
      ] as const) {
        expect((await reconcileWorkspace(deps, adapter, namespace, name)).action).toBe("added finalizer");
        const waiting = await reconcileWorkspace(deps, adapter, namespace, name);
        expect(waiting.action).toBe("waiting: WaitingForClusterExports");
        const object = (await plane.custom.getNamespacedCustomObject({ ...infra, namespace, plural, name })) as Cluster | Pool;
        expect(condition(object, "DependenciesReady")).toMatchObject({
          status: "Unknown",
          reason: "WaitingForClusterExports",
          message: expect.stringContaining("exports contains a fractional or exponent number at /ratio"),
        });
        expect(await jobsOf(name)).toHaveLength(0);
      }
    }, 120_000);
  });

  describe("status.exports", () => {
    it("publishes exactly the module's exports: a key the module no longer exports leaves status.exports", async () => {
      await createCluster("drop", "registry.invalid/captf/dropping-exports:v1");
      await drive("drop", (c) => c.status?.initialization?.provisioned === true);
      expect((await getCluster("drop")).status.exports).toEqual({ base: "b", extra: "x" });
      await plane.custom.patchNamespacedCustomObject(
        { ...infra, namespace, plural: "terraformclusters", name: "drop", body: { spec: { variables: { extra: "" } } } },
        mergePatchOptions(),
      );
      await drive("drop", (c) => c.status?.exports !== undefined && c.status.exports.extra === undefined);
      expect((await getCluster("drop")).status.exports).toEqual({ base: "b" });
    }, 180_000);
  });

  describe("a pool whose apply renders changed cluster exports", () => {
    const pools = { ...infra, namespace, plural: "terraformmachinepools", name: "ex-p" };
    const getPool = () => plane.custom.getNamespacedCustomObject(pools) as Promise<Pool>;
    async function drivePool(until: (pool: Pool) => boolean, maxPasses = 8): Promise<string[]> {
      const actions: string[] = [];
      for (let pass = 0; pass < maxPasses; pass++) {
        actions.push((await reconcileWorkspace(deps, poolAdapter, namespace, "ex-p")).action);
        if (until(await getPool())) return actions;
        if (await executor.runPending()) await allJobsFinished(plane.batch, namespace);
      }
      throw new Error(`ex-p did not converge: ${actions.join(" | ")}\nstatus: ${JSON.stringify((await getPool()).status)}`);
    }
    const newestApply = async () =>
      (await jobsOf("ex-p"))
        .filter((job) => job.metadata?.labels?.[opLabel] === "apply")
        .sort((a, b) => Date.parse(String(b.metadata!.creationTimestamp)) - Date.parse(String(a.metadata!.creationTimestamp)))[0]!;
    const args = (job: { spec?: { template: { spec?: { containers: { args?: string[] }[] } } } }) =>
      job.spec!.template.spec!.containers[0]!.args ?? [];

    it("is held when its plan replaces a resource, applies once approved, and applies unguarded while the exports stay the " +
      "same", async () => {
      await createCluster("ex", "registry.invalid/captf/exporting:v1");
      await drive("ex", (c) => c.status?.initialization?.provisioned === true);
      await createMachinePool(plane, namespace, "ex-p", { clusterName: "ex", image: "registry.invalid/captf/export-bound-pool:v1" });
      await drivePool((p) => p.status?.initialization?.provisioned === true);
      expect(args(await newestApply())).not.toContain("--guard-deletes");

      // The cluster exports generation 2: the pool's next apply would replace terraform_data.bound.
      await plane.custom.patchNamespacedCustomObject(
        { ...infra, namespace, plural: "terraformclusters", name: "ex", body: { spec: { variables: { generation: "2" } } } },
        mergePatchOptions(),
      );
      await drive("ex", (c) => c.status?.exports?.generation === "2");
      await drivePool((p) => condition(p, "ApplyJobSucceeded")?.reason === "DestructivePlanBlocked");
      const blocked = await newestApply();
      expect(args(blocked)).toContain("--guard-deletes");
      expect(blocked.metadata?.annotations?.["captf.io/bookkept"]).toBe("true");
      const blockedApproval = args(blocked)
        .find((arg) => arg.startsWith("--inputs-hash="))!
        .slice("--inputs-hash=".length);
      expect(blocked.metadata?.annotations?.["captf.io/approval-hash"]).toBe(blockedApproval);
      expect(condition(await getPool(), "ApplyJobSucceeded")).toMatchObject({
        status: "False",
        message: expect.stringContaining("terraform_data.bound"),
      });

      // The change is held: recorded on the durable inputs beside the exports the pool applied, and nothing else runs.
      const durableSecret = () => plane.core.readNamespacedSecret({ namespace, name: durableInputsSecretName("machinepool", "ex-p") });
      let durable = await durableSecret();
      expect(JSON.parse(durable.metadata!.annotations!["captf.io/pending-cluster-outputs"]!)).toEqual({
        exportsHash: blocked.metadata!.annotations!["captf.io/cluster-outputs-hash"],
        approvalHash: blockedApproval,
        job: blocked.metadata!.name,
        summary: expect.stringContaining("terraform_data.bound"),
      });
      expect(JSON.parse(Buffer.from(durable.data!["applied-cluster-outputs.json"]!, "base64").toString())).toEqual({ generation: "1" });
      const appliedExportsHash = durable.metadata!.annotations!["captf.io/applied-cluster-outputs-hash"];
      expect(appliedExportsHash).not.toBe(blocked.metadata!.annotations!["captf.io/cluster-outputs-hash"]);
      expect((await reconcileWorkspace(deps, poolAdapter, namespace, "ex-p")).action).toBe("UpToDate");
      expect(condition(await getPool(), "ApplyJobSucceeded")).toMatchObject({
        status: "False",
        reason: "DestructivePlanBlocked",
        message: expect.stringContaining("until then the pool applies the exports of its last successful apply"),
      });

      // Meanwhile an edit of the pool applies, unguarded, with the exports it applied last; the change stays held.
      await plane.custom.patchNamespacedCustomObject(
        { ...capi, namespace, plural: "machinepools", name: "ex-p", body: { spec: { replicas: 2 } } },
        mergePatchOptions(),
      );
      await drivePool((p) => p.status?.replicas === 2);
      const heldApply = await newestApply();
      expect(heldApply.metadata?.annotations).toMatchObject({
        "captf.io/held-cluster-outputs": "true",
        "captf.io/cluster-outputs-hash": appliedExportsHash,
      });
      expect(args(heldApply)).not.toContain("--guard-deletes");
      expect(condition(await getPool(), "ApplyJobSucceeded")).toMatchObject({ status: "False", reason: "DestructivePlanBlocked" });
      durable = await durableSecret();
      expect(durable.metadata!.annotations!["captf.io/pending-cluster-outputs"]).toBeDefined();
      expect((JSON.parse(Buffer.from(durable.data!["terraform.tfvars.json"]!, "base64").toString()) as Json).captf_cluster_outputs).toEqual(
        {
          generation: "1",
        },
      );
      const applies = (await jobsOf("ex-p")).filter((job) => job.metadata?.labels?.[opLabel] === "apply").length;

      // Approving the hash the condition names (the edit changed it) applies the change, once, and settles the records.
      const approval = /captf\.io\/approve-destructive-plan=(\S+?);/.exec(condition(await getPool(), "ApplyJobSucceeded")!.message)![1]!;
      expect(approval).not.toBe(blockedApproval);
      await plane.custom.patchNamespacedCustomObject(
        { ...pools, body: { metadata: { annotations: { "captf.io/approve-destructive-plan": approval } } } },
        mergePatchOptions(),
      );
      await drivePool((p) => condition(p, "ApplyJobSucceeded")?.status === "True");
      const approvedApply = await newestApply();
      expect(args(approvedApply)).toContain(`--allow-deletes-hash=${approval}`);
      expect(approvedApply.metadata?.annotations?.["captf.io/approval-hash"]).toBe(approval);
      expect((await getPool()).metadata.annotations?.["captf.io/approve-destructive-plan"]).toBeUndefined();
      expect(await seriesValue(registry, "captf_destructive_plan_approvals_consumed_total", { kind: "TerraformMachinePool" })).toBe(1);
      expect(recorded).toContainEqual({
        name: "ex-p",
        reason: "DestructivePlanApprovalConsumed",
        note: expect.stringContaining("captf.io/approve-destructive-plan removed"),
      });
      expect((await jobsOf("ex-p")).filter((job) => job.metadata?.labels?.[opLabel] === "apply")).toHaveLength(applies + 1);
      durable = await durableSecret();
      expect(durable.metadata!.annotations!["captf.io/pending-cluster-outputs"]).toBeUndefined();
      expect(durable.metadata!.annotations!["captf.io/applied-cluster-outputs-hash"]).toBe(
        blocked.metadata!.annotations!["captf.io/cluster-outputs-hash"],
      );
      expect(JSON.parse(Buffer.from(durable.data!["applied-cluster-outputs.json"]!, "base64").toString())).toEqual({ generation: "2" });

      // Another change of the pool's inputs, the exports as applied: not guarded.
      await plane.custom.patchNamespacedCustomObject(
        { ...capi, namespace, plural: "machinepools", name: "ex-p", body: { spec: { replicas: 3 } } },
        mergePatchOptions(),
      );
      await drivePool((p) => p.status?.replicas === 3);
      expect(args(await newestApply())).not.toContain("--guard-deletes");
      expect((await newestApply()).metadata?.annotations?.["captf.io/held-cluster-outputs"]).toBeUndefined();

      // A change withdrawn (the exports back at those applied): nothing waits, the condition names the Job it stopped.
      await plane.custom.patchNamespacedCustomObject(
        { ...infra, namespace, plural: "terraformclusters", name: "ex", body: { spec: { variables: { generation: "3" } } } },
        mergePatchOptions(),
      );
      await drive("ex", (c) => c.status?.exports?.generation === "3");
      await drivePool((p) => condition(p, "ApplyJobSucceeded")?.reason === "DestructivePlanBlocked");
      const withdrawn = (await newestApply()).metadata!.name!;
      await plane.custom.patchNamespacedCustomObject(
        { ...infra, namespace, plural: "terraformclusters", name: "ex", body: { spec: { variables: { generation: "2" } } } },
        mergePatchOptions(),
      );
      await drive("ex", (c) => c.status?.exports?.generation === "2");
      expect((await reconcileWorkspace(deps, poolAdapter, namespace, "ex-p")).action).toBe("UpToDate");
      expect(condition(await getPool(), "ApplyJobSucceeded")).toMatchObject({
        status: "True",
        reason: "ApplySucceeded",
        message: expect.stringContaining(`Job ${withdrawn} stopped before was withdrawn`),
      });
      expect((await newestApply()).metadata!.name).toBe(withdrawn);
    }, 420_000);
  });

  describe("a pool whose apply of changed cluster exports failed part-way", () => {
    it("is recorded as partly applied: every apply is guarded, even of the applied exports, until one succeeds", async () => {
      const pools = { ...infra, namespace, plural: "terraformmachinepools", name: "fail-p" };
      const getPool = () => plane.custom.getNamespacedCustomObject(pools) as Promise<Pool>;
      const drivePool = async (until: (pool: Pool) => boolean) => {
        for (let pass = 0; pass < 8; pass++) {
          await reconcileWorkspace(deps, poolAdapter, namespace, "fail-p");
          if (until(await getPool())) return;
          if (await executor.runPending()) await allJobsFinished(plane.batch, namespace);
        }
        throw new Error(`fail-p did not converge: ${JSON.stringify((await getPool()).status)}`);
      };
      const newestApply = async () =>
        (await jobsOf("fail-p"))
          .filter((job) => job.metadata?.labels?.[opLabel] === "apply")
          .sort((a, b) => Date.parse(String(b.metadata!.creationTimestamp)) - Date.parse(String(a.metadata!.creationTimestamp)))[0]!;
      const guarded = (job: { spec?: { template: { spec?: { containers: { args?: string[] }[] } } } }) =>
        (job.spec!.template.spec!.containers[0]!.args ?? []).includes("--guard-deletes");
      const durable = async () =>
        (await plane.core.readNamespacedSecret({ namespace, name: durableInputsSecretName("machinepool", "fail-p") })).metadata!
          .annotations ?? {};

      await createCluster("failex", "registry.invalid/captf/exporting:v1");
      await drive("failex", (c) => c.status?.initialization?.provisioned === true);
      await createMachinePool(plane, namespace, "fail-p", {
        clusterName: "failex",
        image: "registry.invalid/captf/export-failing-pool:v1",
      });
      await drivePool((p) => p.status?.initialization?.provisioned === true);
      const appliedHash = (await durable())["captf.io/applied-cluster-outputs-hash"];

      // The exports say "fail": the guarded apply updates in place, then fails in its apply step.
      await plane.custom.patchNamespacedCustomObject(
        { ...infra, namespace, plural: "terraformclusters", name: "failex", body: { spec: { variables: { generation: "fail" } } } },
        mergePatchOptions(),
      );
      await drive("failex", (c) => c.status?.exports?.generation === "fail");
      await drivePool((p) => condition(p, "ApplyJobSucceeded")?.reason === "ApplyFailed");
      // A pool re-applies on every bootstrap rotation: once provisioned, its failed re-apply turns it unready (docs/conditions.md, Ready).
      expect(condition(await getPool(), "Ready")).toMatchObject({
        status: "False",
        reason: "NotReady",
        message: "ApplyJobSucceeded is False (ApplyFailed)",
      });
      const failed = await newestApply();
      expect(guarded(failed)).toBe(true);
      expect(
        await seriesValue(registry, "captf_job_errors_total", {
          kind: "TerraformMachinePool",
          op: "apply",
          error_kind: "step",
          step: "apply",
        }),
      ).toBe(1);
      const pool = { kind: "TerraformMachinePool", op: "apply" };
      const attempts = {
        sum: await seriesValue(registry, "captf_job_attempts", pool, "sum"),
        count: await seriesValue(registry, "captf_job_attempts", pool, "count"),
      };
      expect(JSON.parse((await durable())["captf.io/partial-cluster-outputs"]!)).toEqual({
        exportsHash: failed.metadata!.annotations!["captf.io/cluster-outputs-hash"],
        job: failed.metadata!.name,
      });

      // Back at the applied exports: the apply that follows is guarded all the same, and its success clears the record.
      await plane.custom.patchNamespacedCustomObject(
        { ...infra, namespace, plural: "terraformclusters", name: "failex", body: { spec: { variables: { generation: "1" } } } },
        mergePatchOptions(),
      );
      await drive("failex", (c) => c.status?.exports?.generation === "1");
      // Past the failure's one-minute backoff.
      skew = 90_000;
      try {
        await drivePool((p) => condition(p, "ApplyJobSucceeded")?.status === "True");
      } finally {
        skew = 0;
      }
      expect(condition(await getPool(), "Ready")).toMatchObject({ status: "True", reason: "Ready" });
      const recovered = await newestApply();
      expect(recovered.metadata!.name).not.toBe(failed.metadata!.name);
      // Its retry number: one failure since the last success, plus one.
      expect({
        sum: await seriesValue(registry, "captf_job_attempts", pool, "sum"),
        count: await seriesValue(registry, "captf_job_attempts", pool, "count"),
      }).toEqual({ sum: attempts.sum + 2, count: attempts.count + 1 });
      expect(recovered.metadata!.annotations!["captf.io/cluster-outputs-hash"]).toBe(appliedHash);
      expect(guarded(recovered)).toBe(true);
      expect((await durable())["captf.io/partial-cluster-outputs"]).toBeUndefined();

      // Settled: the next apply of the applied exports is not guarded.
      await plane.custom.patchNamespacedCustomObject(
        { ...capi, namespace, plural: "machinepools", name: "fail-p", body: { spec: { replicas: 2 } } },
        mergePatchOptions(),
      );
      await drivePool((p) => p.status?.replicas === 2);
      expect(guarded(await newestApply())).toBe(false);
    }, 300_000);
  });

  describe("drift with action Remediate", () => {
    it("applies the current inputs once over the drift found, and DriftDetected is False again after that apply", async () => {
      await createCluster("remedy", "registry.invalid/captf/drifting:v1", { drift: { intervalSeconds: 60, action: "Remediate" } });
      expect((await reconcileWorkspace(deps, clusterAdapter, namespace, "remedy")).action).toBe("added finalizer");
      expect((await reconcileWorkspace(deps, clusterAdapter, namespace, "remedy")).action).toMatch(/^started apply \(NoState\)/);
      let cluster = await getCluster("remedy");
      // First visit: no drift check has run yet, and the first apply runs.
      expect(condition(cluster, "DriftDetected")).toMatchObject({ status: "Unknown", reason: "DriftNotChecked" });
      expect(condition(cluster, "DriftJobSucceeded")).toMatchObject({ status: "Unknown", reason: "DriftNotChecked" });
      expect(condition(cluster, "InputsApplied")).toMatchObject({
        status: "False",
        reason: "ApplyRunning",
        message: `Job ${cluster.status.activeJob!.name} applies the current inputs`,
      });
      await drive("remedy", (c) => c.status?.initialization?.provisioned === true);
      expect((await reconcileWorkspace(deps, clusterAdapter, namespace, "remedy")).action).toBe("UpToDate");
      cluster = await getCluster("remedy");
      expect(condition(cluster, "InputsApplied")).toMatchObject({ status: "True", reason: "InputsApplied" });
      expect(condition(cluster, "EndpointAvailable")).toMatchObject({
        status: "True",
        reason: "EndpointAvailable",
        message: "control-plane endpoint noop-remedy.invalid",
      });
      writeFileSync(join(work, "drift-remedy"), "");
      skew = 70_000;
      try {
        expect((await reconcileWorkspace(deps, clusterAdapter, namespace, "remedy")).action).toMatch(/^started drift \(DriftDue\)/);
      } finally {
        skew = 0;
      }
      cluster = await getCluster("remedy");
      expect(condition(cluster, "DriftJobSucceeded")).toMatchObject({
        status: "Unknown",
        reason: "DriftJobRunning",
        message: `Job ${cluster.status.activeJob!.name} checks for drift`,
      });
      expect(condition(cluster, "DriftDetected")).toMatchObject({ status: "Unknown", reason: "DriftNotChecked" });
      // While it runs: the Job and when captf started it (its creation), set by the pass that created it and kept while it runs.
      const driftJob = (await jobsOf("remedy")).find((job) => job.metadata?.labels?.[opLabel] === "drift")!;
      const started = {
        name: driftJob.metadata!.name,
        operation: "drift",
        attempt: 1,
        startTime: new Date(driftJob.metadata!.creationTimestamp!).toISOString(),
      };
      expect(cluster.status.activeJob).toEqual(started);
      await waitFor(
        async () => (await plane.batch.readNamespacedJob({ namespace, name: driftJob.metadata!.name! })).status?.startTime,
        30_000,
        "the drift Job's startTime",
      );
      const resourceVersion = (await getCluster("remedy")).metadata.resourceVersion;
      await reconcileWorkspace(deps, clusterAdapter, namespace, "remedy");
      const running = await getCluster("remedy");
      expect(running.status.activeJob).toEqual(started);
      expect(running.metadata.resourceVersion).toBe(resourceVersion);
      await allJobsFinished(plane.batch, namespace, executor);
      // The pass that reads the finding cannot start the remediation yet (no Job slot): the drift is pending.
      const noSlot: ReconcilerDeps = {
        ...deps,
        jobSlots: { usage: () => ({ total: 1, cluster: 1 }), managerLimit: 1, clusterDefaultLimit: 0 },
      };
      expect((await reconcileWorkspace(noSlot, clusterAdapter, namespace, "remedy")).action).toBe("waiting: WaitingForJobSlot");
      cluster = await getCluster("remedy");
      expect(condition(cluster, "DriftDetected")).toMatchObject({ status: "True", reason: "DriftPending" });
      expect(condition(cluster, "DriftJobSucceeded")).toMatchObject({ status: "True", reason: "DriftChecked" });
      expect((await reconcileWorkspace(deps, clusterAdapter, namespace, "remedy")).action).toMatch(/^started apply \(DriftRemediation\)/);
      const checked = await getCluster("remedy");
      expect(condition(checked, "DriftDetected")).toMatchObject({ status: "True", reason: "DriftRemediating" });
      // What the drift Job found and ran, and when, in status.
      const finished = Date.parse(
        String((await plane.batch.readNamespacedJob({ namespace, name: driftJob.metadata!.name! })).status!.completionTime),
      );
      expect(checked.status.lastRun).toMatchObject({
        job: driftJob.metadata!.name,
        operation: "drift",
        drift: { add: 0, change: 1, destroy: 0, resources: [expect.stringContaining("terraform_data.drifting")] },
      });
      expect(Date.parse(checked.status.lastDriftCheck!)).toBe(finished);
      expect(Date.parse(checked.status.lastRefresh!)).toBe(finished);
      expect(checked.status.source).toMatchObject({
        image: "registry.invalid/captf/drifting:v1",
        runtimeVersion: expect.stringMatching(/^\d+\.\d+\.\d+/),
      });
      await allJobsFinished(plane.batch, namespace, executor);

      const after = await reconcileWorkspace(deps, clusterAdapter, namespace, "remedy");
      expect(after.action).toBe("UpToDate");
      expect(condition(await getCluster("remedy"), "DriftDetected")).toMatchObject({ status: "False", reason: "NoDrift" });
      expect((await reconcileWorkspace(deps, clusterAdapter, namespace, "remedy")).action).toBe("UpToDate");
      const ops = (await jobsOf("remedy")).map((job) => job.metadata?.labels?.[opLabel]).sort();
      expect(ops).toEqual(["apply", "apply", "drift"]);
      expect(recorded.filter((event) => event.name === "remedy" && event.reason === "DriftResolved")).toHaveLength(1);

      // The next check, one interval later, runs again and finds the infrastructure as remediated: no drift, no apply.
      skew = 70_000;
      try {
        expect((await reconcileWorkspace(deps, clusterAdapter, namespace, "remedy")).action).toMatch(/^started drift \(DriftDue\)/);
      } finally {
        skew = 0;
      }
      await allJobsFinished(plane.batch, namespace, executor);
      expect((await reconcileWorkspace(deps, clusterAdapter, namespace, "remedy")).action).toBe("UpToDate");
      const rechecked = await getCluster("remedy");
      expect(condition(rechecked, "DriftDetected")).toMatchObject({ status: "False", reason: "NoDrift" });
      expect(condition(rechecked, "DriftJobSucceeded")).toMatchObject({ status: "True" });
      expect(rechecked.status.lastRun).toMatchObject({ operation: "drift", drift: { add: 0, change: 0, destroy: 0 } });
      expect((await jobsOf("remedy")).map((job) => job.metadata?.labels?.[opLabel]).sort()).toEqual(["apply", "apply", "drift", "drift"]);
    }, 180_000);
  });

  describe("Ready once provisioned", () => {
    it("a cluster whose re-apply fails stays Ready: the failure shows on ApplyJobSucceeded and InputsApplied only", async () => {
      await createCluster("reapply", "registry.invalid/captf/failing-cluster:v1");
      await drive("reapply", (c) => c.status?.initialization?.provisioned === true);
      expect(condition(await getCluster("reapply"), "Ready")).toMatchObject({ status: "True", reason: "Ready" });
      await plane.custom.patchNamespacedCustomObject(
        { ...infra, namespace, plural: "terraformclusters", name: "reapply", body: { spec: { variables: { fail: "yes" } } } },
        mergePatchOptions(),
      );
      expect((await reconcileWorkspace(deps, clusterAdapter, namespace, "reapply")).action).toMatch(/^started apply \(InputsChanged\)/);
      await allJobsFinished(plane.batch, namespace, executor);
      expect((await reconcileWorkspace(deps, clusterAdapter, namespace, "reapply")).action).toBe("InputsChangedBackoff");
      const cluster = await getCluster("reapply");
      const failed = (await jobsOf("reapply"))
        .filter((job) => job.metadata?.labels?.[opLabel] === "apply")
        .sort((a, b) => Date.parse(String(b.metadata!.creationTimestamp)) - Date.parse(String(a.metadata!.creationTimestamp)))[0]!;
      expect(condition(cluster, "ApplyJobSucceeded")).toMatchObject({ status: "False", reason: "ApplyFailed" });
      expect(condition(cluster, "InputsApplied")).toMatchObject({
        status: "False",
        reason: "InputsApplyFailed",
        message: `Job ${failed.metadata!.name} could not apply the current inputs`,
      });
      expect(condition(cluster, "Ready")).toMatchObject({ status: "True", reason: "Ready" });
      expect(cluster.status.initialization).toEqual({ provisioned: true });
    }, 120_000);
  });

  describe("failure_domains", () => {
    it("a module that publishes [] provisions the cluster without status.failureDomains, and its apply is recorded once", async () => {
      await createCluster("nofd", "registry.invalid/captf/no-domains:v1");
      await drive("nofd", (c) => c.status?.initialization?.provisioned === true);
      const cluster = await getCluster("nofd");
      expect(cluster.status.failureDomains).toBeUndefined();
      expect(condition(cluster, "Ready")).toMatchObject({ status: "True" });
      expect(condition(cluster, "ApplyJobSucceeded")).toMatchObject({ status: "True", reason: "ApplySucceeded" });
      // Settled: further passes start nothing and record nothing again.
      for (let pass = 0; pass < 2; pass++)
        expect((await reconcileWorkspace(deps, clusterAdapter, namespace, "nofd")).action).toBe("UpToDate");
      const applies = (await jobsOf("nofd")).filter((job) => job.metadata?.labels?.[opLabel] === "apply");
      expect(applies).toHaveLength(1);
      expect(recorded.filter((event) => event.name === "nofd" && event.reason === "JobSucceeded")).toHaveLength(1);
      // The module's endpoint, written to the object once: the event says where it came from.
      expect(cluster.spec.controlPlaneEndpoint).toEqual({ host: "noop-nofd.invalid", port: 6443 });
      expect(recorded.filter((event) => event.name === "nofd" && event.reason === "ControlPlaneEndpointSet")).toEqual([
        { name: "nofd", reason: "ControlPlaneEndpointSet", note: "control-plane endpoint set from the module's output" },
      ]);
      // The pass's gauges and the Job's timings, from the real pass.
      const object = { kind: "TerraformCluster", namespace, name: "nofd" };
      const state = await plane.core.readNamespacedSecret({
        namespace,
        name: stateSecretName(stateSecretSuffix({ role: "cluster", namespace, name: "nofd" })),
      });
      expect(await seriesValue(registry, "captf_state_bytes", object)).toBe(Buffer.from(state.data!.tfstate!, "base64").length);
      expect(await seriesValue(registry, "captf_state_resources", object)).toBeGreaterThan(0);
      const durable = await plane.core.readNamespacedSecret({ namespace, name: durableInputsSecretName("cluster", "nofd") });
      expect(await seriesValue(registry, "captf_inputs_bytes", object)).toBe(
        Buffer.from(durable.data!["main.tf.json"]!, "base64").length +
          Buffer.from(durable.data!["terraform.tfvars.json"]!, "base64").length,
      );
      expect(await seriesValue(registry, "captf_infrastructure_healthy", object)).toBe(1);
      const clusterApply = { kind: "TerraformCluster", op: "apply" };
      expect(
        await seriesValue(registry, "captf_job_step_duration_seconds", { ...clusterApply, step: "apply" }, "count"),
      ).toBeGreaterThanOrEqual(1);
      expect(await seriesValue(registry, "captf_job_queue_seconds", clusterApply, "count")).toBeGreaterThanOrEqual(1);
      expect(
        await seriesValue(registry, "captf_job_duration_seconds", { ...clusterApply, result: "succeeded" }, "count"),
      ).toBeGreaterThanOrEqual(1);

      // A destroy with no digest pinned runs the image by its reference, and says so once.
      await plane.core.patchNamespacedSecret(
        {
          namespace,
          name: durableInputsSecretName("cluster", "nofd"),
          body: { metadata: { annotations: { "captf.io/image-digest": null } } },
        },
        mergePatchOptions(),
      );
      // A fresh API server answers the first lists of a kind with 429 while its watch cache starts: the deleting cluster counts machines
      // and pools.
      for (const plural of ["terraformmachines", "terraformmachinepools"])
        await waitFor(
          () =>
            plane.custom.listNamespacedCustomObject({ ...infra, namespace, plural }).then(
              () => true,
              () => undefined,
            ),
          30_000,
          `${plural} listable`,
        );
      await plane.custom.deleteNamespacedCustomObject({ ...infra, namespace, plural: "terraformclusters", name: "nofd" });
      expect((await reconcileWorkspace(deps, clusterAdapter, namespace, "nofd")).action).toMatch(/^started destroy/);
      const destroy = (await jobsOf("nofd")).find((job) => job.metadata?.labels?.[opLabel] === "destroy")!;
      expect(destroy.spec!.template.spec!.containers[0]!.image).toBe("registry.invalid/captf/no-domains:v1");
      expect(recorded.filter((event) => event.name === "nofd" && event.reason === "DigestUnknown").map((event) => event.note)).toEqual([
        expect.stringContaining("no digest pinned for registry.invalid/captf/no-domains:v1"),
      ]);
      await executor.runPending();
      await allJobsFinished(plane.batch, namespace);
    }, 120_000);
  });
  describe("an apply Job deleted while it ran", () => {
    it("is recorded as captf.io/interrupted-apply with ApplyFailed, the current inputs applied again at once, and cleared by " +
      "that apply's success", async () => {
      await createCluster("cut", "registry.invalid/captf/noop-cluster:v1");
      let cluster = await getCluster("cut");
      for (let pass = 0; pass < 4 && !cluster.status?.activeJob; pass++) {
        await reconcileWorkspace(deps, clusterAdapter, namespace, "cut");
        cluster = await getCluster("cut");
      }
      const interrupted = cluster.status.activeJob!.name as string;
      // Someone deletes the running Job (its Pod never ran here: no executor pass).
      await plane.batch.deleteNamespacedJob({ name: interrupted, namespace, propagationPolicy: "Background" });
      await waitFor(async () => ((await jobsOf("cut")).length === 0 ? true : undefined));

      const next = await reconcileWorkspace(deps, clusterAdapter, namespace, "cut");
      expect(next.action).toMatch(/^started apply/);
      const durableName = durableInputsSecretName("cluster", "cut");
      expect(
        (await plane.core.readNamespacedSecret({ name: durableName, namespace })).metadata?.annotations?.["captf.io/interrupted-apply"],
      ).toBe(interrupted);
      expect(condition(await getCluster("cut"), "ApplyJobSucceeded")).toMatchObject({
        status: "False",
        reason: "ApplyFailed",
        message:
          `Job ${interrupted}: disappeared while it ran and may have applied part of its change; an apply of the current ` +
          `inputs is due`,
      });
      expect(recorded).toContainEqual({ name: "cut", reason: "JobInterrupted", note: expect.stringContaining(interrupted) });
      const [retry] = await jobsOf("cut");
      expect(retry!.metadata?.annotations?.["captf.io/after-interrupted-apply"]).toBe(interrupted);

      await drive("cut", (c) => condition(c, "ApplyJobSucceeded")?.reason === "ApplySucceeded");
      expect(
        (await plane.core.readNamespacedSecret({ name: durableName, namespace })).metadata?.annotations?.["captf.io/interrupted-apply"],
      ).toBeUndefined();
    }, 120_000);
  });
});
