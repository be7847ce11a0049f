import { describe, expect, it } from "@jest/globals";
import { DurationSyntaxError, parseDuration, wholeSeconds } from "./durations.js";

describe("parseDuration", () => {
  it.each([
    ["5m0s", 300_000],
    ["300s", 300_000],
    ["1m30s", 90_000],
    ["1h", 3_600_000],
    ["1.5s", 1500],
    ["250ms", 250],
    ["0", 0],
  ])("reads the Go duration %s", (text, milliseconds) => {
    expect(parseDuration(text)).toBe(milliseconds);
  });

  it.each(["", "300", "5 m", "5mins", "s", "-1s", "1s junk"])("rejects %j with the expected form in the message", (text) => {
    expect(() => parseDuration(text)).toThrow(DurationSyntaxError);
    expect(() => parseDuration(text)).toThrow(/for example 300s, 5m0s/);
  });

  it("passes whole seconds to -lock-timeout", () => {
    expect(wholeSeconds(parseDuration("1m0.9s"))).toBe(60);
  });
});
