import { describe, expect, it } from "@jest/globals";
import { FakeClock } from "./clock.test-support.js";
import {
  controllerRateLimiter,
  ExponentialFailureRateLimiter,
  MaxOfRateLimiter,
  reserveToken,
  TokenBucketRateLimiter,
} from "./rate-limiter.js";

describe("ExponentialFailureRateLimiter", () => {
  it("doubles per key and starts over after forget", () => {
    const limiter = new ExponentialFailureRateLimiter(5, 1000);
    expect([limiter.when("a"), limiter.when("a"), limiter.when("a")]).toEqual([5, 10, 20]);
    expect(limiter.when("b")).toBe(5);
    expect(limiter.numRequeues("a")).toBe(3);
    limiter.forget("a");
    expect(limiter.numRequeues("a")).toBe(0);
    expect(limiter.when("a")).toBe(5);
  });
});

describe("reserveToken", () => {
  it("hands out the burst at once, then one token per 1/rate seconds", () => {
    let state = { tokens: 2, atMillis: 0 };
    const delays: number[] = [];
    for (let i = 0; i < 4; i++) {
      const r = reserveToken(state, 0, 10, 2);
      state = r.state;
      delays.push(r.delayMillis);
    }
    expect(delays).toEqual([0, 0, 100, 200]);
  });

  it("refills over time but never above the burst", () => {
    const drained = { tokens: 0, atMillis: 0 };
    expect(reserveToken(drained, 50, 10, 2).delayMillis).toBe(50);
    expect(reserveToken(drained, 10_000, 10, 2).state.tokens).toBe(1);
  });
});

describe("the default controller rate limiter", () => {
  it("is the longer of per-key backoff and the overall bucket", () => {
    const clock = new FakeClock();
    const limiter = controllerRateLimiter({ clock, bucketPerSecond: 1, bucketBurst: 1 });
    expect(limiter.when("a")).toBe(5);
    // The bucket is empty now: the next key waits a whole second although its own backoff is 5 ms.
    expect(limiter.when("b")).toBe(1000);
    expect(limiter.numRequeues("a")).toBe(1);
  });

  it("counts a failure in every limiter", () => {
    const limiter = new MaxOfRateLimiter(new ExponentialFailureRateLimiter(1, 100), new ExponentialFailureRateLimiter(3, 100));
    expect([limiter.when("k"), limiter.when("k")]).toEqual([3, 6]);
    limiter.forget("k");
    expect(limiter.when("k")).toBe(3);
  });

  it("uses client-go's defaults", () => {
    const clock = new FakeClock();
    const limiter = controllerRateLimiter({ clock });
    const delays = Array.from({ length: 25 }, () => limiter.when("x"));
    expect(delays[0]).toBe(5);
    expect(delays[24]).toBe(1_000_000);
    const bucket = new TokenBucketRateLimiter(10, 100, clock);
    const burst = Array.from({ length: 101 }, () => bucket.when());
    expect(burst.slice(0, 100).every((d) => d === 0)).toBe(true);
    expect(burst[100]).toBe(100);
  });
});
