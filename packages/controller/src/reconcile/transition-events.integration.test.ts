import { afterAll, beforeAll, expect, it } from "@jest/globals";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type * as k8s from "@kubernetes/client-node";
import { noopModuleDirectory } from "@captf/module-noop";
import { describeWithTools, waitFor } from "@captf/testkit";
import { Registry } from "prom-client";
import { clusterAdapter, machineAdapter } from "../kinds/adapters.js";
import { CaptfMetrics } from "../metrics/captf-metrics.js";
import { seriesValue } from "../metrics/series.test-support.js";
import { startJobExecutor, type JobExecutor } from "./job-executor.test-support.js";
import { condition, createMachine, readMachine } from "./machine-fixture.test-support.js";
import {
  allJobsFinished,
  createTerraformCluster,
  planeReconcilerDeps,
  preparePlane,
  type PlaneClients,
  mergePatchOptions,
} from "./plane.test-support.js";
import { reconcileWorkspace, type KindAdapter, type ReconcilerDeps } from "./workspace-reconciler.js";
import type { TerraformCluster } from "../api/terraformcluster.js";
import type { ReadBack } from "./read-back.test-support.js";

const machineImage = "registry.invalid/captf/transitions-machine:v1";
const clusterImage = "registry.invalid/captf/transitions-cluster:v1";
const driftIntervalMs = 30 * 60_000;
const infra = { group: "infrastructure.cluster.x-k8s.io", version: "v1alpha1" };
type Cluster = ReadBack<TerraformCluster>;

/** Replaces `from` in a module file, failing when the no-op module no longer has it. */
function edit(file: string, from: string | RegExp, to: string): void {
  const original = readFileSync(file, "utf8");
  const changed = original.replace(from, to);
  if (changed === original) throw new Error(`${String(from)} not found in ${file}`);
  writeFileSync(file, changed);
}

