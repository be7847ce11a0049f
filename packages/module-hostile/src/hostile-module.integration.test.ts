// The hostile machine module on this host: its attack table, the linter, and its generated root
// applied and destroyed under each runtime as the runner would (a local backend in place of the
// kubernetes one). Here no broker and no API server answer, so the API attempts are errors; the
// credential search runs over a planted directory, where it must find the planted token. What the
// attacks achieve in a real Job is the drill's and the e2e's to show.
import { createRequire } from "node:module";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { main as lint } from "tfcapi-lint";
import { commonInputs, decodeOutputs, kindOfRole, type MachineInputs } from "@captf/contract";
import type { RunResult } from "@captf/contract/run-result";
import { renderGeneratedRoot } from "@captf/render";
import {
  copyModuleForRun,
  describeWithTools,
  moduleRuntimes,
  requireTool,
  runCommand,
  runtimeNames,
  tofuEnvironment,
  type CommandRun,
} from "@captf/testkit";
import { hostileModuleDirectory, type Attempt, type PhaseReport } from "./index.js";

interface AttackModule {
  apiAttemptTable(
    targets: Record<string, unknown>,
    phase: string,
  ): { attempt: string; target: string; method: string; path: string; body?: unknown; listed?: string }[];
  isServiceAccountToken(token: string): boolean;
  outcomeOfAnswer(answer: { status?: number; body?: string; error?: string }, listed?: string): { outcome: string; detail: string };
  forgedSeconds: number;
}
const attack = createRequire(import.meta.url)(join(hostileModuleDirectory, "attack.cjs")) as AttackModule;

const timeout = 180_000;
const jwt = (claims: Record<string, unknown>) =>
  ["eyJhbGciOiJSUzI1NiJ9", Buffer.from(JSON.stringify(claims)).toString("base64url"), "c2lnbmF0dXJlLW5vdC1jaGVja2Vk"].join(".");
const plantedToken = jwt({
  iss: "https://kubernetes.default.svc",
  sub: "system:serviceaccount:team-a:planted",
  "kubernetes.io": { namespace: "team-a" },
});
const targets = {
  namespace: "team-a",
  cluster: "c1",
  victim: {
    apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
    kind: "TerraformMachine",
    name: "c1-victim",
    uid: "00000000-0000-4000-8000-000000000001",
    stateSuffix: "0123456789abcdef-m",
  },
  self: { name: "c1-hostile", stateSuffix: "fedcba9876543210-m" },
  victimRunSecret: "captf-run-captf-m-c1-victim-apply-a1-abcdef",
  credentialMirror: "captf-creds-noop",
};

describe("attack.cjs", () => {
  it("aims at every target of the drill, with real writes (no dry run)", () => {
    const table = attack.apiAttemptTable(targets, "apply");
    expect(new Set(table.map((entry) => entry.target))).toEqual(
      new Set([
        "kubeconfig-secret",
        "ca-secret",
        "victim-state",
        "victim-run-secret",
        "credential-mirror",
        "victim-lock",
        "pod",
        "job",
        "victim-event",
      ]),
    );
    const methods = (target: string) => new Set(table.filter((entry) => entry.target === target).map((entry) => entry.method));
    expect(methods("victim-state")).toEqual(new Set(["GET", "PUT", "DELETE", "POST"]));
    expect(methods("victim-lock")).toEqual(new Set(["PUT", "DELETE", "POST"]));
    for (const name of [
      "c1-kubeconfig",
      "c1-ca",
      "tfstate-default-0123456789abcdef-m",
      targets.victimRunSecret,
      targets.credentialMirror,
    ]) {
      expect(table.filter((entry) => entry.listed === name).length).toBe(2);
      expect(table.some((entry) => entry.method === "GET" && entry.path.endsWith(`/secrets/${name}`))).toBe(true);
    }
    expect(table.filter((entry) => /dryRun/i.test(entry.path))).toEqual([]);
  });

  it("tells ServiceAccount tokens from other JWTs", () => {
    expect(attack.isServiceAccountToken(plantedToken)).toBe(true);
    expect(attack.isServiceAccountToken(jwt({ sub: "system:serviceaccount:demo:captf-runner" }))).toBe(true);
    expect(attack.isServiceAccountToken(jwt({ iss: "https://accounts.example", sub: "someone" }))).toBe(false);
    expect(attack.isServiceAccountToken("eyJ.not-a-jwt")).toBe(false);
  });

  it("counts every answer past authorization as a success, 401 and 403 as refusals", () => {
    const answer = (status: number, body: unknown = {}) => ({ status, body: JSON.stringify(body) });
    expect(attack.outcomeOfAnswer(answer(403, { message: "forbidden" })).outcome).toBe("refused");
    expect(attack.outcomeOfAnswer(answer(401)).outcome).toBe("refused");
    for (const status of [200, 201, 404, 409, 422]) expect(attack.outcomeOfAnswer(answer(status)).outcome).toBe("succeeded");
    expect(attack.outcomeOfAnswer(answer(502)).outcome).toBe("error");
    expect(attack.outcomeOfAnswer({ error: "ECONNREFUSED" }).outcome).toBe("error");
    // A list reached its target only when the target is in it (the broker narrows lists).
    expect(attack.outcomeOfAnswer(answer(200, { items: [{ metadata: { name: "mine" } }] }), "c1-kubeconfig").outcome).toBe("refused");
    expect(attack.outcomeOfAnswer(answer(200, { items: [{ metadata: { name: "c1-kubeconfig" } }] }), "c1-kubeconfig").outcome).toBe(
      "succeeded",
    );
  });
});

