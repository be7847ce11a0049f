#!/usr/bin/env node
// The release of this checkout, into one folder (`--dry-run`: nothing is published):
//   images/      the captf-controller image and every module image (the no-op modules and the cloud
//                modules, per runtime) as OCI archives of an index of linux/amd64 and linux/arm64; a
//                module image's platform carries the providers its module requires at /captf/providers
//                when the mirror named by CAPTF_PROVIDER_MIRROR has them for it (release.json's
//                providers and missingProviders, and a line of the output, say which got none and why)
//   clusterctl/  the provider repository: infrastructure-terraform/v<version>/ (metadata.yaml,
//                infrastructure-components.yaml, the cluster templates)
//   npm/         the tarballs of the public packages, as `pnpm pack` makes them (workspace: specifiers
//                replaced by versions), without the monorepo's `@captf/source` export condition; a package
//                whose dependencies are not exactly the packages its shipped files import is refused
//   RELEASE-NOTES.md  each package's CHANGELOG.md section of its version, and what `changeset version`
//                would make of the pending changesets (run on a copy: the checkout keeps them)
//   release.json, SHA256SUMS  what the folder holds
// Versions are the checkout's: the release procedure is `pnpm version-packages` (changeset version and the
// version constants, scripts/version-constants.mjs), commit, then this.
// Needs `pnpm build` first, umoci, skopeo, and the runtimes from tools/install.sh (both architectures').
// Usage: [CAPTF_PROVIDER_MIRROR=<dir>] node scripts/release.mjs --dry-run --out <dir> [--arch amd64,arm64] [--modules noop-cluster,...]
//          [--runtimes tofu,terraform] [--manager-layout <oci-layout>:<tag>] [--commit <id>]
//        node scripts/release.mjs --plan   prints the artifacts a release would hold, as JSON
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { gitCommit } from "../packages/controller/scripts/build-info.mjs";
import { runOrExit, sha256File } from "./lib/oci-layout.mjs";
import { syncVersionConstants } from "./version-constants.mjs";
import { releaseModules } from "./lib/release-modules.mjs";
import { packPublicPackage } from "./lib/release-npm.mjs";
import { repositoryImageOptions } from "./build-module-image.mjs";

const tool = "release";
const repoDir = fileURLToPath(new URL("..", import.meta.url));
const { values } = parseArgs({
  options: {
    "dry-run": { type: "boolean", default: false },
    plan: { type: "boolean", default: false },
    out: { type: "string" },
    arch: { type: "string", default: "amd64,arm64" },
    modules: { type: "string" },
    runtimes: { type: "string" },
    "manager-layout": { type: "string" },
    commit: { type: "string" },
    help: { type: "boolean", default: false },
  },
});
if (values.help) {
  // The usage is this file's opening comment.
  const header = readFileSync(fileURLToPath(import.meta.url), "utf8")
    .split("\n")
    .slice(1);
  console.log(
    header
      .slice(
        0,
        header.findIndex((line) => !line.startsWith("//")),
      )
      .map((line) => line.replace(/^\/\/ ?/, ""))
      .join("\n"),
  );
  process.exit(0);
}

/** The clusterctl provider directory name (`clusterctl init --infrastructure terraform`). */
export const clusterctlProviderDirectory = "infrastructure-terraform";

const readJson = (path) => JSON.parse(readFileSync(path, "utf8"));
const run = (command, args, options = {}) => runOrExit(tool, command, args, options);

/** Builds a module image with captf-module's builder; a build error ends the release with its message. */
function buildModuleImageOrExit(options) {
  try {
    const built = buildModuleImage(options);
    console.log(
      `${tool}: ${built.layout}:${built.tag} = ${built.digest} (${options.title}, ${built.runtime.name} v${built.runtime.version})`,
    );
  } catch (error) {
    if (!(error instanceof CommandError)) throw error;
    console.error(`${tool}: ${error.message}`);
    process.exit(1);
  }
}

