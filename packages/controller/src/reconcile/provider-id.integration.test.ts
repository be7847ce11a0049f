import { afterAll, beforeAll, expect, it } from "@jest/globals";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { noopModuleDirectory } from "@captf/module-noop";
import { describeWithTools, waitFor } from "@captf/testkit";
import { machineAdapter } from "../kinds/adapters.js";
import { startJobExecutor, type JobExecutor } from "./job-executor.test-support.js";
import { condition, createMachine, readMachine, type Machine } from "./machine-fixture.test-support.js";
import { allJobsFinished, preparePlane, type PlaneClients } from "./plane.test-support.js";
import { reconcileWorkspace, type ReconcilerDeps } from "./workspace-reconciler.js";

const image = "registry.invalid/captf/provider-id-machine:v1";
const driftIntervalMs = 30 * 60_000;

// A provisioned machine whose module stops returning provider_id, or returns another, on the real
// API server with the real runner: each drift Job is one sample, the pass clock moved past each interval.
describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager", "tofu", "go"], "a machine's provider_id after provisioning", () => {
  const namespace = `pid-${Date.now().toString(36)}`;
  const work = mkdtempSync(join(tmpdir(), "captf-provider-id-"));
  let plane: PlaneClients;
  let executor: JobExecutor;
  let skew = 0;
  let deps: ReconcilerDeps;

  beforeAll(async () => {
    // The no-op machine module, its provider_id read from a marker file when there ("" is null).
    const dir = join(work, "module");
    cpSync(noopModuleDirectory("machine"), dir, { recursive: true });
    const outputs = join(dir, "outputs.tf");
    const marker = '"${path.module}/../pid-${var.machine_name}"';
    const original = readFileSync(outputs, "utf8");
    const changed = original.replace(
      /(output "provider_id" \{[^]*?value\s*=\s*)([^\n]*)\n/,
      `$1fileexists(${marker}) ? (trimspace(file(${marker})) == "" ? null : trimspace(file(${marker}))) : ($2)\n`,
    );
    expect(changed).not.toBe(original);
    writeFileSync(outputs, changed);
    plane = await preparePlane(namespace);
    deps = { client: plane.client, now: () => Date.now() + skew };
    executor = startJobExecutor({ kubeconfigPath: plane.kubeconfigPath, namespace, modules: { [image]: dir } });
  }, 120_000);
  afterAll(() => {
    executor?.close();
    rmSync(work, { recursive: true, force: true });
  });

  /** Passes (the executor running each Job) until the machine satisfies `until`. */
  async function drive(
    name: string,
    until: (machine: Machine & { spec?: { providerID?: string }; status?: { initialization?: { provisioned?: boolean } } }) => boolean,
  ): Promise<void> {
    for (let pass = 0; pass < 12; pass++) {
      await reconcileWorkspace(deps, machineAdapter, namespace, name);
      if (until(await readMachine(plane, namespace, name))) return;
      if (await executor.runPending()) await allJobsFinished(plane.batch, namespace);
    }
    throw new Error(`${name} did not converge: ${JSON.stringify((await readMachine(plane, namespace, name)).status)}`);
  }

  /** Runs Jobs and passes until nothing is due (a refresh may follow the apply). */
  async function settle(name: string): Promise<void> {
    const actions: string[] = [];
    for (let pass = 0; pass < 6; pass++) {
      if (await executor.runPending()) await allJobsFinished(plane.batch, namespace);
      actions.push((await reconcileWorkspace(deps, machineAdapter, namespace, name)).action);
      if (actions.at(-1) === "UpToDate") return;
    }
    throw new Error(`${name} did not settle: ${actions.join(" | ")} ${JSON.stringify((await readMachine(plane, namespace, name)).status)}`);
  }

  /** Moves the clock past the drift interval and runs that drift Job (one new sample). */
  async function sampleOnce(name: string): Promise<void> {
    await settle(name);
    // Jobs finish on the real clock: only the pass that starts the drift runs past its interval.
    skew = driftIntervalMs + 5 * 60_000;
    try {
      expect((await reconcileWorkspace(deps, machineAdapter, namespace, name)).action).toMatch(/^started drift/);
    } finally {
      skew = 0;
    }
    // Like a kubelet: the drift Job's Pod runs once it exists.
    await waitFor(async () => ((await executor.runPending()) > 0 ? true : undefined));
    await allJobsFinished(plane.batch, namespace);
    await reconcileWorkspace(deps, machineAdapter, namespace, name);
  }

  it("null once is ProviderIDMissing, the same reading reconciled again stays so, a second null sample is InstanceTerminated; " +
    "providerID kept", async () => {
    await createMachine(plane, namespace, "gone", image);
    await drive("gone", (m) => m.status?.initialization?.provisioned === true && Boolean(m.spec?.providerID));
    const providerID = ((await readMachine(plane, namespace, "gone")) as { spec?: { providerID?: string } }).spec!.providerID!;

    writeFileSync(join(work, "pid-gone"), "");
    await sampleOnce("gone");
    let machine = await readMachine(plane, namespace, "gone");
    expect(condition(machine, "InfrastructureHealthy")).toMatchObject({ status: "Unknown", reason: "ProviderIDMissing" });
    expect(condition(machine, "OutputsValid")).toMatchObject({ status: "True" });

    // No new Job: not a second sample.
    await reconcileWorkspace(deps, machineAdapter, namespace, "gone");
    expect(condition(await readMachine(plane, namespace, "gone"), "InfrastructureHealthy")).toMatchObject({ reason: "ProviderIDMissing" });

    await sampleOnce("gone");
    machine = await readMachine(plane, namespace, "gone");
    expect(condition(machine, "InfrastructureHealthy")).toMatchObject({ status: "False", reason: "InstanceTerminated" });
    expect((machine as { spec?: { providerID?: string } }).spec?.providerID).toBe(providerID);
  }, 240_000);

  it("a different provider_id is ProviderIDChanged and never overwrites providerID", async () => {
    await createMachine(plane, namespace, "moved", image);
    await drive("moved", (m) => m.status?.initialization?.provisioned === true && Boolean(m.spec?.providerID));
    const providerID = ((await readMachine(plane, namespace, "moved")) as { spec?: { providerID?: string } }).spec!.providerID!;

    writeFileSync(join(work, "pid-moved"), "noop:///elsewhere");
    await sampleOnce("moved");
    const machine = await readMachine(plane, namespace, "moved");
    expect(condition(machine, "OutputsValid")).toMatchObject({
      status: "False",
      reason: "ProviderIDChanged",
      message: expect.stringContaining("noop:///elsewhere"),
    });
    expect((machine as { spec?: { providerID?: string } }).spec?.providerID).toBe(providerID);
  }, 240_000);
});
