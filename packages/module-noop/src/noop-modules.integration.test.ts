// The no-op modules under the real runtimes: each module's own `tofu test`
// file (OpenTofu), then, under OpenTofu and Terraform, the generated root that
// calls it as the runner would (with a local backend in place of the
// kubernetes one), applied and decoded against the contract.
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, sep } from "node:path";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import {
  commonInputs,
  decodeOutputs,
  kindOfRole,
  validateDocument,
  type ClusterInputs,
  type MachineInputs,
  type MachinePoolInputs,
  type Role,
  type RoleInputs,
} from "@captf/contract";
import { renderGeneratedRoot } from "@captf/render";
import { describeWithTools, moduleRuntimes, requireTool, runCommand, runtimeNames, tofuEnvironment, type CommandRun } from "@captf/testkit";
import { noopModuleDirectory, noopModuleTestFile } from "./index.js";

const timeout = 120_000;

type Run = CommandRun;

/** Runs a tofu command in `cwd` with `env` (the testkit's runner, shaped for this suite's calls). */
const run = (command: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv): Promise<Run> =>
  runCommand(command, args, { cwd, env });

/** Copies a role's module to `dest`, without any `.terraform` directory and, unless asked, without its tests. */
function copyModule(role: Role, dest: string, withTests: boolean): void {
  const source = noopModuleDirectory(role);
  cpSync(source, dest, {
    recursive: true,
    filter: (path) => {
      const first = relative(source, path).split(sep)[0];
      return first !== ".terraform" && (withTests || first !== "tests");
    },
  });
}

/** Fails with the command's output when it did not exit with `expected`. */
function expectExit(result: Run, expected: number, what: string): void {
  if (result.code !== expected) {
    throw new Error(`${what} exited ${result.code}, expected ${expected}\n--- stdout\n${result.stdout}\n--- stderr\n${result.stderr}`);
  }
}

const cluster = { name: "c1", namespace: "team-a" };
// A canary that must never reach the state or the apply's output.
const bootstrapText = "#cloud-config\n# captf-canary-5f0c2a\n";
const bootstrapData = Buffer.from(bootstrapText, "utf8").toString("base64");
const clusterExports = { backend_id: "noop-backend-0d6f" };

function clusterInputs(): ClusterInputs {
  return {
    ...commonInputs({ cluster, kind: kindOfRole.cluster, name: "c1", namespace: "team-a" }),
    control_plane_endpoint: null,
    kubernetes_version: "v1.36.2",
    control_plane_initialized: false,
    cluster_network: { pods: ["10.244.0.0/16"], services: ["10.96.0.0/12"], service_domain: null, api_server_port: 6443 },
  };
}

function machineInputs(): MachineInputs {
  return {
    ...commonInputs({ cluster, kind: kindOfRole.machine, name: "c1-md-0-abcde", namespace: "team-a", template: "c1-md-0" }),
    captf_cluster_outputs: clusterExports,
    machine_name: "c1-md-0-xyz12",
    bootstrap_data: bootstrapData,
    bootstrap_format: "cloud-config",
    failure_domain: "fd1",
    kubernetes_version: "v1.36.2",
    control_plane: false,
  };
}

function machinePoolInputs(): MachinePoolInputs {
  return {
    ...commonInputs({ cluster, kind: kindOfRole.machinepool, name: "mp", namespace: "team-a" }),
    captf_cluster_outputs: clusterExports,
    machinepool_name: "mp",
    replicas: 3,
    bootstrap_data: bootstrapData,
    bootstrap_format: "cloud-config",
    failure_domains: [],
    cluster_failure_domains: ["fd1"],
    kubernetes_version: null,
    node_labels: { "node.kubernetes.io/pool": "mp" },
    autoscaling: { enabled: false, min: 0, max: 0 },
  };
}

interface RoleCase<R extends Role> {
  /** Names the case and its directory. */
  name: string;
  role: R;
  inputs: () => RoleInputs[R];
  /** The decoded values the contract outputs must have. */
  expected: Record<string, unknown>;
}

const cases: RoleCase<Role>[] = [
  {
    name: "cluster",
    role: "cluster",
    inputs: clusterInputs,
    expected: {
      control_plane_endpoint: { host: "noop-c1.invalid", port: 6443 },
      failure_domains: [{ name: "fd1", control_plane: true, attributes: {} }],
      health: { state: "running", healthy: true, message: null, reasons: [] },
    },
  },
  {
    name: "machine",
    role: "machine",
    inputs: machineInputs,
    expected: {
      provider_id: "noop:///team-a/c1-md-0-xyz12",
      addresses: [{ type: "InternalIP", address: "10.0.0.1" }],
      failure_domain: "fd1",
      interruptible: false,
      health: { state: "running", healthy: true, message: null, reasons: [] },
    },
  },
  {
    name: "machinepool",
    role: "machinepool",
    inputs: machinePoolInputs,
    expected: {
      provider_id: "noop-group:///team-a/mp",
      provider_id_list: ["noop:///team-a/mp/0", "noop:///team-a/mp/1", "noop:///team-a/mp/2"],
      replicas: 3,
      health: { state: "running", healthy: true, message: null, reasons: [] },
    },
  },
  {
    name: "machinepool-autoscaled",
    role: "machinepool",
    inputs: () => ({ ...machinePoolInputs(), replicas: 2, autoscaling: { enabled: true, min: 1, max: 4 } }),
    expected: {
      provider_id_list: ["noop:///team-a/mp/0", "noop:///team-a/mp/1"],
      replicas: 2,
      health: { state: "running", healthy: true, message: null, reasons: [] },
    },
  },
];