/** Every workspace package (pnpm-workspace.yaml: packages/* and e2e): its directory and package.json. */
export function workspacePackages() {
  const dirs = [...readdirSync(join(repoDir, "packages")).map((name) => `packages/${name}`), "e2e"];
  return dirs
    .filter((dir) => existsSync(join(repoDir, dir, "package.json")))
    .map((dir) => ({ dir, manifest: readJson(join(repoDir, dir, "package.json")) }));
}

const packages = workspacePackages();
const controller = packages.find((entry) => entry.manifest.name === "@captf/controller");
const version = controller.manifest.version;
const publicPackages = packages.filter((entry) => !entry.manifest.private);
// The tools lookup of the testkit and the controller's clusterctl assets, from their builds.
const { runtimeBinaries, runtimeNames, runtimeVersion, moduleRuntimes } = await import(
  new URL("../packages/testkit/dist/runtimes.js", import.meta.url).href
);
const { platformProviderMirrors, providerMirrorVariable } = await import(
  new URL("../packages/testkit/dist/provider-sources.js", import.meta.url).href
);
// The one module image builder, captf-module's.
const { buildModuleImage, CommandError } = await import(new URL("../packages/captf-module/dist/index.js", import.meta.url).href);
const { staleClusterctlFiles } = await import(new URL("../packages/controller/dist/install/clusterctl.js", import.meta.url).href);
const architectures = values.arch.split(",");
const runtimes = values.runtimes?.split(",") ?? runtimeNames;
const modules = values.modules ? releaseModules.filter((module) => values.modules.split(",").includes(module.name)) : releaseModules;

/** The images and files a release of this checkout holds, relative to the release folder. */
function plan() {
  return {
    version,
    images: [
      { name: "captf-controller", tag: `v${version}`, archive: `images/captf-controller-v${version}.oci.tar` },
      ...modules.flatMap((module) =>
        runtimes.map((runtime) => {
          const tag = `v${version}-${moduleRuntimes[runtime].imageTagSuffix}`;
          return { name: module.name, tag, runtime, archive: `images/${module.name}-${tag}.oci.tar` };
        }),
      ),
    ],
    packages: packages.map(({ dir, manifest }) => ({
      name: manifest.name,
      dir,
      version: manifest.version,
      private: manifest.private === true,
    })),
    npm: publicPackages.map(({ manifest }) => ({
      name: manifest.name,
      version: manifest.version,
      tarball: `npm/${manifest.name.replace(/^@/, "").replace("/", "-")}-${manifest.version}.tgz`,
    })),
    clusterctl: `clusterctl/${clusterctlProviderDirectory}/v${version}`,
    notes: "RELEASE-NOTES.md",
  };
}

if (values.plan) {
  console.log(JSON.stringify(plan(), null, 2));
  process.exit(0);
}
if (!values["dry-run"]) {
  console.error(
    "release: only --dry-run is implemented: publish its folder with `skopeo copy --all oci-archive:...`, `npm publish " +
      "<tarball>` and the clusterctl files as release assets",
  );
  process.exit(2);
}
if (!values.out) {
  console.error(
    "usage: release.mjs --dry-run --out <dir> [--arch amd64,arm64] [--modules a,b] [--runtimes tofu,terraform] " +
      "[--manager-layout <layout>:<tag>]",
  );
  process.exit(2);
}

