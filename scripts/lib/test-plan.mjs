// What scripts/test.mjs runs jest as: which projects under which node, in which order, and how their
// coverage becomes one. The manager's and runner's suites run under the Node LTS their image and
// bundle ship (packages/runner/node-release.json); every other project under the node running the
// test command, which keeps the native addons its packages were installed with.

/** The jest projects (displayName) that run under the pinned Node. */
export const pinnedNodeProjects = ["controller", "runner"];

const jestFlags = ["--experimental-vm-modules", "--disable-warning=ExperimentalWarning", "node_modules/jest/bin/jest.js"];
const coverageFlags = (dir) => ["--coverage", "--coverageReporters=text-summary", "--coverageReporters=json", `--coverageDirectory=${dir}`];
// One flag per project, `=` attached. jest's array flags swallow the words after them, even so: the
// filters therefore come first, right after jest's path.
const projectFlags = (flag, names) => names.map((name) => `--${flag}=${name}`);

/**
 * The jest runs of the test command. `lanes` run side by side, the runs of one lane one after
 * another. Without filters the packages' lane runs the host node's projects, then the pinned
 * Node's; the e2e runs in its own lane beside it (it mostly waits on its plane). With filters one
 * lane runs both halves with the filters. `pinned` is `{ path, version }` of the pinned Node, or
 * undefined when it could not be had (`pinnedProblem` says why): then its projects run on the host
 * node and `didNotRun` says so. `coverageDirs` are the directories to merge into one coverage.
 * @param {{ filters: string[], projects: string[], host: { path: string, version: string }, pinned?: { path: string, version:
 * string }, pinnedProblem?: string }} input
 */
export function planJestRuns({ filters, projects, host, pinned, pinnedProblem }) {
  const onPinned = projects.filter((project) => pinnedNodeProjects.includes(project));
  const onHost = projects.filter((project) => !onPinned.includes(project));
  const pinnedNode = pinned ?? host;
  const hostCoverage = ".test-results/coverage-host";
  const pinnedCoverage = ".test-results/coverage-pinned";
  const run = ({ name, node, report, args, prefix }) => ({
    name,
    node: node.path,
    nodeVersion: node.version,
    args: [...jestFlags, ...filters, "--json", `--outputFile=${report}`, ...args],
    report,
    ...(prefix ? { prefix } : {}),
  });
  // The coverage floors of jest.config.js name contract and render, which the pinned run never loads.
  const pinnedArgs = [...coverageFlags(pinnedCoverage), "--coverageThreshold={}", ...projectFlags("selectProjects", onPinned)];
  const hostIgnores = projectFlags("ignoreProjects", [...onPinned, ...(filters.length > 0 ? [] : ["e2e"])]);
  const lanes =
    filters.length > 0
      ? [
          [
            run({
              name: `jest (host node ${host.version})`,
              node: host,
              report: ".test-results/jest.json",
              args: [...coverageFlags(hostCoverage), "--passWithNoTests", ...hostIgnores],
            }),
            run({
              name: `jest (${onPinned.join(", ")}, node ${pinnedNode.version})`,
              node: pinnedNode,
              report: ".test-results/jest-pinned.json",
              args: [...pinnedArgs, "--passWithNoTests"],
            }),
          ],
        ]
      : [
          [
            run({
              name: `jest (packages, host node ${host.version})`,
              node: host,
              report: ".test-results/jest.json",
              args: [...coverageFlags(hostCoverage), ...hostIgnores],
            }),
            run({
              name: `jest (${onPinned.join(", ")}, node ${pinnedNode.version})`,
              node: pinnedNode,
              report: ".test-results/jest-pinned.json",
              args: pinnedArgs,
            }),
          ],
          [
            run({
              name: `jest (e2e, host node ${host.version})`,
              node: host,
              report: ".test-results/jest-e2e.json",
              args: projectFlags("selectProjects", ["e2e"]),
              prefix: "[e2e] ",
            }),
          ],
        ];
  const nodes = [
    `node ${host.version} (this machine's): ${onHost.join(", ")}`,
    `node ${pinnedNode.version} (${pinned ? "pinned, the image's" : "this machine's, NOT the pinned one"}): ${onPinned.join(", ")}`,
  ];
  const didNotRun = pinned
    ? []
    : [`${onPinned.join(" and ")} under the pinned Node (ran under ${host.version} instead): ${pinnedProblem ?? "no pinned Node"}`];
  return { lanes, nodes, didNotRun, coverageDirs: [hostCoverage, pinnedCoverage] };
}

/**
 * One istanbul coverage map (coverage-final.json) from several: a file in more than one has its
 * statement, function and branch counts added when both runs instrumented it alike (the same
 * statements); else (one package's source compiled under two packages' tsconfigs) its lines' counts.
 */
