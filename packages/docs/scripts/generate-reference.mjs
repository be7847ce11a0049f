#!/usr/bin/env node
// Writes the book's generated reference pages and blocks (src/reference.ts) into docs/.
// `--check` writes nothing and exits 1 naming every stale file (src/reference.test.ts runs it).
// `--docs DIR` reads and writes a copy of docs/ instead (the test's stale copy).
// Builds first: the generator runs from dist/, as the controller's generators do.
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const packageRoot = fileURLToPath(new URL("..", import.meta.url));
const docsFlag = process.argv.indexOf("--docs");
if (docsFlag >= 0 && !process.argv[docsFlag + 1]) {
  console.error("--docs needs a directory");
  process.exit(2);
}
const docsDir = docsFlag >= 0 ? resolve(process.argv[docsFlag + 1]) : join(packageRoot, "../../docs");
execFileSync(process.execPath, [join(packageRoot, "../../node_modules/typescript/bin/tsc"), "-b", packageRoot], { stdio: "inherit" });
const { generateCommand, renderGeneratedFiles, staleGeneratedFiles } = await import(new URL("../dist/reference.js", import.meta.url).href);

const stale = staleGeneratedFiles(docsDir);
if (process.argv.includes("--check")) {
  if (stale.length > 0) {
    console.error(`stale generated reference pages (run \`${generateCommand}\`):\n  ${stale.join("\n  ")}`);
    process.exit(1);
  }
  console.log("generated reference pages are up to date");
} else {
  for (const file of renderGeneratedFiles(docsDir)) {
    if (!stale.includes(`docs/${file.path}`)) continue;
    const target = join(docsDir, file.path);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, file.content);
    console.log(`wrote docs/${file.path}`);
  }
}
