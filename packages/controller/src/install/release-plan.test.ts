// What a default release holds (`scripts/release.mjs --plan`, the list its --dry-run builds and checks
// against): the manager image, an image per module root of the repo per runtime, every public package's
// tarball, the clusterctl repository and the notes. A module root added to the repo and left out of the
// release, or a runtime dropped, fails here. The dry run's own artifacts are checked by
// manager-image.integration.test.ts ("its release"), on a subset: each image takes a build. The npm tarballs are packed
// here as the dry run packs them (scripts/lib/release-npm.mjs): pnpm pack alone, a few seconds.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "@jest/globals";

const repoDir = fileURLToPath(new URL("../../../../", import.meta.url));

interface ReleasePlan {
  version: string;
  images: { name: string; tag: string; runtime?: string; archive: string }[];
  npm: { name: string; version: string; tarball: string }[];
  clusterctl: string;
  notes: string;
}

/**
 * Directories of the module packages (packages/module-*) whose .tf files declare the contract's `captf_object` input: the roots a module
 * image carries.
 */
function moduleRoots(dir: string): string[] {
  const entries = readdirSync(dir).filter(
    (entry) => !entry.startsWith(".") && !["node_modules", "tests", "testdata", "examples"].includes(entry),
  );
  const declares = entries.some(
    (entry) => entry.endsWith(".tf") && /variable\s+"captf_object"/.test(readFileSync(join(dir, entry), "utf8")),
  );
  const below = entries.filter((entry) => statSync(join(dir, entry)).isDirectory()).flatMap((entry) => moduleRoots(join(dir, entry)));
  return declares ? [dir, ...below] : below;
}

describe("a default release", () => {
  const plan = JSON.parse(
    execFileSync(process.execPath, [join(repoDir, "scripts/release.mjs"), "--plan"], { encoding: "utf8" }),
  ) as ReleasePlan;
  const controller = JSON.parse(readFileSync(join(repoDir, "packages/controller/package.json"), "utf8")) as { version: string };

  it("holds the manager image and, for each runtime, an image of every module root in the repo but the hostile drill's", () => {
    const packagesDir = join(repoDir, "packages");
    const roots = readdirSync(packagesDir)
      .filter((dir) => dir.startsWith("module-"))
      .flatMap((dir) => moduleRoots(join(packagesDir, dir)))
      .map((root) => root.slice(packagesDir.length + 1));
    // The hostile module attacks the Job it runs in (bench/drills/hostile-module.mjs, the e2e): never a release's.
    expect(roots.sort()).toEqual([
      "module-azure-machinepool",
      "module-gcp-machinepool",
      "module-hostile/machine",
      "module-noop/cluster",
      "module-noop/machine",
      "module-noop/machinepool",
    ]);
    const version = controller.version;
    expect(plan.version).toBe(version);
    const expected = [
      "captf-controller:v" + version,
      ...["noop-cluster", "noop-machine", "noop-machinepool", "gcp-machinepool", "azure-machinepool"].flatMap((name) => [
        `${name}:v${version}-opentofu`,
        `${name}:v${version}-terraform`,
      ]),
    ];
    expect(plan.images.map((image) => `${image.name}:${image.tag}`).sort()).toEqual(expected.sort());
    for (const image of plan.images) expect(image.archive).toBe(`images/${image.name}-${image.tag}.oci.tar`);
    expect(plan.images.filter((image) => /hostile/.test(image.name))).toEqual([]);
  });

  it("holds the tarball of every public package, the clusterctl repository of this version and the notes", () => {
    const publicPackages = readdirSync(join(repoDir, "packages"))
      .filter((dir) => existsSync(join(repoDir, "packages", dir, "package.json")))
      .map((dir) => JSON.parse(readFileSync(join(repoDir, "packages", dir, "package.json"), "utf8")) as { name: string; private?: boolean })
      .filter((manifest) => !manifest.private)
      .map((manifest) => manifest.name);
    expect(plan.npm.map((entry) => entry.name).sort()).toEqual(publicPackages.sort());
    expect(publicPackages.sort()).toEqual(["@captf/contract", "@captf/render", "captf-module", "kubectl-captf", "tfcapi-lint"]);
    expect(plan.clusterctl).toBe(`clusterctl/infrastructure-terraform/v${controller.version}`);
    expect(plan.notes).toBe("RELEASE-NOTES.md");
  });
});

