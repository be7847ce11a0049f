// The built packages bench/controller*.mjs use, loaded from their dist/ by file (the repository
// root has no node_modules/@captf), and the controller's own dependencies resolved from
// packages/controller, so the bench, the manager and the reconciler share one copy of each.
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

export const repo = new URL("../..", import.meta.url).pathname;
const dist = (pkg, file = "index.js") => join(repo, "packages", pkg, "dist", file);
const fromController = createRequire(join(repo, "packages/controller/package.json"));

/** Exits with the house message when a package is not built. */
export function requireBuilt() {
  for (const file of [
    dist("controller"),
    dist("controller", "manager-main.js"),
    dist("controller", "install/manifests.js"),
    dist("contract"),
    dist("render"),
    dist("testkit", "control-plane.js"),
    dist("testkit", "capi.js"),
  ]) {
    if (!existsSync(file)) {
      console.error(`bench: packages are not built (${file} is missing); run \`npx tsc -b\` first`);
      process.exit(2);
    }
  }
}

const load = (path) => import(pathToFileURL(path).href);
/** A dependency of @captf/controller by its package name (`pino`, `@captf/contract/api`, …). */
export const loadDependency = (specifier) => load(fromController.resolve(specifier));
export const loadController = () => load(dist("controller"));
/** A module of @captf/controller's dist/ not (yet) in its index, by its path under dist/. */
export const loadControllerFile = (file) => load(dist("controller", file));
/** The testkit's modules one by one: its index pulls in jest. */
export const loadTestkit = async () => ({
  ...(await load(dist("testkit", "control-plane.js"))),
  ...(await load(dist("testkit", "capi.js"))),
  ...(await load(dist("testkit", "tools.js"))),
});
