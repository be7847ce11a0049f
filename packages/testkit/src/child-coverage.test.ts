// scripts/lib/child-coverage.mjs: the V8 coverage a child process writes, read back as the TypeScript source's lines.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "@jest/globals";
import ts from "typescript";

interface FileCoverage {
  statementMap: Record<string, { start: { line: number } }>;
  s: Record<string, number>;
}
const repo = fileURLToPath(new URL("../../../", import.meta.url));
const { childCoverage } = (await import(pathToFileURL(join(repo, "scripts/lib/child-coverage.mjs")).href)) as {
  childCoverage(dir: string, repoRoot: string): Promise<Record<string, FileCoverage>>;
};

describe("childCoverage", () => {
  const base = mkdtempSync(join(tmpdir(), "captf-child-coverage-"));
  afterAll(() => rmSync(base, { recursive: true, force: true }));

  it("maps a child's coverage of a source-mapped build back to the package source's lines, run and not run", async () => {
    // A build of a package source in a temp dir (as the manager's and runner's bundles are), its map naming the source.
    const source = join(repo, "packages/contract/src/object-names.ts");
    const built = ts.transpileModule(readFileSync(source, "utf8"), {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, sourceMap: true },
      fileName: source,
    });
    const map = JSON.parse(built.sourceMapText ?? "{}") as { sources: string[] };
    map.sources = [source];
    writeFileSync(
      join(base, "object-names.mjs"),
      built.outputText.replace(/\/\/# sourceMappingURL=.*$/m, "//# sourceMappingURL=object-names.mjs.map"),
    );
    writeFileSync(join(base, "object-names.mjs.map"), JSON.stringify(map));
    writeFileSync(join(base, "main.mjs"), 'import { nameLabelValue } from "./object-names.mjs";\nnameLabelValue("x".repeat(70));\n');
    const coverageDir = join(base, "coverage");
    execFileSync(process.execPath, [join(base, "main.mjs")], { env: { PATH: process.env.PATH ?? "", NODE_V8_COVERAGE: coverageDir } });

    const coverage = await childCoverage(coverageDir, repo);
    const file = coverage[source];
    expect(Object.keys(coverage)).toEqual([source]);
    const counts = new Map<number, number>();
    for (const [id, location] of Object.entries(file?.statementMap ?? {}))
      counts.set(location.start.line, Math.max(counts.get(location.start.line) ?? 0, file?.s[id] ?? 0));
    const lineOf = (text: string) =>
      readFileSync(source, "utf8")
        .split("\n")
        .findIndex((line) => line.includes(text)) + 1;
    // nameLabelValue and the digest it took ran; boundedObjectName, never called, did not.
    expect(counts.get(lineOf("return name.length <= maxLabelValueLength"))).toBeGreaterThan(0);
    expect(counts.get(lineOf('return createHash("sha256")'))).toBeGreaterThan(0);
    expect(counts.get(lineOf("const full = prefix + name")) ?? 0).toBe(0);
  });
});
