import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "@jest/globals";
import type { Role } from "@captf/contract/roles";
import { runLifecycle, type LifecycleReport } from "./driver.js";
import { FakeCluster, type FakeBehaviour } from "./fake-cluster.test-support.js";
import { durableInputsSecretName, leftoverNames, lifecycleObjects, type LifecycleOptions } from "./objects.js";
import { lifecycleJunit, lifecycleText } from "./report.js";
import { settled } from "./steps.js";
import { lifecycleOptions, runTest, type TestFlags } from "./test-command.js";

function options(role: Role, extra: Partial<LifecycleOptions> = {}): LifecycleOptions {
  return {
    role,
    namespace: "scratch",
    image: "127.0.0.1:5000/m@sha256:abc",
    name: `t-${role}`,
    ...(role === "cluster" ? { identity: "noop" } : { cluster: "dev" }),
    replicas: 1,
    driftIntervalSeconds: 60,
    stepTimeoutSeconds: 30,
    pollSeconds: 1,
    ...extra,
  };
}

async function run(role: Role, behaviour: FakeBehaviour = {}, extra: Partial<LifecycleOptions> = {}) {
  const cluster = new FakeCluster(behaviour);
  const report = await runLifecycle(cluster, cluster.clock, options(role, extra));
  return { cluster, report };
}

const outcomes = (report: LifecycleReport) => report.steps.map((step) => `${step.name}:${step.outcome}`);

describe("lifecycleObjects", () => {
  it("makes a machine's bootstrap Secret, TerraformMachine and Machine, joined to the cluster", () => {
    const [secret, subject, owner] = lifecycleObjects(options("machine", { variables: { size: "small" } }));
    expect(secret).toMatchObject({ kind: "Secret", type: "cluster.x-k8s.io/secret", metadata: { name: "t-machine-bootstrap" } });
    expect(subject).toMatchObject({
      apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
      kind: "TerraformMachine",
      metadata: { name: "t-machine", namespace: "scratch", labels: { "cluster.x-k8s.io/cluster-name": "dev" } },
      spec: { source: { image: "127.0.0.1:5000/m@sha256:abc" }, variables: { size: "small" } },
    });
    expect(subject!.spec).not.toHaveProperty("identityRef");
    expect(owner).toMatchObject({
      apiVersion: "cluster.x-k8s.io/v1beta2",
      kind: "Machine",
      spec: {
        clusterName: "dev",
        bootstrap: { dataSecretName: "t-machine-bootstrap" },
        infrastructureRef: { apiGroup: "infrastructure.cluster.x-k8s.io", kind: "TerraformMachine", name: "t-machine" },
      },
    });
  });

  it("makes a pool's MachinePool with the replicas, and a cluster's Cluster with the identity", () => {
    const pool = lifecycleObjects(options("machinepool", { replicas: 2 }))[2]!;
    expect(pool).toMatchObject({
      kind: "MachinePool",
      spec: { replicas: 2, template: { spec: { infrastructureRef: { kind: "TerraformMachinePool" } } } },
    });
    const [subject, cluster] = lifecycleObjects(options("cluster"));
    expect(subject).toMatchObject({ kind: "TerraformCluster", spec: { identityRef: { name: "noop" } } });
    expect(cluster).toMatchObject({ kind: "Cluster", spec: { infrastructureRef: { kind: "TerraformCluster", name: "t-cluster" } } });
  });

  it("names what is left of an object by its state suffix, durable inputs and Jobs", () => {
    const found = {
      secrets: [
        "tfstate-default-s1",
        "tfstate-default-s1-part-2",
        "captf-state-backup-s1-4",
        "captf-inputs-m-t-machine",
        "other",
        "tfstate-default-s2",
      ],
      leases: ["captf-run-s1", "lock-tfstate-default-s1", "captf-run-s2"],
      jobs: ["captf-m-t-machine-apply-a1-abcdef"],
    };
    expect(leftoverNames(options("machine"), "s1", found)).toEqual([
      "Secret/tfstate-default-s1",
      "Secret/tfstate-default-s1-part-2",
      "Secret/captf-state-backup-s1-4",
      "Secret/captf-inputs-m-t-machine",
      "Lease/captf-run-s1",
      "Lease/lock-tfstate-default-s1",
      "Job/captf-m-t-machine-apply-a1-abcdef",
    ]);
    expect(durableInputsSecretName("machinepool", "x".repeat(300))).toMatch(new RegExp(`^captf-inputs-mp-x{220}-[0-9a-f]{16}$`));
  });
});

