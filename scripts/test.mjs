#!/usr/bin/env node
// Runs every check of the repository in order and prints one summary line "N passed, N failed".
// Each non-jest check (build, typecheck, ...) counts as one test; jest tests count one each.
import { spawn, spawnSync } from "node:child_process";
import { createInterface } from "node:readline";
import { mkdirSync, readFileSync, readdirSync, existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { hostArchitecture, nodeRelease, pinnedNodeDir } from "../packages/runner/scripts/pinned-node.mjs";
import { childCoverage } from "./lib/child-coverage.mjs";
import { addLineCounts, coverageFigures, coverageFloorFailures, mergeCoverage, planJestRuns } from "./lib/test-plan.mjs";

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

// The manager's and runner's suites run under the Node LTS their image ships (fetched into ~/.cache/captf/node).
// Without it the run fails, unless CAPTF_ALLOW_MISSING_TOOLS=1: then they run under this node and "did not run" says so.
let pinned;
let pinnedProblem;
try {
  pinned = { path: join(pinnedNodeDir(hostArchitecture()), "node"), version: `v${nodeRelease.version}` };
} catch (error) {
  pinnedProblem = `the pinned Node ${nodeRelease.version} could not be had: ${error.message.split("\n")[0]}`;
  if (process.env.CAPTF_ALLOW_MISSING_TOOLS !== "1") {
    console.error(
      `test: ${pinnedProblem}\ntest: the controller and runner suites run under it (packages/runner/scripts/pinned-node.mjs ` +
        `fetches it with npm); set CAPTF_ALLOW_MISSING_TOOLS=1 to run them under ${process.version} instead`,
    );
    process.exit(1);
  }
}

const packages = [...readdirSync("packages").map((name) => `packages/${name}`), "e2e"].filter((dir) =>
  existsSync(`${dir}/tsconfig.test.json`),
);

// Formatting and lint over the paths biome.json's files.includes lists (docs/testing.md#formatting-and-lint).
step("format (biome)", "node", ["node_modules/@biomejs/biome/bin/biome", "format"]);
step("lint (eslint)", "node", ["node_modules/eslint/bin/eslint.js", "--max-warnings", "0"]);
step("lines at most 140 characters", "node", ["scripts/check-line-length.mjs"]);
const layers = ["node_modules/dependency-cruiser/bin/dependency-cruise.mjs", "packages", "e2e/src", "--config", ".dependency-cruiser.cjs"];
step("layers: no import cycle, controller folders one way (dependency-cruiser)", "node", [...layers, "--output-type", "err"]);
step("build (tsc -b)", "node", ["node_modules/typescript/bin/tsc", "-b"]);
for (const dir of packages) {
  step(`typecheck tests of ${dir.replace(/^packages\//, "")}`, "node", [
    "node_modules/typescript/bin/tsc",
    "-p",
    `${dir}/tsconfig.test.json`,
  ]);
}

mkdirSync(".test-results", { recursive: true });
const filters = process.argv.slice(2);
// jest.config.js's projects, by displayName (each package's directory name).
const projects = packages.filter((dir) => existsSync(`${dir}/jest.config.js`)).map((dir) => dir.replace(/^packages\//, ""));
const plan = planJestRuns({ filters, projects, host: { path: process.execPath, version: process.version }, pinned, pinnedProblem });
for (const dir of plan.coverageDirs) rmSync(dir, { recursive: true, force: true });
// The manager, runner and broker processes the suites start write V8 coverage here (docs/testing.md#coverage).
const childCoverageDir = join(process.cwd(), ".test-results/child-coverage");
rmSync(childCoverageDir, { recursive: true, force: true });
mkdirSync(childCoverageDir, { recursive: true });
process.env.CAPTF_CHILD_COVERAGE = childCoverageDir;
// The lanes run side by side (the e2e mostly waits on its plane, load ~1 on 2 cores), so the whole
// command takes about the longer lane; the runs of one lane one after another.
const lanes = await Promise.all(
  plan.lanes.map(async (lane) => {
    const outcomes = [];
    for (const run of lane) outcomes.push(await runJest(run));
    return outcomes;
  }),
);
for (const [laneIndex, lane] of plan.lanes.entries())
  for (const [index, run] of lane.entries()) countJestReport(run, lanes[laneIndex][index]);
await mergeCoverageOf(plan.coverageDirs, childCoverageDir, ".test-results/coverage");
// Over the whole run only: every declared name is produced on a line the tests ran, or reserved with a reason.
if (filters.length === 0) step("declared names produced on tested paths", "node", ["scripts/check-names-produced.mjs"]);

function runJest({ name, node, args, report, prefix }) {
  rmSync(report, { force: true });
  process.stdout.write(`\n== ${name}\n`);
  const child = spawn(node, args, { stdio: prefix ? ["ignore", "pipe", "pipe"] : "inherit" });
  if (prefix)
    for (const stream of [child.stdout, child.stderr])
      createInterface({ input: stream }).on("line", (line) => process.stdout.write(`${prefix}${line}\n`));
  const started = Date.now();
  // The run's own time: a lane's later runs start after the earlier ones end.
  return new Promise((resolve) =>
    child.on("close", (status, signal) => resolve({ exit: status ?? signal, seconds: (Date.now() - started) / 1000 })),
  );
}

/** One coverage-final.json (the names check reads it) from the runs' coverage directories and their child processes'. */
async function mergeCoverageOf(dirs, childDir, out) {
  const maps = dirs
    .map((dir) => join(dir, "coverage-final.json"))
    .filter((file) => existsSync(file))
    .map((file) => JSON.parse(readFileSync(file, "utf8")));
  rmSync(out, { recursive: true, force: true });
  if (maps.length === 0) return;
  mkdirSync(out, { recursive: true });
  const started = Date.now();
  const children = await childCoverage(childDir, process.cwd()).catch((error) => {
    console.log(`\nchild-process coverage: not read (${error.message.split("\n")[0]})`);
    return {};
  });
  const files = Object.keys(children).length;
  // The e2e's manager Pods write under pods/ (docs/testing.md#coverage): none there says the e2e lane measured no manager.
  const podsDir = join(childDir, "pods");
  const podFiles = existsSync(podsDir) ? readdirSync(podsDir).filter((name) => name.endsWith(".json")).length : 0;
  console.log(
    `\nchild-process coverage: ${files} source files from ${childDir} (${podFiles} process files of the e2e's manager Pods) ` +
      `in ${((Date.now() - started) / 1000).toFixed(1)}s`,
  );
  writeFileSync(join(out, "coverage-final.json"), JSON.stringify(addLineCounts(mergeCoverage(maps), children)));
  rmSync(childDir, { recursive: true, force: true });
}

function countJestReport({ name, report }, { exit, seconds }) {
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
  console.log(`== ${name}: ${jestReport.numPassedTests} passed, ${jestReport.numFailedTests} failed in ${seconds.toFixed(1)}s`);
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

// Line coverage per package, from the runs' merged coverage and the processes they started; a package
// under the floor is broken down by folder and fails the run (only a whole run measures every package).
try {
  const coverage = JSON.parse(readFileSync(".test-results/coverage/coverage-final.json", "utf8"));
  console.log("\nline coverage (jest and the processes the suites start):");
  const figures = coverageFigures(coverage);
  for (const figure of figures) {
    console.log(`  ${figure.name.padEnd(12)} ${figure.percent.toFixed(1)}% (${figure.covered}/${figure.total} lines)`);
    for (const folder of figure.folders ?? [])
      console.log(`    ${folder.name.padEnd(24)} ${folder.percent.toFixed(1)}% (${folder.covered}/${folder.total})`);
  }
  if (filters.length === 0) {
    for (const failure of coverageFloorFailures(figures)) {
      results.failed++;
      results.notes.push(`\nline coverage FAILED: ${failure}`);
    }
  }
} catch {
  console.log("\nline coverage: not available");
}

console.log("\njest suites ran under:");
for (const line of plan.nodes) console.log(`  ${line}`);
const didNotRun = [...(existsSync(skippedSuitesFile) ? readFileSync(skippedSuitesFile, "utf8").trim().split("\n") : []), ...plan.didNotRun];
if (didNotRun.length > 0) {
  console.log("\ndid not run (skipped, never counted as passed):");
  for (const line of didNotRun) console.log(`  ${line}`);
}
for (const note of results.notes) console.log(note);
console.log(`\n${results.passed} passed, ${results.failed} failed`);
process.exit(results.failed > 0 || results.passed === 0 ? 1 : 0);
