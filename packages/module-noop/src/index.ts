// The public surface of @captf/module-noop: where the no-op modules live, for
// tests and image builds that need a module directory.
import { fileURLToPath } from "node:url";
import type { Role } from "@captf/contract";

/** The absolute path of the no-op module directory of a role (`<package>/<role>/`), holding its `.tf` files. */
export function noopModuleDirectory(role: Role): string {
  // Both src/index.ts and dist/index.js sit one level below the package root.
  return fileURLToPath(new URL(`../${role}/`, import.meta.url));
}

/** The `tofu test` file of a role's no-op module, relative to its module directory. */
export function noopModuleTestFile(role: Role): string {
  return `tests/${role}.tftest.hcl`;
}
