// Runs one drill property with fast-check and prints what it tried, what it found and how long it
// took; exits 1 on a counterexample (printed with its seed and path, so it replays).
import fc from "fast-check";

/** `--runs N` and `--seed S` from argv, with the drill's defaults (10,000 runs, a random seed). */
export function drillOptions(argv = process.argv.slice(2), defaults = { runs: 10_000 }) {
  const value = (flag) => {
    const index = argv.indexOf(flag);
    return index >= 0 ? Number(argv[index + 1]) : undefined;
  };
  return { runs: value("--runs") ?? defaults.runs, seed: value("--seed") ?? Date.now() % 2 ** 31 };
}

/** Checks `property` `runs` times; prints the tally (verdict → count) and the time; returns whether it held. */
export async function runProperty(name, property, { runs, seed }, tally) {
  const started = performance.now();
  const details = await (property.isAsync?.()
    ? fc.check(property, { numRuns: runs, seed })
    : Promise.resolve(fc.check(property, { numRuns: runs, seed })));
  const seconds = (performance.now() - started) / 1000;
  console.log(`${name}: ${details.numRuns} inputs, seed ${seed}, ${seconds.toFixed(1)} s, ${details.failed ? "FAILED" : "0 failures"}`);
  if (tally) for (const [key, n] of [...tally].sort(([a], [b]) => a.localeCompare(b))) console.log(`  ${String(n).padStart(6)}  ${key}`);
  if (details.failed) console.log(fc.defaultReportMessage(details));
  return !details.failed;
}

export { fc };
