// Coverage of the processes the tests start (the manager's and the runner's bundles, the CLIs' dist/):
// scripts/test.mjs runs jest with NODE_V8_COVERAGE=<dir>, each node process writes its V8 coverage
// there on exit, with the source maps it loaded (source-map-cache). This turns those files into
// istanbul coverage of packages/*/src and adds it, line by line, to jest's own coverage.
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { mergeProcessCovs } from "@bcoe/v8-coverage";
import V8ToIstanbul from "v8-to-istanbul";
import { addLineCounts } from "./test-plan.mjs";

// A package's TypeScript source, wherever the map's relative paths led (a bundle built in a temp dir).
const packageSource = /\/packages\/([^/]+)\/src\/((?:(?!node_modules\/)[^])+\.ts)$/;

/**
 * The repository's source file a source-map entry names, or undefined (node_modules, other files).
 * `source` is relative to `mapUrl` (the map's own URL) unless absolute.
 */
export function repositorySource(source, mapUrl, repoRoot) {
  let path;
  try {
    path = fileURLToPath(new URL(source, mapUrl));
  } catch {
    return undefined;
  }
  const match = packageSource.exec(path);
  return match ? join(repoRoot, "packages", match[1], "src", match[2]) : undefined;
}

/**
 * The scripts of one process's V8 coverage that came from packages/*\/src through a source map, each
 * renamed after its generated code (mappings and line lengths): the same bundle built in two temp
 * dirs is one script, so the processes' counts can be merged before the (slow) source-map walk.
 */
function scriptsOfProcess(report, repoRoot, maps) {
  const cache = report["source-map-cache"] ?? {};
  const result = [];
  for (const script of report.result ?? []) {
    const entry = cache[script.url];
    // jest instruments the .ts files it loads itself.
    if (!entry?.data?.sources || !entry.lineLengths || script.url.endsWith(".ts")) continue;
    const sources = entry.data.sources.map((source) => repositorySource(source, entry.url ?? script.url, repoRoot));
    if (!sources.some((source) => source && existsSync(source))) continue;
    const key = createHash("sha256").update(entry.data.mappings).update(entry.lineLengths.join(",")).digest("hex").slice(0, 32);
    if (!maps.has(key)) maps.set(key, { data: entry.data, sources, lineLengths: entry.lineLengths });
    result.push({ ...script, url: `file:///captf-child-coverage/${key}.js` });
  }
  return { result };
}

/** istanbul coverage (coverage-final.json's form) of packages/*\/src from every V8 coverage file in `dir`. */
export async function childCoverage(dir, repoRoot) {
  if (!existsSync(dir)) return {};
  const maps = new Map();
  const processes = [];
  for (const name of readdirSync(dir).filter((file) => file.endsWith(".json"))) {
    let report;
    try {
      report = JSON.parse(readFileSync(join(dir, name), "utf8"));
    } catch {
      continue; // a process killed while writing its file
    }
    const scripts = scriptsOfProcess(report, repoRoot, maps);
    if (scripts.result.length > 0) processes.push(scripts);
  }
  if (processes.length === 0) return {};
  const coverage = {};
  for (const script of mergeProcessCovs(processes).result) {
    const key = /([0-9a-f]+)\.js$/.exec(script.url)[1];
    const { data, sources, lineLengths } = maps.get(key);
    const kept = new Set(sources.filter((source) => source && existsSync(source)));
    const sourcemap = {
      ...data,
      sourceRoot: undefined,
      sources: sources.map((source, index) => source ?? `/captf-child-coverage/other/${index}`),
      sourcesContent: sources.map((source) => (kept.has(source) ? readFileSync(source, "utf8") : "")),
    };
    // The bundle itself is gone with its temp dir: its line lengths stand in for its text.
    const generated = lineLengths.map((length) => ".".repeat(length)).join("\n");
    const converter = new V8ToIstanbul(
      `/captf-child-coverage/${key}.js`,
      0,
      { source: generated, sourceMap: { sourcemap } },
      (path) => !kept.has(path),
    );
    await converter.load();
    // v8-to-istanbul counts every line as run until a range says otherwise: code a bundle left out
    // (tree-shaken) would look run. Only lines inside a range V8 counted are.
    for (const { source } of converter.covSources) for (const line of source.lines) line.count = 0;
    converter.applyCoverage(script.functions);
    for (const [file, fileCoverage] of Object.entries(converter.toIstanbul())) {
      // Only the TypeScript sources: a tsc-built dist/ file whose map the converter did not follow is not one.
      if (!packageSource.test(file)) continue;
      coverage[file] = coverage[file] ? addLineCounts({ [file]: coverage[file] }, { [file]: fileCoverage })[file] : fileCoverage;
    }
  }
  return coverage;
}
