#!/usr/bin/env node
// Runs every check of the repository in order and prints one summary line "N passed, N failed".
// Each non-jest check (build, typecheck, ...) counts as one test; jest tests count one each.
import { spawnSync } from "node:child_process";
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
const jestArgs = [
  "--experimental-vm-modules",
  "--disable-warning=ExperimentalWarning",
  "node_modules/jest/bin/jest.js",
  "--json",
  "--outputFile=.test-results/jest.json",
  "--coverage",
  "--coverageReporters=text-summary",
  "--coverageReporters=json-summary",
  "--coverageDirectory=.test-results/coverage",
  ...process.argv.slice(2),
];
const jest = spawnSync("node", jestArgs, { stdio: "inherit" });
let jestReport;
try {
  jestReport = JSON.parse(readFileSync(".test-results/jest.json", "utf8"));
} catch {
  results.failed++;
  console.log(`== jest produced no report (exit ${jest.status ?? jest.signal})`);
}
if (jestReport) {
  results.passed += jestReport.numPassedTests;
  results.failed += jestReport.numFailedTests;
  // A suite that fails to load has no failed tests but must still fail the run.
  if (jestReport.numRuntimeErrorTestSuites > 0) {
    results.failed += jestReport.numRuntimeErrorTestSuites;
    console.log(`== ${jestReport.numRuntimeErrorTestSuites} test suite(s) failed to run`);
  }
  if (jest.status !== 0 && jestReport.numFailedTests === 0 && jestReport.numRuntimeErrorTestSuites === 0) {
    results.failed++;
    console.log(`== jest exited ${jest.status}: a coverage threshold or the run itself failed`);
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
