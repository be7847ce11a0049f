// Each published package depends only on what it uses: every entry of its package.json
// `dependencies` is imported by a source file that ships (src/, not a test or test support) or by
// one of its bin scripts. A dependency only tests use belongs in devDependencies.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "@jest/globals";

const repoDir = new URL("../../..", import.meta.url).pathname;

interface Manifest {
  name: string;
  private?: boolean;
  dependencies?: Record<string, string>;
}

function shippedSources(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter(
      (entry) =>
        entry.isFile() && /\.(ts|js|mjs|cjs)$/.test(entry.name) && !/\.test(-support)?\.ts$|\.test\.|\.test-support\./.test(entry.name),
    )
    .map((entry) => join(entry.parentPath, entry.name));
}

/** The packages a module's text imports: the release's reading (scripts/lib/release-npm.mjs), which packs only what passes it. */
const { importedPackages } = (await import(pathToFileURL(join(repoDir, "scripts/lib/release-npm.mjs")).href)) as {
  importedPackages(text: string): Set<string>;
};

/** The runtime dependencies a package lists that nothing it ships imports. */
export function unusedDependencies(manifest: Manifest, sources: readonly string[]): string[] {
  const imported = new Set(sources.flatMap((text) => [...importedPackages(text)]));
  return Object.keys(manifest.dependencies ?? {}).filter((name) => !imported.has(name) && !imported.has(name.replace(/^@types\//, "")));
}

const published = readdirSync(join(repoDir, "packages"))
  .map((dir) => join(repoDir, "packages", dir))
  .filter((dir) => existsSync(join(dir, "package.json")))
  .map((dir) => ({ dir, manifest: JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as Manifest }))
  // The manager and the runner are private (they ship as images), but their bundles hold their dependencies.
  .filter(({ manifest }) => !manifest.private || ["@captf/controller", "@captf/runner"].includes(manifest.name));

describe("published packages' runtime dependencies", () => {
  it("finds the published packages", () => {
    expect(published.map(({ manifest }) => manifest.name)).toEqual(
      expect.arrayContaining(["@captf/contract", "@captf/render", "tfcapi-lint", "kubectl-captf"]),
    );
  });

  it.each(published.map(({ dir, manifest }) => [manifest.name, dir, manifest] as const))(
    "%s imports every package it lists in dependencies",
    (_name, dir, manifest) => {
      const sources = [...shippedSources(join(dir, "src")), ...shippedSources(join(dir, "bin"))].map((file) => readFileSync(file, "utf8"));
      expect(unusedDependencies(manifest, sources)).toEqual([]);
    },
  );

  it("reads imports of every form and only the package part of a specifier", () => {
    const text = [
      'import { a } from "yargs";',
      'import type { Argv } from "yargs/helpers";',
      'export { b } from "@captf/contract/api";',
      'const c = await import("@kubernetes/client-node");',
      'import "pino";',
      'import { join } from "node:path";',
      'import { d } from "./local.js";',
      // A flag named like an import, in a string: no import.
      '.option("runtime-from", { type: "string" });',
      'import { e } from "fs";',
    ].join("\n");
    expect([...importedPackages(text)].sort()).toEqual(["@captf/contract", "@kubernetes/client-node", "pino", "yargs"]);
    expect(unusedDependencies({ name: "x", dependencies: { yargs: "1", "@cdktf/hcl2json": "0.21.0" } }, [text])).toEqual([
      "@cdktf/hcl2json",
    ]);
  });
});

describe("versioning", () => {
  it(
    "lets changesets version every workspace package: none ignored, private ones too, every package.json inside the workspace " + "globs",
    () => {
      const config = JSON.parse(readFileSync(join(repoDir, ".changeset/config.json"), "utf8")) as {
        ignore: string[];
        access: string;
        privatePackages?: { version?: boolean };
      };
      expect({ ignore: config.ignore, access: config.access, versionPrivate: config.privatePackages?.version ?? true }).toEqual({
        ignore: [],
        access: "public",
        versionPrivate: true,
      });
      const globs = readFileSync(join(repoDir, "pnpm-workspace.yaml"), "utf8")
        .match(/^packages:\n((?:\s+- .*\n)+)/m)![1]!
        .split("\n")
        .map((line) => line.replace(/^\s+- "?|"$/g, ""))
        .filter(Boolean);
      expect(globs).toEqual(["packages/*", "e2e"]);
      const manifests = [
        ...readdirSync(join(repoDir, "packages")).map((dir) => `packages/${dir}`),
        "e2e",
        ...readdirSync(repoDir).filter((dir) => !["packages", "node_modules"].includes(dir)),
      ].filter((dir) => existsSync(join(repoDir, dir, "package.json")));
      expect(
        manifests.filter(
          (dir) =>
            !globs.some((glob) =>
              glob.endsWith("/*") ? dir.startsWith(glob.slice(0, -1)) && !dir.slice(glob.length - 1).includes("/") : dir === glob,
            ),
        ),
      ).toEqual([]);
    },
  );
});