interface PackageManifest {
  name: string;
  version: string;
  private?: boolean;
  bin?: Record<string, string>;
  dependencies?: Record<string, string>;
}

interface Mismatch {
  unused: string[];
  undeclared: string[];
}

const releaseNpm = (await import(pathToFileURL(join(repoDir, "scripts/lib/release-npm.mjs")).href)) as {
  packPublicPackage(options: {
    repoDir: string;
    dir: string;
    manifest: PackageManifest;
    versions: Record<string, string>;
    work: string;
    npmDir: string;
  }): { copy: string; published: PackageManifest };
  dependencyMismatch(manifest: PackageManifest, texts: readonly string[]): Mismatch;
  shippedCode(dir: string): string[];
};

describe("a release's npm tarballs", () => {
  const work = mkdtempSync(join(tmpdir(), "release-npm-"));
  afterAll(() => rmSync(work, { recursive: true, force: true }));
  const workspace = readdirSync(join(repoDir, "packages"))
    .filter((dir) => existsSync(join(repoDir, "packages", dir, "package.json")))
    .map((dir) => ({
      dir: `packages/${dir}`,
      manifest: JSON.parse(readFileSync(join(repoDir, "packages", dir, "package.json"), "utf8")) as PackageManifest,
    }));
  const versions = Object.fromEntries(workspace.map(({ manifest }) => [manifest.name, manifest.version]));

  it.each(workspace.filter(({ manifest }) => !manifest.private).map(({ dir, manifest }) => [manifest.name, dir, manifest] as const))(
    "%s: packed as the dry run packs it, its tarball depends on exactly the packages its files import",
    (name, dir, manifest) => {
      const npmDir = join(work, "npm");
      releaseNpm.packPublicPackage({ repoDir, dir, manifest, versions, work, npmDir });
      const tarball = join(npmDir, `${name.replace(/^@/, "").replace("/", "-")}-${manifest.version}.tgz`);
      const unpacked = join(work, "unpacked", name);
      mkdirSync(unpacked, { recursive: true });
      execFileSync("tar", ["xzf", tarball, "-C", unpacked, "--strip-components=1"]);
      const published = JSON.parse(readFileSync(join(unpacked, "package.json"), "utf8")) as PackageManifest;
      // Built code ships (a missing dist/ would import nothing and fail below for the wrong reason).
      const code = releaseNpm.shippedCode(unpacked);
      expect([name, code.some((file) => file.startsWith(join(unpacked, "dist/")))]).toEqual([name, true]);
      for (const target of Object.values(published.bin ?? {})) expect([name, existsSync(join(unpacked, target))]).toEqual([name, true]);
      const mismatch = releaseNpm.dependencyMismatch(
        published,
        code.map((file) => readFileSync(file, "utf8")),
      );
      expect([name, mismatch]).toEqual([name, { unused: [], undeclared: [] }]);
      if (name === "captf-module")
        expect(Object.keys(published.dependencies ?? {}).sort()).toEqual([
          "@captf/contract",
          "@cyclonedx/cyclonedx-library",
          "@kubernetes/client-node",
          "tfcapi-lint",
          "yargs",
        ]);
    },
    30_000,
  );

  it("refuses a package that lists a dependency nothing it ships imports, or imports one it does not list", () => {
    const fixture = join(work, "fixture");
    const pack = (dependencies: Record<string, string>, code: string) => {
      mkdirSync(join(fixture, "packages/p/dist"), { recursive: true });
      writeFileSync(join(fixture, "packages/p/dist/index.js"), code);
      const manifest = { name: "p", version: "1.0.0", files: ["dist"], dependencies };
      return () =>
        releaseNpm.packPublicPackage({ repoDir: fixture, dir: "packages/p", manifest, versions: {}, work, npmDir: join(work, "refused") });
    };
    expect(pack({ yargs: "18.2.0", ajv: "8.0.0" }, 'import yargs from "yargs";\n')).toThrow(
      "release: p lists ajv in dependencies, which nothing it ships imports",
    );
    expect(pack({}, 'import { readFileSync } from "node:fs";\nconst c = await import("@kubernetes/client-node");\n')).toThrow(
      "release: p imports @kubernetes/client-node, which its dependencies do not list",
    );
    expect(existsSync(join(work, "refused"))).toBe(false);
  });
});
