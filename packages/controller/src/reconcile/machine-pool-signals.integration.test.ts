import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import type * as k8s from "@kubernetes/client-node";
import { noopModuleDirectory } from "@captf/module-noop";
import { describeWithTools, waitFor } from "@captf/testkit";
import { machineAdapter, poolAdapter } from "../kinds/adapters.js";
import { startJobExecutor, type JobExecutor } from "./job-executor.test-support.js";
import { createExternalCluster, createMachine, createMachinePool } from "./machine-fixture.test-support.js";
import { allJobsFinished, mergePatchOptions, planeReconcilerDeps, preparePlane, type PlaneClients } from "./plane.test-support.js";
import { reconcileWorkspace, type KindAdapter, type ReconcilerDeps } from "./workspace-reconciler.js";
import type { TerraformMachine } from "../api/terraformmachine.js";
import type { TerraformMachinePool } from "../api/terraformmachinepool.js";
import type { CapiObject, ReadBack } from "./read-back.test-support.js";

type Machine = ReadBack<TerraformMachine>;
type Pool = ReadBack<TerraformMachinePool>;

const machineImage = "registry.invalid/captf/signals-machine:v1";
const misplacingImage = "registry.invalid/captf/misplacing-machine:v1";
const poolImage = "registry.invalid/captf/signals-pool:v1";
const infra = { group: "infrastructure.cluster.x-k8s.io", version: "v1alpha1" };
const capi = { group: "cluster.x-k8s.io", version: "v1beta2" };
const autoscalerMin = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size";
const autoscalerMax = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size";

