// scripts/lib/child-coverage.mjs: the V8 coverage a child process writes, read back as the TypeScript source's lines.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
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

/** The highest count of each line's statements. */
function lineCounts(file: FileCoverage | undefined): Map<number, number> {
  const counts = new Map<number, number>();
  for (const [id, location] of Object.entries(file?.statementMap ?? {}))
    counts.set(location.start.line, Math.max(counts.get(location.start.line) ?? 0, file?.s[id] ?? 0));
  return counts;
}

// A build of a package source (as the manager's and runner's bundles are), its code without a sourceMappingURL and its map.
const source = join(repo, "packages/contract/src/object-names.ts");
const built = ts.transpileModule(readFileSync(source, "utf8"), {
  compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, sourceMap: true },
  fileName: source,
});
const code = built.outputText.replace(/\/\/# sourceMappingURL=.*$/m, "");
const mapNaming = (sourceName: string) => JSON.stringify({ ...(JSON.parse(built.sourceMapText ?? "{}") as object), sources: [sourceName] });
const lineOf = (text: string) =>
  readFileSync(source, "utf8")
    .split("\n")
    .findIndex((line) => line.includes(text)) + 1;

describe("childCoverage", () => {
  const base = mkdtempSync(join(tmpdir(), "captf-child-coverage-"));
  afterAll(() => rmSync(base, { recursive: true, force: true }));

  it("maps a child's coverage of a source-mapped build back to the package source's lines, run and not run", async () => {
    // The build in a temp dir, linked to its map, which names the source.
    writeFileSync(join(base, "object-names.mjs"), `${code}//# sourceMappingURL=object-names.mjs.map\n`);
    writeFileSync(join(base, "object-names.mjs.map"), mapNaming(source));
    writeFileSync(join(base, "main.mjs"), 'import { nameLabelValue } from "./object-names.mjs";\nnameLabelValue("x".repeat(70));\n');
    const coverageDir = join(base, "coverage");
    execFileSync(process.execPath, [join(base, "main.mjs")], { env: { PATH: process.env.PATH ?? "", NODE_V8_COVERAGE: coverageDir } });

    const coverage = await childCoverage(coverageDir, repo);
    expect(Object.keys(coverage)).toEqual([source]);
    const counts = lineCounts(coverage[source]);
    // nameLabelValue and the digest it took ran; boundedObjectName, never called, did not.
    expect(counts.get(lineOf("return name.length <= maxLabelValueLength"))).toBeGreaterThan(0);
    expect(counts.get(lineOf('return createHash("sha256")'))).toBeGreaterThan(0);
    expect(counts.get(lineOf("const full = prefix + name")) ?? 0).toBe(0);
  });

  it("maps a Pod's coverage of a bundle whose map is kept outside its image (bundles/, pods/) to the source's lines", async () => {
    // As the manager's image: the build carries no sourceMappingURL; its map and a copy are kept under bundles/<name>/.
    const image = join(base, "image");
    mkdirSync(image);
    writeFileSync(join(image, "names.mjs"), code);
    writeFileSync(join(image, "main.mjs"), 'import { boundedObjectName } from "./names.mjs";\nboundedObjectName("p-", "x".repeat(70));\n');
    const coverageDir = join(base, "beside");
    execFileSync(process.execPath, [join(image, "main.mjs")], {
      env: { PATH: process.env.PATH ?? "", NODE_V8_COVERAGE: join(coverageDir, "pods") },
    });
    const kept = join(coverageDir, "bundles", "names");
    mkdirSync(kept, { recursive: true });
    writeFileSync(join(kept, "names.mjs"), code);
    writeFileSync(join(kept, "names.mjs.map"), mapNaming(pathToFileURL(source).href));
    const bundle = { url: pathToFileURL(join(image, "names.mjs")).href, bundle: "names.mjs", map: "names.mjs.map" };
    writeFileSync(join(kept, "bundle.json"), JSON.stringify(bundle));

    const coverage = await childCoverage(coverageDir, repo);
    expect(Object.keys(coverage)).toEqual([source]);
    const counts = lineCounts(coverage[source]);
    expect(counts.get(lineOf("const full = prefix + name"))).toBeGreaterThan(0);
    expect(counts.get(lineOf("return name.length <= maxLabelValueLength")) ?? 0).toBe(0);

    // Another build at the same URL (a different length) is not that bundle: its map would name the wrong lines.
    writeFileSync(join(kept, "names.mjs"), `${code}\n// another build\n`);
    expect(await childCoverage(coverageDir, repo)).toEqual({});
  });
});
