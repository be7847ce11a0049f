// Coverage of the programs tests start: the test command (scripts/test.mjs) sets NODE_V8_COVERAGE for
// its jest runs, and a child started with an environment of its own keeps measuring only if it is
// passed on. Bundles built for such children carry a source map so their lines map back to src/.

/** `{ NODE_V8_COVERAGE }` when the test command measures child processes, else nothing: spread it into a child's env. */
export function childCoverageEnvironment(): Record<string, string> {
  const dir = process.env.NODE_V8_COVERAGE;
  return dir ? { NODE_V8_COVERAGE: dir } : {};
}

/** `--sourcemap` for a bundle build script (the manager's, the runner's) when child processes are measured. */
export function bundleCoverageFlags(): string[] {
  return process.env.NODE_V8_COVERAGE ? ["--sourcemap"] : [];
}
