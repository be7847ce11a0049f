#!/usr/bin/env node
// Runs every check of the repository in order and prints one summary line "N passed, N failed".
// Each non-jest check (build, typecheck, ...) counts as one test; jest tests count one each.
import { spawn, spawnSync } from "node:child_process";
import { createInterface } from "node:readline";
import { mkdirSync, readFileSync, readdirSync, existsSync, rmSync } from "node:fs";

const results = { passed: 0, failed: 0, notes: [] };

function step(name, command, args, env = {}) {
  const started = Date.now();
  process.stdout.write(`\n== ${name}\n`);
  const run = spawnSync(command, args, { stdio: "inherit", env: { ...process.env, ...env } });
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  if (run.status === 0) {
    results.passed++;
    console.log(`== ${name}: ok (${seconds}s)`);
    return true;
  }
  results.failed++;
  console.log(`== ${name}: FAILED (exit ${run.status ?? run.signal}, ${seconds}s)`);
  return false;
}

// Skipped suites list themselves here with why: a missing tool (only with CAPTF_ALLOW_MISSING_TOOLS=1),
// or providers neither CAPTF_PROVIDER_MIRROR nor a registry has (an optional extra: not a failure).
const skippedSuitesFile = ".test-results/skipped-suites.txt";
rmSync(skippedSuitesFile, { force: true });
process.env.CAPTF_REPO_ROOT = process.cwd();

const packages = [...readdirSync("packages").map((name) => `packages/${name}`), "e2e"].filter((dir) => existsSync(`${dir}/tsconfig.test.json`));

step("build (tsc -b)", "node", ["node_modules/typescript/bin/tsc", "-b"]);
for (const dir of packages) {
  step(`typecheck tests of ${dir.replace(/^packages\//, "")}`, "node", ["node_modules/typescript/bin/tsc", "-p", `${dir}/tsconfig.test.json`]);
}

mkdirSync(".test-results", { recursive: true });
const jestCommand = ["--experimental-vm-modules", "--disable-warning=ExperimentalWarning", "node_modules/jest/bin/jest.js"];
const coverage = ["--coverage", "--coverageReporters=text-summary", "--coverageReporters=json-summary", "--coverageReporters=json", "--coverageDirectory=.test-results/coverage"];
const filters = process.argv.slice(2);
// The e2e suite mostly waits on its plane (load ~1 on 2 cores), so without filters it runs in its own
// jest process beside the packages' suites: the whole command takes about the longer of the two.
const runs = filters.length > 0
  ? [{ name: "jest", report: ".test-results/jest.json", args: [...coverage, ...filters] }]
  : [
      { name: "jest (packages)", report: ".test-results/jest.json", args: [...coverage, "--ignoreProjects", "e2e"] },
      { name: "jest (e2e)", report: ".test-results/jest-e2e.json", args: ["--selectProjects", "e2e"], prefix: "[e2e] " },
    ];
const exits = await Promise.all(runs.map((run) => runJest(run)));
for (const [index, run] of runs.entries()) countJestReport(run, exits[index]);
// Over the whole run only: every declared name is produced on a line the tests ran, or reserved with a reason.
if (filters.length === 0) step("declared names produced on tested paths", "node", ["scripts/check-names-produced.mjs"]);

function runJest({ report, args, prefix }) {
  rmSync(report, { force: true });
  const child = spawn("node", [...jestCommand, "--json", `--outputFile=${report}`, ...args], { stdio: prefix ? ["ignore", "pipe", "pipe"] : "inherit" });
  if (prefix) for (const stream of [child.stdout, child.stderr]) createInterface({ input: stream }).on("line", (line) => process.stdout.write(`${prefix}${line}\n`));
  return new Promise((resolve) => child.on("close", (status, signal) => resolve(status ?? signal)));
}

function countJestReport({ name, report }, exit) {
  let jestReport;
  try {
    jestReport = JSON.parse(readFileSync(report, "utf8"));
  } catch {
    results.failed++;
    console.log(`== ${name} produced no report (exit ${exit})`);
    return;
  }
  results.passed += jestReport.numPassedTests;
  results.failed += jestReport.numFailedTests;
  console.log(`== ${name}: ${jestReport.numPassedTests} passed, ${jestReport.numFailedTests} failed in ${((Date.now() - jestReport.startTime) / 1000).toFixed(1)}s`);
  // A suite that fails to load has no failed tests but must still fail the run.
  if (jestReport.numRuntimeErrorTestSuites > 0) {
    results.failed += jestReport.numRuntimeErrorTestSuites;
    console.log(`== ${name}: ${jestReport.numRuntimeErrorTestSuites} test suite(s) failed to run`);
  }
  if (exit !== 0 && jestReport.numFailedTests === 0 && jestReport.numRuntimeErrorTestSuites === 0) {
    results.failed++;
    console.log(`== ${name} exited ${exit}: a coverage threshold or the run itself failed`);
  }
}

// Line coverage per package, from the json-summary of the run above.
try {
  const summary = JSON.parse(readFileSync(".test-results/coverage/coverage-summary.json", "utf8"));
  const perPackage = new Map();
  for (const [file, data] of Object.entries(summary)) {
    const match = /\/packages\/([^/]+)\//.exec(file);
    if (!match) continue;
    const entry = perPackage.get(match[1]) ?? { covered: 0, total: 0 };
    entry.covered += data.lines.covered;
    entry.total += data.lines.total;
    perPackage.set(match[1], entry);
  }
  console.log("\nline coverage:");
  for (const [name, { covered, total }] of [...perPackage].sort()) {
    console.log(`  ${name.padEnd(12)} ${((100 * covered) / Math.max(total, 1)).toFixed(1)}% (${covered}/${total} lines)`);
  }
} catch {
  console.log("\nline coverage: not available");
}

if (existsSync(skippedSuitesFile)) {
  console.log("\ndid not run (skipped, never counted as passed):");
  for (const line of readFileSync(skippedSuitesFile, "utf8").trim().split("\n")) console.log(`  ${line}`);
}
for (const note of results.notes) console.log(note);
console.log(`\n${results.passed} passed, ${results.failed} failed`);
process.exit(results.failed > 0 || results.passed === 0 ? 1 : 0);
