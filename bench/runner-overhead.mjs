#!/usr/bin/env node
// The runner's overhead: `runner run --op apply` against the bare OpenTofu commands it runs
// (version -json, init, validate -json, apply -auto-approve) on the same module, in the same
// environment, alternating round by round so machine load hits all alike. Prints the median of
// each and the ratio (target: at most 1.15), then the bundle's cold start (`node runner.mjs
// version`). The runner runs `version -json` beside init; the steps-only baseline shows the
// ratio without counting it.
//
//   npx tsc -b && node bench/runner-overhead.mjs [--rounds 8]
//
// Imports the built dist/ of @captf/runner and @captf/testkit; the runner is measured twice:
// as the esbuild bundle Jobs run (built here from dist/) and as dist/ through bin/runner.js.
import { spawn } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";

const repo = new URL("..", import.meta.url).pathname;
const runnerDist = join(repo, "packages/runner/dist/entry.js");
// tools.js alone: the testkit index pulls in jest.
const testkitDist = join(repo, "packages/testkit/dist/tools.js");
if (!existsSync(runnerDist) || !existsSync(testkitDist)) {
  console.error("bench: packages are not built; run `npx tsc -b` first");
  process.exit(2);
}
const { values: flags } = parseArgs({ options: { rounds: { type: "string", default: "8" } } });
const rounds = Number(flags.rounds);
const { requireTool } = await import(testkitDist);
const tofu = requireTool("tofu");
const esbuild = await import(join(repo, "packages/runner/node_modules/esbuild/lib/main.js"));

const base = mkdtempSync(join(tmpdir(), "runner-overhead-"));
const bundle = join(base, "bundle", "runner.mjs");
await esbuild.build({
  entryPoints: [runnerDist],
  outfile: bundle,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  logLevel: "warning",
  banner: { js: 'import { createRequire as __captfCreateRequire } from "node:module"; const require = __captfCreateRequire(import.meta.url);' },
});

const root = {
  terraform: { backend: { kubernetes: {} } },
  variable: { name: { type: "string" }, generation: { type: "number" }, sleep_seconds: { type: "number" } },
  module: { role: { source: "../../module", name: "${var.name}", generation: "${var.generation}", sleep_seconds: "${var.sleep_seconds}" } },
  output: { provider_id: { value: "${module.role.provider_id}", sensitive: true } },
};

/** One module image's directories, laid out as in a Job, with its own local state. */
function fixture(name) {
  const dir = join(base, name);
  cpSync(join(repo, "packages/runner/src/testdata/module"), join(dir, "module"), { recursive: true });
  mkdirSync(join(dir, "config"), { recursive: true });
  writeFileSync(join(dir, "config", "main.tf.json"), JSON.stringify(root));
  writeFileSync(join(dir, "config", "terraform.tfvars.json"), JSON.stringify({ name: "bench", generation: 1, sleep_seconds: 0 }));
  writeFileSync(join(dir, "config", "backend_override.tf.json"), JSON.stringify({ terraform: { backend: { local: {} } } }));
  return dir;
}

function timed(command, args, options = {}) {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"], ...options });
    let stderr = "";
    child.stdout.resume();
    child.stderr.on("data", (chunk) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve(performance.now() - started) : reject(new Error(`${command} ${args.join(" ")} exited ${code}: ${stderr.slice(-2000)}`))));
  });
}

const env = { PATH: process.env.PATH };
function runnerApply(entry, dir) {
  return () =>
    timed(process.execPath, [
      entry, "run", "--op=apply", `--bin=${tofu}`, `--module=${join(dir, "module")}`, `--config=${join(dir, "config")}`,
      `--workdir=${join(dir, "work")}`, `--providers=${join(dir, "none")}`, `--result=${join(dir, "result.json")}`,
    ], { env });
}

/** What the runner runs, without the runner: its prepared root, environment and step arguments. */
function bareApply(dir, withVersion) {
  const work = join(dir, "work");
  const rootDir = join(work, "root");
  mkdirSync(join(work, "tmp"), { recursive: true });
  cpSync(join(dir, "config"), rootDir, { recursive: true });
  const stepEnv = { ...env, TF_DATA_DIR: join(work, ".terraform"), HOME: work, TMPDIR: join(work, "tmp") };
  const common = ["-input=false", "-no-color", "-lock-timeout=300s"];
  const steps = [["init", ...common], ["validate", "-json", "-no-color"], ["apply", ...common, "-auto-approve", "-var-file=terraform.tfvars.json"]];
  if (withVersion) steps.unshift(["version", "-json"]);
  return async () => {
    let total = 0;
    for (const args of steps) total += await timed(tofu, args, { cwd: rootDir, env: stepEnv });
    return total;
  };
}

const variants = {
  "runner (bundle)": runnerApply(bundle, fixture("bundle-case")),
  "runner (dist)": runnerApply(join(repo, "packages/runner/bin/runner.js"), fixture("dist-case")),
  "bare tofu": bareApply(fixture("bare-case"), true),
  "bare tofu, steps only": bareApply(fixture("bare-steps-case"), false),
};
const names = Object.keys(variants);
const samples = Object.fromEntries(names.map((name) => [name, []]));
for (const name of names) await variants[name](); // the first apply creates the resources
for (let round = 0; round < rounds; round++) {
  const order = names.map((_, index) => names[(index + round) % names.length]);
  for (const name of order) samples[name].push(await variants[name]());
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const bare = median(samples["bare tofu"]);
console.log(`runner apply (no changes) vs the bare tofu commands it runs, ${rounds} alternating rounds, medians:`);
for (const name of names) {
  const value = median(samples[name]);
  console.log(`  ${name.padEnd(22)} ${value.toFixed(0).padStart(6)} ms   ratio ${(value / bare).toFixed(3)}`);
}
const ratio = median(samples["runner (bundle)"]) / bare;
const stepsOnly = median(samples["runner (bundle)"]) / median(samples["bare tofu, steps only"]);
console.log(`bundle ratio ${ratio.toFixed(3)} (target <= 1.15: ${ratio <= 1.15 ? "met" : "missed"}); against the steps alone ${stepsOnly.toFixed(3)}`);

const coldStarts = { "node -e 0": [process.execPath, ["-e", "0"]], "node runner.mjs version": [process.execPath, [bundle, "version"]] };
const cold = Object.fromEntries(Object.keys(coldStarts).map((name) => [name, []]));
for (let round = 0; round < 10; round++) for (const [name, [command, args]] of Object.entries(coldStarts)) cold[name].push(await timed(command, args));
console.log("cold start, median of 10:");
for (const name of Object.keys(cold)) console.log(`  ${name.padEnd(24)} ${median(cold[name]).toFixed(0).padStart(5)} ms`);
rmSync(base, { recursive: true, force: true });
