#!/usr/bin/env node
// Builds the captf-controller image for linux/amd64 and linux/arm64 into an OCI layout with umoci
// (no Docker): <tag> names an OCI index of both, <tag>-<arch> each image. Three layers each:
//   1. /etc/passwd and /etc/group naming the user 65532, /home/nonroot, /tmp, /usr/local/bin/node
//      (a link to the runner bundle's node: the image's only node), node's LICENSE and the SBOM
//      (CycloneDX, scripts/sbom.mjs) at /usr/share/doc/captf/sbom.cdx.json
//   2. the runner bundle (packages/runner/scripts/build-bundle.mjs --bin-dir /opt/captf/runner):
//      the pinned Node LTS with its libraries; every Job's init container runs
//      `node /opt/captf/runner/runner.mjs copy /captf/bin` from this image, which relocates it
//   3. the manager bundle (scripts/build-manager-bundle.mjs) at /opt/captf/manager/manager.mjs
// and the config: user 65532:65532, entrypoint `node /opt/captf/manager/manager.mjs`, the
// org.opencontainers.image.* labels. Every time in it is the commit's (or SOURCE_DATE_EPOCH), so
// two builds of one commit give one index digest.
// Usage: node scripts/build-manager-image.mjs --out <oci-layout> --tag <tag> [--commit <id>] [--source <url>] [--arch amd64,arm64]
//   [--source-map-out <dir>]
// --source-map-out keeps the manager bundle's source map outside the image (which stays the same):
// <dir>/manager.mjs, manager.mjs.map (sources absolute) and bundle.json naming the bundle's URL in the
// image, for the test command's coverage of the manager in the e2e's Pods (scripts/lib/child-coverage.mjs).
// Then, e.g.: skopeo copy --all oci:<oci-layout>:<tag> docker://<registry>/captf-controller:<tag>
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { architectures, nodeRelease, pinnedNodeDir, sharedLibraries } from "../../runner/scripts/pinned-node.mjs";
import {
  assembleImage,
  compressedMiB,
  platformDescriptor,
  runOrExit,
  sha256File,
  sourceDate,
  stampTimes,
  tagIndex,
} from "../../../scripts/lib/oci-layout.mjs";
import { gitCommit } from "./build-info.mjs";
import { cycloneDxJson, imageLockfileComponents } from "./sbom.mjs";

const packageDir = fileURLToPath(new URL("..", import.meta.url));
const { values } = parseArgs({
  options: {
    out: { type: "string" },
    tag: { type: "string" },
    commit: { type: "string" },
    source: { type: "string", default: "https://github.com/captf-io/captf" },
    arch: { type: "string", default: architectures.join(",") },
    "source-map-out": { type: "string" },
  },
});
if (!values.out || !values.tag) {
  console.error("usage: build-manager-image.mjs --out <oci-layout-dir> --tag <tag> [--commit <id>] [--source <url>] [--arch amd64,arm64]");
  process.exit(2);
}
const layout = resolve(values.out);
const version = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8")).version;
const commit = values.commit ?? gitCommit();
const platforms = values.arch.split(",");
const runnerDir = "/opt/captf/runner";
const managerDir = "/opt/captf/manager";
const imageUser = "65532:65532";

const run = (command, args) => runOrExit("build-manager-image", command, args);
const umoci = (...args) => run("umoci", args);
const created = sourceDate(packageDir);
const createdIso = created.toISOString();

/** The SBOM of one platform's image: the bundles' npm packages from the lockfile, node and its libraries. */
function sbomOf(arch, npmComponents) {
  const node = join(pinnedNodeDir(arch), "node");
  const nodeComponent = {
    type: "application",
    bomRef: `pkg:generic/node@${nodeRelease.version}?arch=${arch}`,
    name: "node",
    version: nodeRelease.version,
    purl: `pkg:npm/${nodeRelease.builds[arch].package}@${nodeRelease.version}`,
    license: "MIT",
    hashes: { "SHA-256": sha256File(node) },
  };
  const libraries = sharedLibraries(node, arch).libraries.map((library) => ({
    type: "file",
    bomRef: `file:${runnerDir}/lib/${library.name}`,
    name: `${runnerDir}/lib/${library.name}`,
    hashes: { "SHA-256": sha256File(library.path) },
  }));
  const subject = { type: "container", name: "captf-controller", version, properties: { "oci:architecture": arch } };
  return cycloneDxJson({ subject, created: createdIso, components: [nodeComponent, ...libraries, ...npmComponents] });
}

/** Layer 1: the user, the writable-looking directories, the node on PATH, node's licence and the SBOM. */
function layOutBase(root, arch, sbom) {
  mkdirSync(join(root, "etc"), { recursive: true });
  writeFileSync(
    join(root, "etc/passwd"),
    "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n",
  );
  writeFileSync(join(root, "etc/group"), "root:x:0:\nnonroot:x:65532:\n");
  mkdirSync(join(root, "home/nonroot"), { recursive: true });
  chmodSync(join(root, "home/nonroot"), 0o755);
  mkdirSync(join(root, "tmp"), { recursive: true });
  chmodSync(join(root, "tmp"), 0o1777);
  mkdirSync(join(root, "usr/local/bin"), { recursive: true });
  symlinkSync(`${runnerDir}/node`, join(root, "usr/local/bin/node"));
  mkdirSync(join(root, "usr/share/doc/node"), { recursive: true });
  cpSync(join(pinnedNodeDir(arch), "LICENSE"), join(root, "usr/share/doc/node/LICENSE"));
  mkdirSync(join(root, "usr/share/doc/captf"), { recursive: true });
  writeFileSync(join(root, "usr/share/doc/captf/sbom.cdx.json"), sbom);
}

