/**
 * The runner's spans (docs/tracing.md): one for the run, under the Job's span that TRACEPARENT names, and one per step under
 * it; a step's runtime gets its step span as TRACEPARENT, so OpenTofu's own spans (OTEL_TRACES_EXPORTER=otlp) hang under
 * it. Off unless the Job's environment turns it on: then, and only then, the OpenTelemetry SDK is loaded. Attributes are
 * names, exit codes and durations: never a value a module, its inputs or its environment hold.
 */
import {
  formatTraceparent,
  loadSpanRecorder,
  otlpTracesEnabled,
  parseTraceparent,
  randomSpanId,
  type SpanRecorder,
} from "@captf/contract/tracing";

export interface RunTracing {
  /** Runs a step inside its span; `run` gets the environment entries that carry the span to the runtime (none when off). */
  step<T extends { exit: number }>(
    name: string,
    run: (traceEnv: Readonly<Record<string, string>> | undefined) => Promise<T>,
    failed: (outcome: T) => boolean,
  ): Promise<T>;
  /** Records the run's span and sends what is buffered; bounded, so an unreachable collector never holds the Job. */
  finish(outcome: { op: string; image: string; runtimeVersion: string; error?: { kind: string; step: string | null } }): Promise<void>;
}

export const noRunTracing: RunTracing = {
  step: (_name, run) => run(undefined),
  finish: () => Promise.resolve(),
};

/** How long the last export may take before the runner exits anyway. */
const flushTimeoutMs = 5000;

/** Tracing for this run: on when OTEL_TRACES_EXPORTER=otlp and TRACEPARENT names the Job's span, else {@link noRunTracing}. */
export async function startRunTracing(env: Readonly<Record<string, string | undefined>>): Promise<RunTracing> {
  const job = otlpTracesEnabled(env) ? parseTraceparent(env.TRACEPARENT) : undefined;
  if (!job) return noRunTracing;
  return exportingRunTracing(await loadSpanRecorder({ serviceName: "captf-runner" }), job);
}

/**
 * OpenTofu's tracing (a CGO_ENABLED=0 build) names the process's user from $USER, or fails its init and the step with it ("user:
 * Current requires cgo or $USER set") when the Pod's uid has no passwd entry, as captf's 65532 has none in most images: every
 * runtime command, version checks included, gets it through stepEnvironment (workspace.ts). Pure.
 */
export function stepUser(env: Readonly<Record<string, string | undefined>>): Readonly<Record<string, string>> {
  return env.USER ? {} : { USER: "captf-runner" };
}

function exportingRunTracing(recorder: SpanRecorder, job: { traceId: string; spanId: string }): RunTracing {
  const startMs = Date.now();
  const runSpanId = randomSpanId();
  const { traceId } = job;
  return {
    async step(name, run, failed) {
      const spanId = randomSpanId();
      const started = Date.now();
      const outcome = await run({ TRACEPARENT: formatTraceparent(traceId, spanId) });
      recorder.record({
        name: `step ${name}`,
        traceId,
        spanId,
        parentSpanId: runSpanId,
        startMs: started,
        endMs: Date.now(),
        attributes: { "captf.step": name, "process.exit_code": outcome.exit },
        error: failed(outcome) ? `step ${name} exited ${outcome.exit}` : undefined,
      });
      return outcome;
    },
    async finish({ op, image, runtimeVersion, error }) {
      recorder.record({
        name: `run ${op}`,
        traceId,
        spanId: runSpanId,
        parentSpanId: job.spanId,
        startMs,
        endMs: Date.now(),
        attributes: {
          "captf.op": op,
          "captf.image": image,
          "captf.runtime.version": runtimeVersion || undefined,
          "captf.result": error ? error.kind : "succeeded",
          "captf.error.step": error?.step ?? undefined,
        },
        error: error ? `${op} ended ${error.kind}${error.step ? ` in step ${error.step}` : ""}` : undefined,
      });
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, flushTimeoutMs)));
      await Promise.race([recorder.shutdown().catch(() => undefined), timeout]);
      clearTimeout(timer);
    },
  };
}