export function mergeCoverage(maps) {
  const merged = {};
  for (const map of maps) {
    for (const [file, coverage] of Object.entries(map)) {
      const seen = merged[file];
      if (!seen) {
        merged[file] = structuredClone(coverage);
        continue;
      }
      if (JSON.stringify(seen.statementMap) !== JSON.stringify(coverage.statementMap)) {
        merged[file] = addLineCounts({ [file]: seen }, { [file]: coverage })[file];
        continue;
      }
      for (const id of Object.keys(coverage.s)) seen.s[id] = (seen.s[id] ?? 0) + coverage.s[id];
      for (const id of Object.keys(coverage.f)) seen.f[id] = (seen.f[id] ?? 0) + coverage.f[id];
      for (const id of Object.keys(coverage.b)) seen.b[id] = coverage.b[id].map((count, branch) => (seen.b[id]?.[branch] ?? 0) + count);
    }
  }
  return merged;
}

/** Line → the highest count of the statements of one file's coverage that start on it. */
export function lineCounts(coverage) {
  const lines = new Map();
  for (const [id, count] of Object.entries(coverage.s)) {
    const line = coverage.statementMap[id]?.start.line;
    if (line !== undefined) lines.set(line, Math.max(lines.get(line) ?? 0, count));
  }
  return lines;
}

/** Covered and total lines of one file's coverage, as istanbul counts them: a line is its statements' starts. */
export function lineCoverage(coverage) {
  const lines = lineCounts(coverage);
  return { covered: [...lines.values()].filter((count) => count > 0).length, total: lines.size };
}

/**
 * `base` with the lines `extra` ran counted in: each statement of `base` that starts on a line a
 * statement of `extra` ran on gets that line's count added. The maps come from different
 * instrumentations (babel's in jest, V8's in the child processes), so they meet on lines, not on
 * statement ids. A file only `extra` has is taken as it is.
 */
export function addLineCounts(base, extra) {
  const merged = { ...base };
  for (const [file, coverage] of Object.entries(extra)) {
    const seen = merged[file];
    if (!seen) {
      merged[file] = coverage;
      continue;
    }
    const ran = lineCounts(coverage);
    const statements = { ...seen.s };
    for (const [id, location] of Object.entries(seen.statementMap))
      statements[id] = (statements[id] ?? 0) + (ran.get(location.start.line) ?? 0);
    merged[file] = { ...seen, s: statements };
  }
  return merged;
}

/** Every package's line coverage must be at least this (percent), measured over the jest runs and their child processes. */
export const packageLineFloor = 85;

/**
 * Line coverage per package (`packages/<name>/`) and, for a package under `floor`, per folder of its
 * src/ (a file directly in src/ counts as "src/"), so the gap shows where it is.
 * @returns {{ name: string, covered: number, total: number, percent: number, folders?: { name: string, covered: number,
 * total: number, percent: number }[] }[]} sorted by name; `folders` only for a package under the floor, sorted by percent
 */
export function coverageFigures(coverage, floor = packageLineFloor) {
  const packages = new Map();
  const add = (map, name, lines) => {
    const entry = map.get(name) ?? { name, covered: 0, total: 0, folders: new Map() };
    entry.covered += lines.covered;
    entry.total += lines.total;
    map.set(name, entry);
    return entry;
  };
  for (const [file, data] of Object.entries(coverage)) {
    // A package's own TypeScript sources: a dist/ build some suite loaded is no line of its own.
    const match = /\/packages\/([^/]+)\/src\/(.*)$/.exec(file);
    if (!match) continue;
    const lines = lineCoverage(data);
    const folder = match[2].includes("/") ? `src/${match[2].split("/")[0]}/` : "src/";
    add(add(packages, match[1], lines).folders, folder, lines);
  }
  const percent = ({ covered, total }) => Math.round((1000 * covered) / Math.max(total, 1)) / 10;
  return [...packages.values()]
    .sort((a, b) => a.name.localeCompare(b.name))
    .map(({ name, covered, total, folders }) => {
      const figure = { name, covered, total, percent: percent({ covered, total }) };
      if (figure.percent >= floor) return figure;
      const byFolder = [...folders.values()].map((folder) => ({
        name: folder.name,
        covered: folder.covered,
        total: folder.total,
        percent: percent(folder),
      }));
      return { ...figure, folders: byFolder.sort((a, b) => a.percent - b.percent || a.name.localeCompare(b.name)) };
    });
}

/** Why the run fails on coverage: one line per package under `floor`, with its figure; empty when none is. */
export function coverageFloorFailures(figures, floor = packageLineFloor) {
  return figures
    .filter((figure) => figure.percent < floor)
    .map((figure) => {
      const lines = `${figure.percent.toFixed(1)} % of its lines covered (${figure.covered}/${figure.total})`;
      return `${figure.name}: ${lines}, under the ${floor} % floor`;
    });
}
