// Coverage of the programs tests start (the manager's and the runner's bundles): the test command
// (scripts/test.mjs) names a directory in CAPTF_CHILD_COVERAGE, and a child started with it as
// NODE_V8_COVERAGE writes its V8 coverage there (jest's own processes do not: jest instruments the
// sources it loads). Bundles built for such children carry a source map so their lines map back to src/.

/** `{ NODE_V8_COVERAGE }` when the test command measures child processes, else nothing: spread it into a child's env. */
export function childCoverageEnvironment(): Record<string, string> {
  const dir = process.env.CAPTF_CHILD_COVERAGE;
  return dir ? { NODE_V8_COVERAGE: dir } : {};
}

/** `--sourcemap` for a bundle build script (the manager's, the runner's) when child processes are measured. */
export function bundleCoverageFlags(): string[] {
  return process.env.CAPTF_CHILD_COVERAGE ? ["--sourcemap"] : [];
}
