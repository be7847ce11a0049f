#!/usr/bin/env node
// The version constants the programs print (`manager --version`, `runner version`, the image tag
// the install manifests name) follow their package.json: `changeset version` bumps package.json
// only, so `pnpm version-packages` runs it and then this, and scripts/release.mjs refuses a stale one.
// Usage: node scripts/version-constants.mjs [--check] [--root <checkout>]
//   rewrites each constant to its package's version; --check only lists the stale ones (exit 1)
import { readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

/** Each constant: its package directory, the source file that declares it, and its name. */
export const versionConstants = [
  { dir: "packages/controller", file: "src/manager-main.ts", name: "managerVersion" },
  { dir: "packages/runner", file: "src/version.ts", name: "runnerVersion" },
];

const declaration = (name) => new RegExp(`^(export const ${name} = )"([^"]*)";$`, "m");

/**
 * The constants under `root` whose value differs from their package.json's version; with `write`,
 * rewritten to it. Throws when a source no longer declares its constant as a string literal.
 */
export function syncVersionConstants(root, { write }) {
  const stale = [];
  for (const { dir, file, name } of versionConstants) {
    const version = JSON.parse(readFileSync(join(root, dir, "package.json"), "utf8")).version;
    const path = join(root, dir, file);
    const source = readFileSync(path, "utf8");
    const found = declaration(name).exec(source);
    if (!found) throw new Error(`version-constants: ${join(dir, file)} does not declare \`export const ${name} = "<version>";\``);
    if (found[2] === version) continue;
    stale.push({ file: join(dir, file), name, from: found[2], to: version });
    if (write) writeFileSync(path, source.replace(declaration(name), `$1${JSON.stringify(version)};`));
  }
  return stale;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      check: { type: "boolean", default: false },
      root: { type: "string", default: fileURLToPath(new URL("..", import.meta.url)) },
    },
  });
  const stale = syncVersionConstants(resolve(values.root), { write: !values.check });
  for (const { file, name, from, to } of stale)
    console.log(`${file}: ${name} ${from} ${values.check ? "differs from package.json's" : "→"} ${to}`);
  if (values.check && stale.length > 0) {
    console.error("version-constants: stale; run `pnpm version-packages` (or node scripts/version-constants.mjs)");
    process.exit(1);
  }
}
