/**
 * Tracing shared by the manager and the runner: W3C trace context, the ids captf derives, and the one entry to the
 * OpenTelemetry SDK. Nothing here loads the SDK: {@link loadSpanRecorder} imports it only when tracing is on, so a
 * process with tracing off never parses it (docs/tracing.md).
 */

export type { ExportSettings, SpanRecord, SpanRecorder } from "./span-record.js";
import type { ExportSettings, SpanRecorder } from "./span-record.js";

/** The standard switch: OTEL_TRACES_EXPORTER=otlp turns tracing on, anything else (and OTEL_SDK_DISABLED=true) leaves it off. */
export function otlpTracesEnabled(env: Readonly<Record<string, string | undefined>>): boolean {
  return env.OTEL_TRACES_EXPORTER === "otlp" && env.OTEL_SDK_DISABLED?.toLowerCase() !== "true";
}

// node:crypto only when an id is made: the runner's start loads no crypto (bench/runner-floor.cjs).
const crypto = () => process.getBuiltinModule("node:crypto");
const sha256Hex = (text: string) => crypto().createHash("sha256").update(text).digest("hex");

const traceIdPattern = /^[0-9a-f]{32}$/;
const spanIdPattern = /^[0-9a-f]{16}$/;

/** An object's trace id: its uid's 32 hex digits, so every pass and Job of one object is one trace, found by the uid. Pure. */
export function traceIdOfUid(uid: string): string {
  const hex = uid.replace(/-/g, "").toLowerCase();
  return traceIdPattern.test(hex) && !/^0+$/.test(hex) ? hex : sha256Hex(uid).slice(0, 32);
}

/** A span id derived from `parts`, the same in every process that knows them (a Job's span: its owner's uid and its name). Pure. */
export function derivedSpanId(...parts: string[]): string {
  const hex = sha256Hex(parts.join("\u0000")).slice(0, 16);
  return /^0+$/.test(hex) ? "0000000000000001" : hex;
}

export function randomSpanId(): string {
  return crypto().randomBytes(8).toString("hex");
}

/** The W3C `traceparent` of a sampled span. Pure. */
export function formatTraceparent(traceId: string, spanId: string): string {
  return `00-${traceId}-${spanId}-01`;
}

/** The trace and span of a W3C `traceparent`; undefined when it is not one. Pure. */
export function parseTraceparent(text: string | undefined): { traceId: string; spanId: string } | undefined {
  const match = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/.exec(text?.trim() ?? "");
  if (!match || match[1] === "ff") return undefined;
  const [, , traceId, spanId] = match as unknown as [string, string, string, string];
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId) || !spanIdPattern.test(spanId)) return undefined;
  return { traceId, spanId };
}

/** The OpenTelemetry SDK's exporter, loaded now: call only when tracing is on. */
export async function loadSpanRecorder(settings: ExportSettings): Promise<SpanRecorder> {
  const { createSpanRecorder } = await import("./otel-export.js");
  return createSpanRecorder(settings);
}
