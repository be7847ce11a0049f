#!/usr/bin/env node
// The CycloneDX 1.5 SBOM of the captf-controller image, from pnpm-lock.yaml: every package the
// production dependencies of the image's bundles (the manager and the runner) resolve to, with
// the lockfile's integrity as its hash, plus what build-manager-image.mjs adds (node, its libraries).
// The document is built and serialized by captf-module's SBOM writer (the CycloneDX library), from
// its build (`pnpm build` first); the module images' SBOMs come from the same writer.
// No timestamp but the one given and no random serial number, so one commit gives one document.
// Usage: node scripts/sbom.mjs [--version <v>] [--created <iso>]   prints the npm part for this checkout
import { readFileSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { parse } from "yaml";
import * as captfModule from "../../captf-module/dist/index.js";

const repoDir = fileURLToPath(new URL("../../../", import.meta.url));
/** The workspace packages whose bundles the image carries. */
export const imageImporters = ["packages/controller", "packages/runner"];

/** `pkg:npm/<name>@<version>`, the scope's @ escaped as the purl spec says. */
export function npmPurl(name, version) {
  return `pkg:npm/${name.replace(/^@/, "%40")}@${version}`;
}

/** The snapshot key's package name and version: `name@1.2.3(peer@4)` → name, 1.2.3. */
function splitKey(key) {
  const at = key.indexOf("@", 1);
  return { name: key.slice(0, at), version: key.slice(at + 1).replace(/\(.*$/, "") };
}

/**
 * The npm components that `importers` (workspace paths) depend on at run time, transitively, as the
 * lockfile resolves them: dependencies and optionalDependencies, never devDependencies.
 */
export function lockfileComponents(lockfile, importers) {
  const components = new Map();
  const pendingImporters = [...importers];
  const seenImporters = new Set();
  const pendingSnapshots = [];
  while (pendingImporters.length > 0) {
    const importer = pendingImporters.pop();
    if (seenImporters.has(importer)) continue;
    seenImporters.add(importer);
    for (const [name, { version }] of Object.entries({
      ...lockfile.importers[importer]?.dependencies,
      ...lockfile.importers[importer]?.optionalDependencies,
    })) {
      if (version.startsWith("link:")) {
        const linked = join(importer, version.slice("link:".length));
        const manifest = JSON.parse(readFileSync(join(repoDir, linked, "package.json"), "utf8"));
        components.set(`${name}@${manifest.version}`, { name, version: manifest.version, license: manifest.license });
        pendingImporters.push(linked);
      } else pendingSnapshots.push(`${name}@${version}`);
    }
  }
  const seenSnapshots = new Set();
  while (pendingSnapshots.length > 0) {
    const key = pendingSnapshots.pop();
    if (seenSnapshots.has(key)) continue;
    seenSnapshots.add(key);
    const { name, version } = splitKey(key);
    const integrity = lockfile.packages[`${name}@${version}`]?.resolution?.integrity;
    components.set(`${name}@${version}`, { name, version, integrity });
    const snapshot = lockfile.snapshots[key] ?? {};
    for (const [dependency, resolved] of Object.entries({ ...snapshot.dependencies, ...snapshot.optionalDependencies }))
      pendingSnapshots.push(`${dependency}@${resolved}`);
  }
  return [...components.values()]
    .sort((a, b) => (a.name === b.name ? a.version.localeCompare(b.version) : a.name.localeCompare(b.name)))
    .map(({ name, version, integrity, license }) => ({
      type: "library",
      bomRef: npmPurl(name, version),
      name,
      version,
      purl: npmPurl(name, version),
      license,
      hashes: integrity?.startsWith("sha512-")
        ? { "SHA-512": Buffer.from(integrity.slice("sha512-".length), "base64").toString("hex") }
        : {},
    }));
}

/** The tool the manager image's SBOM names as having listed its components. */
export const sbomTool = "captf sbom.mjs (pnpm-lock.yaml)";

/** The document as a library model (captf-module's, the one SBOM writer): `subject` is the image, `components` what it holds. */
export function cycloneDxBom(document) {
  return captfModule.cycloneDxBom({ tool: sbomTool, ...document });
}

/** The CycloneDX 1.5 JSON text of the document (captf-module's), components in the order given (callers give a stable one). */
export function cycloneDxJson(document) {
  return captfModule.cycloneDxJson({ tool: sbomTool, ...document });
}

/** The npm components of the image's bundles, read from this checkout's pnpm-lock.yaml. */
export function imageLockfileComponents() {
  return lockfileComponents(parse(readFileSync(join(repoDir, "pnpm-lock.yaml"), "utf8")), imageImporters);
}

if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: { version: { type: "string", default: "0.0.0" }, created: { type: "string", default: new Date(0).toISOString() } },
  });
  const subject = { type: "container", name: "captf-controller", version: values.version };
  process.stdout.write(cycloneDxJson({ subject, created: values.created, components: imageLockfileComponents() }));
}