// Events on transitions, on the real API server with the real runner and OpenTofu: the no-op modules
// read their health, addresses and drift from marker files, so each drift Job is a new sample; the pass
// clock moves past the drift interval. Each event is asserted exactly once, read back from the API.
describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager", "tofu", "go"], "transition events", () => {
  const namespace = `transitions-${Date.now().toString(36)}`;
  const work = mkdtempSync(join(tmpdir(), "captf-transitions-"));
  let plane: PlaneClients;
  let executor: JobExecutor;
  let eventsApi: k8s.EventsV1Api;
  let deps: ReconcilerDeps;
  let skew = 0;
  // The manager's metrics, read by their exposed names.
  const registry = new Registry();
  const metrics = new CaptfMetrics(registry);

  beforeAll(async () => {
    const machineDir = join(work, "machine");
    cpSync(noopModuleDirectory("machine"), machineDir, { recursive: true });
    const marker = (what: string) => `"\${path.module}/../${what}-\${var.machine_name}"`;
    const fromMarker = (what: string) => `fileexists(${marker(what)}) ? jsondecode(file(${marker(what)})) : `;
    edit(
      join(machineDir, "outputs.tf"),
      "value = local.observed_health != null",
      `value = ${fromMarker("health")}local.observed_health != null`,
    );
    edit(join(machineDir, "outputs.tf"), /(output "addresses" \{[^]*?value\s*=\s*)\[/, `$1${fromMarker("addresses")}[`);

    // A cluster whose failure domains and exports follow var.generation ("big" exports exceed status.exports' limit), drifting on a marker.
    const clusterDir = join(work, "cluster");
    cpSync(noopModuleDirectory("cluster"), clusterDir, { recursive: true });
    const outputs = join(clusterDir, "outputs.tf");
    edit(
      outputs,
      /(output "failure_domains" \{[^]*?value\s*=\s*)\[[^]*?\]\n/,
      `$1[for n in (var.generation == "1" ? ["fd1"] : ["fd1", "fd2"]) : { name = n, control_plane = true, attributes = {} }]\n`,
    );
    edit(
      outputs,
      'backend_id = "noop-backend-${terraform_data.load_balancer.id}"',
      'backend_id = "noop-backend-${terraform_data.load_balancer.id}"\n    blob       = var.generation == "1" ? "" : join("", ' +
        '[for i in range(600) : sha512("${i}")])',
    );
    writeFileSync(
      join(clusterDir, "transitions.tf"),
      'variable "generation" {\n  type    = string\n  default = "1"\n}\n\nresource "terraform_data" "drifting" {\n  input = ' +
        'fileexists("${path.module}/../drift-${var.captf_object.name}")\n}\n',
    );

    plane = await preparePlane(namespace);
    const planeDeps = planeReconcilerDeps(plane, "transition-events-test");
    eventsApi = planeDeps.eventsApi;
    deps = { ...planeDeps.deps, metrics, now: () => Date.now() + skew };
    executor = startJobExecutor({
      kubeconfigPath: plane.kubeconfigPath,
      namespace,
      modules: { [machineImage]: machineDir, [clusterImage]: clusterDir },
    });
  }, 120_000);
  afterAll(() => {
    executor?.close();
    rmSync(work, { recursive: true, force: true });
  });

  /** The events of `reason` recorded on object `name`, read from the API server. */
  const eventsOf = async (name: string, reason: string) =>
    (await eventsApi.listNamespacedEvent({ namespace })).items.filter((event) => event.regarding?.name === name && event.reason === reason);
  /** The events of `reason` once at least `count` are there (a pass records them without waiting). */
  const recorded = async (name: string, reason: string, count = 1) =>
    waitFor(
      async () => {
        const found = await eventsOf(name, reason);
        return found.length >= count ? found : undefined;
      },
      10_000,
      `${count} ${reason} event(s) on ${name}`,
    );
  const getCluster = (name: string) =>
    plane.custom.getNamespacedCustomObject({ ...infra, namespace, plural: "terraformclusters", name }) as Promise<Cluster>;

  async function runJobs(): Promise<void> {
    await executor.runPending();
    await allJobsFinished(plane.batch, namespace);
  }

  /** Passes, each followed by the Jobs it started, until the object is provisioned and nothing is due. */
  async function settle(adapter: KindAdapter<any>, name: string): Promise<void> {
    const actions: string[] = [];
    for (let pass = 0; pass < 10; pass++) {
      actions.push((await reconcileWorkspace(deps, adapter, namespace, name)).action);
      if (actions.at(-1) === "UpToDate") return;
      await runJobs();
    }
    throw new Error(`${name} did not settle: ${actions.join(" | ")}`);
  }

  /**
   * Moves the clock past the drift interval for one pass: that pass starts a drift Job (one new sample), which runs; then a pass reads it.
   */
  async function sampleOnce(adapter: KindAdapter<any>, name: string, intervalMs: number): Promise<void> {
    skew = intervalMs + 5 * 60_000;
    try {
      expect((await reconcileWorkspace(deps, adapter, namespace, name)).action).toMatch(/^started drift/);
    } finally {
      skew = 0;
    }
    await waitFor(async () => ((await executor.runPending()) > 0 ? true : undefined));
    await allJobsFinished(plane.batch, namespace);
    await reconcileWorkspace(deps, adapter, namespace, name);
  }

  it("a machine healthy -> unhealthy -> healthy: InstanceUnhealthy then InstanceHealthy, once each; invalid outputs: " +
    "OutputsInvalid once, counted", async () => {
    await createMachine(plane, namespace, "m", machineImage);
    await settle(machineAdapter, "m");
    expect(condition(await readMachine(plane, namespace, "m"), "InfrastructureHealthy")).toMatchObject({
      status: "True",
      reason: "Healthy",
    });
    const applyAdded = { kind: "TerraformMachine", op: "apply", action: "add" };
    expect(await seriesValue(registry, "captf_resources_changed_total", applyAdded)).toBeGreaterThan(0);

    writeFileSync(join(work, "health-m"), JSON.stringify({ state: "running", healthy: false, message: "disk failing", reasons: [] }));
    await sampleOnce(machineAdapter, "m", driftIntervalMs);
    expect(condition(await readMachine(plane, namespace, "m"), "InfrastructureHealthy")).toMatchObject({
      status: "False",
      reason: "InstanceUnhealthy",
    });
    // Another pass over the same reading records nothing again.
    await reconcileWorkspace(deps, machineAdapter, namespace, "m");
    expect(await recorded("m", "InstanceUnhealthy")).toEqual([expect.objectContaining({ type: "Warning" })]);
    expect(await eventsOf("m", "InstanceHealthy")).toEqual([]);

    rmSync(join(work, "health-m"));
    await sampleOnce(machineAdapter, "m", driftIntervalMs);
    expect(condition(await readMachine(plane, namespace, "m"), "InfrastructureHealthy")).toMatchObject({
      status: "True",
      reason: "Healthy",
    });
    await reconcileWorkspace(deps, machineAdapter, namespace, "m");
    expect(await recorded("m", "InstanceHealthy")).toEqual([expect.objectContaining({ type: "Normal" })]);
    expect(await eventsOf("m", "InstanceUnhealthy")).toHaveLength(1);

    writeFileSync(join(work, "addresses-m"), JSON.stringify([{ type: "Bogus", address: "10.0.0.1" }]));
    await sampleOnce(machineAdapter, "m", driftIntervalMs);
    expect(condition(await readMachine(plane, namespace, "m"), "OutputsValid")).toMatchObject({
      status: "False",
      reason: "OutputsInvalid",
    });
    await reconcileWorkspace(deps, machineAdapter, namespace, "m");
    const invalid = await recorded("m", "OutputsInvalid");
    expect(invalid).toEqual([expect.objectContaining({ type: "Warning", note: expect.stringContaining("(OutputsInvalid)") })]);
    // The note names the reason, never the output's value.
    expect(invalid[0]!.note).not.toContain("Bogus");
    expect(await seriesValue(registry, "captf_outputs_invalid_total", { kind: "TerraformMachine", reason: "OutputsInvalid" })).toBe(1);
    expect(await eventsOf("m", "ConditionChanged")).toEqual([]);
  }, 240_000);

  it("a cluster's new inputs: InputsChanged, FailureDomainsChanged and ExportsNotPublished once each, the hash change counted; " +
    "a remediation apply: DriftRemediationStarted", async () => {
    await createTerraformCluster(plane, namespace, "c", {
      source: { image: clusterImage },
      variables: { generation: "1" },
      drift: { intervalSeconds: 60, action: "Remediate" },
    });
    await settle(clusterAdapter, "c");
    let cluster = await getCluster("c");
    expect(cluster.status.failureDomains!.map((domain) => domain.name)).toEqual(["fd1"]);
    expect(cluster.status.exports).toMatchObject({ blob: "" });
    // The first publication is part of provisioning, and a first apply is not a change of inputs.
    expect(await eventsOf("c", "FailureDomainsChanged")).toEqual([]);
    expect(await eventsOf("c", "InputsChanged")).toEqual([]);

    await plane.custom.patchNamespacedCustomObject(
      { ...infra, namespace, plural: "terraformclusters", name: "c", body: { spec: { variables: { generation: "2" } } } },
      mergePatchOptions(),
    );
    expect((await reconcileWorkspace(deps, clusterAdapter, namespace, "c")).action).toMatch(/^started apply \(InputsChanged\)/);
    await runJobs();
    await settle(clusterAdapter, "c");
    await reconcileWorkspace(deps, clusterAdapter, namespace, "c");
    cluster = await getCluster("c");
    expect(cluster.status.failureDomains!.map((domain) => domain.name)).toEqual(["fd1", "fd2"]);
    expect(cluster.status.exports).toBeUndefined();
    expect(await recorded("c", "InputsChanged")).toEqual([expect.objectContaining({ type: "Normal" })]);
    expect(await recorded("c", "FailureDomainsChanged")).toEqual([
      expect.objectContaining({ note: "failure domains now fd1, fd2 (were fd1)" }),
    ]);
    expect(await recorded("c", "ExportsNotPublished")).toEqual([expect.objectContaining({ type: "Warning" })]);
    expect(await seriesValue(registry, "captf_inputs_hash_changes_total", { kind: "TerraformCluster" })).toBe(1);

    writeFileSync(join(work, "drift-c"), "");
    // The pass that reads the drift finding starts the remediation apply.
    await sampleOnce(clusterAdapter, "c", 60_000);
    const jobs = await plane.batch.listNamespacedJob({ namespace });
    expect(jobs.items.some((job) => job.metadata?.annotations?.["captf.io/drift-remediation"] === "true")).toBe(true);
    expect(await recorded("c", "DriftRemediationStarted")).toEqual([expect.objectContaining({ type: "Normal" })]);
    const driftOfC = { kind: "TerraformCluster", namespace, name: "c" };
    expect(await seriesValue(registry, "captf_drift_detected", driftOfC)).toBe(1);
    await runJobs();
    await settle(clusterAdapter, "c");
    // The remediation applied the same inputs: no second InputsChanged, and the exports, cleared already, are not reported again.
    expect(await eventsOf("c", "InputsChanged")).toHaveLength(1);
    expect(await eventsOf("c", "ExportsNotPublished")).toHaveLength(1);
    expect(await eventsOf("c", "DriftRemediationStarted")).toHaveLength(1);
    expect(await seriesValue(registry, "captf_inputs_hash_changes_total", { kind: "TerraformCluster" })).toBe(1);
    // The drift check found the drifting resource changed; the remediation apply, the only one changing a resource, changed it back.
    const driftChanged = { kind: "TerraformCluster", action: "change" };
    expect(await seriesValue(registry, "captf_drift_resources_total", driftChanged)).toBe(1);
    const remediationChanged = { kind: "TerraformCluster", op: "apply", action: "change" };
    expect(await seriesValue(registry, "captf_resources_changed_total", remediationChanged)).toBe(1);
    // Remediated: no drift is detected any more.
    expect(await seriesValue(registry, "captf_drift_detected", driftOfC)).toBe(0);
  }, 240_000);
});