const roles: readonly Role[] = ["cluster", "machine", "machinepool"];

/** A temp base directory for a suite, and one directory per case holding `cli.tfrc` (empty) and its runs. */
function caseDirectories(prefix: string): (name: string) => { dir: string; env: NodeJS.ProcessEnv } {
  let base = "";
  beforeAll(() => {
    base = mkdtempSync(join(tmpdir(), prefix));
  });
  afterAll(() => {
    if (base) rmSync(base, { recursive: true, force: true });
  });
  return (name) => {
    const dir = join(base, name);
    mkdirSync(dir, { recursive: true });
    const cliConfig = join(dir, "cli.tfrc");
    writeFileSync(cliConfig, "");
    return { dir, env: tofuEnvironment(cliConfig) };
  };
}

// Each module's own tests: `tofu test` is OpenTofu's (Terraform 1.5.7 has no `terraform test`).
describeWithTools(["tofu"], "no-op modules under OpenTofu", () => {
  let tofu = "";
  beforeAll(() => {
    tofu = requireTool("tofu");
  });
  const caseDirectory = caseDirectories("captf-module-noop-");

  for (const role of roles) {
    it(
      `${role}: the module initializes, validates and passes its tofu tests`,
      async () => {
        const { dir, env } = caseDirectory(role);
        const unit = join(dir, "unit");
        copyModule(role, unit, true);

        expectExit(await run(tofu, ["init", "-input=false", "-no-color"], unit, env), 0, "tofu init");
        expectExit(await run(tofu, ["validate", "-no-color"], unit, env), 0, "tofu validate");
        const test = await run(tofu, ["test", "-no-color"], unit, env);
        expectExit(test, 0, "tofu test");

        const runs = readFileSync(join(unit, noopModuleTestFile(role)), "utf8").match(/^run "/gm)?.length ?? 0;
        expect(runs).toBeGreaterThan(0);
        const summary = /Success! (\d+) passed, (\d+) failed\./.exec(test.stdout);
        expect(summary?.slice(1)).toEqual([String(runs), "0"]);
      },
      timeout,
    );
  }
});

// The generated root that calls each module as the runner would, under each runtime.
for (const runtime of runtimeNames) {
  describeWithTools([runtime], `no-op modules' generated roots under ${moduleRuntimes[runtime].displayName}`, () => {
    let binary = "";
    beforeAll(() => {
      binary = requireTool(runtime);
    });
    const caseDirectory = caseDirectories(`captf-module-noop-${runtime}-`);

    for (const { name, role, inputs, expected } of cases) {
      it(
        `${name}: the generated root applies, its outputs decode as OutputsValid, and a second plan changes nothing`,
        async () => {
          const values = inputs();
          const validation = validateDocument(role, "inputs", values);
          expect(validation.errors).toEqual([]);

          // The image layout: the module at <dir>/module, the generated root at <dir>/work/root.
          const { dir, env } = caseDirectory(name);
          const moduleDir = join(dir, "module");
          const root = join(dir, "work", "root");
          copyModule(role, moduleDir, false);
          mkdirSync(root, { recursive: true });
          const generated = renderGeneratedRoot(role, values);
          writeFileSync(join(root, "main.tf.json"), generated["main.tf.json"]);
          writeFileSync(join(root, "terraform.tfvars.json"), generated["terraform.tfvars.json"]);
          // The runner's kubernetes backend is out of scope here: an _override file swaps in a local one.
          writeFileSync(join(root, "backend_override.tf.json"), JSON.stringify({ terraform: { backend: { local: {} } } }) + "\n");

          expectExit(await run(binary, ["init", "-input=false", "-no-color"], root, env), 0, `${runtime} init`);
          const apply = await run(binary, ["apply", "-auto-approve", "-input=false", "-no-color"], root, env);
          expectExit(apply, 0, `${runtime} apply`);

          const output = await run(binary, ["output", "-json", "-no-color"], root, env);
          expectExit(output, 0, `${runtime} output`);
          const outputs = JSON.parse(output.stdout) as Record<string, { value: unknown; sensitive: boolean }>;
          const plain = Object.fromEntries(Object.entries(outputs).map(([outputName, entry]) => [outputName, entry.value]));

          const decoded = decodeOutputs(role, plain, values);
          expect(decoded.problems).toEqual([]);
          expect(decoded.reason).toBe("OutputsValid");
          for (const [outputName, value] of Object.entries(expected)) {
            expect({ [outputName]: plain[outputName] }).toEqual({ [outputName]: value });
          }
          if (role === "cluster") {
            expect(plain.exports).toEqual({ backend_id: expect.stringMatching(/^noop-backend-[0-9a-f-]{36}$/) });
          }
          if (role === "machinepool") {
            expect(plain.instances).toHaveLength((expected.provider_id_list as unknown[]).length);
          }

          // The join token stays out of the state and the apply's output.
          const state = readFileSync(join(root, "terraform.tfstate"), "utf8");
          for (const secret of ["captf-canary-5f0c2a", bootstrapData]) {
            expect(state.includes(secret)).toBe(false);
            expect(apply.stdout.includes(secret) || apply.stderr.includes(secret)).toBe(false);
          }

          const plan = await run(binary, ["plan", "-detailed-exitcode", "-input=false", "-no-color"], root, env);
          expectExit(plan, 0, `${runtime} plan -detailed-exitcode (a second plan must find no changes)`);
        },
        timeout,
      );
    }
  });
}