function labels() {
  return {
    "org.opencontainers.image.title": "captf-controller",
    "org.opencontainers.image.description": "The captf manager and the runner bundle every captf Job copies",
    "org.opencontainers.image.version": version,
    "org.opencontainers.image.revision": commit,
    "org.opencontainers.image.source": values.source,
    "org.opencontainers.image.licenses": "Apache-2.0",
    "org.opencontainers.image.created": createdIso,
    "org.opencontainers.image.base.name": "scratch",
  };
}

/** Builds `<tag>-<arch>` into the layout and returns its manifest descriptor. */
function buildPlatform(work, arch, managerBundle, npmComponents) {
  const runnerBundle = join(work, `runner-${arch}`);
  const base = join(work, `base-${arch}`);
  process.stdout.write(
    run(process.execPath, [
      join(packageDir, "../runner/scripts/build-bundle.mjs"),
      "--out",
      runnerBundle,
      "--bin-dir",
      runnerDir,
      "--arch",
      arch,
    ]),
  );
  layOutBase(base, arch, sbomOf(arch, npmComponents));
  for (const dir of [base, runnerBundle, managerBundle]) stampTimes(dir, created);

  assembleImage(run, {
    layout,
    ref: `${values.tag}-${arch}`,
    created,
    layers: [
      { source: base, path: "/", createdBy: "user 65532, /tmp, node on PATH, node's licence, the SBOM" },
      {
        source: runnerBundle,
        path: runnerDir,
        createdBy: `runner bundle with node v${nodeRelease.version} (packages/runner/scripts/build-bundle.mjs)`,
      },
      { source: managerBundle, path: managerDir, createdBy: "manager bundle (packages/controller/scripts/build-manager-bundle.mjs)" },
    ],
    arch,
    user: imageUser,
    env: ["PATH=/usr/local/bin:/usr/bin:/bin"],
    entrypoint: ["node", `${managerDir}/manager.mjs`],
    labels: labels(),
  });
  return platformDescriptor(layout, `${values.tag}-${arch}`, arch);
}

/** Moves the bundle's (unlinked) map out of the image's layer into `dir`, with a copy of the bundle and where the image has it. */
function keepSourceMap(bundleDir, dir) {
  mkdirSync(dir, { recursive: true });
  const mapFile = join(bundleDir, "manager.mjs.map");
  const map = JSON.parse(readFileSync(mapFile, "utf8"));
  // esbuild's sources are relative to the temp dir the bundle was built in.
  map.sources = map.sources.map((source) => pathToFileURL(resolve(bundleDir, source)).href);
  writeFileSync(join(dir, "manager.mjs.map"), JSON.stringify(map));
  rmSync(mapFile);
  cpSync(join(bundleDir, "manager.mjs"), join(dir, "manager.mjs"));
  const bundle = { url: pathToFileURL(`${managerDir}/manager.mjs`).href, bundle: "manager.mjs", map: "manager.mjs.map" };
  writeFileSync(join(dir, "bundle.json"), `${JSON.stringify(bundle)}\n`);
}

const started = Date.now();
const work = mkdtempSync(join(tmpdir(), "captf-manager-image-"));
let digest;
try {
  const managerBundle = join(work, "manager");
  const bundleArgs = ["--out", managerBundle, "--commit", commit, ...(values["source-map-out"] ? ["--sourcemap-beside"] : [])];
  process.stdout.write(run(process.execPath, [join(packageDir, "scripts/build-manager-bundle.mjs"), ...bundleArgs]));
  if (values["source-map-out"]) keepSourceMap(managerBundle, resolve(values["source-map-out"]));
  if (!existsSync(join(layout, "index.json"))) umoci("init", "--layout", layout);
  const npmComponents = imageLockfileComponents();
  const manifests = platforms.map((arch) => buildPlatform(work, arch, managerBundle, npmComponents));
  digest = tagIndex(layout, values.tag, manifests, createdIso);
  umoci("gc", "--layout", layout);
} finally {
  rmSync(work, { recursive: true, force: true });
}

const sizes = platforms.map((arch) => `${arch} ${compressedMiB("build-manager-image", layout, `${values.tag}-${arch}`)} MiB`);
const seconds = ((Date.now() - started) / 1000).toFixed(1);
console.log(
  `build-manager-image: ${layout}:${values.tag} = ${digest} (version ${version}, commit ${commit}, node v${nodeRelease.version}) ` +
    `in ${seconds}s: ${platforms.join(" and ")}, 3 layers each, compressed ${sizes.join(", ")}`,
);
