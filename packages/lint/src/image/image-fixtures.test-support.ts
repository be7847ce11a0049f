// The image tests' tools: real OCI images built with umoci, served by Debian's docker-registry (or
// a small in-process registry that demands a bearer token), all from the testkit.
import { execFileSync } from "node:child_process";
import { appendFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { describe } from "@jest/globals";

/** The Debian packages that provide the tools: `apt-get install -y umoci skopeo docker-registry`. */
export const imageTools = ["umoci", "skopeo", "docker-registry"] as const;

function onPath(tool: string): boolean {
  try {
    execFileSync("sh", ["-c", `command -v ${tool}`], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** describe() for suites that need the image tools: fails loudly when one is missing, unless CAPTF_ALLOW_MISSING_TOOLS=1. */
export function describeWithImageTools(name: string, body: () => void): void {
  const missing = imageTools.filter((t) => !onPath(t));
  if (missing.length === 0) return describe(name, body);
  if (process.env.CAPTF_ALLOW_MISSING_TOOLS === "1") {
    const root = process.env.CAPTF_REPO_ROOT ?? ".";
    mkdirSync(join(root, ".test-results"), { recursive: true });
    appendFileSync(join(root, ".test-results", "skipped-suites.txt"), `${name} (missing: ${missing.join(", ")})\n`);
    return describe.skip(name, body);
  }
  throw new Error(
    `${missing.join(", ")} not installed: run apt-get install -y umoci skopeo docker-registry, or set ` +
      `CAPTF_ALLOW_MISSING_TOOLS=1 to skip this suite`,
  );
}

// The image builders, the loopback registries and the push come from the testkit, shared with the controller's tests.
export {
  addIndex,
  buildImage,
  freeLoopbackPort as freePort,
  pushImage as push,
  startLocalRegistry as startRegistry,
  startTokenRegistry,
  type FileSpec,
  type ImageSpec,
} from "@captf/testkit";
