#!/usr/bin/env node
// Builds a module image into an OCI layout with umoci (no Docker): <tag> names an OCI index of one
// image per architecture given a runtime binary, <tag>-<arch> each image. Layers of each:
//   1. /captf/runtime: the OpenTofu or Terraform binary built for that architecture
//   2. /captf/module (the module's files, shared sub-modules resolved) and the SBOM (CycloneDX:
//      the runtime, each provider package, each module file, with hashes) at /usr/share/doc/captf/sbom.cdx.json
//   3. /captf/providers: a provider mirror for that architecture, when given
// and the config: user 65532:65532, no entrypoint (the runner replaces it), the io.captf.* and
// org.opencontainers.image.* labels. Every time in it is the commit's (or SOURCE_DATE_EPOCH), so
// two builds of one commit give one index digest.
// Usage: node scripts/build-module-image.mjs --out <oci-layout> --tag <tag> --module <dir> --role <role>
//          --runtime tofu|terraform --runtime-version <v> --runtime-binary <arch>=<path>...
//          [--providers <arch>=<mirror dir>]... [--name <title>] [--version <v>] [--label k=v]... [--commit <id>] [--source <url>]
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, relative, resolve } from "node:path";
import { parseArgs } from "node:util";
import { gitCommit } from "../packages/controller/scripts/build-info.mjs";
import { cycloneDxJson } from "../packages/controller/scripts/sbom.mjs";
import { platformDescriptor, runOrExit, sha256, sha256File, sourceDate, stampTimes, tagIndex } from "./lib/oci-layout.mjs";

/** The Go module each runtime is built from (tools/install.sh), for the SBOM's purl. */
export const runtimeModules = { tofu: "github.com/opentofu/opentofu", terraform: "github.com/hashicorp/terraform" };
/** The user module images run as, and owner of nothing: the module is read-only to it. */
export const moduleImageUser = "65532:65532";
/** Files of a module directory that are the checkout's, not the module's. */
export const moduleFileFilter =
  /(^|\/)(\.terraform|\.terraform\.lock\.hcl|node_modules|src|dist|package\.json|tsconfig[^/]*\.json|jest\.config\.js)$/;

const tool = "build-module-image";
const { values } = parseArgs({
  options: {
    out: { type: "string" },
    tag: { type: "string" },
    module: { type: "string" },
    role: { type: "string" },
    runtime: { type: "string", default: "tofu" },
    "runtime-version": { type: "string" },
    "runtime-binary": { type: "string", multiple: true, default: [] },
    providers: { type: "string", multiple: true, default: [] },
    name: { type: "string" },
    version: { type: "string" },
    label: { type: "string", multiple: true, default: [] },
    commit: { type: "string" },
    source: { type: "string", default: "https://github.com/captf-io/captf" },
  },
});
const pairs = (list) => Object.fromEntries(list.map((entry) => [entry.slice(0, entry.indexOf("=")), entry.slice(entry.indexOf("=") + 1)]));
const binaries = pairs(values["runtime-binary"]);
const providerDirs = pairs(values.providers);
if (
  !values.out ||
  !values.tag ||
  !values.module ||
  !values.role ||
  !values["runtime-version"] ||
  Object.keys(binaries).length === 0 ||
  !(values.runtime in runtimeModules)
) {
  console.error(
    "usage: build-module-image.mjs --out <oci-layout> --tag <tag> --module <dir> --role <role> --runtime tofu|terraform " +
      "--runtime-version <v> --runtime-binary <arch>=<path>... [--providers <arch>=<dir>]... [--name <title>] [--version <v>] " +
      "[--label k=v]... [--commit <id>] [--source <url>]",
  );
  process.exit(2);
}
const layout = resolve(values.out);
const moduleDir = resolve(values.module);
const commit = values.commit ?? gitCommit();
const title = values.name ?? basename(moduleDir);
const created = sourceDate(moduleDir);
const createdIso = created.toISOString();
const umoci = (...args) => runOrExit(tool, "umoci", args);

/** Every regular file under `dir`, as paths relative to it, sorted. */
function filesUnder(dir, prefix = "") {
  return readdirSync(join(dir, prefix), { withFileTypes: true })
    .sort((a, b) => a.name.localeCompare(b.name))
    .flatMap((entry) =>
      entry.isDirectory() ? filesUnder(dir, join(prefix, entry.name)) : entry.isFile() ? [join(prefix, entry.name)] : [],
    );
}

