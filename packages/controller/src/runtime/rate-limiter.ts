/**
 * Rate limiters for the work queue, after client-go's `workqueue` package: how long a key waits
 * before it is retried. The default combines a per-key exponential backoff with an overall token
 * bucket, so one failing object backs off alone while a storm of failures is capped as a whole.
 */
import { exponentialBackoffMillis } from "./backoff.js";
import { realClock, type Clock } from "./clock.js";

export interface RateLimiter {
  /** How long `key` should wait before its next try; each call counts one more failure. */
  when(key: string): number;
  /** Clears `key`'s failure history (call it once the key succeeded). */
  forget(key: string): void;
  /** How many times `key` failed since it was last forgotten. */
  numRequeues(key: string): number;
}

/** Per-key exponential backoff: client-go's ItemExponentialFailureRateLimiter. */
export class ExponentialFailureRateLimiter implements RateLimiter {
  readonly #failures = new Map<string, number>();

  constructor(
    readonly baseMillis: number,
    readonly maxMillis: number,
  ) {}

  when(key: string): number {
    const failures = this.#failures.get(key) ?? 0;
    this.#failures.set(key, failures + 1);
    return exponentialBackoffMillis(failures, this.baseMillis, this.maxMillis);
  }

  forget(key: string): void {
    this.#failures.delete(key);
  }

  numRequeues(key: string): number {
    return this.#failures.get(key) ?? 0;
  }
}

/** A token bucket's state: tokens available at `atMillis` (negative when reservations are outstanding). */
export interface TokenBucketState {
  tokens: number;
  atMillis: number;
}

/**
 * Reserves one token at `nowMillis` (Go's `rate.Limiter.Reserve`): refills at `perSecond` up to
 * `burst`, takes a token even when none is left and returns how long the caller must wait for it.
 */
export function reserveToken(
  state: TokenBucketState,
  nowMillis: number,
  perSecond: number,
  burst: number,
): { state: TokenBucketState; delayMillis: number } {
  const elapsed = Math.max(0, nowMillis - state.atMillis);
  const tokens = Math.min(burst, state.tokens + (elapsed / 1000) * perSecond) - 1;
  const delayMillis = tokens < 0 ? Math.ceil((-tokens / perSecond) * 1000) : 0;
  return { state: { tokens, atMillis: Math.max(nowMillis, state.atMillis) }, delayMillis };
}

/** An overall token bucket shared by every key: client-go's BucketRateLimiter. */
export class TokenBucketRateLimiter implements RateLimiter {
  #state: TokenBucketState;

  constructor(
    readonly perSecond: number,
    readonly burst: number,
    private readonly clock: Clock = realClock,
  ) {
    this.#state = { tokens: burst, atMillis: clock.now() };
  }

  when(): number {
    const { state, delayMillis } = reserveToken(this.#state, this.clock.now(), this.perSecond, this.burst);
    this.#state = state;
    return delayMillis;
  }

  forget(): void {}

  numRequeues(): number {
    return 0;
  }
}

/** The longest wait of several limiters: client-go's MaxOfRateLimiter. */
export class MaxOfRateLimiter implements RateLimiter {
  readonly #limiters: readonly RateLimiter[];

  constructor(...limiters: RateLimiter[]) {
    this.#limiters = limiters;
  }

  when(key: string): number {
    // Every limiter must see the failure, so no short-circuit.
    return this.#limiters.map((limiter) => limiter.when(key)).reduce((a, b) => Math.max(a, b), 0);
  }

  forget(key: string): void {
    for (const limiter of this.#limiters) limiter.forget(key);
  }

  numRequeues(key: string): number {
    return this.#limiters.map((limiter) => limiter.numRequeues(key)).reduce((a, b) => Math.max(a, b), 0);
  }
}

export interface ControllerRateLimiterOptions {
  /** First retry delay. Default 5 ms (client-go). */
  baseDelayMillis?: number;
  /** Longest retry delay. Default 1000 s (client-go). */
  maxDelayMillis?: number;
  /** Overall retries per second. Default 10 (client-go). */
  bucketPerSecond?: number;
  /** Overall burst. Default 100 (client-go). */
  bucketBurst?: number;
  clock?: Clock;
}

export const controllerRateLimiterDefaults = {
  baseDelayMillis: 5,
  maxDelayMillis: 1_000_000,
  bucketPerSecond: 10,
  bucketBurst: 100,
} as const;

/** client-go's DefaultControllerRateLimiter: per-key 5 ms … 1000 s, overall 10 qps with a burst of 100. */
export function controllerRateLimiter(options: ControllerRateLimiterOptions = {}): RateLimiter {
  const d = controllerRateLimiterDefaults;
  return new MaxOfRateLimiter(
    new ExponentialFailureRateLimiter(options.baseDelayMillis ?? d.baseDelayMillis, options.maxDelayMillis ?? d.maxDelayMillis),
    new TokenBucketRateLimiter(
      options.bucketPerSecond ?? d.bucketPerSecond,
      options.bucketBurst ?? d.bucketBurst,
      options.clock ?? realClock,
    ),
  );
}
