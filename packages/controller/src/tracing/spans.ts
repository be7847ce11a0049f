/**
 * The manager's spans as data (docs/tracing.md): a reconcile pass and a Job, each in the trace of the object they are about
 * (its uid's 32 hex digits). Pure: manager-tracing.ts records them. Attributes are names, uids, decisions and outcomes: never a
 * value of the object's spec, inputs, credentials or state.
 */
import type { V1EnvVar } from "@kubernetes/client-node";
import { annotations, labels } from "@captf/contract/api";
import { derivedSpanId, formatTraceparent, traceIdOfUid, type SpanRecord } from "@captf/contract/tracing";
import { finishedCondition, type JobConditions } from "../runtime/job-conditions.js";
import type { KubeObject } from "../runtime/kube-client.js";

/** The object a pass ran for, as its queue key and its cached copy know it. */
export interface PassSubject {
  kind: string;
  namespace: string;
  name: string;
  /** Absent when the cache no longer holds the object (a pass that found it gone): its pass starts no trace. */
  uid: string | undefined;
}

/** What a pass's result says it did, as span attributes: `started apply (InputsChanged) as …`, `waiting: <Reason>`, or else. Pure. */
export function passDecision(action: string): { decision: string; operation?: string } {
  const started = /^started (\w+) \((\w+)\)/.exec(action);
  if (started) return { decision: started[2]!, operation: started[1]! };
  const waiting = /^waiting: (\w+)/.exec(action);
  if (waiting) return { decision: waiting[1]! };
  return { decision: action.split(/[:(]/)[0]!.trim() || "none" };
}

/** A pass's span: a root span of the object's trace, with what it decided and how it ended. Pure. */
export function passSpan(
  subject: PassSubject,
  ended: { result: { action: string; requeueAfterMs?: number } } | { error: unknown },
  times: { startMs: number; endMs: number; spanId: string },
): SpanRecord | undefined {
  if (!subject.uid) return undefined;
  const failed = "error" in ended;
  const facts = failed ? { decision: "error" } : passDecision(ended.result.action);
  return {
    name: `reconcile ${subject.kind}`,
    traceId: traceIdOfUid(subject.uid),
    spanId: times.spanId,
    startMs: times.startMs,
    endMs: times.endMs,
    attributes: {
      "k8s.namespace.name": subject.namespace,
      "captf.object.kind": subject.kind,
      "captf.object.name": subject.name,
      "captf.object.uid": subject.uid,
      "captf.pass.decision": facts.decision,
      "captf.pass.operation": "operation" in facts ? facts.operation : undefined,
      "captf.pass.outcome": failed ? "error" : ended.result.action,
      "captf.pass.requeue_after_ms": failed ? undefined : ended.result.requeueAfterMs,
    },
    error: failed ? "the pass failed: see the manager's log" : undefined,
  };
}

/** A Job's span id: from its owner's uid and its name, so the manager that bookkeeps it finds the one its Pod was given. Pure. */
export function jobSpanId(ownerUid: string, jobName: string): string {
  return derivedSpanId(ownerUid, jobName);
}

/** The environment that puts a Job in its object's trace: TRACEPARENT naming the Job's span, and the OTLP settings. Pure. */
export function jobTraceEnvironment(ownerUid: string, jobName: string, otlp: readonly V1EnvVar[]): V1EnvVar[] {
  return [...otlp, { name: "TRACEPARENT", value: formatTraceparent(traceIdOfUid(ownerUid), jobSpanId(ownerUid, jobName)) }];
}

/** The bookkeeping mark appeared on this update: the Job's span ends now. Pure. */
export function justBookkept(job: KubeObject, previous: KubeObject | undefined): boolean {
  const mark = (object: KubeObject | undefined) => object?.metadata?.annotations?.[annotations.bookkept] === "true";
  return previous !== undefined && !mark(previous) && mark(job);
}

/** A bookkept Job's span: from its creation to now, under no parent (the runner's spans hang under it). Pure. */
export function jobSpan(job: KubeObject, endMs: number): SpanRecord | undefined {
  const metadata = job.metadata ?? {};
  const owner = metadata.ownerReferences?.find((ref) => ref.controller);
  const created = metadata.creationTimestamp ? new Date(metadata.creationTimestamp as string | Date).getTime() : Number.NaN;
  if (!owner?.uid || !metadata.name || Number.isNaN(created)) return undefined;
  const finished = finishedCondition(job as JobConditions)?.type;
  const marks = [annotations.interrupted, annotations.destructivePlanBlocked, annotations.planChanged, annotations.stateNotSaved];
  const mark = marks.find((name) => metadata.annotations?.[name] === "true");
  return {
    name: `job ${metadata.labels?.[labels.op] ?? "run"}`,
    traceId: traceIdOfUid(owner.uid),
    spanId: jobSpanId(owner.uid, metadata.name),
    startMs: created,
    endMs: Math.max(created, endMs),
    attributes: {
      "k8s.namespace.name": metadata.namespace,
      "k8s.job.name": metadata.name,
      "captf.object.kind": owner.kind,
      "captf.object.name": owner.name,
      "captf.object.uid": owner.uid,
      "captf.job.op": metadata.labels?.[labels.op],
      "captf.job.attempt": metadata.labels?.[labels.attempt],
      "captf.job.finished": finished ?? "unknown",
      "captf.job.mark": mark,
    },
    error: finished === "Failed" ? `Job ${metadata.name} failed` : undefined,
  };
}