describe("the hostile machine module", () => {
  it("passes tfcapi-lint module --role machine --strict", async () => {
    let stdout = "";
    let stderr = "";
    const code = await lint(["module", hostileModuleDirectory, "--role", "machine", "--strict"], {
      stdout: { write: (text: string) => (stdout += text) },
      stderr: { write: (text: string) => (stderr += text) },
    });
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
    expect(stdout).toMatch(/^0 error\(s\), 0 warning\(s\)/m);
  });
});

describeWithTools(["tofu"], "the hostile machine module under OpenTofu", () => {
  it(
    "initializes, validates and passes its tofu tests",
    async () => {
      const dir = mkdtempSync(join(tmpdir(), "captf-module-hostile-unit-"));
      try {
        copyModuleForRun(hostileModuleDirectory, dir);
        writeFileSync(join(dir, "cli.tfrc"), "");
        const env = tofuEnvironment(join(dir, "cli.tfrc"));
        const tofu = requireTool("tofu");
        for (const args of [
          ["init", "-input=false", "-no-color"],
          ["validate", "-no-color"],
        ])
          expectExit(await runCommand(tofu, args, { cwd: dir, env }), `tofu ${args[0]}`);
        const test = await runCommand(tofu, ["test", "-no-color"], { cwd: dir, env });
        expectExit(test, "tofu test");
        expect(/Success! (\d+) passed, (\d+) failed\./.exec(test.stdout)?.slice(1)).toEqual(["2", "0"]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
    timeout,
  );
});

/** A loopback server collecting the reports attack.cjs POSTs. */
async function startReportServer(): Promise<{ url: string; reports: PhaseReport[]; server: Server }> {
  const reports: PhaseReport[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      reports.push(JSON.parse(Buffer.concat(chunks).toString("utf8")) as PhaseReport);
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/report`, reports, server };
}

function expectExit(result: CommandRun, what: string): void {
  if (result.code !== 0) throw new Error(`${what} exited ${result.code}\n--- stdout\n${result.stdout}\n--- stderr\n${result.stderr}`);
}

for (const runtime of runtimeNames) {
  describeWithTools([runtime], `the hostile machine's generated root under ${moduleRuntimes[runtime].displayName}`, () => {
    let base = "";
    let reports: Awaited<ReturnType<typeof startReportServer>>;
    beforeAll(async () => {
      base = mkdtempSync(join(tmpdir(), `captf-module-hostile-${runtime}-`));
      reports = await startReportServer();
    });
    afterAll(async () => {
      // Removing the termination file ends the forger's leftover process.
      if (base) rmSync(base, { recursive: true, force: true });
      await new Promise((resolve) => reports?.server.close(resolve));
    });

    it(
      "applies with OutputsValid and its attempts as an output, forges the result file, and attacks again at destroy",
      async () => {
        const binary = requireTool(runtime);
        const moduleDir = join(base, "module");
        const root = join(base, "work", "root");
        const planted = join(base, "planted", "var", "run", "secrets");
        const terminationLog = join(base, "termination-log");
        copyModuleForRun(hostileModuleDirectory, moduleDir);
        mkdirSync(root, { recursive: true });
        mkdirSync(planted, { recursive: true });
        writeFileSync(join(planted, "token"), plantedToken);
        writeFileSync(terminationLog, "");

        const inputs: MachineInputs = {
          ...commonInputs({
            cluster: { name: "c1", namespace: "team-a" },
            kind: kindOfRole.machine,
            name: "c1-hostile",
            namespace: "team-a",
            template: "c1-md-hostile",
          }),
          captf_cluster_outputs: {},
          machine_name: "c1-md-hostile-x1",
          bootstrap_data: Buffer.from("#cloud-config\n").toString("base64"),
          bootstrap_format: "cloud-config",
          // A requested domain, as the no-op machine's suite has it: a null output is absent from the output list.
          failure_domain: "fd1",
          kubernetes_version: null,
          control_plane: false,
        };
        const userVariables = {
          hostile_targets: { value: JSON.stringify(targets), sensitive: false },
          report_url: { value: reports.url, sensitive: false },
          node_binary: { value: process.execPath, sensitive: false },
        };
        const generated = renderGeneratedRoot("machine", inputs, userVariables);
        writeFileSync(join(root, "main.tf.json"), generated["main.tf.json"]);
        writeFileSync(join(root, "terraform.tfvars.json"), generated["terraform.tfvars.json"]);
        writeFileSync(join(root, "backend_override.tf.json"), JSON.stringify({ terraform: { backend: { local: {} } } }) + "\n");
        writeFileSync(join(base, "cli.tfrc"), "");
        const env = tofuEnvironment(join(base, "cli.tfrc"));
        delete env.KUBERNETES_SERVICE_HOST;
        Object.assign(env, { HOSTILE_SCAN_ROOTS: join(base, "planted"), HOSTILE_TERMINATION_LOG: terminationLog });
        const run = (args: string[]) => runCommand(binary, args, { cwd: root, env });

        expectExit(await run(["init", "-input=false", "-no-color"]), `${runtime} init`);
        expectExit(
          await run(["apply", "-auto-approve", "-input=false", "-no-color", "-var-file=terraform.tfvars.json"]),
          `${runtime} apply`,
        );
        const output = await run(["output", "-json", "-no-color"]);
        expectExit(output, `${runtime} output`);
        const outputs = Object.fromEntries(
          Object.entries(JSON.parse(output.stdout) as Record<string, { value: unknown }>).map(([name, entry]) => [name, entry.value]),
        );
        const decoded = decodeOutputs("machine", outputs, inputs);
        expect(decoded.problems).toEqual([]);
        expect(decoded.reason).toBe("OutputsValid");

        // The apply's report: POSTed, and read back from the file it wrote into the module's state.
        const applied = reports.reports.find((report) => report.phase === "provisioner-apply");
        expect(applied).toBeDefined();
        // The root re-exports contract outputs only: the module's own output is read through the module's state.
        const show = await run(["show", "-json", "-no-color"]);
        expectExit(show, `${runtime} show`);
        const module = (
          JSON.parse(show.stdout) as {
            values: { root_module: { child_modules: { resources: { address: string; values: Record<string, unknown> }[] }[] } };
          }
        ).values.root_module.child_modules[0]!;
        const report = module.resources.find((resource) => resource.address.endsWith("data.terraform_remote_state.report"))!;
        expect(JSON.parse((report.values.outputs as { attempts_json: string }).attempts_json)).toEqual(applied!.attempts);

        const byAttempt = (name: RegExp) => applied!.attempts.filter((entry: Attempt) => name.test(entry.attempt));
        expect(byAttempt(/^scan /)).toEqual([
          expect.objectContaining({
            via: "filesystem",
            target: "service-account-token",
            outcome: "succeeded",
            detail: expect.stringContaining("system:serviceaccount:team-a:planted"),
          }),
        ]);
        expect(
          applied!.attempts.filter((entry) => entry.via === "direct" || entry.via === "broker").every((entry) => entry.outcome === "error"),
        ).toBe(true);
        expect(applied!.attempts.filter((entry) => entry.observed).map((entry) => entry.attempt)).toHaveLength(2);
        for (const entry of applied!.attempts) expect(JSON.stringify(entry)).not.toContain(plantedToken);

        // The forged result is in the file, and the process left behind puts it back over another write.
        expect((JSON.parse(readFileSync(terminationLog, "utf8")) as RunResult).steps[0]?.seconds).toBe(attack.forgedSeconds);
        writeFileSync(terminationLog, '{"the":"runner\'s own result"}');
        await new Promise((resolve) => setTimeout(resolve, 200));
        expect((JSON.parse(readFileSync(terminationLog, "utf8")) as RunResult).steps[0]?.seconds).toBe(attack.forgedSeconds);
        rmSync(terminationLog);

        // Later Jobs run in a fresh work directory, without the apply's report file: nothing to change, and a destroy that works.
        rmSync(join(root, "hostile-report.tfstate"));
        const plan = await run(["plan", "-detailed-exitcode", "-input=false", "-no-color", "-var-file=terraform.tfvars.json"]);
        expect({ code: plan.code, stderr: plan.stderr }).toEqual({ code: 0, stderr: "" });
        expectExit(
          await run(["destroy", "-auto-approve", "-input=false", "-no-color", "-var-file=terraform.tfvars.json"]),
          `${runtime} destroy`,
        );
        expect(reports.reports.map((entry) => entry.phase)).toEqual(["provisioner-apply", "provisioner-destroy"]);
        expect(existsSync(terminationLog)).toBe(false);
      },
      timeout,
    );
  });
}
