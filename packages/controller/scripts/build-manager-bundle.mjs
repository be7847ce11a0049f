#!/usr/bin/env node
// Builds the manager as one ESM file, <out>/manager.mjs: bin/captf-manager.js with every dependency
// bundled from source (the runner's bundle is built the same way, by packages/runner/scripts/build-bundle.mjs).
// It runs with any Node >= 20 and needs nothing else; the image puts it at /opt/captf/manager.
// Usage: node scripts/build-manager-bundle.mjs [--out <dir>] [--commit <id>] [--sourcemap | --sourcemap-beside]
// --sourcemap adds manager.mjs.map (linked, no sources inlined): the test command's coverage of child
// processes (NODE_V8_COVERAGE) maps the bundle's lines back to the TypeScript sources with it.
// --sourcemap-beside writes the map without linking it: manager.mjs is byte for byte the one without a map
// (the image's), and the map stays outside it (build-manager-image.mjs --source-map-out).
// --commit defaults to `git rev-parse --short=12 HEAD` (or "unknown"); `manager --version` and
// captf_build_info report it.
import { mkdirSync, rmSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { gitCommit } from "./build-info.mjs";

const packageDir = fileURLToPath(new URL("..", import.meta.url));
const { values } = parseArgs({
  options: {
    out: { type: "string", default: join(packageDir, "bundle") },
    commit: { type: "string" },
    sourcemap: { type: "boolean", default: false },
    "sourcemap-beside": { type: "boolean", default: false },
  },
});
const out = resolve(values.out);
const commit = values.commit ?? gitCommit();

// esbuild is the runner's build dependency; resolving it there keeps one version in the workspace.
const esbuildPath = createRequire(join(packageDir, "../runner/package.json")).resolve("esbuild");
const { build } = await import(pathToFileURL(esbuildPath).href);

/** The bin shim imports ../dist/<module>.js; the bundle takes the TypeScript source instead, so no tsc build is needed. */
const distToSource = {
  name: "dist-to-source",
  setup(builder) {
    builder.onResolve({ filter: /^\.\.\/dist\/.+\.js$/ }, (args) => ({
      path: join(packageDir, "src", args.path.slice("../dist/".length).replace(/\.js$/, ".ts")),
    }));
  },
};

const started = Date.now();
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const outfile = join(out, "manager.mjs");
await build({
  entryPoints: [join(packageDir, "bin", "captf-manager.js")],
  outfile,
  bundle: true,
  format: "esm",
  platform: "node",
  target: "node20",
  conditions: ["@captf/source"],
  legalComments: "none",
  define: { CAPTF_BUILD_COMMIT: JSON.stringify(commit) },
  // CommonJS dependencies still call require(): give them one.
  banner: {
    js: 'import { createRequire as __captfCreateRequire } from "node:module"; const require = __captfCreateRequire(import.meta.url);',
  },
  plugins: [distToSource],
  logLevel: "warning",
  ...(values.sourcemap ? { sourcemap: "linked", sourcesContent: false } : {}),
  ...(values["sourcemap-beside"] ? { sourcemap: "external", sourcesContent: false } : {}),
});
console.log(
  `build-manager-bundle: ${outfile} (commit ${commit}) in ${((Date.now() - started) / 1000).toFixed(1)}s: ` +
    `${(statSync(outfile).size / 1048576).toFixed(1)} MiB`,
);