describe("runLifecycle", () => {
  it("takes a pool through every step: apply, scale up, drift check, scale down, restore, destroy", async () => {
    const { cluster, report } = await run("machinepool");
    expect(outcomes(report)).toEqual([
      "apply:passed",
      "input-change:passed",
      "drift-check:passed",
      "member-delete:passed",
      "state-restore:passed",
      "destroy:passed",
    ]);
    expect(report).toMatchObject({ passed: true, role: "machinepool", object: "TerraformMachinePool/t-machinepool" });
    expect(report.steps[0]!.conditionsSeen.Ready).toEqual(["False/NotReady", "True/Ready"]);
    expect(report.steps[1]!.conditionsSeen.InputsApplied).toEqual(["True/InputsApplied", "False/ApplyRunning", "True/InputsApplied"]);
    expect(report.steps[4]!.conditions).toEqual(
      expect.arrayContaining([{ type: "RestoreJobSucceeded", status: "True", reason: "StateRestored", observedGeneration: 3 }]),
    );
    expect(cluster.writes).toEqual(
      expect.arrayContaining([
        'patch MachinePool/t-machinepool {"spec":{"replicas":2}}',
        'patch MachinePool/t-machinepool {"spec":{"replicas":1}}',
        'patch TerraformMachinePool/t-machinepool {"spec":{"drift":{"intervalSeconds":60}}}',
        'patch TerraformMachinePool/t-machinepool {"spec":{"drift":null}}',
      ]),
    );
    const restores = cluster.writes.filter((w) => w.includes("captf.io/restore-state"));
    expect(restores).toHaveLength(1);
    expect(restores[0]).toMatch(/"captf.io\/restore-state":"\d+"/);
    expect(cluster.objects.size).toBe(0);
    for (const step of report.steps) expect(step.seconds).toBeGreaterThan(0);
  });

  it("reports a machine's input change not supported, restores before the Machine is deleted, and passes", async () => {
    const { cluster, report } = await run("machine");
    expect(outcomes(report)).toEqual([
      "apply:passed",
      "input-change:not-supported",
      "drift-check:passed",
      "state-restore:passed",
      "member-delete:passed",
      "destroy:passed",
    ]);
    expect(report.passed).toBe(true);
    expect(report.steps[1]!.message).toMatch(/spec.source, spec.variables and spec.variablesFrom are immutable/);
    expect(cluster.writes).toContain("delete Machine/t-machine");
    expect(cluster.objects.size).toBe(0);
  });

  it("skips a cluster's input change unless --change-variables names one, and its member delete", async () => {
    const without = await run("cluster");
    expect(outcomes(without.report)).toEqual([
      "apply:passed",
      "input-change:skipped",
      "drift-check:passed",
      "member-delete:skipped",
      "state-restore:passed",
      "destroy:passed",
    ]);
    expect(without.report.steps[1]!.message).toMatch(/--change-variables/);
    const withChange = await run("cluster", {}, { changeVariables: { size: "large" } });
    expect(withChange.report.steps[1]!.outcome).toBe("passed");
    expect(withChange.cluster.writes).toContain('patch TerraformCluster/t-cluster {"spec":{"variables":{"size":"large"}}}');
  });

  it("fails the apply of a module whose health never settles, naming what it waited for and saw, and still destroys", async () => {
    const { cluster, report } = await run("machine", { neverReady: "instance pending" });
    expect(outcomes(report)).toEqual([
      "apply:failed",
      "input-change:not-supported",
      "drift-check:skipped",
      "state-restore:skipped",
      "member-delete:skipped",
      "destroy:passed",
    ]);
    expect(report.passed).toBe(false);
    expect(report.steps[0]!.message).toBe(
      "waited 30 s for the first apply: Ready=True of the current generation, provisioned, no Job running; " +
        "saw Ready=False/NotReady (instance pending)",
    );
    expect(report.steps[2]!.message).toBe("the apply step failed");
    expect(report.steps[0]!.seconds).toBe(30);
    expect(cluster.objects.size).toBe(0);
  });

  it("takes an object as settled only once Ready was computed for its generation (captf writes no status.observedGeneration)", () => {
    const object = (readyGeneration: number | undefined) => ({
      apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
      kind: "TerraformMachine",
      metadata: { name: "m", namespace: "n", generation: 3 },
      status: {
        initialization: { provisioned: true },
        conditions: [{ type: "Ready", status: "True", reason: "Ready", observedGeneration: readyGeneration }],
      },
    });
    expect(settled(object(3))).toBeUndefined();
    expect(settled(object(2))).toBe("Ready's observedGeneration 2 < generation 3");
    expect(settled(object(undefined))).toBe("Ready's observedGeneration unset < generation 3");
  });

  it("fails the drift check of a module that drifts, and puts spec.drift back", async () => {
    const { cluster, report } = await run("machinepool", { drifts: true });
    expect(report.steps[2]).toMatchObject({ name: "drift-check", outcome: "failed" });
    expect(report.steps[2]!.message).toMatch(/saw DriftDetected=True\/DriftReported \(1 to change: terraform_data.instance\)$/);
    expect(cluster.writes).toContain('patch TerraformMachinePool/t-machinepool {"spec":{"drift":null}}');
    expect(outcomes(report).slice(3)).toEqual(["member-delete:skipped", "state-restore:skipped", "destroy:passed"]);
  });

  it("fails a destroy that leaves the state Secret behind, naming it", async () => {
    const { report } = await run("cluster", { leavesState: true });
    expect(report.steps[5]).toMatchObject({ name: "destroy", outcome: "failed" });
    expect(report.steps[5]!.message).toMatch(/saw left behind: Secret\/tfstate-default-sfx-t-cluster$/);
  });

  it("fails the restore when no backup is listed", async () => {
    const { report } = await run("machinepool", { noBackups: true });
    expect(report.steps[4]).toMatchObject({ name: "state-restore", outcome: "failed" });
    expect(report.steps[4]!.message).toMatch(/no state backup is listed in status.stateBackups/);
  });

  it("refuses to take over an object that exists already", async () => {
    const cluster = new FakeCluster();
    await cluster.create(lifecycleObjects(options("machine"))[1]!);
    const report = await runLifecycle(cluster, cluster.clock, options("machine"));
    expect(report.steps[0]!.message).toMatch(/TerraformMachine scratch\/t-machine exists already: name another with --name/);
  });
});

