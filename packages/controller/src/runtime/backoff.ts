// The manager's one back-off formula: the work queue, retried Jobs, image inspections, notifications and the informers'
// rewatch all wait by it.

/** `base · 2^failures`, capped at `max`: the wait before the next try after `failures` failures (0 waits `base`). */
export function exponentialBackoffMillis(failures: number, baseMillis: number, maxMillis: number): number {
  // 2^failures overflows to Infinity past ~1023; the cap still applies.
  const backoff = baseMillis * 2 ** failures;
  return Number.isFinite(backoff) ? Math.min(backoff, maxMillis) : maxMillis;
}
