#!/usr/bin/env node
// Writes the install manifests (config/manager, config/rbac, config/webhook, config/certmanager and
// config/install.yaml) from src/install. `--check` writes nothing and exits 1 naming every stale file.
// `--image <ref> [--namespace <ns>]` writes nothing either: it prints an install.yaml for that image
// (the Deployment's image and CAPTF_MANAGER_IMAGE both) to stdout.
// Builds the package first: the generator runs from dist/ (the jest test calls it from src/).
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const packageRoot = fileURLToPath(new URL("..", import.meta.url));
const { values } = parseArgs({
  options: { check: { type: "boolean", default: false }, image: { type: "string" }, namespace: { type: "string" } },
});
execFileSync(process.execPath, [join(packageRoot, "../../node_modules/typescript/bin/tsc"), "-b", packageRoot], { stdio: "inherit" });
const { renderInstallFiles, staleInstallFiles, defaultInstallOptions, installPath } = await import(
  new URL("../dist/install/manifests.js", import.meta.url).href
);

if (values.image !== undefined || values.namespace !== undefined) {
  const options = {
    ...defaultInstallOptions,
    ...(values.image ? { image: values.image } : {}),
    ...(values.namespace ? { namespace: values.namespace } : {}),
  };
  process.stdout.write(renderInstallFiles(options).find((file) => file.path === installPath).content);
} else if (values.check) {
  const stale = staleInstallFiles(packageRoot);
  if (stale.length > 0) {
    console.error(`stale install manifests (run \`pnpm --filter @captf/controller gen\`):\n  ${stale.join("\n  ")}`);
    process.exit(1);
  }
  console.log("install manifests are up to date");
} else {
  for (const file of renderInstallFiles()) {
    const target = join(packageRoot, file.path);
    mkdirSync(dirname(target), { recursive: true });
    if (!existsSync(target) || readFileSync(target, "utf8") !== file.content) {
      writeFileSync(target, file.content);
      console.log(`wrote ${file.path}`);
    }
  }
}