/** The SBOM of one platform's image: the runtime, each provider package of the mirror, each module file. */
function sbomOf(arch, stagedModule, runtimeBinary, providersDir) {
  const runtime = {
    type: "application",
    bomRef: `pkg:golang/${runtimeModules[values.runtime]}@v${values["runtime-version"]}?arch=${arch}`,
    name: values.runtime,
    version: values["runtime-version"],
    purl: `pkg:golang/${runtimeModules[values.runtime]}@v${values["runtime-version"]}`,
    hashes: { "SHA-256": sha256File(runtimeBinary) },
  };
  // A mirror's paths are <host>/<namespace>/<type>/<file> (packed) or <host>/<namespace>/<type>/<version>/<os_arch>/... (unpacked).
  const providers = providersDir
    ? filesUnder(providersDir)
        .filter((path) => !path.endsWith(".json"))
        .map((path) => {
          const [host, namespace, type, ...rest] = path.split("/");
          const version = /_(\d+\.\d+\.\d+[^_]*)_/.exec(rest.join("/"))?.[1] ?? rest[0];
          return {
            type: "application",
            bomRef: `provider:${path}`,
            name: `${host}/${namespace}/${type}`,
            version,
            purl: `pkg:terraform/${namespace}/${type}@${version}`,
            hashes: { "SHA-256": sha256File(join(providersDir, path)) },
          };
        })
    : [];
  const moduleFiles = filesUnder(stagedModule).map((path) => ({
    type: "file",
    bomRef: `file:/captf/module/${path}`,
    name: `/captf/module/${path}`,
    hashes: { "SHA-256": sha256(readFileSync(join(stagedModule, path))) },
  }));
  const subject = { type: "container", name: title, version: values.version ?? values.tag, properties: { "oci:architecture": arch } };
  return cycloneDxJson({ subject, created: createdIso, components: [runtime, ...providers, ...moduleFiles] });
}

function labels() {
  return {
    "io.captf.contract": "v1alpha1",
    "io.captf.role": values.role,
    "io.captf.runtime": values.runtime,
    "io.captf.runtime.version": values["runtime-version"],
    "org.opencontainers.image.title": title,
    "org.opencontainers.image.version": values.version ?? values.tag,
    "org.opencontainers.image.revision": commit,
    "org.opencontainers.image.source": values.source,
    "org.opencontainers.image.licenses": "Apache-2.0",
    "org.opencontainers.image.created": createdIso,
    "org.opencontainers.image.base.name": "scratch",
    ...pairs(values.label),
  };
}

/** Builds `<tag>-<arch>` into the layout and returns its manifest descriptor. */
function buildPlatform(work, arch) {
  const ref = `${values.tag}-${arch}`;
  const runtimeRoot = join(work, `runtime-${arch}`, "captf");
  const moduleRoot = join(work, `module-${arch}`);
  mkdirSync(runtimeRoot, { recursive: true });
  cpSync(binaries[arch], join(runtimeRoot, "runtime"));
  chmodSync(join(runtimeRoot, "runtime"), 0o755);
  const stagedModule = join(moduleRoot, "captf/module");
  // A sub-module shared between modules is a link in the checkout (modules/bootstrap of the pools): the image holds its files.
  cpSync(realpathSync(moduleDir), stagedModule, {
    recursive: true,
    dereference: true,
    filter: (path) => !moduleFileFilter.test(relative(realpathSync(moduleDir), path)),
  });
  const providersDir = providerDirs[arch];
  mkdirSync(join(moduleRoot, "usr/share/doc/captf"), { recursive: true });
  writeFileSync(join(moduleRoot, "usr/share/doc/captf/sbom.cdx.json"), sbomOf(arch, stagedModule, binaries[arch], providersDir));
  for (const dir of [join(work, `runtime-${arch}`), moduleRoot]) stampTimes(dir, created);

  const target = `${layout}:${ref}`;
  const history = ["--history.created", createdIso];
  umoci("new", "--image", target);
  const insert = (source, path, createdBy) =>
    umoci("insert", "--image", target, ...history, "--history.created_by", createdBy, source, path);
  insert(join(work, `runtime-${arch}`), "/", `${values.runtime} v${values["runtime-version"]} for linux/${arch} at /captf/runtime`);
  insert(moduleRoot, "/", `the ${values.role} module at /captf/module, the SBOM`);
  if (providersDir) {
    const staged = join(work, `providers-${arch}`);
    cpSync(providersDir, staged, { recursive: true, dereference: true });
    stampTimes(staged, created);
    insert(staged, "/captf/providers", "the provider mirror at /captf/providers");
  }
  const config = [
    "config",
    "--image",
    target,
    "--no-history",
    "--created",
    createdIso,
    "--config.user",
    moduleImageUser,
    "--config.workingdir",
    "/",
    "--architecture",
    arch,
    "--os",
    "linux",
  ];
  for (const [key, value] of Object.entries(labels())) config.push("--config.label", `${key}=${value}`);
  umoci(...config);
  return platformDescriptor(layout, ref, arch);
}

const started = Date.now();
const work = mkdtempSync(join(tmpdir(), "captf-module-image-"));
let digest;
try {
  const existed = existsSync(join(layout, "index.json"));
  if (!existed) umoci("init", "--layout", layout);
  const manifests = Object.keys(binaries).map((arch) => buildPlatform(work, arch));
  digest = tagIndex(layout, values.tag, manifests, createdIso);
  // Blobs of images this build replaced; a new layout holds only a few small unreferenced ones, which no copy takes along.
  if (existed) umoci("gc", "--layout", layout);
} finally {
  rmSync(work, { recursive: true, force: true });
}
const built = `${title}, ${values.runtime} v${values["runtime-version"]}, ${Object.keys(binaries).join(" and ")}`;
console.log(`${tool}: ${layout}:${values.tag} = ${digest} (${built}) in ${((Date.now() - started) / 1000).toFixed(1)}s`);
