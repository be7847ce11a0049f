#!/usr/bin/env node
// Drill: 10,000 mutated modules (truncated tokens, bad UTF-8, deep nesting, huge files, flipped
// bytes, spliced text) through tfcapi-lint's CLI entry in-process, then a handful through the real
// binary: no crash, exit 2 with a file:line:col wherever the module does not parse.
// Run `npx tsc -b` first. Usage: node bench/drills/fuzz-modules.mjs [--runs N] [--seed S]
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { mutatedModule, mutatedModuleProperty, seedModules, verdictProblem, writeMutatedModule } from "../lib/mutated-modules.mjs";
import { drillOptions, fc, runProperty } from "../lib/run-property.mjs";

const repo = new URL("../..", import.meta.url).pathname;
const { main } = await import(pathToFileURL(join(repo, "packages/lint/dist/index.js")).href);
const seeds = seedModules(join(repo, "packages/lint/testdata"));
const dir = mkdtempSync(join(tmpdir(), "captf-fuzz-modules-"));
const options = drillOptions();

const tally = new Map();
let held = await runProperty(
  "tfcapi-lint module (in-process)",
  mutatedModuleProperty(fc, { main, seeds, dir: join(dir, "module") }, tally),
  options,
  tally,
);

// A handful through the real binary: its exit code and its text report's file:line:col.
const samples = fc.sample(mutatedModule(fc), { numRuns: 20, seed: options.seed });
let binaryFailures = 0;
const started = performance.now();
for (const module of samples) {
  const { files, neverParses } = writeMutatedModule(join(dir, "module"), seeds, module);
  const json = spawnSync(
    process.execPath,
    [join(repo, "packages/lint/bin/tfcapi-lint.js"), "module", join(dir, "module"), "--role", module.role, "--format", "json"],
    { encoding: "utf8", maxBuffer: 1 << 28 },
  );
  const text = spawnSync(
    process.execPath,
    [join(repo, "packages/lint/bin/tfcapi-lint.js"), "module", join(dir, "module"), "--role", module.role],
    { encoding: "utf8", maxBuffer: 1 << 28 },
  );
  const problem =
    verdictProblem(json.status, json.stdout, files, neverParses) ??
    (text.status === 2 && !/\n {2}\d+:\d+ +error +module\/parse/.test(text.stdout) ? "text report without line:col" : undefined) ??
    (text.status !== json.status ? `text exit ${text.status}, json exit ${json.status}` : undefined);
  if (problem) {
    binaryFailures++;
    console.log(`  binary: ${problem} (${JSON.stringify(module.mutations.map(([, m]) => m.kind))}; stderr ${json.stderr.slice(0, 200)})`);
  }
}
console.log(
  `tfcapi-lint module (binary): ${samples.length} modules, ${((performance.now() - started) / 1000).toFixed(1)} s, ` +
    `${binaryFailures} failures`,
);
rmSync(dir, { recursive: true, force: true });
process.exit(held && binaryFailures === 0 ? 0 : 1);
