#!/usr/bin/env node
// Writes the clusterctl provider assets (config/clusterctl: metadata.yaml, infrastructure-components.yaml,
// cluster-template*.yaml) from src/install/clusterctl.ts and e2e/manifests/demo. `--check` writes
// nothing and exits 1 naming every stale file.
// Builds the package first: the generator runs from dist/ (the jest test calls it from src/).
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const packageRoot = fileURLToPath(new URL("..", import.meta.url));
const demoDirectory = join(packageRoot, "../../e2e/manifests/demo");
const { values } = parseArgs({ options: { check: { type: "boolean", default: false } } });
execFileSync(process.execPath, [join(packageRoot, "../../node_modules/typescript/bin/tsc"), "-b", packageRoot], { stdio: "inherit" });
const { renderClusterctlFiles, staleClusterctlFiles } = await import(new URL("../dist/install/clusterctl.js", import.meta.url).href);

if (values.check) {
  const stale = staleClusterctlFiles(packageRoot, demoDirectory);
  if (stale.length > 0) {
    console.error(`stale clusterctl assets (run \`pnpm --filter @captf/controller gen\`):\n  ${stale.join("\n  ")}`);
    process.exit(1);
  }
  console.log("clusterctl assets are up to date");
} else {
  for (const file of renderClusterctlFiles(demoDirectory)) {
    const target = join(packageRoot, file.path);
    mkdirSync(dirname(target), { recursive: true });
    if (!existsSync(target) || readFileSync(target, "utf8") !== file.content) {
      writeFileSync(target, file.content);
      console.log(`wrote ${file.path}`);
    }
  }
}