/** The `## <version>` section of a CHANGELOG.md, without its heading, or undefined. */
export function changelogSection(text, wanted) {
  const sections = text.split(/^## /m).slice(1);
  const section = sections.find((candidate) => candidate.split("\n", 1)[0].trim() === wanted);
  return section?.slice(section.indexOf("\n") + 1).trim();
}

/**
 * The pending changesets as `changeset version` writes them, per package: run on a copy of the
 * workspace's manifests and .changeset/, so the checkout keeps its changesets and versions.
 */
function pendingChanges(work) {
  const copy = join(work, "changesets");
  const pending = readdirSync(join(repoDir, ".changeset")).filter((name) => name.endsWith(".md") && name !== "README.md");
  if (pending.length === 0) return [];
  for (const file of ["package.json", "pnpm-workspace.yaml"]) cpSync(join(repoDir, file), join(copy, file));
  cpSync(join(repoDir, ".changeset"), join(copy, ".changeset"), { recursive: true });
  for (const { dir } of packages) {
    mkdirSync(join(copy, dir), { recursive: true });
    for (const file of ["package.json", "CHANGELOG.md"])
      if (existsSync(join(repoDir, dir, file))) cpSync(join(repoDir, dir, file), join(copy, dir, file));
  }
  symlinkSync(join(repoDir, "node_modules"), join(copy, "node_modules"));
  run(process.execPath, [join(repoDir, "node_modules/@changesets/cli/bin.js"), "version"], { cwd: copy });
  return packages
    .map(({ dir, manifest }) => {
      const next = readJson(join(copy, dir, "package.json")).version;
      const changelog = join(copy, dir, "CHANGELOG.md");
      return {
        name: manifest.name,
        from: manifest.version,
        to: next,
        notes: next !== manifest.version && existsSync(changelog) ? changelogSection(readFileSync(changelog, "utf8"), next) : undefined,
      };
    })
    .filter((change) => change.notes !== undefined);
}

function releaseNotes(work) {
  const lines = [`# captf v${version}`, ""];
  for (const { dir, manifest } of packages) {
    const changelog = join(repoDir, dir, "CHANGELOG.md");
    const section = existsSync(changelog) ? changelogSection(readFileSync(changelog, "utf8"), manifest.version) : undefined;
    if (section) lines.push(`## ${manifest.name}@${manifest.version}`, "", section, "");
  }
  const pending = pendingChanges(work);
  if (pending.length > 0) {
    lines.push("# Pending changesets", "", "Not yet versioned: `pnpm version-packages` would release them as follows.", "");
    for (const change of pending) lines.push(`## ${change.name} ${change.from} → ${change.to}`, "", change.notes, "");
  }
  return { text: `${lines.join("\n").trimEnd()}\n`, pending };
}

/** Each public package as published, packed by pnpm: refused when its dependencies are not what its files import. */
function packPublicPackages(work, npmDir) {
  const versions = Object.fromEntries(packages.map(({ manifest }) => [manifest.name, manifest.version]));
  for (const { dir, manifest } of publicPackages) packPublicPackage({ repoDir, dir, manifest, versions, work, npmDir });
}

function copyClusterctlAssets(target) {
  const stale = staleClusterctlFiles(join(repoDir, "packages/controller"), join(repoDir, "e2e/manifests/demo"));
  if (stale.length > 0)
    throw new Error(`release: stale clusterctl assets (run \`pnpm --filter @captf/controller gen\`): ${stale.join(", ")}`);
  cpSync(join(repoDir, "packages/controller/config/clusterctl"), target, { recursive: true });
}

/** Copies every platform of `layout:ref` into an OCI archive whose one image is named `tag`. */
function archive(layout, ref, file, tag) {
  run("skopeo", ["copy", "--all", "--quiet", `oci:${layout}:${ref}`, `oci-archive:${file}:${tag}`]);
}

const staleConstants = syncVersionConstants(repoDir, { write: false });
if (staleConstants.length > 0) {
  const stale = staleConstants.map(({ name, from, to }) => `${name} is ${from}, its package.json ${to}`).join("; ");
  console.error(`release: ${stale}: run \`pnpm version-packages\` (or node scripts/version-constants.mjs) and commit`);
  process.exit(1);
}
const commit = values.commit ?? gitCommit();
const out = resolve(values.out);
const started = Date.now();
const work = mkdtempSync(join(tmpdir(), "captf-release-"));
try {
  rmSync(out, { recursive: true, force: true });
  for (const dir of ["images", "npm", "clusterctl"]) mkdirSync(join(out, dir), { recursive: true });
  const contents = plan();

  const [controllerImage, ...moduleImages] = contents.images;
  if (values["manager-layout"]) {
    const at = values["manager-layout"].lastIndexOf(":");
    archive(
      values["manager-layout"].slice(0, at),
      values["manager-layout"].slice(at + 1),
      join(out, controllerImage.archive),
      controllerImage.tag,
    );
  } else {
    const layout = join(work, "controller");
    run(process.execPath, [
      join(repoDir, "packages/controller/scripts/build-manager-image.mjs"),
      "--out",
      layout,
      "--tag",
      controllerImage.tag,
      "--commit",
      commit,
      "--arch",
      architectures.join(","),
    ]);
    archive(layout, controllerImage.tag, join(out, controllerImage.archive), controllerImage.tag);
  }
  for (const image of moduleImages) {
    const module = modules.find((candidate) => candidate.name === image.name);
    const binaries = runtimeBinaries(image.runtime);
    const missing = architectures.filter((arch) => !binaries[arch]);
    if (missing.length > 0)
      throw new Error(
        `release: no ${image.runtime} binary for ${missing.join(", ")}: tools/install.sh --only ${image.runtime}-${missing[0]}`,
      );
    const layout = join(work, `module-${image.name}`);
    const providersWork = join(work, `providers-${image.name}-${image.runtime}`);
    const providers = await platformProviderMirrors(
      join(repoDir, module.dir),
      image.runtime,
      process.env[providerMirrorVariable] || undefined,
      architectures,
      providersWork,
    );
    buildModuleImageOrExit({
      ...repositoryImageOptions,
      out: layout,
      tag: image.tag,
      moduleDir: join(repoDir, module.dir),
      role: module.role,
      runtimeName: image.runtime,
      runtimeVersion: runtimeVersion(image.runtime),
      runtimes: architectures.map((arch) => ({ arch, path: binaries[arch] })),
      platformProviders: Object.fromEntries(architectures.map((arch) => [arch, providers[arch].dir])),
      title: image.name,
      revision: commit,
      sourceDateEpoch: process.env.SOURCE_DATE_EPOCH,
    });
    rmSync(providersWork, { recursive: true, force: true });
    archive(layout, image.tag, join(out, image.archive), image.tag);
    image.providers = Object.fromEntries(architectures.map((arch) => [arch, providers[arch].packages]));
    const without = architectures.filter((arch) => providers[arch].missing);
    if (without.length > 0) image.missingProviders = Object.fromEntries(without.map((arch) => [arch, providers[arch].missing]));
    for (const arch of without)
      console.log(
        `release: ${image.name}:${image.tag} for linux/${arch} has no /captf/providers (its Jobs' init needs registry access): ` +
          `${providers[arch].missing}`,
      );
  }

  copyClusterctlAssets(join(out, contents.clusterctl));
  packPublicPackages(work, join(out, "npm"));
  const notes = releaseNotes(work);
  writeFileSync(join(out, contents.notes), notes.text);
  const pendingChangesets = notes.pending.map(({ name, from, to }) => ({ name, from, to }));
  writeFileSync(join(out, "release.json"), `${JSON.stringify({ ...contents, commit, architectures, pendingChangesets }, null, 2)}\n`);

  const files = (dir) =>
    readdirSync(dir, { withFileTypes: true, recursive: true })
      .filter((entry) => entry.isFile())
      .map((entry) => relative(out, join(entry.parentPath, entry.name)));
  const sums = files(out)
    .sort()
    .map((file) => `${sha256File(join(out, file))}  ${file}`);
  writeFileSync(join(out, "SHA256SUMS"), `${sums.join("\n")}\n`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
console.log(`release: dry run of captf v${version} (commit ${commit}) into ${out} in ${((Date.now() - started) / 1000).toFixed(1)}s`);
