import { describe, expect, it } from "@jest/globals";
import { noRunTracing, startRunTracing, stepUser } from "./tracing.js";

describe("the runner's tracing", () => {
  it.each<[Record<string, string>, string]>([
    [{}, "no switch"],
    [{ OTEL_TRACES_EXPORTER: "otlp" }, "no TRACEPARENT"],
    [{ OTEL_TRACES_EXPORTER: "otlp", TRACEPARENT: "00-zz" }, "a TRACEPARENT that is not one"],
    [{ TRACEPARENT: "00-7014c5fd0e2e49c0b84b1caba5712b47-b7ad6b7169203331-01" }, "TRACEPARENT without the switch"],
  ])("is off, loading nothing, with %j (%s)", async (env) => {
    expect(await startRunTracing(env)).toBe(noRunTracing);
  });

  it("runs a step untouched when off: no environment added", async () => {
    const seen: unknown[] = [];
    const outcome = await noRunTracing.step(
      "init",
      async (env) => {
        seen.push(env);
        return { exit: 0 };
      },
      () => false,
    );
    expect(outcome).toEqual({ exit: 0 });
    expect(seen).toEqual([undefined]);
  });

  it("names a user for OpenTofu's tracing when the Pod's environment has none", () => {
    expect(stepUser({})).toEqual({ USER: "captf-runner" });
    expect(stepUser({ USER: "ops" })).toEqual({});
  });
});
