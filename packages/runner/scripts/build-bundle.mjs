#!/usr/bin/env node
// Builds the relocatable runner bundle for this machine's architecture:
//   <out>/node        this Node binary, its interpreter set to /captf/bin/lib/<ld.so> and its rpath to /captf/bin/lib
//   <out>/lib/        the shared libraries `ldd node` lists, the dynamic loader included
//   <out>/runner.mjs  the runner and every dependency a run needs as one ESM file (esbuild)
//   <out>/runner-*.mjs what only help and usage errors load (yargs), split off so a run never parses it
// Copied into /captf/bin (by `runner copy`), it runs in any Linux root of the same architecture,
// with or without a libc of its own; it never sets LD_LIBRARY_PATH, so the children it starts
// (the image's /captf/runtime) see the image's own environment.
// Usage: node scripts/build-bundle.mjs [--out <dir>] [--bin-dir /captf/bin] [--js-only]
// --js-only writes the .mjs files alone (for tests that run them with this machine's node).
import { execFileSync } from "node:child_process";
import { chmodSync, copyFileSync, mkdirSync, readdirSync, realpathSync, rmSync, statSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const packageDir = fileURLToPath(new URL("..", import.meta.url));
const { values } = parseArgs({
  options: {
    out: { type: "string", default: join(packageDir, "bundle") },
    "bin-dir": { type: "string", default: "/captf/bin" },
    "js-only": { type: "boolean", default: false },
  },
});
const out = resolve(values.out);
const binDir = values["bin-dir"];

function need(command) {
  try {
    execFileSync("sh", ["-c", `command -v ${command}`], { stdio: "ignore" });
  } catch {
    console.error(`build-bundle: ${command} is required (Debian: apt-get install -y ${command === "ldd" ? "libc-bin" : command})`);
    process.exit(1);
  }
}
if (!values["js-only"]) {
  need("patchelf");
  need("ldd");
}

const started = Date.now();
rmSync(out, { recursive: true, force: true });
mkdirSync(join(out, "lib"), { recursive: true });

// 1. The runner as ESM: runner.mjs, and beside it the chunks it imports only on demand (splitting).
// CommonJS dependencies still call require(): give them one.
const { build } = await import("esbuild");
await build({
  entryPoints: { runner: join(packageDir, "src", "entry.ts") },
  outdir: out,
  outExtension: { ".js": ".mjs" },
  chunkNames: "runner-[name]-[hash]",
  splitting: true,
  bundle: true,
  format: "esm",
  platform: "node",
  target: "node20",
  conditions: ["@captf/source"],
  legalComments: "none",
  banner: { js: 'import { createRequire as __captfCreateRequire } from "node:module"; const require = __captfCreateRequire(import.meta.url);' },
  logLevel: "warning",
});

if (values["js-only"]) {
  console.log(`build-bundle: ${out}/runner*.mjs in ${((Date.now() - started) / 1000).toFixed(1)}s (--js-only)`);
  process.exit(0);
}

// 2. Node's shared libraries, as ldd resolves them on this machine, and the loader itself.
const node = realpathSync(process.execPath);
let interpreter = "";
for (const line of execFileSync("ldd", [node], { encoding: "utf8" }).split("\n")) {
  const linked = /^\s*(\S+)\s+=>\s+(\/\S+)/.exec(line);
  const loader = /^\s*(\/\S*ld-linux\S*)\s+\(/.exec(line);
  if (linked) copyFileSync(realpathSync(linked[2]), join(out, "lib", linked[1]));
  else if (loader) {
    interpreter = basename(loader[1]);
    copyFileSync(realpathSync(loader[1]), join(out, "lib", interpreter));
  }
}
if (!interpreter) {
  console.error(`build-bundle: ldd ${node} named no dynamic loader; is this a static or non-glibc node?`);
  process.exit(1);
}

// 3. node itself, pointed at the copied loader and libraries by absolute path under the bin dir.
copyFileSync(node, join(out, "node"));
chmodSync(join(out, "node"), 0o755);
execFileSync("patchelf", ["--set-interpreter", `${binDir}/lib/${interpreter}`, "--set-rpath", `${binDir}/lib`, join(out, "node")]);

const size = (path) => statSync(path).size;
const libs = execFileSync("ls", [join(out, "lib")], { encoding: "utf8" }).trim().split("\n");
const scripts = readdirSync(out).filter((name) => name.endsWith(".mjs"));
const totalBytes = size(join(out, "node")) + [...scripts, ...libs.map((lib) => join("lib", lib))].reduce((sum, file) => sum + size(join(out, file)), 0);
console.log(
  `build-bundle: ${out} for ${binDir} in ${((Date.now() - started) / 1000).toFixed(1)}s: node ${process.version}, ` +
    `${libs.length} libraries, runner.mjs ${(size(join(out, "runner.mjs")) / 1024).toFixed(0)} KiB (+${scripts.length - 1} on-demand chunks), ${(totalBytes / 1048576).toFixed(1)} MiB in all`,
);
