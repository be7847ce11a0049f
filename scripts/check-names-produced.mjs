#!/usr/bin/env node
// Every condition type and reason, event reason, annotation, label, metric and enumerated metric label
// value (docs/metrics.md's Label values) captf declares must be
// produced by a statement of its source that the test command ran (from jest's coverage; module-level
// lists, metrics helpers and event reasons as packages/testkit/src/names-produced.ts says) and be named
// by a test's expectation (findNamesAsserted), or be listed with its reason in `reservedNames`
// (packages/contract/src/reserved-names.ts). Run by scripts/test.mjs after jest; prints what is
// unproduced or unasserted and which reservations are stale, and exits 1 on either.
//
//   node scripts/check-names-produced.mjs [.test-results/coverage/coverage-final.json]
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import {
  annotations,
  conditionReasons,
  labels,
  managerEventReasons,
  pluginEventReasons,
  runnerEventReasons,
} from "../packages/contract/dist/api.js";
import { reservedNames } from "../packages/contract/dist/reserved-names.js";
import { metricLabelValues } from "../packages/controller/dist/metrics/captf-metrics.js";
import {
  eventRecordingLine,
  findNamesAsserted,
  findNamesProduced,
  literalPattern,
  metricLabelValueNames,
  metricsDeclaredIn,
  propertyPattern,
} from "../packages/testkit/dist/names-produced.js";

const root = resolve(new URL("..", import.meta.url).pathname);
const coverageFile = process.argv[2] ?? join(root, ".test-results/coverage/coverage-final.json");
const declarationFiles = new Set([join(root, "packages/contract/src/api.ts"), join(root, "packages/contract/src/reserved-names.ts")]);

function typeScriptFiles(dir, wanted) {
  const files = [];
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (entry === "node_modules" || entry === "dist") continue;
    if (statSync(path).isDirectory()) files.push(...typeScriptFiles(path, wanted));
    else if (wanted(entry, path)) files.push(path);
  }
  return files;
}
const isSource = (entry, path) =>
  /\.ts$/.test(entry) && !/\.(test|test-support|generated|d)\.ts$/.test(entry) && !declarationFiles.has(path);
const isTest = (entry) => /\.test\.ts$/.test(entry);
const sources = new Map();
const tests = new Map();
for (const src of [...readdirSync(join(root, "packages")).map((pkg) => join(root, "packages", pkg, "src")), join(root, "e2e/src")]) {
  if (!existsSync(src)) continue; // a package without TypeScript sources (a module)
  for (const file of typeScriptFiles(src, isSource)) if (!file.startsWith(join(root, "e2e"))) sources.set(file, readFileSync(file, "utf8"));
  for (const file of typeScriptFiles(src, isTest)) tests.set(file, readFileSync(file, "utf8"));
}

// An event reason counts only on a line that records an event: a decision or condition of the same word produces none.
const eventName = (id, reason) => ({ id, patterns: [literalPattern(reason)], context: eventRecordingLine });

const declared = [
  ...Object.keys(conditionReasons).map((type) => ({ id: `condition:${type}`, patterns: [literalPattern(type)] })),
  ...[...new Set(Object.values(conditionReasons).flatMap((table) => Object.values(table).flat()))].map((reason) => ({
    id: `condition-reason:${reason}`,
    patterns: [literalPattern(reason)],
  })),
  ...Object.keys(managerEventReasons).map((reason) => eventName(`event:${reason}`, reason)),
  ...runnerEventReasons.map((reason) => eventName(`runner-event:${reason}`, reason)),
  ...Object.keys(pluginEventReasons).map((reason) => eventName(`plugin-event:${reason}`, reason)),
  ...Object.entries(annotations).map(([key, value]) => ({
    id: `annotation:${value}`,
    patterns: [propertyPattern("annotations", key), literalPattern(value)],
  })),
  ...Object.entries(labels).map(([key, value]) => ({
    id: `label:${value}`,
    patterns: [propertyPattern("labels", key), literalPattern(value)],
  })),
  ...declaredMetrics(),
  ...metricLabelValues.flatMap(metricLabelValueNames),
];

/** Metrics as the controller's metrics folder defines them. */
function declaredMetrics() {
  const dir = join(root, "packages/controller/src/metrics");
  return readdirSync(dir)
    .filter((entry) => !entry.includes(".test."))
    .flatMap((file) => metricsDeclaredIn(readFileSync(join(dir, file), "utf8"), `${dir}/`));
}

if (!existsSync(coverageFile)) {
  console.error(`names produced: no coverage at ${coverageFile}; the test command writes it (run it without filters first)`);
  process.exit(2);
}
// Coverage taken in another checkout of the same commit (a CI run) names its own paths: read them as this checkout's.
const coverage = new Map(
  Object.entries(JSON.parse(readFileSync(coverageFile, "utf8"))).map(([path, entry]) => [
    path.startsWith(root) ? path : join(root, path.slice(path.indexOf("/packages/") + 1)),
    entry,
  ]),
);
const finding = findNamesProduced({ declared, sources, coverage, reserved: {} });
const asserted = findNamesAsserted({ declared, tests });
const proven = new Set([...finding.produced.keys()].filter((id) => asserted.has(id)));
const declaredIds = declared.map((name) => name.id);
const unproven = declaredIds.filter((id) => !proven.has(id) && !(id in reservedNames));
const staleReservations = Object.keys(reservedNames).filter((id) => proven.has(id) || !declaredIds.includes(id));
const reservedCount = Object.keys(reservedNames).length;
console.log(
  `names produced on tested paths and asserted by a test: ${proven.size} of ${declared.length} declared; ` +
    `${reservedCount} reserved for later`,
);
const relative = (where) => where.slice(root.length + 1);
for (const id of unproven) {
  const produced = finding.produced.get(id);
  const named = finding.namedUntested.get(id);
  const why = produced
    ? `produced at ${relative(produced)}, but no test's expectation names it`
    : named
      ? `named at ${relative(named)}, which produces it on no tested path`
      : "named by no source line";
  console.log(`  not proven, not reserved: ${id} (${why})`);
}
for (const id of staleReservations)
  console.log(`  reserved, but ${declaredIds.includes(id) ? "proven now" : "not declared"}: ${id} (drop it from reservedNames)`);
process.exit(unproven.length + staleReservations.length > 0 ? 1 : 0);
