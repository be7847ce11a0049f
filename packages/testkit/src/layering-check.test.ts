// The layering check (.dependency-cruiser.cjs, a step of the test command) on small trees made for
// it: it must refuse a cycle, an import up the controller's layers and a port reaching past its
// port, and let the allowed ports and downward imports through.
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "@jest/globals";

const repo = process.env.CAPTF_REPO_ROOT ?? join(import.meta.dirname, "../../..");
const cruise = join(repo, "node_modules/dependency-cruiser/bin/dependency-cruise.mjs");
const trees: string[] = [];

/**
 * A repository of the given files (path → text) with the real config: the violations the check
 * finds, and with `status`, the exit status of the reporter the test command runs.
 */
function check(files: Record<string, string>, { status = false } = {}): { status?: number | null; violations: string[] } {
  const root = mkdtempSync(join(tmpdir(), "layering-"));
  trees.push(root);
  copyFileSync(join(repo, ".dependency-cruiser.cjs"), join(root, ".dependency-cruiser.cjs"));
  writeFileSync(
    join(root, "tsconfig.base.json"),
    JSON.stringify({ compilerOptions: { module: "nodenext", moduleResolution: "nodenext" } }),
  );
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  const cruiseAs = (output: string) =>
    spawnSync(process.execPath, [cruise, "packages", "--config", ".dependency-cruiser.cjs", "--output-type", output], {
      cwd: root,
      encoding: "utf8",
    });
  const report = JSON.parse(cruiseAs("json").stdout) as { summary: { violations: { rule: { name: string }; from: string; to: string }[] } };
  const violations = report.summary.violations.map((v) => `${v.rule.name} ${v.from} -> ${v.to}`);
  return status ? { status: cruiseAs("err").status, violations } : { violations };
}

const controller = "packages/controller/src";

afterEach(() => {
  for (const root of trees.splice(0)) rmSync(root, { recursive: true, force: true });
});

describe("the layering check", () => {
  it("lets imports run down the controller's layers and the pass's ports up", () => {
    const result = check({
      [`${controller}/api/kinds.ts`]: "export const kind = 1;\n",
      [`${controller}/jobs/build-job.ts`]: 'import { kind } from "../api/kinds.js";\nexport const job = kind;\n',
      [`${controller}/reconcile/types.ts`]: 'import { job } from "../jobs/build-job.js";\nexport type Port = typeof job;\n',
      [`${controller}/reconcile/pass-reads.ts`]: "export const reads = 1;\n",
      [`${controller}/kinds/adapters.ts`]:
        'import type { Port } from "../reconcile/types.js";\nimport { reads } from "../reconcile/pass-reads.js";\n' +
        "export const adapter: Port = reads;\n",
      [`${controller}/manager-main.ts`]: 'import { adapter } from "./kinds/adapters.js";\nexport const main = adapter;\n',
    });
    expect(result).toEqual({ violations: [] });
  });

  it("refuses an import up a layer, naming the rule and the files", () => {
    const result = check(
      {
        [`${controller}/jobs/build-job.ts`]: 'import { webhook } from "../webhooks/policy.js";\nexport const job = webhook;\n',
        [`${controller}/webhooks/policy.ts`]: "export const webhook = 1;\n",
      },
      { status: true },
    );
    expect(result.status).toBe(1);
    expect(result.violations).toEqual([`controller-layer-3 ${controller}/jobs/build-job.ts -> ${controller}/webhooks/policy.ts`]);
  });

  it("refuses a port that reaches past the port it implements", () => {
    const result = check({
      [`${controller}/kinds/adapters.ts`]: 'import { pass } from "../reconcile/workspace-reconciler.js";\nexport const adapter = pass;\n',
      [`${controller}/reconcile/workspace-reconciler.ts`]: "export const pass = 1;\n",
    });
    expect(result.violations).toEqual([
      `controller-port-1 ${controller}/kinds/adapters.ts -> ${controller}/reconcile/workspace-reconciler.ts`,
    ]);
  });

  it("refuses an import cycle in any package, type-only imports included", () => {
    const result = check({
      "packages/runner/src/a.ts": 'import type { B } from "./b.js";\nexport type A = B | 1;\n',
      "packages/runner/src/b.ts": 'import type { A } from "./a.js";\nexport type B = A | 2;\n',
    });
    expect(result.violations).toEqual(["no-circular packages/runner/src/a.ts -> packages/runner/src/b.ts"]);
  });

  it("puts every folder of the controller in a layer, in the order docs/testing.md's table gives", () => {
    const config = readFileSync(join(repo, ".dependency-cruiser.cjs"), "utf8");
    const listed = /const controllerLayers = (\[[\s\S]*?\n\]);/.exec(config)?.[1];
    const layers = JSON.parse(listed!.replace(/,(\s*\])/g, "$1")) as string[][];
    const docs = readFileSync(join(repo, "docs/testing.md"), "utf8");
    const table = docs.slice(docs.indexOf("**Inside the controller**"));
    const documented = [...table.matchAll(/^\| (\d+) \| ([^|]+) \|/gm)].map(([, , folders]) =>
      [...folders!.matchAll(/`([^`]+)`/g)].map(([, folder]) => folder).concat(folders!.includes("top-level files") ? ["."] : []),
    );
    expect(documented).toEqual(layers);
    const folders = readdirSync(join(repo, controller), { withFileTypes: true }).filter((entry) => entry.isDirectory());
    expect(folders.map((entry) => entry.name).filter((name) => !layers.flat().includes(name))).toEqual([]);
  });
});
