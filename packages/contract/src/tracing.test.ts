import { describe, expect, it } from "@jest/globals";
import { derivedSpanId, formatTraceparent, otlpTracesEnabled, parseTraceparent, traceIdOfUid } from "./tracing.js";

describe("captf's trace context", () => {
  it("takes an object's trace id from its uid, and hashes what is not a uid", () => {
    expect(traceIdOfUid("7014C5FD-0e2e-49c0-b84b-1caba5712b47")).toBe("7014c5fd0e2e49c0b84b1caba5712b47");
    expect(traceIdOfUid("not-a-uid")).toMatch(/^[0-9a-f]{32}$/);
    expect(traceIdOfUid("00000000-0000-0000-0000-000000000000")).not.toBe("0".repeat(32));
  });

  it("derives the same span id from the same parts, another from others", () => {
    expect(derivedSpanId("uid", "job-a")).toMatch(/^[0-9a-f]{16}$/);
    expect(derivedSpanId("uid", "job-a")).toBe(derivedSpanId("uid", "job-a"));
    expect(derivedSpanId("uid", "job-b")).not.toBe(derivedSpanId("uid", "job-a"));
  });

  it("writes and reads W3C traceparent, refusing what is not one", () => {
    const traceId = "7014c5fd0e2e49c0b84b1caba5712b47";
    const spanId = "b7ad6b7169203331";
    expect(formatTraceparent(traceId, spanId)).toBe(`00-${traceId}-${spanId}-01`);
    expect(parseTraceparent(`00-${traceId}-${spanId}-01`)).toEqual({ traceId, spanId });
    expect(parseTraceparent(undefined)).toBeUndefined();
    expect(parseTraceparent(`ff-${traceId}-${spanId}-01`)).toBeUndefined();
    expect(parseTraceparent(`00-${"0".repeat(32)}-${spanId}-01`)).toBeUndefined();
    expect(parseTraceparent(`00-${traceId}-${"0".repeat(16)}-01`)).toBeUndefined();
    expect(parseTraceparent("00-xyz")).toBeUndefined();
  });

  it.each([
    [{ OTEL_TRACES_EXPORTER: "otlp" }, true],
    [{ OTEL_TRACES_EXPORTER: "otlp", OTEL_SDK_DISABLED: "TRUE" }, false],
    [{ OTEL_TRACES_EXPORTER: "none" }, false],
    [{}, false],
  ])("is on only when OTEL_TRACES_EXPORTER=otlp: %j", (env, on) => {
    expect(otlpTracesEnabled(env)).toBe(on);
  });
});
