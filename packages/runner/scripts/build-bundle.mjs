#!/usr/bin/env node
// Builds the relocatable runner bundle for one architecture (this machine's unless --arch says):
//   <out>/node        the pinned Node LTS (node-release.json, scripts/pinned-node.mjs), its interpreter
//                     set to <bin-dir>/lib/<ld.so> and its runpath to <bin-dir>/lib
//   <out>/lib/        the shared libraries that node loads, the dynamic loader included
//   <out>/runner.mjs  the entry: turns on the compile cache below, then loads the runner (esbuild, ESM)
//   <out>/runner-*.mjs the runner and every dependency a run needs; apart, what only help and usage
//                     errors load (yargs), so a run never parses it
//   <out>/compile-cache/ V8 code caches of those chunks, made by running the bundle once with the
//                     pinned node (host architecture only; a cross build ships without): a run
//                     compiles less at start. Node names its cache directory after the user id, so it
//                     is laid out for 65532 (the Job user the image contract recommends) and the
//                     builder's user; any other user runs without it.
// Copied into /captf/bin (by `runner copy`, which points node's interpreter and runpath at the
// copy), it runs in any Linux root of the same architecture, with or without a libc of its own; it
// never sets LD_LIBRARY_PATH, so the children it starts (the image's /captf/runtime) see the
// image's own environment.
// Usage: node scripts/build-bundle.mjs [--out <dir>] [--bin-dir /captf/bin] [--arch amd64|arm64] [--js-only]
// --js-only writes the .mjs files alone (for tests that run them with this machine's node).
import { execFileSync } from "node:child_process";
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, statSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
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
  },
});
const out = resolve(values.out);
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

// 2. The pinned node, the shared libraries it loads and their loader, all pointed at <bin-dir>/lib.
const node = join(pinnedNodeDir(arch), "node");
const { loader, libraries } = sharedLibraries(node, arch);
for (const library of libraries) copyFileSync(library.path, join(out, "lib", library.name));
copyFileSync(node, join(out, "node"));
chmodSync(join(out, "node"), 0o755);
execFileSync("patchelf", ["--set-interpreter", `${binDir}/lib/${loader}`, "--set-rpath", `${binDir}/lib`, join(out, "node")]);

// 3. The compile cache: the unpatched pinned node runs what every Job runs first (a run's start,
// stopped at preflight) and `version`, which loads the rest.
/** The user id of the Job's containers that the image contract recommends (USER 65532). */
const jobUser = 65532;
const cacheDir = join(out, "compile-cache");
if (arch === hostArchitecture()) {
  mkdirSync(cacheDir);
  const scratch = mkdtempSync(join(tmpdir(), "build-bundle-"));
  const runBundle = (args) => execFileSync(node, [join(out, "runner.mjs"), ...args], { env: { PATH: process.env.PATH ?? "/usr/bin:/bin" }, stdio: "ignore" });
  try {
    runBundle(["version"]);
    const preflight = ["run", "--op=apply", `--bin=${join(scratch, "none")}`, `--module=${scratch}`, `--config=${scratch}`, `--workdir=${join(scratch, "work")}`, `--result=${join(scratch, "result.json")}`];
    try {
      runBundle(preflight);
    } catch (error) {
      if (error.status !== 1) throw error; // preflight fails by design: there is no runtime
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  // Node's directory name ends with the user id: one directory for the Job user, a link for the builder.
  const [made, ...others] = readdirSync(cacheDir);
  const userSuffix = /-\d+$/;
  if (!made || others.length > 0 || !userSuffix.test(made)) throw new Error(`build-bundle: expected one cache directory <tag>-<uid> in ${cacheDir}, found ${[made, ...others].join(", ")}`);
  const forJobUser = made.replace(userSuffix, `-${jobUser}`);
  if (forJobUser !== made) {
    renameSync(join(cacheDir, made), join(cacheDir, forJobUser));
    symlinkSync(forJobUser, join(cacheDir, made));
  }
  // Node writes its cache files for its user alone; the Job user must read them after `runner copy`.
  chmodSync(join(cacheDir, forJobUser), 0o755);
  for (const file of readdirSync(join(cacheDir, forJobUser))) chmodSync(join(cacheDir, forJobUser, file), 0o644);
}

const size = (path) => statSync(path).size;
const libs = execFileSync("ls", [join(out, "lib")], { encoding: "utf8" }).trim().split("\n");
const scripts = readdirSync(out).filter((name) => name.endsWith(".mjs"));
const scriptBytes = scripts.reduce((sum, file) => sum + size(join(out, file)), 0);
const totalBytes = size(join(out, "node")) + scriptBytes + libs.reduce((sum, lib) => sum + size(join(out, "lib", lib)), 0);
console.log(
  `build-bundle: ${out} for ${binDir} (${arch}) in ${((Date.now() - started) / 1000).toFixed(1)}s: node v${nodeRelease.version}, ` +
    `${libs.length} libraries, ${scripts.length} scripts (${(scriptBytes / 1024).toFixed(0)} KiB), ` +
    `${arch === hostArchitecture() ? `a compile cache for user ${jobUser}` : "no compile cache (cross build)"}, ${(totalBytes / 1048576).toFixed(1)} MiB in all`,
);
