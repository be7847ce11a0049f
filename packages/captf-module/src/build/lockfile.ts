// The module's dependency lock file (.terraform.lock.hcl, written by `tofu init` or `terraform
// init`): which provider versions the image ships, and the hashes their packages must have.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

export const lockFileName = ".terraform.lock.hcl";

export interface LockedProvider {
  /** The full source address: `registry.opentofu.org/hashicorp/google`. */
  address: string;
  host: string;
  namespace: string;
  type: string;
  version: string;
  /** `h1:` (a package's unpacked contents) and `zh:` (a registry zip's SHA-256) hashes. */
  hashes: string[];
}

/**
 * The providers a lock file pins. The runtimes write it in one fixed layout (a `provider "<address>"`
 * block each, `version = "…"`, `hashes = [ "…", … ]`): this reads that layout and nothing else.
 */
export function parseLockFile(text: string, file = lockFileName): LockedProvider[] {
  const providers: LockedProvider[] = [];
  const blocks = text.split(/^provider\s+/m).slice(1);
  for (const block of blocks) {
    const address = /^"([^"]+)"/.exec(block)?.[1];
    const version = /^\s*version\s*=\s*"([^"]+)"/m.exec(block)?.[1];
    const parts = address?.split("/");
    if (!address || !version || parts?.length !== 3)
      throw new Error(
        `${file}: a provider block without an address host/namespace/type or a version: ${JSON.stringify(block.split("\n", 1)[0])}`,
      );
    const hashList = /^\s*hashes\s*=\s*\[([^\]]*)\]/m.exec(block)?.[1] ?? "";
    const hashes = [...hashList.matchAll(/"([^"]+)"/g)].map((match) => match[1]!);
    providers.push({ address, host: parts[0]!, namespace: parts[1]!, type: parts[2]!, version, hashes });
  }
  return providers.sort((a, b) => a.address.localeCompare(b.address));
}

/** `#` and `//` comments and `/* … *\/` blocks, removed (strings that hold them are rare in a terraform block). */
function withoutComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|\s)(#|\/\/).*$/gm, "$1");
}

/** Whether a module's top-level files declare `required_providers` (outside comments). */
export function declaresProviders(moduleDir: string): boolean {
  return readdirSync(moduleDir)
    .filter((name) => /\.(tf|tofu)$/.test(name))
    .some((name) => /\brequired_providers\s*\{/.test(withoutComments(readFileSync(join(moduleDir, name), "utf8"))));
}

/** The module's locked providers; throws with the fix when it declares providers and has no lock file. */
export function moduleProviders(moduleDir: string): LockedProvider[] {
  const path = join(moduleDir, lockFileName);
  if (existsSync(path)) return parseLockFile(readFileSync(path, "utf8"), path);
  if (declaresProviders(moduleDir)) {
    throw new Error(
      `${moduleDir} declares required_providers but has no ${lockFileName}: run \`tofu init\` there ` +
        "(or `tofu providers lock -platform=linux_amd64 -platform=linux_arm64`) and keep the file with the module",
    );
  }
  return [];
}
