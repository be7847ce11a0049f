// Test tiers by name (docs/testing.md): a suite that needs a real program (a runtime, etcd and
// kube-apiserver, the chroot kubelet, a registry, umoci, ...) ends in `.integration.test.ts`, so the
// quick tier can leave it out by its name alone.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "@jest/globals";

const repo = process.env.CAPTF_REPO_ROOT ?? join(import.meta.dirname, "../../..");

/** The calls that start or find a real program for a suite (the testkit's own entry points). */
const realProgramCalls = ["describeWithTools", "requireTool", "findTool", "sharedControlPlane", "startControlPlane", "startChrootKubelet"]
  .concat(["startLocalRegistry", "moduleRuntimes", "describeWithProviders", "describeModuleRootSuites", "describeModuleImages"])
  .map((name) => new RegExp(`\\b${name}\\b`));

/** Suites that start a real program under another name, each with why. */
const exceptions = new Map([
  ["e2e/src/scenarios.test.ts", "the e2e's own project, run in its own lane"],
  ["e2e/src/demo.test.ts", "the e2e's own project, run in its own lane"],
]);

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory())
      return entry.name === "node_modules" || entry.name === "dist" || entry.name === "testdata" ? [] : testFiles(path);
    return entry.name.endsWith(".test.ts") ? [relative(repo, path)] : [];
  });
}

describe("test tiers", () => {
  const suites = [...readdirSync(join(repo, "packages")).map((name) => join(repo, "packages", name, "src")), join(repo, "e2e", "src")]
    .filter((dir) => readdirSync(dirname(dir)).includes("src"))
    .flatMap(testFiles);

  it("names every suite that starts a real program *.integration.test.ts", () => {
    const misnamed = suites
      .filter((path) => !path.endsWith(".integration.test.ts") && path !== relative(repo, import.meta.filename))
      .filter((path) => realProgramCalls.some((call) => call.test(readFileSync(join(repo, path), "utf8"))))
      .filter((path) => !exceptions.has(path));
    expect(misnamed).toEqual([]);
  });

  it("keeps the exceptions list to suites that exist", () => {
    for (const path of exceptions.keys()) expect([path, suites.includes(path)]).toEqual([path, true]);
  });

  it("finds the suites it judges (the check cannot pass on an empty list)", () => {
    expect(suites.filter((path) => path.endsWith(".integration.test.ts")).length).toBeGreaterThan(40);
    expect(suites.length).toBeGreaterThan(150);
  });

  it("splits the suites into the unit and integration tiers by name, each suite in exactly one (CAPTF_TEST_TIER)", async () => {
    const { tierIgnorePatterns } = (await import(pathToFileURL(join(repo, "jest.base.js")).href)) as {
      tierIgnorePatterns: Record<"unit" | "integration", string[]>;
    };
    const runs = (tier: "unit" | "integration") => (path: string) =>
      !tierIgnorePatterns[tier].some((pattern) => new RegExp(pattern).test(join(repo, path)));
    const unit = suites.filter(runs("unit"));
    const integration = suites.filter(runs("integration"));
    expect(unit.filter((path) => path.endsWith(".integration.test.ts") || path.startsWith("e2e/"))).toEqual([]);
    expect(integration.filter((path) => !path.endsWith(".integration.test.ts") && !exceptions.has(path))).toEqual([]);
    expect([...unit, ...integration].sort()).toEqual([...suites].sort());
  });
});
