#!/usr/bin/env node
// Builds the relocatable runner bundle for one architecture (this machine's unless --arch says):
//   <out>/node        the pinned Node LTS (node-release.json, scripts/pinned-node.mjs), its interpreter
//                     set to <bin-dir>/lib/<ld.so> and its runpath to <bin-dir>/lib
//   <out>/lib/        the shared libraries that node loads, the dynamic loader included
//   <out>/runner.mjs  what Jobs start: it loads runner.cjs
//   <out>/runner.cjs  the runner and every dependency a run needs as one CommonJS file (esbuild)
//   <out>/runner-yargs.mjs what only help and usage errors load (yargs), apart so a run never parses it
//   <out>/runner-tracing.cjs the OpenTelemetry SDK, apart so a run with tracing off never parses it (docs/tracing.md)
//   <out>/broker.cjs  the state broker sidecar's entry: the broker alone, as one CommonJS file
// Copied into /captf/bin (by `runner copy`, which points node's interpreter and runpath at the
// copy), it runs in any Linux root of the same architecture, with or without a libc of its own; it
// never sets LD_LIBRARY_PATH, so the children it starts (the image's /captf/runtime) see the
// image's own environment.
// Usage: node scripts/build-bundle.mjs [--out <dir>] [--bin-dir /captf/bin] [--arch amd64|arm64] [--js-only]
// --js-only writes the runner* files alone (for tests that run them with this machine's node).
// --sourcemap adds a linked source map (no sources inlined) beside each file: the test command's coverage
// of child processes (NODE_V8_COVERAGE) maps the bundle's lines back to the TypeScript sources with it.
import { execFileSync } from "node:child_process";
import { chmodSync, copyFileSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { hostArchitecture, nodeRelease, pinnedNodeDir, sharedLibraries } from "./pinned-node.mjs";

const packageDir = fileURLToPath(new URL("..", import.meta.url));
const { values } = parseArgs({
  options: {
    out: { type: "string", default: join(packageDir, "bundle") },
    "bin-dir": { type: "string", default: "/captf/bin" },
    arch: { type: "string" },
    "js-only": { type: "boolean", default: false },
    sourcemap: { type: "boolean", default: false },
  },
});
const out = resolve(values.out);
const yargsModule = "runner-yargs.mjs";
const tracingModule = "runner-tracing.cjs";
const binDir = values["bin-dir"];
const arch = values.arch ?? hostArchitecture();

if (!values["js-only"]) {
  try {
    execFileSync("sh", ["-c", "command -v patchelf"], { stdio: "ignore" });
  } catch {
    console.error("build-bundle: patchelf is required (Debian: apt-get install -y patchelf)");
    process.exit(1);
  }
}

const started = Date.now();
rmSync(out, { recursive: true, force: true });
mkdirSync(join(out, "lib"), { recursive: true });

// 1. The runner as CommonJS, runner.cjs: a run's builtins come through require(), which starts
// measurably faster than ES imports of them (bench/runner-overhead.mjs). runner.mjs, the name Jobs
// run, only loads it. yargs (ESM only) is its own ES module, runner-yargs.mjs, imported by
// help and usage errors alone.
const { build } = await import("esbuild");
const common = {
  bundle: true,
  platform: "node",
  target: "node20",
  conditions: ["@captf/source"],
  legalComments: "none",
  logLevel: "warning",
  ...(values.sourcemap ? { sourcemap: "linked", sourcesContent: false } : {}),
};
await build({
  ...common,
  entryPoints: [join(packageDir, "src", "entry.ts")],
  outfile: join(out, "runner.cjs"),
  format: "cjs",
  // The sources are ES modules: their import.meta.url is this file's URL.
  define: { "import.meta.url": "__captfModuleUrl" },
  banner: { js: 'const __captfModuleUrl = require("node:url").pathToFileURL(__filename).href;' },
  plugins: [
    { name: "yargs-module", setup: (b) => b.onResolve({ filter: /^yargs$/ }, () => ({ path: `./${yargsModule}`, external: true })) },
    // contract's tracing.ts imports the SDK only when tracing is on: from its own file.
    {
      name: "tracing-module",
      setup: (b) => b.onResolve({ filter: /^\.\/otel-export\.js$/ }, () => ({ path: `./${tracingModule}`, external: true })),
    },
  ],
});
await build({
  ...common,
  entryPoints: [join(packageDir, "..", "contract", "src", "otel-export.ts")],
  outfile: join(out, tracingModule),
  format: "cjs",
});
// The broker sidecar's own entry, broker.cjs: the same form, without the runner's code.
await build({
  ...common,
  entryPoints: [join(packageDir, "src", "broker", "entry.ts")],
  outfile: join(out, "broker.cjs"),
  format: "cjs",
  define: { "import.meta.url": "__captfModuleUrl" },
  banner: { js: 'const __captfModuleUrl = require("node:url").pathToFileURL(__filename).href;' },
});
await build({
  ...common,
  stdin: { contents: 'export { default } from "yargs";', resolveDir: packageDir, loader: "js" },
  outfile: join(out, yargsModule),
  format: "esm",
  // yargs's own CommonJS dependencies still call require(): give them one.
  banner: {
    js: 'import { createRequire as __captfCreateRequire } from "node:module"; const require = __captfCreateRequire(import.meta.url);',
  },
});
writeFileSync(join(out, "runner.mjs"), 'import { createRequire } from "node:module";\ncreateRequire(import.meta.url)("./runner.cjs");\n');

if (values["js-only"]) {
  console.log(`build-bundle: ${out}/runner* in ${((Date.now() - started) / 1000).toFixed(1)}s (--js-only)`);
  process.exit(0);
}

// 2. The pinned node, the shared libraries it loads and their loader, all pointed at <bin-dir>/lib.
const node = join(pinnedNodeDir(arch), "node");
const { loader, libraries } = sharedLibraries(node, arch);
for (const library of libraries) copyFileSync(library.path, join(out, "lib", library.name));
copyFileSync(node, join(out, "node"));
chmodSync(join(out, "node"), 0o755);
execFileSync("patchelf", ["--set-interpreter", `${binDir}/lib/${loader}`, "--set-rpath", `${binDir}/lib`, join(out, "node")]);

const size = (path) => statSync(path).size;
const libs = execFileSync("ls", [join(out, "lib")], { encoding: "utf8" })
  .trim()
  .split("\n");
const scripts = readdirSync(out).filter((name) => name.startsWith("runner") || name.startsWith("broker"));
const totalBytes =
  size(join(out, "node")) + [...scripts, ...libs.map((lib) => join("lib", lib))].reduce((sum, file) => sum + size(join(out, file)), 0);
console.log(
  `build-bundle: ${out} for ${binDir} (${arch}) in ${((Date.now() - started) / 1000).toFixed(1)}s: node v${nodeRelease.version}, ` +
    `${libs.length} libraries, runner.cjs ` +
    `${(size(join(out, "runner.cjs")) / 1024).toFixed(0)} KiB (+${yargsModule} for help), ${(totalBytes / 1048576).toFixed(1)} MiB in all`,
);
