// What a default release holds (`scripts/release.mjs --plan`, the list its --dry-run builds and checks
// against): the manager image, an image per module root of the repo per runtime, every public package's
// tarball, the clusterctl repository and the notes. A module root added to the repo and left out of the
// release, or a runtime dropped, fails here. The dry run's own artifacts are checked by
// manager-image.integration.test.ts ("its release"), on a subset: each image takes a build.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "@jest/globals";

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
