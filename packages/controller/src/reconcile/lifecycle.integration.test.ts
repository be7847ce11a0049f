import { gzipSync } from "node:zlib";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { noopModuleDirectory } from "@captf/module-noop";
import { stateLockLeaseName, stateSecretSuffix } from "@captf/render";
import { finalizers } from "@captf/contract/api";
import { describeWithTools, waitFor } from "@captf/testkit";
import { identityCredentials } from "../identity/job-credentials.js";
import { Registry } from "prom-client";
import { previousSchemeJobName, runSecretName } from "../jobs/build-job.js";
import { durableInputsSecretName } from "./durable-inputs.js";
import { CaptfMetrics } from "../metrics/captf-metrics.js";
import { seriesValue, seriesValues } from "../metrics/series.test-support.js";
import { machineAdapter } from "../kinds/adapters.js";
import { startJobExecutor, type JobExecutor } from "./job-executor.test-support.js";
import { createExternalCluster, createMachine as createFixtureMachine, createTerraformMachine } from "./machine-fixture.test-support.js";
import { allJobsFinished, planeReconcilerDeps, preparePlane, type PlaneClients, mergePatchOptions } from "./plane.test-support.js";
import { clusterLeaseName, runLeaseName } from "./run-lease.js";
import { reconcileWorkspace, type ReconcilerDeps } from "./workspace-reconciler.js";
import type { TerraformMachine } from "../api/terraformmachine.js";
import type { CapiObject, ReadBack } from "./read-back.test-support.js";

const image = "registry.invalid/captf/noop-machine:v0.1.0";
const infra = { group: "infrastructure.cluster.x-k8s.io", version: "v1alpha1" };
const capi = { group: "cluster.x-k8s.io", version: "v1beta2" };
const opLabel = "captf.infrastructure.cluster.x-k8s.io/op";

type Json = Record<string, unknown>;
type Machine = ReadBack<TerraformMachine>;

