// captf for module authors (issue 34): `captf-module init`, `build`, `push` and `test`, the installed command as a user
// runs it, take a new module of each role (a machine under Terraform too) through seed 004's lifecycle on the plane, and a
// module whose health never settles fails its test at the step named; the machine under OpenTofu is the book's guide,
// docs/module-authors.md's "From an empty directory" block run as written. The lifecycles run side by side.
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, it } from "@jest/globals";
import { requireTool } from "@captf/testkit/plane";
import { demoClusterName, demoNamespace } from "../demo-objects.js";
import type { TerraformObject } from "../objects.js";
import { infra, scenarioTimeout, type Scenario } from "./shared-plane.js";

const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
const moduleBin = join(repoRoot, "packages/captf-module/bin/captf-module.js");
const guidePage = join(repoRoot, "docs/module-authors.md");

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** The installed `captf-module` with `args`, in `cwd`, without blocking the others running side by side. */
function captfModule(args: readonly string[], cwd: string, kubeconfig: string): Promise<Run> {
  return new Promise((resolve) => {
    const env = { PATH: process.env.PATH ?? "", HOME: cwd, KUBECONFIG: kubeconfig, SOURCE_DATE_EPOCH: "0" };
    execFile(process.execPath, [moduleBin, ...args], { cwd, env, maxBuffer: 16 << 20 }, (error, stdout, stderr) =>
      resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

interface StepOutcome {
  name: string;
  outcome: string;
  message?: string;
}

interface Author {
  /** The objects' name, the module's directory and the image's repository. */
  name: string;
  role: "cluster" | "machine" | "machinepool";
  runtime: "tofu" | "terraform";
  /** Rewrites the generated module before the build (the broken one). */
  edit?: (dir: string) => void;
  /** `captf-module test` flags beyond the role's. */
  testFlags?: string[];
}

interface Authored {
  author: Author;
  digest: string;
  test: Run;
  steps: StepOutcome[];
}

/** One author's path from an empty directory: init, build, push, test; a command that fails ends it with its output. */
async function author(work: string, registry: string, kubeconfig: string, spec: Author): Promise<Authored> {
  const run = async (args: string[]) => {
    const result = await captfModule(args, work, kubeconfig);
    if (result.code !== 0 && args[0] !== "test") throw new Error(`captf-module ${args.join(" ")}: exit ${result.code}\n${result.stderr}`);
    return result;
  };
  const dir = join(work, spec.name);
  await run(["init", "--role", spec.role, dir, "--runtime", spec.runtime]);
  spec.edit?.(dir);
  const layout = join(work, `${spec.name}-image`);
  await run(["build", dir, "--runtime", requireTool(spec.runtime), "--out", layout, "--tag", "v0.1.0", "-o", "json"]);
  const destination = `${registry}/module-authors/${spec.name}:v0.1.0`;
  const push = await run(["push", `${layout}:v0.1.0`, destination, "--plain-http", "-o", "json"]);
  const digest = (JSON.parse(push.stdout) as { digest: string }).digest;
  const image = `${registry}/module-authors/${spec.name}@${digest}`;
  const roleFlags = spec.role === "cluster" ? ["--identity", "noop"] : ["--cluster", demoClusterName];
  const junit = join(work, `${spec.name}.xml`);
  const test = await run([
    "test",
    ...["--namespace", demoNamespace, "--role", spec.role, "--image", image, "--name", spec.name, ...roleFlags],
    ...["--drift-interval", "5", "--poll", "2", "--junit", junit, "-o", "json", ...(spec.testFlags ?? [])],
  ]);
  const report = JSON.parse(test.stdout || "{}") as { steps?: StepOutcome[] };
  expect(readFileSync(junit, "utf8")).toContain(`<testsuite name="captf-module test ${spec.role}`);
  return { author: spec, digest, test, steps: report.steps ?? [] };
}

/** A machine whose health stays pending: Ready never comes, so the first apply cannot settle. */
function healthNeverSettles(dir: string): void {
  const outputs = join(dir, "outputs.tf");
  const text = readFileSync(outputs, "utf8");
  const pending = text.replace(/state(\s*)= "running"/, 'state$1= "pending"');
  if (pending === text) throw new Error(`no health state "running" in ${outputs} to make pending`);
  writeFileSync(outputs, pending);
}

/** The guide's one shell block: the first after its "From an empty directory" heading. */
function guideBlock(markdown: string): string {
  const section = markdown.slice(markdown.indexOf("## From an empty directory"));
  const block = /^```sh\n([\s\S]*?)^```$/m.exec(section);
  if (!block) throw new Error(`${guidePage}: no sh block under "From an empty directory"`);
  return block[1]!;
}

/** The block with step 0's settings (`NAME=value` lines, `export` or not) set to `settings`; every one must be set. */
function withSettings(block: string, settings: Readonly<Record<string, string>>): string {
  const named: string[] = [];
  const script = block.replace(/^(export )?([A-Z_]+)=.*$/gm, (_line, exported: string | undefined, name: string) => {
    named.push(name);
    if (!(name in settings)) throw new Error(`the guide sets ${name}, which the test does not know`);
    return `${exported ?? ""}${name}=${JSON.stringify(settings[name])}`;
  });
  expect(named.sort()).toEqual(Object.keys(settings).sort());
  return script;
}

/**
 * The guide's commands, as written, from an empty directory: `npx` finds captf-module and tfcapi-lint where it would have
 * installed them (a node_modules beside the directory, the workspace's packages), and never asks the npm registry.
 */
async function followGuide(work: string, registry: string, kubeconfig: string): Promise<Run & { junit: string }> {
  const installed = join(work, "npx");
  for (const [name, bin] of [
    ["captf-module", "bin/captf-module.js"],
    ["tfcapi-lint", "bin/tfcapi-lint.js"],
  ] as const) {
    const packageDir = join(repoRoot, "packages", name === "tfcapi-lint" ? "lint" : name);
    mkdirSync(join(installed, "node_modules/.bin"), { recursive: true });
    symlinkSync(packageDir, join(installed, "node_modules", name));
    symlinkSync(join("..", name, bin), join(installed, "node_modules/.bin", name));
  }
  const empty = join(installed, "guide");
  mkdirSync(empty);
  const script = withSettings(guideBlock(readFileSync(guidePage, "utf8")), {
    REGISTRY: `${registry}/module-authors`,
    PLAIN_HTTP: "--plain-http",
    NAMESPACE: demoNamespace,
    CLUSTER: demoClusterName,
    KUBECONFIG: kubeconfig,
  });
  const env = {
    PATH: [dirname(requireTool("tofu")), process.env.PATH ?? ""].join(":"),
    HOME: work,
    npm_config_offline: "true",
    npm_config_update_notifier: "false",
    npm_config_cache: join(work, "npm-cache"),
    CHECKPOINT_DISABLE: "1",
  };
  const run = await new Promise<Run>((resolve) => {
    execFile("bash", ["-euo", "pipefail", "-c", script], { cwd: empty, env, maxBuffer: 16 << 20 }, (error, stdout, stderr) =>
      resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
  const junitFile = join(empty, "my-machine", "test.xml");
  return { ...run, junit: run.code === 0 ? readFileSync(junitFile, "utf8") : "" };
}

/**
 * How long the broken module's test waits for its first apply to settle, which it never does: the scenario's floor. Its
 * apply Job may queue behind the other paths' (the plane runs a few Jobs at a time, each about 10 s), and the wait must
 * outlast that to see the module's own health.
 */
const brokenStepTimeout = 180;

const authors: Author[] = [
  { name: "author-cluster", role: "cluster", runtime: "tofu" },
  { name: "author-machine-tf", role: "machine", runtime: "terraform" },
  { name: "author-pool", role: "machinepool", runtime: "tofu" },
  {
    name: "author-broken",
    role: "machine",
    runtime: "tofu",
    edit: healthNeverSettles,
    testFlags: ["--step-timeout", String(brokenStepTimeout)],
  },
];

export const moduleAuthor: Scenario = (shared) => {
  it(
    "takes a new module of each role (a machine under Terraform too, and one by the book's guide as written) from " +
      "captf-module init through build, push and the lifecycle test, side by side, and fails a module whose health never " +
      "settles at its first apply",
    async () => {
      const { plane, list } = shared;
      const work = mkdtempSync(join(tmpdir(), "captf-e2e-module-author-"));
      try {
        const guided = followGuide(work, plane.images.registry, plane.kubeconfigPath);
        // Every path runs to its end before any is judged: a lifecycle cut short would leave its objects to the next scenario.
        const settled = await Promise.allSettled(authors.map((spec) => author(work, plane.images.registry, plane.kubeconfigPath, spec)));
        const guide = await guided;
        const results = settled.map((result) => {
          if (result.status === "rejected") throw result.reason;
          return result.value;
        });
        // The guide: every command as the book writes it passed, lint and the lifecycle among them.
        expect([guide.code, guide.stderr.split("\n").slice(-20).join("\n")]).toEqual([0, expect.any(String)]);
        expect(guide.stdout).toContain("0 error(s), 0 warning(s)");
        expect(guide.stdout).toMatch(/^passed in [\d.]+ s: 5 passed, 0 failed, 1 not supported, 0 skipped$/m);
        expect(guide.junit).toMatch(/<testsuite name="captf-module test machine" tests="6" failures="0"/);
        const outcomes = (result: Authored) => Object.fromEntries(result.steps.map((step) => [step.name, step.outcome]));
        const byName = Object.fromEntries(results.map((result) => [result.author.name, result]));
        for (const name of ["author-cluster", "author-machine-tf", "author-pool"]) {
          const result = byName[name]!;
          const failed = result.steps.filter((step) => step.outcome === "failed");
          expect([name, result.test.code, result.test.stderr, failed]).toEqual([name, 0, "", []]);
          expect(result.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
        }
        // A cluster has no member to delete and no input change without --change-variables; a machine's inputs are immutable.
        expect(outcomes(byName["author-cluster"]!)).toEqual({
          apply: "passed",
          "input-change": "skipped",
          "drift-check": "passed",
          "member-delete": "skipped",
          "state-restore": "passed",
          destroy: "passed",
        });
        expect(outcomes(byName["author-machine-tf"]!)).toEqual({
          apply: "passed",
          "input-change": "not-supported",
          "drift-check": "passed",
          "member-delete": "passed",
          "state-restore": "passed",
          destroy: "passed",
        });
        expect(outcomes(byName["author-pool"]!)).toEqual({
          apply: "passed",
          "input-change": "passed",
          "drift-check": "passed",
          "member-delete": "passed",
          "state-restore": "passed",
          destroy: "passed",
        });

        const broken = byName["author-broken"]!;
        expect(broken.test.code).toBe(1);
        expect(outcomes(broken)).toEqual({
          apply: "failed",
          "input-change": "not-supported",
          "drift-check": "skipped",
          "member-delete": "skipped",
          "state-restore": "skipped",
          destroy: "passed",
        });
        const failedApply = broken.steps.find((step) => step.name === "apply")!;
        expect(failedApply.message).toMatch(
          new RegExp(`^waited ${brokenStepTimeout} s for the first apply: Ready=True of the current generation, `),
        );
        expect(failedApply.message).toContain("; saw Ready=False/NotReady (InfrastructureHealthy is False (InstancePending))");

        // Nothing of the authors' objects is left for the scenarios after this one (the guide's test names its own).
        const ours = (name: string) => name.startsWith("author-") || name.startsWith("captf-test-");
        const left: string[] = [];
        for (const plural of ["terraformclusters", "terraformmachines", "terraformmachinepools"])
          for (const object of await list<TerraformObject>(infra, plural))
            if (ours(object.metadata.name)) left.push(`${plural}/${object.metadata.name}`);
        expect(left).toEqual([]);
      } finally {
        rmSync(work, { recursive: true, force: true });
      }
    },
    // Five lifecycles share the plane's kubelet, whose two Pod slots hold the manager and one Job: about 20 Jobs in a row.
    2 * scenarioTimeout,
  );
};
