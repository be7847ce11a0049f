// What the manager's build scripts stamp into the bundle and the image.
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const packageDir = fileURLToPath(new URL("..", import.meta.url));

/** The checkout's commit, 12 hex digits, or "unknown" outside a git checkout. */
export function gitCommit() {
  try {
    return (
      execFileSync("git", ["rev-parse", "--short=12", "HEAD"], {
        cwd: packageDir,
        encoding: "utf8",
        stdio: ["ignore", "pipe", "ignore"],
      }).trim() || "unknown"
    );
  } catch {
    return "unknown";
  }
}
