// Coverage of the processes the tests start (the manager's and the runner's bundles, the CLIs' dist/):
// scripts/test.mjs runs jest with NODE_V8_COVERAGE=<dir>, each node process writes its V8 coverage
// there on exit, with the source maps it loaded (source-map-cache). This turns those files into
// istanbul coverage of packages/*/src and adds it, line by line, to jest's own coverage. The manager in
// the e2e's Pods writes its files under <dir>/pods/ (the chroot kubelet binds it), from a bundle whose
// image carries no map: <dir>/bundles/<name>/bundle.json names that bundle's URL in the Pod and its copy
// and map here (packages/controller/scripts/build-manager-image.mjs --source-map-out).
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
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

/** The bundles of <dir>/bundles/ whose maps are kept beside them: the source-map-cache entry each would have had. */
function bundlesBeside(dir) {
  const bundlesDir = join(dir, "bundles");
  if (!existsSync(bundlesDir)) return [];
  return readdirSync(bundlesDir)
    .filter((name) => existsSync(join(bundlesDir, name, "bundle.json")))
    .map((name) => {
      const { url, bundle, map } = JSON.parse(readFileSync(join(bundlesDir, name, "bundle.json"), "utf8"));
      const text = readFileSync(join(bundlesDir, name, bundle), "utf8");
      const mapFile = join(bundlesDir, name, map);
      // As node's source-map-cache splits a script into lines.
      const lineLengths = text.split(/\n|\u2028|\u2029/).map((line) => line.length);
      return {
        url,
        length: text.length,
        entry: { url: pathToFileURL(mapFile).href, data: JSON.parse(readFileSync(mapFile, "utf8")), lineLengths },
      };
    });
}

/** The kept map of a script that ran without one: same URL, and its top-level function spans the bundle's length. */
function besideEntry(script, beside) {
  const length = script.functions?.[0]?.ranges?.[0]?.endOffset;
  return beside.find((bundle) => bundle.url === script.url && bundle.length === length)?.entry;
}

/**
 * The scripts of one process's V8 coverage that came from packages/*\/src through a source map, each
 * renamed after its generated code (mappings and line lengths): the same bundle built in two temp
 * dirs is one script, so the processes' counts can be merged before the (slow) source-map walk.
 */
function scriptsOfProcess(report, repoRoot, maps, beside) {
  const cache = report["source-map-cache"] ?? {};
  const result = [];
  for (const script of report.result ?? []) {
    const entry = cache[script.url] ?? besideEntry(script, beside);
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
  const beside = bundlesBeside(dir);
  const podsDir = join(dir, "pods");
  const files = [
    ...readdirSync(dir).map((name) => join(dir, name)),
    ...(existsSync(podsDir) ? readdirSync(podsDir).map((name) => join(podsDir, name)) : []),
  ];
  for (const file of files.filter((path) => path.endsWith(".json"))) {
    let report;
    try {
      report = JSON.parse(readFileSync(file, "utf8"));
    } catch {
      continue; // a process killed while writing its file
    }
    const scripts = scriptsOfProcess(report, repoRoot, maps, beside);
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
