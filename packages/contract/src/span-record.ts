/** What the manager and the runner hand the OpenTelemetry SDK (tracing.ts loads it; otel-export.ts is it). */
/** A finished span, its ids chosen by captf: the SDK exports it as it is. */
export interface SpanRecord {
  name: string;
  /** 32 lowercase hex digits. */
  traceId: string;
  /** 16 lowercase hex digits. */
  spanId: string;
  parentSpanId?: string | undefined;
  /** Milliseconds since the epoch. */
  startMs: number;
  endMs: number;
  attributes: Readonly<Record<string, string | number | boolean | undefined>>;
  /** The span ended in error: its status, with this message. */
  error?: string | undefined;
}

export interface SpanRecorder {
  record(span: SpanRecord): void;
  /** Exports what is buffered and stops. */
  shutdown(): Promise<void>;
}

export interface ExportSettings {
  /** service.name, unless OTEL_SERVICE_NAME says otherwise. */
  serviceName: string;
  /** The OTLP/HTTP endpoint's base URL (the exporter adds /v1/traces); absent: OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT decide. */
  endpoint?: string | undefined;
}