describe("the reports", () => {
  it("prints a line a step and, for a failed one, what it waited for, what it saw and the conditions", async () => {
    const { report } = await run("machine", { neverReady: "instance pending" });
    const text = lifecycleText(report);
    expect(text).toMatch(/^captf-module test: machine scratch\/TerraformMachine\/t-machine \(127.0.0.1:5000\/m@sha256:abc\)\n/);
    expect(text).toMatch(/FAIL apply +30 s  create the TerraformMachine and its Machine\n +waited 30 s for the first apply/);
    expect(text).toMatch(/ +conditions: Ready=False\/NotReady, InputsApplied=True\/InputsApplied\n/);
    expect(text).toMatch(/n\/s  input-change .*\n +not-supported: a TerraformMachine's/);
    expect(text).toMatch(/FAILED in \d+(\.\d)? s: 1 passed, 1 failed, 1 not supported, 3 skipped\n$/);
  });

  it("writes JUnit XML: a testcase a step, failures and skips with their message, the conditions seen, escaped", async () => {
    const { report } = await run("machine", { neverReady: 'a <"bad"> & worse' });
    const xml = lifecycleJunit(report);
    expect(xml).toMatch(/^<\?xml version="1.0" encoding="UTF-8"\?>\n<testsuites name="captf-module test" tests="6" failures="1"/);
    expect(xml).toContain('<testsuite name="captf-module test machine" tests="6" failures="1" errors="0" skipped="4"');
    expect(xml).toContain('<testcase classname="captf-module.machine" name="apply" time="30">');
    expect(xml).toContain('saw Ready=False/NotReady (a &lt;&quot;bad&quot;&gt; &amp; worse)" type="StepFailed"/>');
    expect(xml).toContain("<skipped message=\"not-supported: a TerraformMachine's");
    expect(xml).toContain("Ready: False/NotReady");
    expect(xml.match(/<testcase /g)).toHaveLength(6);
  });
});

describe("captf-module test", () => {
  const flags = (extra: Partial<TestFlags> = {}): TestFlags => ({
    namespace: "scratch",
    role: "machinepool",
    image: "r/m:v1",
    cluster: "dev",
    name: "t-machinepool",
    replicas: 1,
    driftInterval: 60,
    stepTimeout: 30,
    poll: 1,
    format: "text",
    ...extra,
  });

  it("names the flag a role needs, and refuses bad values, as usage errors", () => {
    expect(() => lifecycleOptions(flags({ cluster: undefined }), 0)).toThrow(/--role machinepool needs --cluster/);
    expect(() => lifecycleOptions(flags({ role: "cluster" }), 0)).toThrow(/--role cluster needs --identity/);
    expect(() => lifecycleOptions(flags({ replicas: 0 }), 0)).toThrow(/--replicas 0: at least 1/);
    expect(() => lifecycleOptions(flags({ changeVariables: "[1]" }), 0)).toThrow(/--change-variables: write a JSON object/);
    expect(() => lifecycleOptions(flags({ name: "Bad_Name" }), 0)).toThrow(/--name Bad_Name/);
    expect(lifecycleOptions(flags({ name: undefined }), 36 ** 3).name).toBe("captf-test-machinepool-1000");
  });

  it("connects with the kubeconfig given, writes the JUnit file and the JSON report, and exits 0 when every step passed", async () => {
    const dir = mkdtempSync(join(tmpdir(), "captf-module-test-"));
    try {
      const cluster = new FakeCluster();
      let stdout = "";
      const io = { stdout: { write: (t: string) => (stdout += t) }, stderr: { write: () => true }, cwd: dir, env: {} };
      let connected = "";
      const code = await runTest(
        io,
        flags({ kubeconfig: "kc.yaml", junit: "out.xml", format: "json" }),
        (file) => {
          connected = file;
          return cluster;
        },
        cluster.clock,
      );
      expect(code).toBe(0);
      expect(connected).toBe(join(dir, "kc.yaml"));
      expect((JSON.parse(stdout) as LifecycleReport).steps.map((s) => s.outcome)).toEqual(Array(6).fill("passed"));
      expect(readFileSync(join(dir, "out.xml"), "utf8")).toContain('failures="0"');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("exits 1 when a step failed", async () => {
    const cluster = new FakeCluster({ leavesState: true });
    const io = { stdout: { write: () => true }, stderr: { write: () => true }, cwd: tmpdir(), env: { KUBECONFIG: "/k" } };
    expect(await runTest(io, flags(), () => cluster, cluster.clock)).toBe(1);
  });
});