// The parts of a pass around the Job, on the real API server: user variables, the durable inputs
// Secret and digest pinning, run leases and the cluster operation gate, pause, hands-off for
// externally managed objects, and the events a pass records.
describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager", "tofu", "go"], "the reconcile pass around its Jobs", () => {
  const namespace = `lifecycle-${Date.now().toString(36)}`;
  let plane: PlaneClients;
  let deps: ReconcilerDeps;
  let executor: JobExecutor;
  // Tests move time forward by skewing the pass clock.
  let skew = 0;
  let moduleDir = "";
  let eventsApi: k8s.EventsV1Api;
  // The manager's metrics, read by their exposed names.
  const registry = new Registry();

  beforeAll(async () => {
    plane = await preparePlane(namespace);
    const reconcilerDeps = planeReconcilerDeps(plane, "lifecycle-test");
    eventsApi = reconcilerDeps.eventsApi;
    deps = { ...reconcilerDeps.deps, metrics: new CaptfMetrics(registry), now: () => Date.now() + skew };
    // The no-op machine module plus the two user variables the tests set.
    moduleDir = mkdtempSync(join(tmpdir(), "captf-lifecycle-module-"));
    cpSync(noopModuleDirectory("machine"), moduleDir, { recursive: true });
    writeFileSync(
      join(moduleDir, "user-variables.tf"),
      'variable "size" {\n  type    = string\n  default = ""\n}\n\nvariable "zone" {\n  type    = string\n  default = ""\n}\n',
    );
    // Health follows marker files, so a test can make an instance unhealthy or pending between refreshes.
    const outputs = join(moduleDir, "outputs.tf");
    writeFileSync(
      outputs,
      readFileSync(outputs, "utf8")
        .replace(
          "healthy = true",
          'healthy = !fileexists("${path.module}/../unhealthy-${var.captf_object.namespace}-${var.captf_object.name}")',
        )
        .replace(
          'state   = "running"',
          'state   = fileexists("${path.module}/../pending-${var.captf_object.namespace}-${var.captf_object.name}") ? "pending" ' +
            ': "running"',
        ),
    );
    // A marker file makes every plan of that machine fail (an output's precondition), so a test can fail a drift check.
    writeFileSync(
      join(moduleDir, "fail-marker.tf"),
      'output "fail_marker" {\n  value = null\n  precondition {\n    condition     = ' +
        '!fileexists("${path.module}/../fail-${var.captf_object.namespace}-${var.captf_object.name}")\n    error_message = "the ' +
        'test asked this plan to fail"\n  }\n}\n',
    );
    executor = startJobExecutor({ kubeconfigPath: plane.kubeconfigPath, namespace, modules: { [image]: moduleDir } });
    await createExternalCluster(plane, namespace, {}, "c");
  }, 120_000);
  afterAll(() => {
    executor?.close();
    if (moduleDir) rmSync(moduleDir, { recursive: true, force: true });
  });

  const createMachine = (name: string, spec: Json = {}, metadata: Json = {}) =>
    createFixtureMachine(plane, namespace, name, image, { clusterName: "c", machineSpec: spec, metadata });

  const getMachine = (name: string) =>
    plane.custom
      .getNamespacedCustomObject({ ...infra, namespace, plural: "terraformmachines", name })
      .catch(() => ({})) as Promise<Machine>;
  const condition = (object: Machine, type: string) => (object.status?.conditions ?? []).find((c) => c.type === type);
  // The Jobs of the current object of that name (an earlier one's may still wait for the garbage collector).
  const jobsOf = async (name: string) => {
    const uid = (await getMachine(name)).metadata?.uid;
    const jobs = (
      await plane.batch.listNamespacedJob({ namespace, labelSelector: `captf.infrastructure.cluster.x-k8s.io/owner-name=${name}` })
    ).items;
    return uid ? jobs.filter((job) => job.metadata?.ownerReferences?.[0]?.uid === uid) : jobs;
  };

  // The manager's events about one object (recorded in the background: wait for what a test expects).
  const eventsOf = async (name: string) =>
    (await eventsApi.listNamespacedEvent({ namespace })).items.filter(
      (event) => event.regarding?.name === name && event.reportingController === "captf-manager",
    );
  /** The manager's events of `reason` about one object, once there is one. */
  const recorded = (name: string, reason: string) =>
    waitFor(
      async () => {
        const found = (await eventsOf(name)).filter((event) => event.reason === reason);
        return found.length > 0 ? found : undefined;
      },
      10_000,
      `a ${reason} event on ${name}`,
    );

  async function drive(name: string, until: (machine: Machine) => boolean, maxPasses = 12): Promise<string[]> {
    const actions: string[] = [];
    for (let pass = 0; pass < maxPasses; pass++) {
      actions.push((await reconcileWorkspace(deps, machineAdapter, namespace, name)).action);
      if (until(await getMachine(name))) return actions;
      if (await executor.runPending()) await allJobsFinished(plane.batch, namespace);
    }
    throw new Error(`${name} did not converge: ${actions.join(" | ")}`);
  }

  describe("user variables, durable inputs and the pinned digest", () => {
    it("renders spec.variables over labelled variablesFrom sources into the Job's inputs", async () => {
      await plane.core.createNamespacedConfigMap({
        namespace,
        body: { metadata: { name: "vars", labels: { "captf.io/variables": "true" } }, data: { size: "small", zone: "a" } },
      });
      await createMachine("vars", { variables: { size: "large" }, variablesFrom: [{ configMapRef: { name: "vars" } }] });
      await drive("vars", (m) => m.status?.initialization?.provisioned === true);

      const durable = await plane.core.readNamespacedSecret({ name: "captf-inputs-m-vars", namespace });
      const tfvars = JSON.parse(Buffer.from(durable.data!["terraform.tfvars.json"]!, "base64").toString("utf8")) as Json;
      expect(tfvars).toMatchObject({ size: "large", zone: "a" });
      const job = (await jobsOf("vars"))[0]!;
      expect(durable.metadata?.annotations).toMatchObject({
        "captf.io/inputs-hash": job.metadata!.annotations!["captf.io/inputs-hash"],
        "captf.io/image": image,
        "captf.io/applied": "true",
        "captf.io/image-digest": `registry.invalid/captf/noop-machine@sha256:${"0".repeat(64)}`,
      });
      expect(durable.metadata?.ownerReferences?.[0]).toMatchObject({ kind: "TerraformMachine", name: "vars", controller: true });
      const machine = await getMachine("vars");
      // What the Jobs run: the image as the spec gave it, its pinned digest, the runtime's own version.
      expect(machine.status.source).toEqual({
        image: "registry.invalid/captf/noop-machine:v0.1.0",
        imageDigest: `sha256:${"0".repeat(64)}`,
        runtimeVersion: expect.stringMatching(/^\d+\.\d+\.\d+$/),
      });
    }, 120_000);

    it("destroys with the pinned digest and the inputs it applied", async () => {
      // The ConfigMap goes first: a destroy runs on the durable inputs, not on what renders now.
      await plane.core.deleteNamespacedConfigMap({ name: "vars", namespace });
      // OpenTofu's kubernetes backend locked the state through a Lease it leaves behind, free.
      const lockLease = stateLockLeaseName(stateSecretSuffix({ role: "machine", namespace, name: "vars" }));
      expect((await plane.coordination.readNamespacedLease({ name: lockLease, namespace })).spec?.holderIdentity).toBeFalsy();
      await plane.custom.deleteNamespacedCustomObject({ ...infra, namespace, plural: "terraformmachines", name: "vars" });
      const actions = await drive("vars", (m) => !m.metadata);
      expect(actions).toContain("removed finalizer");
      // The destroy took and gave back the lock too; with the state gone, its Lease is gone.
      const leases = (await plane.coordination.listNamespacedLease({ namespace })).items.map((lease) => lease.metadata!.name);
      expect(leases).not.toContain(lockLease);
      const destroy = (await jobsOf("vars")).find((job) => job.metadata?.labels?.[opLabel] === "destroy");
      // The Jobs go with the object; the executor saw the destroy run by digest.
      if (destroy)
        expect(destroy.spec?.template.spec?.containers[0]?.image).toBe(`registry.invalid/captf/noop-machine@sha256:${"0".repeat(64)}`);
      expect(actions.some((action) => action.startsWith("started destroy"))).toBe(true);
    }, 120_000);

    it("waits with VariablesSourceNotFound for a source that is missing or not labelled, and starts no Job", async () => {
      await plane.core.createNamespacedConfigMap({ namespace, body: { metadata: { name: "unlabelled" }, data: { size: "small" } } });
      await createMachine("novars", { variablesFrom: [{ configMapRef: { name: "unlabelled" } }] });
      await reconcileWorkspace(deps, machineAdapter, namespace, "novars");
      const result = await reconcileWorkspace(deps, machineAdapter, namespace, "novars");
      expect(result.action).toBe("waiting: VariablesSourceNotFound");
      const machine = await getMachine("novars");
      expect(condition(machine, "DependenciesReady")).toMatchObject({ status: "False", reason: "VariablesSourceNotFound" });
      expect(condition(machine, "DependenciesReady")!.message).toContain("ConfigMap unlabelled");
      expect(await jobsOf("novars")).toHaveLength(0);
    }, 60_000);

    it("waits with VariablesInvalid for a JSON-format source whose value is not JSON, naming the key and never the value, and " +
      "starts no Job", async () => {
      await plane.core.createNamespacedConfigMap({
        namespace,
        body: { metadata: { name: "badjson", labels: { "captf.io/variables": "true" } }, data: { tags: "{not-json-canary" } },
      });
      await createMachine("badvars", { variablesFrom: [{ configMapRef: { name: "badjson" }, format: "JSON" }] });
      await reconcileWorkspace(deps, machineAdapter, namespace, "badvars");
      const result = await reconcileWorkspace(deps, machineAdapter, namespace, "badvars");
      expect(result.action).toBe("waiting: VariablesInvalid");
      const machine = await getMachine("badvars");
      expect(condition(machine, "DependenciesReady")).toMatchObject({ status: "False", reason: "VariablesInvalid" });
      expect(condition(machine, "DependenciesReady")!.message).toContain("tags");
      expect(JSON.stringify(machine.status)).not.toContain("not-json-canary");
      expect(await jobsOf("badvars")).toHaveLength(0);
    }, 60_000);
  });

  describe("health samples and machine remediation", () => {
    async function refreshNow(name: string): Promise<void> {
      skew = 70_000;
      try {
        expect((await reconcileWorkspace(deps, machineAdapter, namespace, name)).action).toMatch(/^started refresh \(HealthCheckDue\)/);
      } finally {
        skew = 0;
      }
      await executor.runPending();
      await allJobsFinished(plane.batch, namespace);
      await reconcileWorkspace(deps, machineAdapter, namespace, name);
    }
    const getOwner = (name: string) =>
      plane.custom.getNamespacedCustomObject({ ...capi, namespace, plural: "machines", name }) as Promise<CapiObject>;

    it("counts unhealthy samples, asks Cluster API to replace the Machine at the threshold, and withdraws once healthy", async () => {
      await createMachine("sick", { remediation: { annotateMachine: true, unhealthyThreshold: 2, healthCheckIntervalSeconds: 60 } });
      await drive("sick", (m) => m.status?.initialization?.provisioned === true);
      const marker = join(moduleDir, "..", `unhealthy-${namespace}-sick`);
      writeFileSync(marker, "");
      try {
        await refreshNow("sick");
        let machine = await getMachine("sick");
        expect(machine.status.unhealthySamples).toBe(1);
        expect(condition(machine, "InfrastructureHealthy")).toMatchObject({ status: "False", reason: "InstanceUnhealthy" });
        expect((await getOwner("sick")).metadata.annotations?.["cluster.x-k8s.io/remediate-machine"]).toBeUndefined();

        await refreshNow("sick");
        machine = await getMachine("sick");
        expect(machine.status.unhealthySamples).toBe(2);
        expect(await seriesValue(registry, "captf_unhealthy_samples", { namespace, name: "sick" })).toBe(2);
        expect((await getOwner("sick")).metadata.annotations).toMatchObject({
          "cluster.x-k8s.io/remediate-machine": "",
          "captf.io/remediation-requested": "InstanceUnhealthy",
        });
        expect(await seriesValue(registry, "captf_remediation_requests_total", { action: "requested" })).toBe(1);
      } finally {
        rmSync(marker, { force: true });
      }
      await refreshNow("sick");
      const healed = await getMachine("sick");
      expect(healed.status.unhealthySamples).toBeUndefined();
      expect(condition(healed, "InfrastructureHealthy")).toMatchObject({ status: "True", reason: "Healthy" });
      const owner = await getOwner("sick");
      expect(owner.metadata.annotations?.["cluster.x-k8s.io/remediate-machine"]).toBeUndefined();
      expect(owner.metadata.annotations?.["captf.io/remediation-requested"]).toBeUndefined();
      expect(await seriesValue(registry, "captf_unhealthy_samples", { namespace, name: "sick" })).toBe(0);
      expect(await seriesValue(registry, "captf_remediation_requests_total", { action: "withdrawn" })).toBe(1);
    }, 180_000);
  });

  describe("pending health", () => {
    const runJobs = async () => {
      await executor.runPending();
      await allJobsFinished(plane.batch, namespace);
    };
    async function passAt(name: string, ahead: number) {
      skew = ahead;
      try {
        return await reconcileWorkspace(deps, machineAdapter, namespace, name);
      } finally {
        skew = 0;
      }
    }

    it("refreshes a machine whose apply reads pending right away, then backs off 30 s, 1 m, … counting status.pendingRefreshes, " +
      "until it reads running", async () => {
      const marker = join(moduleDir, "..", `pending-${namespace}-slow`);
      writeFileSync(marker, "");
      let machine: Machine;
      try {
        await createMachine("slow");
        expect((await reconcileWorkspace(deps, machineAdapter, namespace, "slow")).action).toBe("added finalizer");
        expect((await reconcileWorkspace(deps, machineAdapter, namespace, "slow")).action).toMatch(/^started apply \(NoState\)/);
        await runJobs();
        expect((await reconcileWorkspace(deps, machineAdapter, namespace, "slow")).action).toMatch(
          /^started refresh \(RefreshAfterApply\)/,
        );
        machine = await getMachine("slow");
        expect(condition(machine, "InfrastructureHealthy")).toMatchObject({ status: "False", reason: "InstancePending" });
        expect(machine.status.initialization?.provisioned).toBeUndefined();
        await runJobs();

        // The first pending refresh: the next one is due 30 s later (plus up to 3 s of jitter).
        const first = await reconcileWorkspace(deps, machineAdapter, namespace, "slow");
        expect(first.action).toBe("UpToDate");
        expect(first.requeueAfterMs).toBeLessThanOrEqual(33_000);
        expect((await getMachine("slow")).status.pendingRefreshes).toBe(1);
        expect((await passAt("slow", 34_000)).action).toMatch(/^started refresh \(HealthPending\)/);
        await runJobs();

        // The second: 1 m.
        const second = await reconcileWorkspace(deps, machineAdapter, namespace, "slow");
        expect(second.action).toBe("UpToDate");
        expect(second.requeueAfterMs).toBeGreaterThan(34_000);
        expect(second.requeueAfterMs).toBeLessThanOrEqual(66_000);
        expect((await getMachine("slow")).status.pendingRefreshes).toBe(2);
        expect((await passAt("slow", 34_000)).action).toBe("UpToDate");
        expect((await passAt("slow", 67_000)).action).toMatch(/^started refresh \(HealthPending\)/);
      } finally {
        rmSync(marker, { force: true });
      }
      await runJobs();
      await reconcileWorkspace(deps, machineAdapter, namespace, "slow");
      machine = await getMachine("slow");
      expect(machine.status.initialization).toEqual({ provisioned: true });
      expect(machine.status.pendingRefreshes).toBeUndefined();
      expect(condition(machine, "InfrastructureHealthy")).toMatchObject({ status: "True", reason: "Healthy" });
      expect((await jobsOf("slow")).map((job) => job.metadata?.labels?.[opLabel]).sort()).toEqual([
        "apply",
        "refresh",
        "refresh",
        "refresh",
      ]);
    }, 180_000);
  });

  describe("state backups and restore", () => {
    it("backs up each state serial it reads, holds a lost state instead of applying again, and restores a backup on request", async () => {
      const taken = { kind: "TerraformMachine", result: "taken" };
      const takenBefore = await seriesValue(registry, "captf_state_backups_total", taken);
      await createMachine("backed");
      await drive("backed", (m) => m.status?.initialization?.provisioned === true);
      const suffix = stateSecretSuffix({ role: "machine", namespace, name: "backed" });
      const machine = await getMachine("backed");
      const backup = machine.status.stateBackups![0]!;
      expect(backup).toMatchObject({ serial: expect.any(Number), takenAt: expect.any(String), bytes: expect.any(Number) });
      expect(await seriesValue(registry, "captf_state_backups_total", taken)).toBe(takenBefore + 1);
      const copy = await plane.core.readNamespacedSecret({ name: `captf-state-backup-${suffix}-${backup.serial}`, namespace });
      expect(copy.metadata?.labels).toMatchObject({ "captf.io/state-backup": "true", "captf.io/state-backup-suffix": suffix });
      expect(copy.metadata?.labels?.tfstateSecretSuffix).toBeUndefined();
      const state = await plane.core.readNamespacedSecret({ name: `tfstate-default-${suffix}`, namespace });
      expect(copy.data?.tfstate).toBe(state.data?.tfstate);
      // What the set says about itself: one chunk of this serial, taken after the apply Job from its state.
      const [apply] = await jobsOf("backed");
      expect(copy.metadata?.annotations).toMatchObject({
        "captf.io/state-backup-serial": String(backup.serial),
        "captf.io/state-backup-chunk": "0",
        "captf.io/state-backup-chunks": "1",
        "captf.io/state-backup-taken-at": backup.takenAt,
        "captf.io/state-backup-lineage": expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/),
        "captf.io/state-backup-digest": expect.stringMatching(/^[0-9a-f]{16,64}$/),
        "captf.io/state-backup-resources": expect.stringMatching(/^[1-9][0-9]*$/),
        "captf.io/state-backup-source-job": apply!.metadata!.name,
      });

      // The state is lost: no new apply over infrastructure that exists.
      await plane.core.deleteNamespacedSecret({ name: `tfstate-default-${suffix}`, namespace });
      expect((await reconcileWorkspace(deps, machineAdapter, namespace, "backed")).action).toBe("StateUnreadable");
      expect(condition(await getMachine("backed"), "StateReadable")).toMatchObject({ status: "False", reason: "StateLost" });
      expect(await jobsOf("backed")).toHaveLength(1);

      await plane.custom.patchNamespacedCustomObject(
        {
          ...infra,
          namespace,
          plural: "terraformmachines",
          name: "backed",
          body: { metadata: { annotations: { "captf.io/restore-state": String(backup.serial) } } },
        },
        mergePatchOptions(),
      );
      expect((await reconcileWorkspace(deps, machineAdapter, namespace, "backed")).action).toMatch(/^started restore \(RestoreRequested\)/);
      const restoreJob = (await jobsOf("backed")).find((job) => job.metadata?.labels?.[opLabel] === "restore")!;
      expect(restoreJob.metadata?.annotations).toMatchObject({ "captf.io/restore-serial": String(backup.serial) });
      // The autoscaler must not evict a Pod that writes state mid-run.
      expect(restoreJob.spec?.template.metadata?.annotations).toEqual({ "cluster-autoscaler.kubernetes.io/safe-to-evict": "false" });
      await executor.runPending();
      await allJobsFinished(plane.batch, namespace);
      await reconcileWorkspace(deps, machineAdapter, namespace, "backed");
      const restored = await getMachine("backed");
      expect(condition(restored, "RestoreJobSucceeded")).toMatchObject({ status: "True", reason: "StateRestored" });
      expect(await seriesValue(registry, "captf_state_restores_total", { kind: "TerraformMachine", result: "succeeded" })).toBe(1);
      expect(restored.status.lastRestoredSerial).toBe(backup.serial);
      expect(restored.metadata.annotations?.["captf.io/restore-state"]).toBeUndefined();
      expect(condition(restored, "StateReadable")).toMatchObject({ status: "True" });
      const back = await plane.core.readNamespacedSecret({ name: `tfstate-default-${suffix}`, namespace });
      expect(back.metadata?.annotations?.["captf.io/inputs-hash"]).toBe(copy.metadata?.annotations?.["captf.io/inputs-hash"]);
      expect((await reconcileWorkspace(deps, machineAdapter, namespace, "backed")).action).toBe("UpToDate");
      expect((await jobsOf("backed")).map((job) => job.metadata?.labels?.[opLabel]).sort()).toEqual(["apply", "restore"]);
    }, 120_000);

    it("reports a restore whose backup the runtime refuses as RestoreFailed with a StateRestoreFailed event, and does not retry " +
      "it", async () => {
      await createMachine("badbackup");
      await drive("badbackup", (m) => m.status?.initialization?.provisioned === true);
      const suffix = stateSecretSuffix({ role: "machine", namespace, name: "badbackup" });
      const backup = (await getMachine("badbackup")).status.stateBackups![0]!;
      // The backup's chunk holds a gzip of something that is no state at all.
      await plane.core.patchNamespacedSecret(
        {
          name: `captf-state-backup-${suffix}-${backup.serial}`,
          namespace,
          body: { data: { tfstate: gzipSync("not a state").toString("base64") } },
        },
        mergePatchOptions(),
      );
      await plane.custom.patchNamespacedCustomObject(
        {
          ...infra,
          namespace,
          plural: "terraformmachines",
          name: "badbackup",
          body: { metadata: { annotations: { "captf.io/restore-state": String(backup.serial) } } },
        },
        mergePatchOptions(),
      );
      expect((await reconcileWorkspace(deps, machineAdapter, namespace, "badbackup")).action).toMatch(
        /^started restore \(RestoreRequested\)/,
      );
      await executor.runPending();
      await allJobsFinished(plane.batch, namespace);
      await reconcileWorkspace(deps, machineAdapter, namespace, "badbackup");
      const machine = await getMachine("badbackup");
      const restoreJob = (await jobsOf("badbackup")).find((job) => job.metadata?.labels?.[opLabel] === "restore")!.metadata!.name!;
      expect(condition(machine, "RestoreJobSucceeded")).toMatchObject({ status: "False", reason: "RestoreFailed" });
      expect(condition(machine, "RestoreJobSucceeded")!.message).toContain(
        `Job ${restoreJob} could not restore backup serial ${backup.serial}`,
      );
      expect(await recorded("badbackup", "StateRestoreFailed")).toEqual([
        expect.objectContaining({ type: "Warning", note: expect.stringContaining(restoreJob) }),
      ]);
      expect(await seriesValue(registry, "captf_state_restores_total", { kind: "TerraformMachine", result: "failed" })).toBe(1);
      // A failed restore is not retried for the same serial.
      await reconcileWorkspace(deps, machineAdapter, namespace, "badbackup");
      expect((await jobsOf("badbackup")).map((job) => job.metadata?.labels?.[opLabel]).sort()).toEqual(["apply", "restore"]);
    }, 120_000);

    it("says when a restore names no backup", async () => {
      await plane.custom.patchNamespacedCustomObject(
        {
          ...infra,
          namespace,
          plural: "terraformmachines",
          name: "backed",
          body: { metadata: { annotations: { "captf.io/restore-state": "999" } } },
        },
        mergePatchOptions(),
      );
      await reconcileWorkspace(deps, machineAdapter, namespace, "backed");
      expect(condition(await getMachine("backed"), "RestoreJobSucceeded")).toMatchObject({
        status: "False",
        reason: "RestoreBackupNotFound",
      });
      expect((await jobsOf("backed")).map((job) => job.metadata?.labels?.[opLabel]).sort()).toEqual(["apply", "restore"]);
    }, 60_000);
  });

  describe("spec.jobs.serviceAccountName", () => {
    it("runs no Job as a ServiceAccount that is not opted in (ServiceAccountNotOptedIn), and runs it once labelled " +
      "captf.io/runner=true", async () => {
      await plane.core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: "own-runner" } } });
      await createMachine("own-sa", { jobs: { serviceAccountName: "own-runner" } });
      expect((await reconcileWorkspace(deps, machineAdapter, namespace, "own-sa")).action).toBe("added finalizer");
      expect((await reconcileWorkspace(deps, machineAdapter, namespace, "own-sa")).action).toBe("waiting: ServiceAccountNotOptedIn");
      expect(condition(await getMachine("own-sa"), "RunnerRBACReady")).toMatchObject({
        status: "False",
        reason: "ServiceAccountNotOptedIn",
        message: expect.stringContaining("captf.io/runner=true"),
      });
      expect(await jobsOf("own-sa")).toHaveLength(0);

      await plane.core.patchNamespacedServiceAccount(
        { namespace, name: "own-runner", body: { metadata: { labels: { "captf.io/runner": "true" } } } },
        mergePatchOptions(),
      );
      expect((await reconcileWorkspace(deps, machineAdapter, namespace, "own-sa")).action).toMatch(/^started apply \(NoState\)/);
      expect(condition(await getMachine("own-sa"), "RunnerRBACReady")).toMatchObject({ status: "True", reason: "RBACReady" });
      const [job] = await jobsOf("own-sa");
      expect(job!.spec!.template.spec!.serviceAccountName).toBe("own-runner");
      await drive("own-sa", (m) => m.status?.initialization?.provisioned === true);
    }, 120_000);
  });

  describe("deletion", () => {
    it("does nothing for a deleting object without captf's finalizer: no Job, no credentials, no status (its cleanup is " +
      "done)", async () => {
      // Another controller's finalizer keeps the deleted object readable, as the moment after captf removed its own does.
      await createMachine("finalized", {}, { finalizers: ["example.com/hold"] });
      await plane.custom.deleteNamespacedCustomObject({ ...infra, namespace, plural: "terraformmachines", name: "finalized" });
      expect(await reconcileWorkspace(deps, machineAdapter, namespace, "finalized")).toEqual({ action: "gone" });
      const machine = await getMachine("finalized");
      expect(machine.metadata.finalizers).toEqual(["example.com/hold"]);
      expect(machine.status).toBeUndefined();
      expect(await jobsOf("finalized")).toHaveLength(0);
      await plane.custom.patchNamespacedCustomObject(
        { ...infra, namespace, plural: "terraformmachines", name: "finalized", body: { metadata: { finalizers: null } } },
        mergePatchOptions(),
      );
    }, 60_000);

    it("makes no credentials for a deleting object that starts no Job: a late pass never re-creates the runner's RBAC the sweep " +
      "removed", async () => {
      const late = `${namespace}-late`;
      await plane.core.createNamespace({ body: { metadata: { name: late } } });
      const kc = new k8s.KubeConfig();
      kc.loadFromFile(plane.kubeconfigPath);
      const withCredentials: ReconcilerDeps = { ...deps, credentials: identityCredentials({ client: plane.client }, deps.events) };
      await plane.core.createNamespacedSecret({ namespace: late, body: { metadata: { name: "late-creds" }, stringData: { TOKEN: "x" } } });
      // Never applied, so its deletion has nothing to destroy: the pass only removes the finalizer.
      await plane.custom.createNamespacedCustomObject({
        ...infra,
        namespace: late,
        plural: "terraformmachines",
        body: {
          apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
          kind: "TerraformMachine",
          metadata: { name: "late", labels: { "cluster.x-k8s.io/cluster-name": "c" }, finalizers: [finalizers.TerraformMachine] },
          spec: { source: { image }, deletionPolicy: "Destroy", identityRef: { kind: "Secret", name: "late-creds" } },
        },
      });
      await plane.custom.deleteNamespacedCustomObject({ ...infra, namespace: late, plural: "terraformmachines", name: "late" });
      expect(await reconcileWorkspace(withCredentials, machineAdapter, late, "late")).toEqual({ action: "removed finalizer" });
      await expect(plane.core.readNamespacedServiceAccount({ name: "captf-runner", namespace: late })).rejects.toMatchObject({ code: 404 });
      await expect(
        kc.makeApiClient(k8s.RbacAuthorizationV1Api).readNamespacedRoleBinding({ name: "captf-runner", namespace: late }),
      ).rejects.toMatchObject({ code: 404 });
      await plane.core.deleteNamespace({ name: late });
    }, 60_000);

    it("wins over a restore request: the destroy runs, and DeletionStarted is recorded once", async () => {
      await createMachine("doomed");
      await drive("doomed", (m) => m.status?.initialization?.provisioned === true);
      const backup = (await getMachine("doomed")).status.stateBackups![0]!;
      await plane.custom.patchNamespacedCustomObject(
        {
          ...infra,
          namespace,
          plural: "terraformmachines",
          name: "doomed",
          body: { metadata: { annotations: { "captf.io/restore-state": String(backup.serial) } } },
        },
        mergePatchOptions(),
      );
      await plane.custom.deleteNamespacedCustomObject({ ...infra, namespace, plural: "terraformmachines", name: "doomed" });
      expect((await reconcileWorkspace(deps, machineAdapter, namespace, "doomed")).action).toMatch(/^started destroy \(Deleting\)/);
      expect(condition(await getMachine("doomed"), "Deleting")).toMatchObject({ status: "True", reason: "Deleting" });
      expect((await reconcileWorkspace(deps, machineAdapter, namespace, "doomed")).action).toBe("JobActive");
      const reasons = async () => (await eventsOf("doomed")).map((event) => event.reason);
      await waitFor(async () => ((await reasons()).includes("DeletionStarted") ? true : undefined), 10_000, "the DeletionStarted event");
      expect((await reasons()).filter((reason) => reason === "DeletionStarted")).toHaveLength(1);
      expect((await jobsOf("doomed")).map((job) => job.metadata?.labels?.[opLabel]).sort()).toEqual(["apply", "destroy"]);
      await drive("doomed", (m) => !m.metadata);
    }, 120_000);
  });

  describe("deletionPolicy Retain", () => {
    it("leaves the infrastructure: no destroy, the state and inputs kept unowned and labelled with the deleted UID", async () => {
      await createMachine("kept", { deletionPolicy: "Retain" });
      await drive("kept", (m) => m.status?.initialization?.provisioned === true);
      const uid = (await getMachine("kept")).metadata.uid;
      await plane.custom.deleteNamespacedCustomObject({ ...infra, namespace, plural: "terraformmachines", name: "kept" });
      const result = await reconcileWorkspace(deps, machineAdapter, namespace, "kept");
      expect(result.action).toBe("retained infrastructure, removed finalizer");
      expect((await jobsOf("kept")).filter((job) => job.metadata?.labels?.[opLabel] === "destroy")).toHaveLength(0);
      const state = await plane.core.listNamespacedSecret({
        namespace,
        labelSelector: `tfstateSecretSuffix=${stateSecretSuffix({ role: "machine", namespace, name: "kept" })}`,
      });
      expect(state.items.length).toBeGreaterThan(0);
      for (const secret of state.items) expect(secret.metadata?.labels?.["captf.io/retained-from-uid"]).toBe(uid);
      const durable = await plane.core.readNamespacedSecret({ name: "captf-inputs-m-kept", namespace });
      expect(durable.metadata?.labels?.["captf.io/retained-from-uid"]).toBe(uid);
      expect(durable.metadata?.ownerReferences ?? []).toEqual([]);
      expect(await recorded("kept", "InfrastructureRetained")).toEqual([
        expect.objectContaining({ type: "Normal", note: expect.stringContaining(`captf.io/retained-from-uid=${uid}`) }),
      ]);
    }, 120_000);

    it("releases a machine handed to another controller once it is deleted: only captf's finalizer goes, no destroy, the state " +
      "kept", async () => {
      await createMachine("handed");
      await drive("handed", (m) => m.status?.initialization?.provisioned === true);
      const uid = (await getMachine("handed")).metadata.uid;
      await plane.custom.patchNamespacedCustomObject(
        {
          ...infra,
          namespace,
          plural: "terraformmachines",
          name: "handed",
          body: { metadata: { annotations: { "cluster.x-k8s.io/managed-by": "someone-else" } } },
        },
        mergePatchOptions(),
      );
      expect((await reconcileWorkspace(deps, machineAdapter, namespace, "handed")).action).toBe("externally managed");
      await plane.custom.deleteNamespacedCustomObject({ ...infra, namespace, plural: "terraformmachines", name: "handed" });
      expect((await reconcileWorkspace(deps, machineAdapter, namespace, "handed")).action).toBe(
        "externally managed: released, removed finalizer",
      );
      // Gone: getMachine reads a missing object as {}.
      await waitFor(async () => ((await getMachine("handed")).metadata ? undefined : true), 10_000, "the object gone");
      expect((await jobsOf("handed")).filter((job) => job.metadata?.labels?.[opLabel] === "destroy")).toHaveLength(0);
      const state = await plane.core.listNamespacedSecret({
        namespace,
        labelSelector: `tfstateSecretSuffix=${stateSecretSuffix({ role: "machine", namespace, name: "handed" })}`,
      });
      expect(state.items.length).toBeGreaterThan(0);
      for (const secret of state.items) expect(secret.metadata?.labels?.["captf.io/retained-from-uid"]).toBe(uid);
      expect(await recorded("handed", "ExternallyManagedReleased")).toEqual([
        expect.objectContaining({ type: "Normal", note: expect.stringContaining("managed by someone-else") }),
      ]);
    }, 120_000);

    it("holds a new object of that name with RetainedStateFound, and adopts the state when told to, without applying", async () => {
      const machine = (await plane.custom.getNamespacedCustomObject({
        ...capi,
        namespace,
        plural: "machines",
        name: "kept",
      })) as CapiObject;
      await createTerraformMachine(plane, namespace, "kept", image, {
        owner: { name: "kept", uid: machine.metadata.uid! },
        clusterName: "c",
      });
      await reconcileWorkspace(deps, machineAdapter, namespace, "kept");
      expect((await reconcileWorkspace(deps, machineAdapter, namespace, "kept")).action).toBe("RetainedStateFound");
      expect(condition(await getMachine("kept"), "StateReadable")).toMatchObject({ status: "False", reason: "RetainedStateFound" });
      expect(await jobsOf("kept")).toHaveLength(0);

      await plane.custom.patchNamespacedCustomObject(
        { ...infra, namespace, plural: "terraformmachines", name: "kept", body: { spec: { adoptRetainedState: true } } },
        mergePatchOptions(),
      );
      expect((await reconcileWorkspace(deps, machineAdapter, namespace, "kept")).action).toBe("adopted retained state");
      expect(await recorded("kept", "RetainedStateAdopted")).toEqual([
        expect.objectContaining({ type: "Normal", note: expect.stringContaining("adopted the state and inputs retained") }),
      ]);
      await reconcileWorkspace(deps, machineAdapter, namespace, "kept");
      const adopted = await getMachine("kept");
      expect(adopted.status.initialization).toEqual({ provisioned: true });
      expect(adopted.spec.providerID).toBe(`noop:///${namespace}/kept`);
      expect(await jobsOf("kept")).toHaveLength(0);
      const durable = await plane.core.readNamespacedSecret({ name: "captf-inputs-m-kept", namespace });
      expect(durable.metadata?.ownerReferences?.[0]).toMatchObject({ kind: "TerraformMachine", uid: adopted.metadata.uid });
    }, 120_000);
  });

  describe("drift", () => {
    it("checks for drift one interval after the apply and records what it found", async () => {
      await createMachine("drifty", { drift: { intervalSeconds: 60 } });
      await drive("drifty", (m) => m.status?.initialization?.provisioned === true);
      const settled = await reconcileWorkspace(deps, machineAdapter, namespace, "drifty");
      expect(settled.action).toBe("UpToDate");
      // Due one interval after the apply, plus at most a tenth of it as jitter.
      expect(settled.requeueAfterMs).toBeLessThanOrEqual(66_000);
      skew += 70_000;
      try {
        const started = await reconcileWorkspace(deps, machineAdapter, namespace, "drifty");
        expect(started.action).toMatch(/^started drift \(DriftDue\)/);
      } finally {
        skew -= 70_000;
      }
      {
        await executor.runPending();
        await allJobsFinished(plane.batch, namespace);
        const checked = await reconcileWorkspace(deps, machineAdapter, namespace, "drifty");
        expect(checked.action).toBe("UpToDate");
        const machine = await getMachine("drifty");
        expect(condition(machine, "DriftJobSucceeded")).toMatchObject({ status: "True", reason: "DriftChecked" });
        expect(condition(machine, "DriftDetected")).toMatchObject({ status: "False", reason: "NoDrift" });
        const drift = (await jobsOf("drifty")).find((job) => job.metadata?.labels?.[opLabel] === "drift")!;
        // A drift check runs on what was applied: the pinned image.
        expect(drift.spec?.template.spec?.containers[0]?.image).toBe(`registry.invalid/captf/noop-machine@sha256:${"0".repeat(64)}`);
        // The next check is one interval after this one.
        expect(checked.requeueAfterMs).toBeGreaterThan(50_000);
        expect(checked.requeueAfterMs).toBeLessThanOrEqual(66_000);
      }
    }, 120_000);
  });

  describe("a machine whose durable inputs Secret is gone", () => {
    it("does not run its drift check on anything else: DriftJobSucceeded=Unknown/DurableInputsMissing, no Job", async () => {
      await createMachine("undurable", { drift: { intervalSeconds: 60 } });
      await drive("undurable", (m) => m.status?.initialization?.provisioned === true);
      expect((await reconcileWorkspace(deps, machineAdapter, namespace, "undurable")).action).toBe("UpToDate");
      const jobsBefore = (await jobsOf("undurable")).length;
      await plane.core.deleteNamespacedSecret({ name: durableInputsSecretName("machine", "undurable"), namespace });
      skew += 70_000;
      try {
        const waited = await reconcileWorkspace(deps, machineAdapter, namespace, "undurable");
        expect(waited).toEqual({ action: "waiting: DurableInputsMissing", requeueAfterMs: 600_000 });
      } finally {
        skew -= 70_000;
      }
      const machine = await getMachine("undurable");
      expect(condition(machine, "DriftJobSucceeded")).toMatchObject({ status: "Unknown", reason: "DurableInputsMissing" });
      expect(condition(machine, "DriftJobSucceeded")!.message).toContain("durable inputs Secret");
      expect(await jobsOf("undurable")).toHaveLength(jobsBefore);
    }, 120_000);
  });

  describe("a failing drift check", () => {
    it("reports DriftJobSucceeded=False/DriftJobFailed and a JobFailed event naming the drift Job, and leaves DriftDetected " +
      "alone", async () => {
      await createMachine("drift-fails", { drift: { intervalSeconds: 60 } });
      await drive("drift-fails", (m) => m.status?.initialization?.provisioned === true);
      const marker = join(moduleDir, "..", `fail-${namespace}-drift-fails`);
      writeFileSync(marker, "");
      skew += 70_000;
      try {
        expect((await reconcileWorkspace(deps, machineAdapter, namespace, "drift-fails")).action).toMatch(/^started drift \(DriftDue\)/);
        await executor.runPending();
        await allJobsFinished(plane.batch, namespace);
        await reconcileWorkspace(deps, machineAdapter, namespace, "drift-fails");
        const machine = await getMachine("drift-fails");
        const driftJob = (await jobsOf("drift-fails")).find((job) => job.metadata?.labels?.[opLabel] === "drift")!.metadata!.name!;
        expect(condition(machine, "DriftJobSucceeded")).toMatchObject({ status: "False", reason: "DriftJobFailed" });
        expect(condition(machine, "DriftJobSucceeded")!.message).toContain(driftJob);
        expect(condition(machine, "DriftDetected")?.reason).not.toBe("DriftReported");
        const failed = async () =>
          (await eventsOf("drift-fails")).filter((event) => event.reason === "JobFailed" && event.note?.includes(driftJob));
        await waitFor(async () => ((await failed()).length > 0 ? true : undefined), 10_000, "the JobFailed event of the drift Job");
        expect(await failed()).toHaveLength(1);
      } finally {
        rmSync(marker, { force: true });
        skew -= 70_000;
      }
    }, 120_000);
  });

  describe("a Job that reaches its deadline", () => {
    it("is ApplyJobSucceeded=False/JobDeadlineExceeded with a JobDeadlineExceeded event, not JobFailed", async () => {
      await createMachine("too-slow", { jobs: { activeDeadlineSeconds: 2, lockTimeoutSeconds: 0 } });
      await reconcileWorkspace(deps, machineAdapter, namespace, "too-slow");
      expect((await reconcileWorkspace(deps, machineAdapter, namespace, "too-slow")).action).toMatch(/^started apply/);
      // Nothing runs its Pod: kube-controller-manager's Job controller stops the Job at its deadline.
      const [job] = await jobsOf("too-slow");
      await waitFor(
        async () =>
          (await plane.batch.readNamespacedJob({ name: job!.metadata!.name!, namespace })).status?.conditions?.some(
            (c) => c.type === "Failed" && c.reason === "DeadlineExceeded",
          )
            ? true
            : undefined,
        30_000,
        "the Job's DeadlineExceeded",
      );
      await reconcileWorkspace(deps, machineAdapter, namespace, "too-slow");
      expect(condition(await getMachine("too-slow"), "ApplyJobSucceeded")).toMatchObject({
        status: "False",
        reason: "JobDeadlineExceeded",
      });
      const about = async (reason: string) =>
        (await eventsOf("too-slow")).filter((event) => event.reason === reason && event.note?.includes(job!.metadata!.name!));
      await waitFor(
        async () => ((await about("JobDeadlineExceeded")).length > 0 ? true : undefined),
        10_000,
        "the JobDeadlineExceeded event",
      );
      expect(await about("JobFailed")).toHaveLength(0);
    }, 90_000);
  });

  describe("a Job left without its per-run Secret", () => {
    it("is deleted (StuckJobDeleted) when the inputs changed since it was created, and an apply of the new inputs starts", async () => {
      await createMachine("stuck");
      await reconcileWorkspace(deps, machineAdapter, namespace, "stuck");
      expect((await reconcileWorkspace(deps, machineAdapter, namespace, "stuck")).action).toMatch(/^started apply/);
      const [job] = await jobsOf("stuck");
      // As after a pass killed between the Job and its Secret, while the bootstrap data rotated.
      await plane.core.deleteNamespacedSecret({ name: runSecretName(job!.metadata!.name!), namespace });
      await plane.core.patchNamespacedSecret(
        { name: "stuck-bootstrap", namespace, body: { stringData: { value: "#cloud-config\nhostname: rotated\n" } } },
        mergePatchOptions(),
      );
      expect((await reconcileWorkspace(deps, machineAdapter, namespace, "stuck")).action).toBe(
        `deleted stuck Job ${job!.metadata!.name!}: its per-run Secret is missing and the inputs changed`,
      );
      const deleted = async () =>
        (await eventsOf("stuck")).filter((event) => event.reason === "StuckJobDeleted" && event.note?.includes(job!.metadata!.name!));
      await waitFor(async () => ((await deleted()).length > 0 ? true : undefined), 10_000, "the StuckJobDeleted event");
      await drive("stuck", (m) => m.status?.initialization?.provisioned === true);
      const applies = (await jobsOf("stuck")).filter(
        (candidate) => candidate.metadata?.labels?.[opLabel] === "apply" && candidate.status?.succeeded === 1,
      );
      expect(applies.map((candidate) => candidate.metadata?.name)).not.toContain(job!.metadata!.name!);
      expect(applies).toHaveLength(1);
    }, 120_000);
  });

  describe("an infrastructure object without its owner", () => {
    it("waits with DependenciesReady=Unknown/WaitingForOwner and starts no Job", async () => {
      await createTerraformMachine(plane, namespace, "orphan", image, { clusterName: "c" });
      await reconcileWorkspace(deps, machineAdapter, namespace, "orphan");
      const result = await reconcileWorkspace(deps, machineAdapter, namespace, "orphan");
      expect(result.action).toBe("waiting: WaitingForOwner");
      expect(condition(await getMachine("orphan"), "DependenciesReady")).toMatchObject({ status: "Unknown", reason: "WaitingForOwner" });
      expect(await jobsOf("orphan")).toHaveLength(0);
    }, 60_000);
  });

  describe("state locks", () => {
    const lockOf = (name: string) => stateLockLeaseName(stateSecretSuffix({ role: "machine", namespace, name }));
    // Locks the state as OpenTofu's kubernetes backend does: the lock ID as holder, the details in lock-info.
    const lock = (name: string, id: string, who: string) =>
      plane.coordination.patchNamespacedLease(
        {
          name: lockOf(name),
          namespace,
          body: {
            metadata: {
              annotations: {
                "app.terraform.io/lock-info": JSON.stringify({
                  ID: id,
                  Operation: "OperationTypeApply",
                  Info: "",
                  Who: who,
                  Version: "1.12.6",
                  Created: "2026-12-03T08:00:00Z",
                  Path: "",
                }),
              },
            },
            spec: { holderIdentity: id },
          },
        },
        mergePatchOptions(),
      );
    const eventsFor = async (name: string, reason: string) => (await eventsOf(name)).filter((event) => event.reason === reason);

    it("reports a lock held by anything but the object's own runner as StateLocked with its holder, and never releases it", async () => {
      await createMachine("foreignlock");
      await drive("foreignlock", (m) => m.status?.initialization?.provisioned === true);
      await lock("foreignlock", "lock-foreign", "alice@laptop");
      await reconcileWorkspace(deps, machineAdapter, namespace, "foreignlock");
      const locked = condition(await getMachine("foreignlock"), "StateReadable");
      expect(locked).toMatchObject({ status: "False", reason: "StateLocked" });
      expect(locked!.message).toContain("alice@laptop (OperationTypeApply, since 2026-12-03T08:00:00Z)");
      await waitFor(async () => ((await eventsFor("foreignlock", "StateLocked")).length > 0 ? true : undefined));
      expect((await eventsFor("foreignlock", "StateLocked"))[0]!.note).toContain("alice@laptop");
      expect((await plane.coordination.readNamespacedLease({ name: lockOf("foreignlock"), namespace })).spec?.holderIdentity).toBe(
        "lock-foreign",
      );

      // The holder releases it: the state reads again.
      await plane.coordination.patchNamespacedLease(
        {
          name: lockOf("foreignlock"),
          namespace,
          body: { metadata: { annotations: { "app.terraform.io/lock-info": null } }, spec: { holderIdentity: null } },
        },
        mergePatchOptions(),
      );
      await reconcileWorkspace(deps, machineAdapter, namespace, "foreignlock");
      expect(condition(await getMachine("foreignlock"), "StateReadable")).toMatchObject({ status: "True", reason: "StateRead" });
    }, 120_000);

    it("hands a stale lock of its own dead runner to the next Job's force-unlock, which clears it for the destroy", async () => {
      const metrics = new CaptfMetrics(new Registry());
      const withMetrics = { ...deps, metrics };
      await createMachine("stalelock");
      await drive("stalelock", (m) => m.status?.initialization?.provisioned === true);
      // The apply's runner pod, killed holding the lock: its pod is gone.
      const deadPod = `${(await jobsOf("stalelock"))[0]!.metadata!.name}-zq7x2`;
      await lock("stalelock", "lock-stale", `runner@${deadPod}`);
      await reconcileWorkspace(withMetrics, machineAdapter, namespace, "stalelock");
      expect(condition(await getMachine("stalelock"), "StateReadable")).toMatchObject({ status: "True", reason: "StateRead" });

      await plane.custom.deleteNamespacedCustomObject({ ...infra, namespace, plural: "terraformmachines", name: "stalelock" });
      expect((await reconcileWorkspace(withMetrics, machineAdapter, namespace, "stalelock")).action).toMatch(/^started destroy/);
      const destroy = (await jobsOf("stalelock")).find((job) => job.metadata?.labels?.[opLabel] === "destroy")!;
      expect(destroy.spec?.template.spec?.containers[0]?.args).toContain("--force-unlock=lock-stale");
      expect(await metrics.lockForceUnlocks.get()).toMatchObject({
        name: "captf_lock_force_unlocks_total",
        values: [expect.objectContaining({ labels: { kind: "TerraformMachine" }, value: 1 })],
      });
      await waitFor(async () => ((await eventsFor("stalelock", "ForceUnlocked")).length > 0 ? true : undefined));
      expect((await eventsFor("stalelock", "ForceUnlocked"))[0]!.note).toContain(destroy.metadata!.name!);

      // The real runner force-unlocks through the kubernetes backend, destroys, and the object goes.
      await executor.runPending();
      await allJobsFinished(plane.batch, namespace);
      const actions = await drive("stalelock", (m) => !m.metadata);
      expect(actions).toContain("removed finalizer");
      expect((await plane.coordination.listNamespacedLease({ namespace })).items.map((lease) => lease.metadata!.name)).not.toContain(
        lockOf("stalelock"),
      );
    }, 180_000);
  });

  describe("run leases and the cluster operation gate", () => {
    it("waits while another Job holds the run lease, and takes it once the holder never appeared for a minute", async () => {
      const runLeaseWait = { kind: "TerraformMachine", reason: "run_lease" };
      const waitsBefore = await seriesValue(registry, "captf_lease_waits_total", runLeaseWait);
      await createMachine("leased");
      expect((await reconcileWorkspace(deps, machineAdapter, namespace, "leased")).action).toBe("added finalizer");
      const leaseName = runLeaseName(stateSecretSuffix({ role: "machine", namespace, name: "leased" }));
      await plane.coordination.createNamespacedLease({
        namespace,
        body: {
          metadata: {
            name: leaseName,
            labels: { "captf.io/lease": "run" },
            annotations: { "captf.io/lease-op": "apply", "captf.io/lease-acquired-at": new Date(Date.now() + skew).toISOString() },
          },
          spec: { holderIdentity: "captf-m-leased-apply-a9-000000", leaseDurationSeconds: 4500 },
        },
      });
      const waiting = await reconcileWorkspace(deps, machineAdapter, namespace, "leased");
      expect(waiting).toMatchObject({ action: "waiting: WaitingForRunLease", requeueAfterMs: 30_000 });
      expect(condition(await getMachine("leased"), "ApplyJobSucceeded")).toMatchObject({ status: "Unknown", reason: "WaitingForRunLease" });
      expect(await jobsOf("leased")).toHaveLength(0);
      // The wait is an event once, however many passes it lasts; each pass that waits is counted.
      expect((await reconcileWorkspace(deps, machineAdapter, namespace, "leased")).action).toBe("waiting: WaitingForRunLease");
      expect(await seriesValue(registry, "captf_lease_waits_total", runLeaseWait)).toBe(waitsBefore + 2);
      const waits = async () => (await eventsOf("leased")).filter((event) => event.reason === "WaitingForRunLease");
      await waitFor(async () => ((await waits()).length > 0 ? true : undefined), 10_000, "the WaitingForRunLease event");
      expect((await waits()).map((event) => [event.type, event.note])).toEqual([
        ["Normal", expect.stringContaining("captf-m-leased-apply-a9-000000")],
      ]);

      skew += 61_000;
      try {
        const started = await reconcileWorkspace(deps, machineAdapter, namespace, "leased");
        expect(started.action).toMatch(/^started apply/);
        const lease = await plane.coordination.readNamespacedLease({ name: leaseName, namespace });
        const [job] = await jobsOf("leased");
        expect(lease.spec?.holderIdentity).toBe(job!.metadata!.name);
        expect(lease.metadata?.labels).toMatchObject({
          "captf.io/lease": "run",
          "captf.infrastructure.cluster.x-k8s.io/owner-kind": "TerraformMachine",
          "cluster.x-k8s.io/cluster-name": "c",
        });
        expect(lease.metadata?.annotations).toEqual({
          "captf.io/lease-op": "apply",
          "captf.io/lease-acquired-at": expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
        });
        // Bookkeeping the finished Job gives the lease back.
        await executor.runPending();
        await allJobsFinished(plane.batch, namespace);
        await reconcileWorkspace(deps, machineAdapter, namespace, "leased");
        await expect(plane.coordination.readNamespacedLease({ name: leaseName, namespace })).rejects.toMatchObject({ code: 404 });
      } finally {
        skew -= 61_000;
      }
    }, 120_000);

    it("takes at once a run lease an older captf took under its newline-joined name for the same Job, never created", async () => {
      await createMachine("upgraded");
      expect((await reconcileWorkspace(deps, machineAdapter, namespace, "upgraded")).action).toBe("added finalizer");
      expect((await reconcileWorkspace(deps, machineAdapter, namespace, "upgraded")).action).toMatch(/^started apply/);
      const [first] = await jobsOf("upgraded");
      const jobName = first!.metadata!.name!;
      const inputsHash = first!.metadata!.annotations!["captf.io/inputs-hash"]!;
      // What an older captf leaves when killed between taking the lease and creating the Job.
      await plane.batch.deleteNamespacedJob({ name: jobName, namespace, propagationPolicy: "Background" });
      await plane.core.deleteNamespacedSecret({ name: `captf-run-${jobName}`, namespace }).catch(() => undefined);
      await waitFor(async () =>
        (await jobsOf("upgraded")).length === 0 &&
        !(await plane.core.readNamespacedSecret({ name: `captf-run-${jobName}`, namespace }).catch(() => undefined))
          ? true
          : undefined,
      );
      const leaseName = runLeaseName(stateSecretSuffix({ role: "machine", namespace, name: "upgraded" }));
      await plane.coordination.deleteNamespacedLease({ name: leaseName, namespace });
      const former = previousSchemeJobName({
        owner: { role: "machine", name: "upgraded", namespace, uid: "", clusterName: "c" },
        op: "apply",
        attempt: 1,
        inputsHash,
      });
      expect(former).not.toBe(jobName);
      await plane.coordination.createNamespacedLease({
        namespace,
        body: {
          metadata: {
            name: leaseName,
            labels: { "captf.io/lease": "run" },
            annotations: { "captf.io/lease-op": "apply", "captf.io/lease-acquired-at": new Date(Date.now() + skew).toISOString() },
          },
          spec: { holderIdentity: former, leaseDurationSeconds: 4500 },
        },
      });

      expect((await reconcileWorkspace(deps, machineAdapter, namespace, "upgraded")).action).toMatch(/^started apply/);
      expect((await jobsOf("upgraded")).map((job) => job.metadata!.name)).toEqual([jobName]);
      expect((await plane.coordination.readNamespacedLease({ name: leaseName, namespace })).spec?.holderIdentity).toBe(jobName);
    }, 120_000);

    it("starts no machine apply while a cluster Job holds the cluster lease, and gives its run lease back", async () => {
      const holder = await plane.batch.createNamespacedJob({
        namespace,
        body: {
          metadata: { name: "captf-c-c-apply-a1-abcdef" },
          spec: { template: { spec: { restartPolicy: "Never", containers: [{ name: "x", image: "registry.invalid/x:v1" }] } } },
        },
      });
      await plane.coordination.createNamespacedLease({
        namespace,
        body: {
          metadata: {
            name: clusterLeaseName(namespace, "c"),
            labels: { "captf.io/lease": "cluster" },
            annotations: { "captf.io/lease-op": "apply", "captf.io/lease-acquired-at": new Date(Date.now() + skew).toISOString() },
          },
          spec: { holderIdentity: holder.metadata!.name!, leaseDurationSeconds: 4500 },
        },
      });
      try {
        await createMachine("gated");
        await reconcileWorkspace(deps, machineAdapter, namespace, "gated");
        const behindCluster = { kind: "TerraformMachine", reason: "cluster_operation" };
        const waitsBefore = await seriesValue(registry, "captf_lease_waits_total", behindCluster);
        const result = await reconcileWorkspace(deps, machineAdapter, namespace, "gated");
        expect(result.action).toBe("waiting: WaitingForClusterOperation");
        expect(await seriesValue(registry, "captf_lease_waits_total", behindCluster)).toBe(waitsBefore + 1);
        const machine = await getMachine("gated");
        expect(condition(machine, "ApplyJobSucceeded")).toMatchObject({ status: "Unknown", reason: "WaitingForClusterOperation" });
        expect(condition(machine, "ApplyJobSucceeded")!.message).toContain(holder.metadata!.name);
        expect(await jobsOf("gated")).toHaveLength(0);
        await expect(
          plane.coordination.readNamespacedLease({ name: `captf-run-${machine.status.stateSecretSuffix}`, namespace }),
        ).rejects.toMatchObject({ code: 404 });
        const waits = async () => (await eventsOf("gated")).filter((event) => event.reason === "WaitingForClusterOperation");
        await waitFor(async () => ((await waits()).length > 0 ? true : undefined), 10_000, "the WaitingForClusterOperation event");
        expect((await waits()).map((event) => event.note)).toEqual([expect.stringContaining(holder.metadata!.name!)]);
      } finally {
        await plane.coordination.deleteNamespacedLease({ name: clusterLeaseName(namespace, "c"), namespace });
      }
      expect((await reconcileWorkspace(deps, machineAdapter, namespace, "gated")).action).toMatch(/^started apply/);
    }, 120_000);
  });

  describe("pause and hands-off", () => {
    it("starts nothing while the Cluster is paused, says so, and resumes", async () => {
      await createMachine("paused");
      await reconcileWorkspace(deps, machineAdapter, namespace, "paused");
      await plane.custom.patchNamespacedCustomObject(
        { ...capi, namespace, plural: "clusters", name: "c", body: { spec: { paused: true } } },
        mergePatchOptions(),
      );
      try {
        const result = await reconcileWorkspace(deps, machineAdapter, namespace, "paused");
        expect(result.action).toBe("Paused");
        expect(condition(await getMachine("paused"), "Paused")).toMatchObject({ status: "True", reason: "Paused" });
        expect(await jobsOf("paused")).toHaveLength(0);
      } finally {
        await plane.custom.patchNamespacedCustomObject(
          { ...capi, namespace, plural: "clusters", name: "c", body: { spec: { paused: false } } },
          mergePatchOptions(),
        );
      }
      expect((await reconcileWorkspace(deps, machineAdapter, namespace, "paused")).action).toMatch(/^started apply/);
      expect(condition(await getMachine("paused"), "Paused")).toMatchObject({ status: "False", reason: "NotPaused" });
    }, 60_000);

    it("runs nothing for a TerraformMachine whose Machine points at another infrastructure object (OwnerMismatch)", async () => {
      const machine = (await plane.custom.getNamespacedCustomObject({
        ...capi,
        namespace,
        plural: "machines",
        name: "paused",
      })) as CapiObject;
      // Owned by the Machine "paused" without being its controller: that Machine points at "paused".
      const owner = { name: "paused", uid: machine.metadata.uid! };
      await createTerraformMachine(plane, namespace, "claimer", image, { owner, controller: false, clusterName: "c" });
      await reconcileWorkspace(deps, machineAdapter, namespace, "claimer");
      expect((await reconcileWorkspace(deps, machineAdapter, namespace, "claimer")).action).toBe("waiting: OwnerMismatch");
      const claimer = await getMachine("claimer");
      expect(condition(claimer, "DependenciesReady")).toMatchObject({ status: "False", reason: "OwnerMismatch" });
      expect(condition(claimer, "DependenciesReady")!.message).toContain("Machine paused does not reference this TerraformMachine");
      expect(await jobsOf("claimer")).toHaveLength(0);
    }, 60_000);

    it("waits for a Job slot when the manager's limit is reached, and leaves objects outside its watch filter alone", async () => {
      await createMachine("slotted");
      const limited: ReconcilerDeps = {
        ...deps,
        jobSlots: { usage: () => ({ total: 3, cluster: 1 }), managerLimit: 3, clusterDefaultLimit: 0 },
      };
      await reconcileWorkspace(limited, machineAdapter, namespace, "slotted");
      expect(await reconcileWorkspace(limited, machineAdapter, namespace, "slotted")).toEqual({
        action: "waiting: WaitingForJobSlot",
        requeueAfterMs: 15_000,
      });
      const machine = await getMachine("slotted");
      expect(condition(machine, "ApplyJobSucceeded")).toMatchObject({ status: "Unknown", reason: "WaitingForJobSlot" });
      expect(condition(machine, "ApplyJobSucceeded")!.message).toContain("--max-active-jobs is 3");
      expect(await jobsOf("slotted")).toHaveLength(0);
      await reconcileWorkspace(limited, machineAdapter, namespace, "slotted");
      const waits = async () => (await eventsOf("slotted")).filter((event) => event.reason === "WaitingForJobSlot");
      await waitFor(async () => ((await waits()).length > 0 ? true : undefined), 10_000, "the WaitingForJobSlot event");
      expect((await waits()).map((event) => event.note)).toEqual([expect.stringContaining("--max-active-jobs is 3")]);

      const filtered: ReconcilerDeps = { ...deps, watchFilter: "team-a" };
      expect(await reconcileWorkspace(filtered, machineAdapter, namespace, "slotted")).toEqual({
        action: "not in this manager's watch filter",
      });
      expect(await jobsOf("slotted")).toHaveLength(0);
    }, 60_000);

    it("leaves an externally managed TerraformMachine alone: no finalizer, no status, no Job", async () => {
      await createMachine("external", {}, { annotations: { "cluster.x-k8s.io/managed-by": "someone-else" } });
      expect((await reconcileWorkspace(deps, machineAdapter, namespace, "external")).action).toBe("externally managed");
      const machine = await getMachine("external");
      expect(machine.metadata.finalizers).toBeUndefined();
      // Not even an annotation of captf's own: only the one that hands the object to another controller.
      expect(machine.metadata.annotations).toEqual({ "cluster.x-k8s.io/managed-by": "someone-else" });
      expect(machine.status).toBeUndefined();
      expect(await jobsOf("external")).toHaveLength(0);
    }, 60_000);
  });

  describe("credentials", () => {
    const identity = `${namespace}-id`;
    const canary = "canary-9f3b7c1e-secret-value";

    it("runs Jobs with a Secret of the object's own namespace (identityRef kind Secret) as LocalSecret, and makes the runner's " +
      "RBAC for them", async () => {
      const kc = new k8s.KubeConfig();
      kc.loadFromFile(plane.kubeconfigPath);
      const withCredentials: ReconcilerDeps = { ...deps, credentials: identityCredentials({ client: plane.client }, deps.events) };
      // Nothing has made the runner's ServiceAccount in this namespace yet: the Job would have no one to run as.
      await expect(plane.core.readNamespacedServiceAccount({ name: "captf-runner", namespace })).rejects.toMatchObject({ code: 404 });
      await plane.core.createNamespacedSecret({ namespace, body: { metadata: { name: "local-creds" }, stringData: { TOKEN: canary } } });
      await createMachine("local", { identityRef: { kind: "Secret", name: "local-creds" } });
      for (let pass = 0; pass < 3; pass++) await reconcileWorkspace(withCredentials, machineAdapter, namespace, "local");
      const machine = await getMachine("local");
      expect(condition(machine, "IdentityAllowed")).toMatchObject({ status: "True", reason: "LocalSecret" });
      expect(condition(machine, "RunnerRBACReady")).toMatchObject({ status: "True", reason: "RBACReady" });
      await plane.core.readNamespacedServiceAccount({ name: "captf-runner", namespace });
      const [job] = await jobsOf("local");
      expect(job!.spec?.template.spec?.serviceAccountName).toBe("captf-runner");
      expect(job!.spec?.template.spec?.containers[0]?.envFrom).toEqual([{ secretRef: { name: "local-creds" } }]);
    }, 120_000);

    it("mirrors the identity's Secret into the namespace, creates the runner's RBAC and mounts the mirror in the Job", async () => {
      const kc = new k8s.KubeConfig();
      kc.loadFromFile(plane.kubeconfigPath);
      const credentialsRegistry = new Registry();
      const metrics = new CaptfMetrics(credentialsRegistry);
      const withCredentials: ReconcilerDeps = { ...deps, metrics, credentials: identityCredentials({ client: plane.client }, deps.events) };
      await plane.core.createNamespacedSecret({ namespace, body: { metadata: { name: "cloud-creds" }, stringData: { TOKEN: canary } } });
      await plane.custom.createClusterCustomObject({
        ...infra,
        plural: "terraformclusteridentities",
        body: {
          apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
          kind: "TerraformClusterIdentity",
          metadata: { name: identity },
          spec: { secretRef: { name: "cloud-creds", namespace }, allowedNamespaces: { list: [namespace] } },
        },
      });
      // An identity for other namespaces only.
      await plane.custom.createClusterCustomObject({
        ...infra,
        plural: "terraformclusteridentities",
        body: {
          apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
          kind: "TerraformClusterIdentity",
          metadata: { name: `${identity}-elsewhere` },
          spec: { secretRef: { name: "cloud-creds", namespace }, allowedNamespaces: { list: [`${namespace}-elsewhere`] } },
        },
      });
      try {
        await createMachine("creds", { identityRef: { name: identity } });
        await createMachine("nocreds", { identityRef: { name: `${identity}-missing` } });
        await createMachine("wrongns", { identityRef: { name: `${identity}-elsewhere` } });
        for (let pass = 0; pass < 3; pass++) {
          await reconcileWorkspace(withCredentials, machineAdapter, namespace, "creds");
          await reconcileWorkspace(withCredentials, machineAdapter, namespace, "nocreds");
          await reconcileWorkspace(withCredentials, machineAdapter, namespace, "wrongns");
        }
        const [job] = await jobsOf("creds");
        const mirror = `captf-creds-${identity}`;
        expect(job!.spec?.template.spec?.containers[0]?.envFrom).toEqual([{ secretRef: { name: mirror } }]);
        expect(job!.spec?.template.spec?.volumes?.find((volume) => volume.name === "creds")?.secret?.secretName).toBe(mirror);
        const mirrored = await plane.core.readNamespacedSecret({ name: mirror, namespace });
        expect(Buffer.from(mirrored.data!.TOKEN!, "base64").toString("utf8")).toBe(canary);
        await plane.core.readNamespacedServiceAccount({ name: "captf-runner", namespace });
        const machine = await getMachine("creds");
        for (const type of ["IdentityAllowed", "CredentialsMirrored", "RunnerRBACReady"])
          expect(condition(machine, type)).toMatchObject({ status: "True" });

        const denied = await getMachine("nocreds");
        expect(condition(denied, "IdentityAllowed")).toMatchObject({ status: "False", reason: "IdentityNotFound" });
        expect(condition(denied, "ApplyJobSucceeded")).toMatchObject({ status: "False", reason: "IdentityNotAllowed" });
        expect(await jobsOf("nocreds")).toHaveLength(0);
        const outside = await getMachine("wrongns");
        expect(condition(outside, "IdentityAllowed")).toMatchObject({ status: "False", reason: "NamespaceNotAllowed" });
        expect(await jobsOf("wrongns")).toHaveLength(0);
        // Counted once per denial, not once per pass.
        const denials = [
          { reason: "notfound", value: 1 },
          { reason: "namespace", value: 1 },
        ];
        expect(await seriesValues(credentialsRegistry, "captf_identity_denied_total", {}, denials)).toEqual(denials);
        expect(await seriesValue(credentialsRegistry, "captf_identity_denied_total")).toBe(2);

        // The credential never shows in status or events.
        const everything = JSON.stringify([
          machine.status,
          denied.status,
          outside.status,
          (await eventsApi.listNamespacedEvent({ namespace })).items,
        ]);
        expect(everything).not.toContain(canary);
        expect(everything).not.toContain(Buffer.from(canary).toString("base64"));
      } finally {
        for (const name of [identity, `${identity}-elsewhere`])
          await plane.custom.deleteClusterCustomObject({ ...infra, plural: "terraformclusteridentities", name }).catch(() => undefined);
      }
    }, 120_000);
  });

  it("records events from captf-manager about the object: Job created and succeeded, digest pinned, paused and resumed", async () => {
    const reasonsFor = async (name: string) => (await eventsOf(name)).map((event) => event.reason);
    const vars = await reasonsFor("vars");
    expect(vars).toEqual(
      expect.arrayContaining([
        "JobCreated",
        "JobSucceeded",
        "DigestPinned",
        "Provisioned",
        "ProviderIDSet",
        "Destroyed",
        "FinalizerRemoved",
      ]),
    );
    expect(await reasonsFor("paused")).toEqual(expect.arrayContaining(["Paused", "Resumed", "JobCreated"]));
  }, 60_000);
});
