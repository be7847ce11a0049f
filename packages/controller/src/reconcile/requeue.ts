// How long a pass waits before it looks again, by what it waits for.

/** A cache or a write lost a race: look again soon. */
export const lagRequeueMs = 5_000;
/** A wait for a lease, the cluster gate or an unresolved policy: look again in this long. */
export const gateRequeueMs = 30_000;
/** A wait only someone can end (inputs too large, durable inputs missing): look again in this long. */
export const longRequeueMs = 10 * 60_000;
