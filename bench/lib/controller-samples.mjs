// Sampling helpers bench/controller.mjs and the drills (bench/drills/faults-*.mjs, load-*.mjs)
// share: a process's memory from /proc, waiting for a counter to stop moving, percentiles.
import { readFileSync } from "node:fs";

/** VmRSS and VmHWM of a process in MiB, undefined once it is gone. */
export function memoryOf(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kib = (field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN);
    return { rss: kib("VmRSS") / 1024, hwm: kib("VmHWM") / 1024 };
  } catch {
    return undefined;
  }
}

/** Resolves true once `count()` did not change for `quietMillis`, false after `maxMillis`. */
export async function quietWhile(count, quietMillis, maxMillis) {
  const deadline = Date.now() + maxMillis;
  let last = count();
  let since = Date.now();
  while (Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    const now = count();
    if (now !== last) {
      last = now;
      since = Date.now();
    } else if (Date.now() - since >= quietMillis) return true;
  }
  return false;
}

/** The p-quantile (0..1) of `values`, NaN when there are none. */
export function percentile(values, p) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] : NaN;
}
