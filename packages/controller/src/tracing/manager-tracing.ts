/**
 * The manager's tracing (docs/tracing.md): on with `--tracing-otlp-endpoint` or OTEL_TRACES_EXPORTER=otlp, else absent, and the
 * OpenTelemetry SDK is never loaded. A span per reconcile pass (recorded by the controller that runs it) and per Job, from its
 * creation to the bookkeeping mark (seen on the Job watch, so a Job that outlives a pass or a manager restart still gets its
 * span); the Job's Pod gets TRACEPARENT naming that span, and its runner's spans hang under it.
 */
import type { V1EnvVar } from "@kubernetes/client-node";
import { loadSpanRecorder, otlpTracesEnabled, randomSpanId, type SpanRecord, type SpanRecorder } from "@captf/contract/tracing";
import type { Informer } from "../runtime/informer.js";
import type { KubeObject } from "../runtime/kube-client.js";
import { jobSpan, jobTraceEnvironment, justBookkept, passSpan, type PassSubject } from "./spans.js";

export interface TracingSettings {
  /** `--tracing-otlp-endpoint`: the OTLP/HTTP base URL of the manager's and its Jobs' traces; "" leaves it to OTEL_*. */
  otlpEndpoint: string;
}

export interface ManagerTracing {
  /** Runs one pass inside its span. */
  pass<T extends { action: string; requeueAfterMs?: number }>(subject: PassSubject, run: () => Promise<T>): Promise<T>;
  /** The environment of a Job's runner container: the Job's span as TRACEPARENT and where to send spans. */
  jobEnvironment(ownerUid: string, jobName: string): V1EnvVar[];
  /** Records each Job's span when bookkeeping marks it. */
  watchJobs(jobs: Pick<Informer<KubeObject>, "addHandlers">): void;
  /** Sends what is buffered. */
  shutdown(): Promise<void>;
}

/** Tracing is on: the flag names an endpoint, or the standard variable asks for OTLP. Pure. */
export function tracingEnabled(settings: TracingSettings, env: Readonly<Record<string, string | undefined>>): boolean {
  return settings.otlpEndpoint !== "" || otlpTracesEnabled(env);
}

/** What a Job's runner reads to export (OTEL_* as OpenTofu and the SDK read them): the manager's endpoint, else its variables. Pure. */
export function jobOtlpEnvironment(settings: TracingSettings, env: Readonly<Record<string, string | undefined>>): V1EnvVar[] {
  const passed = ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"].filter(
    (name) => !settings.otlpEndpoint && env[name],
  );
  return [
    { name: "OTEL_TRACES_EXPORTER", value: "otlp" },
    { name: "OTEL_EXPORTER_OTLP_PROTOCOL", value: "http/protobuf" },
    ...(settings.otlpEndpoint ? [{ name: "OTEL_EXPORTER_OTLP_ENDPOINT", value: settings.otlpEndpoint }] : []),
    ...passed.map((name) => ({ name, value: env[name]! })),
  ];
}

/** The manager's tracing, or undefined when it is off; the SDK loads in the background, spans recorded before it wait for it. */
export function managerTracing(
  settings: TracingSettings,
  env: Readonly<Record<string, string | undefined>>,
  options: { onError?: (error: unknown) => void; now?: () => number } = {},
): ManagerTracing | undefined {
  if (!tracingEnabled(settings, env)) return undefined;
  const now = options.now ?? Date.now;
  const recorder: Promise<SpanRecorder | undefined> = loadSpanRecorder({
    serviceName: "captf-manager",
    endpoint: settings.otlpEndpoint || undefined,
  }).catch((error: unknown) => {
    options.onError?.(error);
    return undefined;
  });
  const record = (span: SpanRecord | undefined) => {
    if (span) void recorder.then((loaded) => loaded?.record(span));
  };
  const otlp = jobOtlpEnvironment(settings, env);
  return {
    async pass(subject, run) {
      const times = { startMs: now(), spanId: randomSpanId() };
      try {
        const result = await run();
        record(passSpan(subject, { result }, { ...times, endMs: now() }));
        return result;
      } catch (error) {
        record(passSpan(subject, { error }, { ...times, endMs: now() }));
        throw error;
      }
    },
    jobEnvironment: (ownerUid, jobName) => jobTraceEnvironment(ownerUid, jobName, otlp),
    watchJobs(jobs) {
      jobs.addHandlers({
        update: (previous, job) => {
          if (justBookkept(job, previous)) record(jobSpan(job, now()));
        },
      });
    },
    shutdown: async () => (await recorder)?.shutdown(),
  };
}
