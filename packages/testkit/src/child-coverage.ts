// Coverage of the programs tests start (the manager's and the runner's bundles): the test command
// (scripts/test.mjs) names a directory in CAPTF_CHILD_COVERAGE, and a child started with it as
// NODE_V8_COVERAGE writes its V8 coverage there (jest's own processes do not: jest instruments the
// sources it loads). Bundles built for such children carry a source map so their lines map back to src/.
// The manager in the e2e's Pods writes under <dir>/pods/ (the chroot kubelet binds it where the
// container's NODE_V8_COVERAGE points), and its image's bundle has its map kept in <dir>/bundles/<name>/
// (scripts/lib/child-coverage.mjs reads both).
import { chmodSync, mkdirSync } from "node:fs";
import { join } from "node:path";

/** Whether the test command measures the processes tests start. */
export function childCoverageMeasured(): boolean {
  return Boolean(process.env.CAPTF_CHILD_COVERAGE);
}

/** `{ NODE_V8_COVERAGE }` when the test command measures child processes, else nothing: spread it into a child's env. */
export function childCoverageEnvironment(): Record<string, string> {
  const dir = process.env.CAPTF_CHILD_COVERAGE;
  return dir ? { NODE_V8_COVERAGE: dir } : {};
}

/** `--sourcemap` for a bundle build script (the manager's, the runner's) when child processes are measured. */
export function bundleCoverageFlags(): string[] {
  return process.env.CAPTF_CHILD_COVERAGE ? ["--sourcemap"] : [];
}

/**
 * Where Pods' processes write their coverage on the host when child processes are measured, else undefined:
 * world-writable (sticky), as a Pod's user is not this process's.
 */
export function podCoverageDirectory(): string | undefined {
  const dir = process.env.CAPTF_CHILD_COVERAGE;
  if (!dir) return undefined;
  const pods = join(dir, "pods");
  mkdirSync(pods, { recursive: true });
  chmodSync(pods, 0o1777);
  return pods;
}

/** Where a bundle built into an image keeps its map and a copy (`--source-map-out`) when child processes are measured. */
export function bundleSourceMapDirectory(name: string): string | undefined {
  const dir = process.env.CAPTF_CHILD_COVERAGE;
  return dir ? join(dir, "bundles", name) : undefined;
}