// What machines and pools of an externally managed cluster tell their owners and users, on the real API
// server with real Jobs, the real runner and OpenTofu: a machine placed outside its failure domain, the
// remediation request and its withdrawal on the Machine with their events, the pending health back-off
// past its first steps, and a pool's replica write-back, a foreign replicas manager and invalid autoscaler
// bounds with their events.
describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager", "tofu", "go"], "machine and pool signals", () => {
  const namespace = `signals-${Date.now().toString(36)}`;
  const work = mkdtempSync(join(tmpdir(), "captf-signals-"));
  let plane: PlaneClients;
  let deps: ReconcilerDeps;
  let eventsApi: k8s.EventsV1Api;
  let executor: JobExecutor;
  // Tests move time forward by skewing the pass clock.
  let skew = 0;

  /** A copy of a no-op module with its outputs.tf rewritten. */
  function variant(name: string, role: "machine" | "machinepool", rewrite: (outputs: string) => string): string {
    const dir = join(work, name);
    cpSync(noopModuleDirectory(role), dir, { recursive: true });
    const outputs = join(dir, "outputs.tf");
    const before = readFileSync(outputs, "utf8");
    const after = rewrite(before);
    if (after === before) throw new Error(`the ${name} module's outputs did not change`);
    writeFileSync(outputs, after);
    return dir;
  }

  beforeAll(async () => {
    plane = await preparePlane(namespace);
    const reconcilerDeps = planeReconcilerDeps(plane, "signals-test");
    eventsApi = reconcilerDeps.eventsApi;
    deps = { ...reconcilerDeps.deps, now: () => Date.now() + skew };
    // Health follows marker files beside the module, so a test can make an instance unhealthy or pending between refreshes.
    const signalling = variant("signalling", "machine", (outputs) =>
      outputs
        .replace("healthy = true", 'healthy = !fileexists("${path.module}/../unhealthy-${var.captf_object.name}")')
        .replace(
          'state   = "running"',
          'state   = fileexists("${path.module}/../pending-${var.captf_object.name}") ? "pending" : "running"',
        ),
    );
    // Places its instance in another failure domain than the one asked for.
    const misplacing = variant("misplacing", "machine", (outputs) =>
      outputs.replace("value       = var.failure_domain", 'value       = var.failure_domain == null ? null : "elsewhere"'),
    );
    executor = startJobExecutor({
      kubeconfigPath: plane.kubeconfigPath,
      namespace,
      modules: { [machineImage]: signalling, [misplacingImage]: misplacing, [poolImage]: noopModuleDirectory("machinepool") },
    });
    await createExternalCluster(plane, namespace);
  }, 120_000);
  afterAll(() => {
    executor?.close();
    rmSync(work, { recursive: true, force: true });
  });

  const marker = (kind: "unhealthy" | "pending", name: string) => join(work, `${kind}-${name}`);
  const getMachine = (name: string) =>
    plane.custom.getNamespacedCustomObject({ ...infra, namespace, plural: "terraformmachines", name }) as Promise<Machine>;
  const getPool = (name: string) =>
    plane.custom.getNamespacedCustomObject({ ...infra, namespace, plural: "terraformmachinepools", name }) as Promise<Pool>;
  const getCapi = (plural: "machines" | "machinepools", name: string) =>
    plane.custom.getNamespacedCustomObject({ ...capi, namespace, plural, name }) as Promise<CapiObject>;
  const patchCapi = (plural: "machines" | "machinepools", name: string, body: Record<string, unknown>) =>
    plane.custom.patchNamespacedCustomObject({ ...capi, namespace, plural, name, body }, mergePatchOptions());
  const condition = (object: Machine | Pool, type: string) => (object.status?.conditions ?? []).find((c) => c.type === type);
  const runJobs = () => allJobsFinished(plane.batch, namespace, executor);
  async function pass<R extends "machine" | "machinepool">(adapter: KindAdapter<R>, name: string, ahead = 0) {
    skew = ahead;
    try {
      return await reconcileWorkspace(deps, adapter, namespace, name);
    } finally {
      skew = 0;
    }
  }
  /** Passes (running the Jobs they start) until one starts nothing. */
  async function settle<R extends "machine" | "machinepool">(adapter: KindAdapter<R>, name: string): Promise<string[]> {
    const actions: string[] = [];
    for (let round = 0; round < 10; round++) {
      const { action } = await pass(adapter, name);
      actions.push(action);
      if (!action.startsWith("started") && action !== "added finalizer" && action !== "JobActive") return actions;
      await runJobs();
    }
    throw new Error(`${name} did not settle: ${actions.join(" | ")}`);
  }
  /** The manager's events about one object with this reason, once there are `count` of them (recorded in the background). */
  const eventsOf = (name: string, reason: string, count = 1) =>
    waitFor(
      async () => {
        const events = (await eventsApi.listNamespacedEvent({ namespace })).items.filter(
          (event) => event.regarding?.name === name && event.reportingController === "captf-manager" && event.reason === reason,
        );
        return events.length >= count ? events : undefined;
      },
      30_000,
      `${count} ${reason} event(s) about ${name}`,
    );

  describe("machines", () => {
    it("reports a machine its module placed outside the failure domain it asked for: OutputsValid=False/FailureDomainMismatch, " +
      "an OutputsInvalid event, and no status.failureDomain", async () => {
      await createMachine(plane, namespace, "misplaced", misplacingImage);
      await patchCapi("machines", "misplaced", { spec: { failureDomain: "fd1" } });
      await settle(machineAdapter, "misplaced");
      const machine = await getMachine("misplaced");
      expect(condition(machine, "OutputsValid")).toMatchObject({
        status: "False",
        reason: "FailureDomainMismatch",
        message: expect.stringContaining("output failure_domain differs from the failure_domain input"),
      });
      expect(machine.status.failureDomain).toBeUndefined();
      expect((await eventsOf("misplaced", "OutputsInvalid")).map((event) => [event.type, event.note])).toEqual([
        ["Warning", "the module's outputs are not valid (FailureDomainMismatch); the condition OutputsValid lists the problems"],
      ]);
    }, 120_000);

    it("asks Cluster API to replace an unhealthy machine's Machine with a RemediationRequested event, and withdraws it with a " +
      "RemediationWithdrawn event once healthy", async () => {
      await createMachine(plane, namespace, "sick", machineImage, {
        machineSpec: { remediation: { annotateMachine: true, unhealthyThreshold: 1, healthCheckIntervalSeconds: 60 } },
      });
      await settle(machineAdapter, "sick");
      expect((await getMachine("sick")).status.initialization).toEqual({ provisioned: true });
      const sample = async () => {
        expect((await pass(machineAdapter, "sick", 70_000)).action).toMatch(/^started refresh \(HealthCheckDue\)/);
        await runJobs();
        await pass(machineAdapter, "sick");
      };
      writeFileSync(marker("unhealthy", "sick"), "");
      try {
        await sample();
      } finally {
        rmSync(marker("unhealthy", "sick"), { force: true });
      }
      expect((await getCapi("machines", "sick")).metadata.annotations).toMatchObject({
        "cluster.x-k8s.io/remediate-machine": "",
        "captf.io/remediation-requested": "InstanceUnhealthy",
      });
      expect((await eventsOf("sick", "RemediationRequested")).map((event) => event.note)).toEqual([
        "asked Cluster API to replace Machine sick: InstanceUnhealthy after 1 unhealthy sample(s)",
      ]);
      await sample();
      const owner = await getCapi("machines", "sick");
      expect(owner.metadata.annotations?.["cluster.x-k8s.io/remediate-machine"]).toBeUndefined();
      expect(owner.metadata.annotations?.["captf.io/remediation-requested"]).toBeUndefined();
      expect((await eventsOf("sick", "RemediationWithdrawn")).map((event) => event.note)).toEqual([
        "the instance is healthy again: withdrew the remediation request on Machine sick",
      ]);
      expect(await eventsOf("sick", "RemediationRequested")).toHaveLength(1);
    }, 180_000);

    it("backs off a pending machine's refreshes 30 s, 1 m, 2 m, 4 m, then 5 m and 5 m again, counting " +
      "status.pendingRefreshes", async () => {
      writeFileSync(marker("pending", "slow"), "");
      try {
        await createMachine(plane, namespace, "slow", machineImage);
        expect((await pass(machineAdapter, "slow")).action).toBe("added finalizer");
        expect((await pass(machineAdapter, "slow")).action).toMatch(/^started apply \(NoState\)/);
        await runJobs();
        expect((await pass(machineAdapter, "slow")).action).toMatch(/^started refresh \(RefreshAfterApply\)/);
        await runJobs();
        const steps = [30_000, 60_000, 120_000, 240_000, 300_000, 300_000];
        for (const [index, step] of steps.entries()) {
          // Due one step (plus up to a tenth of jitter) after the refresh that just finished a moment ago.
          const waiting = await pass(machineAdapter, "slow");
          expect(waiting.action).toBe("UpToDate");
          expect(waiting.requeueAfterMs).toBeGreaterThan(step * 0.9);
          expect(waiting.requeueAfterMs).toBeLessThanOrEqual(step * 1.1);
          expect((await getMachine("slow")).status.pendingRefreshes).toBe(index + 1);
          expect((await pass(machineAdapter, "slow", waiting.requeueAfterMs! - 2_000)).action).toBe("UpToDate");
          expect((await pass(machineAdapter, "slow", waiting.requeueAfterMs! + 1_000)).action).toMatch(
            /^started refresh \(HealthPending\)/,
          );
          await runJobs();
        }
      } finally {
        rmSync(marker("pending", "slow"), { force: true });
      }
      // The next refresh after the instance runs ends the back-off.
      await pass(machineAdapter, "slow", 331_000);
      await runJobs();
      await pass(machineAdapter, "slow");
      const machine = await getMachine("slow");
      expect(machine.status.pendingRefreshes).toBeUndefined();
      expect(condition(machine, "InfrastructureHealthy")).toMatchObject({ status: "True", reason: "Healthy" });
    }, 300_000);
  });

  describe("an autoscaled pool", () => {
    beforeAll(async () => {
      await createMachinePool(plane, namespace, "auto", { clusterName: "ext", image: poolImage, replicas: 3 });
      await settle(poolAdapter, "auto");
      expect((await getPool("auto")).status.replicas).toBe(3);
    }, 120_000);

    it("ignores autoscaler bounds that are not valid: AutoscalingActive=False/AutoscalingAnnotationsInvalid with a Warning, " +
      "spec.replicas left alone", async () => {
      await patchCapi("machinepools", "auto", { metadata: { annotations: { [autoscalerMin]: "5", [autoscalerMax]: "1" } } });
      await settle(poolAdapter, "auto");
      expect(condition(await getPool("auto"), "AutoscalingActive")).toMatchObject({
        status: "False",
        reason: "AutoscalingAnnotationsInvalid",
        message: expect.stringContaining("must both be non-negative integers with min <= max"),
      });
      const owner = await getCapi("machinepools", "auto");
      expect(owner.spec.replicas).toBe(3);
      expect(owner.metadata.annotations?.["cluster.x-k8s.io/replicas-managed-by"]).toBeUndefined();
      expect((await eventsOf("auto", "ConditionChanged")).map((event) => [event.type, event.note])).toEqual([
        ["Warning", expect.stringContaining("AutoscalingActive is False (AutoscalingAnnotationsInvalid)")],
      ]);
    }, 120_000);

    it("writes the count the module observed back to MachinePool.spec.replicas with a ReplicasWrittenBack event", async () => {
      await patchCapi("machinepools", "auto", {
        metadata: { annotations: { [autoscalerMin]: "1", [autoscalerMax]: "5" } },
        spec: { replicas: 2 },
      });
      await pass(poolAdapter, "auto");
      const owner = await getCapi("machinepools", "auto");
      expect(owner.metadata.annotations?.["cluster.x-k8s.io/replicas-managed-by"]).toBe("captf");
      expect(owner.spec.replicas).toBe(3);
      expect((await eventsOf("auto", "ReplicasWrittenBack")).map((event) => event.note)).toEqual([
        "MachinePool auto spec.replicas 2 -> 3, as the module observed",
      ]);
      await settle(poolAdapter, "auto");
      expect(condition(await getPool("auto"), "AutoscalingActive")).toMatchObject({ status: "True", reason: "ReplicasManagedByModule" });
    }, 120_000);

    it("leaves the replicas another manager claimed alone: AutoscalingActive=False/ReplicasManagedExternally, with one event", async () => {
      await patchCapi("machinepools", "auto", {
        metadata: { annotations: { "cluster.x-k8s.io/replicas-managed-by": "external-autoscaler" } },
        spec: { replicas: 4 },
      });
      await settle(poolAdapter, "auto");
      await pass(poolAdapter, "auto");
      const condition_ = condition(await getPool("auto"), "AutoscalingActive");
      expect(condition_).toMatchObject({
        status: "False",
        reason: "ReplicasManagedExternally",
        message: 'cluster.x-k8s.io/replicas-managed-by is "external-autoscaler": captf does not write the replica count back',
      });
      const owner = await getCapi("machinepools", "auto");
      expect(owner.spec.replicas).toBe(4);
      expect(owner.metadata.annotations?.["cluster.x-k8s.io/replicas-managed-by"]).toBe("external-autoscaler");
      expect((await eventsOf("auto", "ReplicasManagedExternally")).map((event) => event.note)).toEqual([condition_!.message]);
    }, 120_000);
  });
});
