/**
 * The OpenTelemetry SDK behind {@link SpanRecorder}: spans whose ids captf chose, batched and sent over OTLP/HTTP. Imported
 * only by loadSpanRecorder (tracing.ts), when tracing is on; the runner bundle keeps it in a file of its own.
 */
import { ROOT_CONTEXT, SpanStatusCode, TraceFlags, trace, type HrTime } from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { detectResources, envDetector, resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, TracerProvider, type IdGenerator } from "@opentelemetry/sdk-trace";
import type { ExportSettings, SpanRecord, SpanRecorder } from "./span-record.js";

/** Hands the SDK the ids of the span being started (set just before startSpan, which asks synchronously). */
class ChosenIds implements IdGenerator {
  next: { traceId: string; spanId: string } | undefined;
  generateTraceId(): string {
    return this.next!.traceId;
  }
  generateSpanId(): string {
    return this.next!.spanId;
  }
}

/** Epoch milliseconds as the SDK's exact time (a number before the process started would be read as a performance.now() offset). */
function hrTime(ms: number): HrTime {
  const seconds = Math.floor(ms / 1000);
  return [seconds, Math.round((ms - seconds * 1000) * 1e6)];
}

export function createSpanRecorder(settings: ExportSettings): SpanRecorder {
  const ids = new ChosenIds();
  const endpoint = settings.endpoint?.replace(/\/+$/, "");
  const exporter = new OTLPTraceExporter(endpoint ? { url: `${endpoint}/v1/traces` } : {});
  const resource = resourceFromAttributes({ "service.name": settings.serviceName }).merge(detectResources({ detectors: [envDetector] }));
  const provider = new TracerProvider({
    idGenerator: ids,
    resource,
    spanProcessors: [new BatchSpanProcessor({ exporter, scheduledDelayMillis: 1000 })],
  });
  const tracer = provider.getTracer("captf");
  return {
    record(span: SpanRecord): void {
      const parent = span.parentSpanId
        ? trace.setSpanContext(ROOT_CONTEXT, {
            traceId: span.traceId,
            spanId: span.parentSpanId,
            traceFlags: TraceFlags.SAMPLED,
            isRemote: true,
          })
        : ROOT_CONTEXT;
      const attributes = Object.fromEntries(Object.entries(span.attributes).filter(([, value]) => value !== undefined)) as Record<
        string,
        string | number | boolean
      >;
      ids.next = { traceId: span.traceId, spanId: span.spanId };
      const started = tracer.startSpan(span.name, { startTime: hrTime(span.startMs), attributes, root: !span.parentSpanId }, parent);
      ids.next = undefined;
      if (span.error !== undefined) started.setStatus({ code: SpanStatusCode.ERROR, message: span.error });
      started.end(hrTime(span.endMs));
    },
    shutdown: () => provider.shutdown(),
  };
}
