import { afterAll, beforeAll, expect, it, jest } from "@jest/globals";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { renderBackendRoot } from "@captf/render";
import { describeWithTools, moduleRuntimes, runtimeNames, runtimeVersion } from "@captf/testkit";
import { emptyPlanHash } from "@captf/contract/run-result";
import { localBackendOverride, logLinesOf, RunnerFixture, stepNamesOf } from "./runner-fixture.test-support.js";

jest.setTimeout(60_000);

const root = {
  variables: { name: { type: "string" }, generation: { type: "number" }, sleep_seconds: { type: "number" } },
  outputs: ["provider_id", "generation"],
};

// Under each runtime, one module and one state, carried through the lifecycle in order: each case
// starts where the last ended.
for (const runtime of runtimeNames) {
  describeWithTools([runtime], `runner run against real ${moduleRuntimes[runtime].displayName} (local backend)`, () => {
    let fixture: RunnerFixture;
    let backup: string;
    beforeAll(async () => {
      fixture = await RunnerFixture.create("module", root, runtime);
      await fixture.setInputs({ name: "alpha", generation: 1, sleep_seconds: 0 });
    });
    afterAll(async () => {
      await fixture.remove();
    });

    it("applies the module: the outputs land in the state and the result reports the steps and changes", async () => {
      const run = await fixture.run("apply");
      expect(run.exitCode).toBe(0);
      expect(run.result).toMatchObject({
        version: 1,
        op: "apply",
        image: { ref: "registry.example/noop:v1", providersMirror: false },
        runtime: { command: [fixture.runtime], version: runtimeVersion(runtime) },
        drift: null,
        error: null,
        changes: { add: 2, change: 0, destroy: 0 },
      });
      expect(stepNamesOf(run)).toEqual(["init", "validate", "apply"]);
      expect(run.result.steps.every((step) => step.exit === 0 && step.seconds > 0)).toBe(true);
      // Where the run's CPU went: each step's command, and the runner's own at the end.
      const cpu = logLinesOf(run).filter((line) => line.msg === "step finished" || line.msg === "run finished");
      expect(cpu.map((line) => [line.msg, line.step, typeof line.cpuSeconds])).toEqual([
        ["step finished", "init", "number"],
        ["step finished", "validate", "number"],
        ["step finished", "apply", "number"],
        ["run finished", undefined, "number"],
      ]);
      expect(cpu.at(-1)!.commandsCpuSeconds).toBeGreaterThan(0);
      const state = await fixture.state();
      expect(state.outputs.provider_id!.value).toBe("noop:///alpha");
      expect(state.outputs.generation!.value).toBe(1);
      backup = await readFile(fixture.statePath, "utf8");
    });

    it("changes nothing on a second apply", async () => {
      const run = await fixture.run("apply");
      expect(run.exitCode).toBe(0);
      expect(run.result.changes).toEqual({ add: 0, change: 0, destroy: 0 });
    });

    it("ends a guarded apply whose plan is empty right after the plan, without an apply step", async () => {
      const run = await fixture.run("apply", { args: ["--guard-deletes", "--inputs-hash=h2:one"] });
      expect(run.exitCode).toBe(0);
      expect(stepNamesOf(run)).toEqual(["init", "validate", "plan"]);
      expect(run.result.changes).toEqual({ add: 0, change: 0, destroy: 0 });
      expect(run.result.error).toBeNull();
    });

    let replacementHash = "";
    it("blocks a guarded apply whose plan replaces a resource, and reports the plan and its hash", async () => {
      await fixture.setInputs({ name: "alpha", generation: 2, sleep_seconds: 0 });
      const run = await fixture.run("apply", { args: ["--guard-deletes", "--inputs-hash=h2:two", "--allow-deletes-hash=h2:one"] });
      expect(run.exitCode).toBe(1);
      expect(stepNamesOf(run)).toEqual(["init", "validate", "plan", "show-json"]);
      expect(run.result.error).toEqual({
        kind: "blocked",
        step: null,
        summary: "the plan deletes or replaces 1 resource(s): module.role.terraform_data.server (replace)",
      });
      expect(run.result.plan).toMatchObject({
        add: 1,
        change: 0,
        destroy: 1,
        outputs: 2,
        resources: ["module.role.terraform_data.server (replace)"],
        truncated: false,
      });
      replacementHash = run.result.plan!.hash;
      expect(replacementHash).toMatch(/^p1:[0-9a-f]{64}$/);
      expect((await fixture.state()).outputs.generation!.value).toBe(1);
    });

    it("plans the same change for review with the same hash, applying nothing", async () => {
      const run = await fixture.run("plan");
      expect(run.exitCode).toBe(0);
      expect(stepNamesOf(run)).toEqual(["init", "validate", "plan", "show-json"]);
      expect(run.result.plan!.hash).toBe(replacementHash);
      expect(run.result.changes).toBeUndefined();
      expect((await fixture.state()).outputs.generation!.value).toBe(1);
    });

    it("stops an approved apply whose plan is not the approved one with plan-changed and the new plan", async () => {
      const run = await fixture.run("apply", { args: ["--expect-plan=p1:0000", "--guard-deletes", "--inputs-hash=h2:two"] });
      expect(run.exitCode).toBe(1);
      expect(run.result.error).toEqual({
        kind: "plan-changed",
        step: null,
        summary:
          `the plan changed since it was approved: approved p1:0000, now ${replacementHash} (1 to add, 0 to change, 1 to ` +
          `destroy, 2 output(s) to change); nothing was applied`,
      });
      expect(run.result.plan!.hash).toBe(replacementHash);
      expect((await fixture.state()).outputs.generation!.value).toBe(1);
    });

    it("applies an approved plan, deletes included", async () => {
      const run = await fixture.run("apply", { args: [`--expect-plan=${replacementHash}`, "--guard-deletes", "--inputs-hash=h2:two"] });
      expect(run.exitCode).toBe(0);
      expect(stepNamesOf(run)).toEqual(["init", "validate", "plan", "show-json", "apply"]);
      expect(run.result.changes).toEqual({ add: 1, change: 0, destroy: 1 });
      expect((await fixture.state()).outputs.generation!.value).toBe(2);
    });

    it("applies a destructive plan once its inputs hash is approved", async () => {
      await fixture.setInputs({ name: "alpha", generation: 3, sleep_seconds: 0 });
      const run = await fixture.run("apply", { args: ["--guard-deletes", "--inputs-hash=h2:three", "--allow-deletes-hash=h2:three"] });
      expect(run.exitCode).toBe(0);
      expect(run.result.changes).toEqual({ add: 1, change: 0, destroy: 1 });
      expect((await fixture.state()).outputs.generation!.value).toBe(3);
    });

    it("approves an empty plan even when another plan was approved", async () => {
      const run = await fixture.run("apply", { args: [`--expect-plan=${replacementHash}`] });
      expect(run.exitCode).toBe(0);
      expect(stepNamesOf(run)).toEqual(["init", "validate", "plan"]);
      expect(run.result.changes).toEqual({ add: 0, change: 0, destroy: 0 });
    });

    it("reports no drift, and refreshes", async () => {
      const drift = await fixture.run("drift");
      expect(drift.exitCode).toBe(0);
      expect(stepNamesOf(drift)).toEqual(["init", "apply-refresh-only", "plan"]);
      expect(drift.result.drift).toEqual({ detected: false, add: 0, change: 0, destroy: 0, resources: [] });
      const plan = await fixture.run("plan");
      expect(plan.result.plan).toEqual({ hash: emptyPlanHash, add: 0, change: 0, destroy: 0, resources: [], truncated: false });
      const refresh = await fixture.run("refresh");
      expect(refresh.exitCode).toBe(0);
      expect(stepNamesOf(refresh)).toEqual(["init", "apply-refresh-only"]);
    });

    it("detects drift: a change made outside the configuration shows up in the drift summary", async () => {
      const state = await fixture.state();
      const label = state.resources.find((resource) => resource.name === "label") as unknown as {
        instances: { attributes: { input: { value: string } } }[];
      };
      // terraform_data keeps its dynamic input as {value, type}
      label.instances[0]!.attributes.input.value = "changed-by-hand";
      await writeFile(fixture.statePath, JSON.stringify(state));
      const run = await fixture.run("drift");
      expect({ exit: run.exitCode, error: run.result.error }).toEqual({ exit: 0, error: null });
      expect(stepNamesOf(run)).toEqual(["init", "apply-refresh-only", "plan", "show-json"]);
      expect(run.result.drift).toEqual({ detected: true, add: 0, change: 1, destroy: 0, resources: ["module.role.terraform_data.label"] });
      expect((await fixture.run("apply")).result.changes).toEqual({ add: 0, change: 1, destroy: 0 });
    });

    it("stops a long apply on SIGTERM with an interrupted result, and the next run carries on", async () => {
      await fixture.setInputs({ name: "alpha", generation: 3, sleep_seconds: 30 });
      const stop = new AbortController();
      const started = Date.now();
      const run = await fixture.run("apply", {
        signal: stop.signal,
        onStdout: (text) => text.includes("slow-step-started") && stop.abort(),
      });
      expect(run.exitCode).toBe(1);
      expect(Date.now() - started).toBeLessThan(15_000);
      expect(run.result.error).toMatchObject({ kind: "interrupted", step: "apply" });
      expect(run.result.error!.summary).toMatch(/^Error: /);

      await fixture.setInputs({ name: "alpha", generation: 3, sleep_seconds: 0 });
      const next = await fixture.run("apply");
      expect(next.exitCode).toBe(0);
    });

    it("destroys everything", async () => {
      const run = await fixture.run("destroy");
      expect(run.exitCode).toBe(0);
      expect(stepNamesOf(run)).toEqual(["init", "destroy"]);
      expect(run.result.changes!.destroy).toBeGreaterThanOrEqual(2);
      expect((await fixture.state()).resources).toEqual([]);
    });

    async function restoreConfig(name: string, state: string, chunks: number): Promise<string> {
      const configDir = join(fixture.base, name);
      await fixture.writeConfig("main.tf.json", JSON.parse(renderBackendRoot()["main.tf.json"]), configDir);
      await fixture.writeConfig("terraform.tfvars.json", {}, configDir);
      await fixture.writeConfig("backend_override.tf.json", localBackendOverride, configDir);
      await mkdir(join(configDir, "restore"), { recursive: true });
      const payload = gzipSync(state);
      const size = Math.ceil(payload.length / chunks);
      for (let index = 0; index < chunks; index++)
        await writeFile(join(configDir, "restore", String(index)), payload.subarray(index * size, (index + 1) * size));
      return configDir;
    }

    it("restores a backup from its chunks into the backend, from a fresh work directory", async () => {
      const configDir = await restoreConfig("restore-config", backup, 2);
      const run = await fixture.run("restore", {
        configDir,
        workdir: join(fixture.base, "restore-work"),
        args: ["--restore-chunks=2", "--restore-resources=2"],
      });
      expect(run.exitCode).toBe(0);
      expect(stepNamesOf(run)).toEqual(["init", "state-push", "state-list"]);
      expect(run.stdout).toContain("module.role.terraform_data.server");
      const state = await fixture.state();
      expect(state.outputs.generation!.value).toBe(1);
      expect(state.resources.map((resource) => `${resource.type}.${resource.name}`).sort()).toEqual([
        "terraform_data.label",
        "terraform_data.server",
      ]);
    });

    it("fails a restore whose pushed state lists none of the resources the backup should have", async () => {
      const empty = JSON.stringify({ ...JSON.parse(backup), resources: [], outputs: {} });
      const configDir = await restoreConfig("restore-empty", empty, 1);
      const run = await fixture.run("restore", {
        configDir,
        workdir: join(fixture.base, "restore-work-2"),
        args: ["--restore-chunks=1", "--restore-resources=2"],
      });
      expect(run.exitCode).toBe(1);
      expect(run.result.error).toEqual({
        kind: "step",
        step: "state-list",
        summary: "the restored state lists no managed resources, but the backup has 2",
      });
    });
  });

  describeWithTools([runtime], `runner run under ${moduleRuntimes[runtime].displayName} with a root the module does not accept`, () => {
    let fixture: RunnerFixture;
    beforeAll(async () => {
      fixture = await RunnerFixture.create(
        "module",
        { variables: { name: { type: "string" }, undeclared_input: { type: "string" } } },
        runtime,
      );
      await fixture.setInputs({ name: "gamma", undeclared_input: "x" });
    });
    afterAll(async () => {
      await fixture.remove();
    });

    it("fails the step with the runtime's own diagnostic as the summary", async () => {
      const run = await fixture.run("apply");
      expect(run.exitCode).toBe(1);
      expect(run.result.error).toEqual({
        kind: "step",
        step: "validate",
        summary: 'Error: Extraneous JSON object property: No argument or block type is named "undeclared_input".',
      });
      expect(stepNamesOf(run)).toEqual(["init", "validate"]);
      const finished = logLinesOf(run).find((line) => line.msg === "run finished");
      expect(finished).toMatchObject({ level: "error", error: "step", step: "validate", cpuSeconds: expect.any(Number) });
    });
  });
}

// A plan hash an operator approved must mean the same change whichever runtime the image ships.
describeWithTools(runtimeNames, "runner plan hashes under OpenTofu and Terraform", () => {
  const fixtures: RunnerFixture[] = [];
  afterAll(async () => {
    for (const fixture of fixtures) await fixture.remove();
  });

  it("are the same for the same change", async () => {
    const hashes: Record<string, string> = {};
    for (const runtime of runtimeNames) {
      const fixture = await RunnerFixture.create("module", root, runtime);
      fixtures.push(fixture);
      await fixture.setInputs({ name: "delta", generation: 1, sleep_seconds: 0 });
      expect((await fixture.run("apply")).result.error).toBeNull();
      await fixture.setInputs({ name: "delta", generation: 2, sleep_seconds: 0 });
      hashes[runtime] = (await fixture.run("plan")).result.plan!.hash;
    }
    expect(hashes.terraform).toBe(hashes.tofu);
    expect(hashes.tofu).toMatch(/^p1:[0-9a-f]{64}$/);
  });
});
