#!/usr/bin/env node
// Builds a module image of this repository into an OCI layout with captf-module's builder, the one
// image builder (packages/captf-module/src/build/image.ts, from its build: `pnpm build` first): <tag>
// names an OCI index of one image per architecture given a runtime binary, <tag>-<arch> each image, with
// /captf/runtime, /captf/module and its SBOM, and /captf/providers when a mirror is given for that
// architecture; user 65532:65532, the io.captf.* and org.opencontainers.image.* labels. What this script
// adds: the runtime is declared (--runtime, --runtime-version; the binary is not run, so a wrapper or a
// stand-in may be it), each architecture's providers come from its own mirror (as scripts/release.mjs
// picks them), the checkout's files (package.json, src, dist, ...) stay out of /captf/module, and the
// labels name the commit and the licence. Every time in it is the commit's (or SOURCE_DATE_EPOCH), so
// two builds of one commit give one index digest.
// Usage: node scripts/build-module-image.mjs --out <oci-layout> --tag <tag> --module <dir> --role <role>
//          --runtime tofu|terraform --runtime-version <v> --runtime-binary <arch>=<path>...
//          [--providers <arch>=<mirror dir>]... [--name <title>] [--version <v>] [--label k=v]... [--commit <id>] [--source <url>]
import { realpathSync } from "node:fs";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { gitCommit } from "../packages/controller/scripts/build-info.mjs";

const { buildModuleImage, CommandError } = await import(new URL("../packages/captf-module/dist/index.js", import.meta.url).href);

/** Files of a module directory that are the checkout's, not the module's. */
export const moduleFileFilter =
  /(^|\/)(\.terraform|\.terraform\.lock\.hcl|node_modules|src|dist|package\.json|tsconfig[^/]*\.json|jest\.config\.js)$/;
/** Labels every image of the repository carries besides the builder's. */
export const repositoryLabels = { "org.opencontainers.image.licenses": "Apache-2.0" };
/**
 * What the repository's module images add to captf-module's build options: the runtime is declared,
 * not probed; the checkout's files stay out; the source and the licence label.
 */
export const repositoryImageOptions = {
  probe: false,
  exclude: moduleFileFilter,
  source: "https://github.com/captf-io/captf",
  labels: repositoryLabels,
};
/** The runtimes a module image can ship. */
const runtimeNames = ["tofu", "terraform"];
const usage =
  "usage: build-module-image.mjs --out <oci-layout> --tag <tag> --module <dir> --role <role> --runtime tofu|terraform " +
  "--runtime-version <v> --runtime-binary <arch>=<path>... [--providers <arch>=<dir>]... [--name <title>] [--version <v>] " +
  "[--label k=v]... [--commit <id>] [--source <url>]";

/** `key=value` entries as a record. */
const pairs = (list) => Object.fromEntries(list.map((entry) => [entry.slice(0, entry.indexOf("=")), entry.slice(entry.indexOf("=") + 1)]));

/**
 * captf-module's build options for the flags: `--runtime-binary <arch>=<path>` to runtimes,
 * `--providers <arch>=<dir>` to a mirror per platform, `--commit` to the revision; undefined when a
 * required flag is missing.
 */
export function buildOptionsOf(values, env = process.env) {
  const binaries = pairs(values["runtime-binary"] ?? []);
  if (!values.out || !values.tag || !values.module || !values.role || !values["runtime-version"] || Object.keys(binaries).length === 0)
    return undefined;
  if (!runtimeNames.includes(values.runtime ?? "tofu")) return undefined;
  return {
    ...repositoryImageOptions,
    moduleDir: resolve(values.module),
    role: values.role,
    runtimes: Object.entries(binaries).map(([arch, path]) => ({ arch, path: resolve(path) })),
    runtimeName: values.runtime ?? "tofu",
    runtimeVersion: values["runtime-version"],
    platformProviders: Object.fromEntries(Object.entries(pairs(values.providers ?? [])).map(([arch, dir]) => [arch, resolve(dir)])),
    out: resolve(values.out),
    tag: values.tag,
    title: values.name,
    version: values.version,
    source: values.source ?? repositoryImageOptions.source,
    revision: values.commit ?? gitCommit(),
    labels: { ...repositoryLabels, ...pairs(values.label ?? []) },
    sourceDateEpoch: env.SOURCE_DATE_EPOCH,
  };
}

if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
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
  const options = buildOptionsOf(values);
  if (!options) {
    console.error(usage);
    process.exit(2);
  }
  const started = Date.now();
  try {
    const built = buildModuleImage(options);
    const platforms = built.platforms.map((platform) => platform.platform).join(" and ");
    const what = `${built.labels["org.opencontainers.image.title"]}, ${built.runtime.name} v${built.runtime.version}, ${platforms}`;
    console.log(
      `build-module-image: ${built.layout}:${built.tag} = ${built.digest} (${what}) in ${((Date.now() - started) / 1000).toFixed(1)}s`,
    );
  } catch (error) {
    if (!(error instanceof CommandError)) throw error;
    console.error(`build-module-image: ${error.message}`);
    process.exit(1);
  }
}
