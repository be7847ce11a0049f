#!/usr/bin/env node
// Writes config/crd/*.yaml and docs/api-reference.md from the TypeBox kinds in src/api.
// `--check` writes nothing and exits 1 naming every stale or missing file.
// Builds the package first: the generator runs from dist/ (the jest test calls it from src/).
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const packageRoot = fileURLToPath(new URL("..", import.meta.url));
execFileSync(process.execPath, [join(packageRoot, "../../node_modules/typescript/bin/tsc"), "-b", packageRoot], { stdio: "inherit" });
const { generatedFiles, staleGeneratedFiles, crdDirectory } = await import(new URL("../dist/api/generate.js", import.meta.url).href);

if (process.argv.includes("--check")) {
  const stale = staleGeneratedFiles(packageRoot);
  if (stale.length > 0) {
    console.error(`stale generated files (run \`pnpm --filter @captf/controller gen\`):\n  ${stale.join("\n  ")}`);
    process.exit(1);
  }
  console.log("generated CRDs and API reference are up to date");
} else {
  const files = generatedFiles();
  // Remove CRDs of kinds that no longer exist.
  const wanted = new Set(files.map((file) => join(packageRoot, file.path)));
  const crdDir = join(packageRoot, crdDirectory);
  if (existsSync(crdDir)) {
    for (const name of readdirSync(crdDir)) if (!wanted.has(join(crdDir, name))) rmSync(join(crdDir, name));
  }
  for (const file of files) {
    const target = join(packageRoot, file.path);
    mkdirSync(dirname(target), { recursive: true });
    if (!existsSync(target) || readFileSync(target, "utf8") !== file.content) {
      writeFileSync(target, file.content);
      console.log(`wrote ${file.path}`);
    }
  }
}
