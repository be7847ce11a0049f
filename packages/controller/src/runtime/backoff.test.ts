import { describe, expect, it } from "@jest/globals";
import { exponentialBackoffMillis } from "./backoff.js";

describe("exponentialBackoffMillis", () => {
  it.each([
    [0, 5],
    [1, 10],
    [2, 20],
    [10, 5120],
    [17, 655_360],
    [18, 1_000_000],
    [5000, 1_000_000],
  ])("after %i failures waits %i ms (5 ms base, 1000 s cap)", (failures, expected) => {
    expect(exponentialBackoffMillis(failures, 5, 1_000_000)).toBe(expected);
  });
});

describe("exponentialBackoffMillis at a minute's base", () => {
  it("waits base · 2^failures, never more than the cap, even when 2^failures overflows", () => {
    expect([0, 1, 2, 3, 4].map((failures) => exponentialBackoffMillis(failures, 60_000, 600_000))).toEqual([
      60_000, 120_000, 240_000, 480_000, 600_000,
    ]);
    expect(exponentialBackoffMillis(2000, 60_000, 600_000)).toBe(600_000);
  });
});
