import { describe, expect, it } from "@jest/globals";
import { annotations, labels } from "@captf/contract/api";
import type { KubeObject } from "../runtime/kube-client.js";
import { jobOtlpEnvironment, managerTracing, tracingEnabled } from "./manager-tracing.js";
import { jobSpan, jobSpanId, jobTraceEnvironment, justBookkept, passDecision, passSpan } from "./spans.js";

const uid = "7014c5fd-0e2e-49c0-b84b-1caba5712b47";
const traceId = "7014c5fd0e2e49c0b84b1caba5712b47";

describe("the manager's spans", () => {
  it.each([
    ["started apply (InputsChanged) as captf-m-m-apply-a1-abcdef", { decision: "InputsChanged", operation: "apply" }],
    ["waiting: WaitingForJobSlot", { decision: "WaitingForJobSlot" }],
    ["waiting: JobQuotaExceeded (the Pod of Job j)", { decision: "JobQuotaExceeded" }],
    ["externally managed: released, removed finalizer", { decision: "externally managed" }],
    ["", { decision: "none" }],
  ])("reads what a pass decided from its action %j", (action, facts) => {
    expect(passDecision(action)).toEqual(facts);
  });

  it("puts a pass in its object's trace as a root span, and a failed pass in error", () => {
    const subject = { kind: "TerraformMachine", namespace: "team", name: "m", uid };
    const times = { startMs: 1000, endMs: 1500, spanId: "b7ad6b7169203331" };
    expect(passSpan(subject, { result: { action: "started apply (InputsChanged) as j", requeueAfterMs: 30_000 } }, times)).toEqual({
      name: "reconcile TerraformMachine",
      traceId,
      spanId: times.spanId,
      startMs: 1000,
      endMs: 1500,
      attributes: {
        "k8s.namespace.name": "team",
        "captf.object.kind": "TerraformMachine",
        "captf.object.name": "m",
        "captf.object.uid": uid,
        "captf.pass.decision": "InputsChanged",
        "captf.pass.operation": "apply",
        "captf.pass.outcome": "started apply (InputsChanged) as j",
        "captf.pass.requeue_after_ms": 30_000,
      },
      error: undefined,
    });
    expect(passSpan(subject, { error: new Error("secret-looking text") }, times)).toMatchObject({
      attributes: { "captf.pass.decision": "error", "captf.pass.outcome": "error" },
      error: "the pass failed: see the manager's log",
    });
    expect(passSpan({ ...subject, uid: undefined }, { result: { action: "gone" } }, times)).toBeUndefined();
  });

  it("gives a Job TRACEPARENT naming its span, which bookkeeping records from the Job's creation", () => {
    const job: KubeObject = {
      metadata: {
        name: "captf-m-m-apply-a1-abcdef",
        namespace: "team",
        creationTimestamp: new Date(5000).toISOString() as unknown as Date,
        labels: { [labels.op]: "apply", [labels.attempt]: "1" },
        annotations: { [annotations.bookkept]: "true", [annotations.interrupted]: "true" },
        ownerReferences: [{ apiVersion: "v", kind: "TerraformMachine", name: "m", uid, controller: true }],
      },
      status: { conditions: [{ type: "Failed", status: "True" }] },
    } as KubeObject;
    const env = jobTraceEnvironment(uid, "captf-m-m-apply-a1-abcdef", [{ name: "OTEL_TRACES_EXPORTER", value: "otlp" }]);
    expect(env).toEqual([
      { name: "OTEL_TRACES_EXPORTER", value: "otlp" },
      { name: "TRACEPARENT", value: `00-${traceId}-${jobSpanId(uid, "captf-m-m-apply-a1-abcdef")}-01` },
    ]);
    expect(jobSpan(job, 9000)).toMatchObject({
      name: "job apply",
      traceId,
      spanId: jobSpanId(uid, "captf-m-m-apply-a1-abcdef"),
      startMs: 5000,
      endMs: 9000,
      attributes: { "captf.job.op": "apply", "captf.job.finished": "Failed", "captf.job.mark": annotations.interrupted },
      error: "Job captf-m-m-apply-a1-abcdef failed",
    });
    const before = { ...job, metadata: { ...job.metadata, annotations: {} } };
    expect(justBookkept(job, before)).toBe(true);
    expect(justBookkept(job, job)).toBe(false);
    expect(justBookkept(job, undefined)).toBe(false);
    expect(jobSpan({ metadata: { name: "orphan" } } as KubeObject, 1)).toBeUndefined();
  });
});

describe("the manager's tracing switch", () => {
  it("is off by default, and then loads nothing and wraps no pass", () => {
    expect(tracingEnabled({ otlpEndpoint: "" }, {})).toBe(false);
    expect(managerTracing({ otlpEndpoint: "" }, {})).toBeUndefined();
    expect(tracingEnabled({ otlpEndpoint: "" }, { OTEL_TRACES_EXPORTER: "otlp" })).toBe(true);
    expect(tracingEnabled({ otlpEndpoint: "http://collector:4318" }, {})).toBe(true);
  });

  it("gives Jobs the flag's endpoint, else the manager's own OTLP variables", () => {
    expect(jobOtlpEnvironment({ otlpEndpoint: "http://collector:4318" }, { OTEL_EXPORTER_OTLP_ENDPOINT: "http://other:4318" })).toEqual([
      { name: "OTEL_TRACES_EXPORTER", value: "otlp" },
      { name: "OTEL_EXPORTER_OTLP_PROTOCOL", value: "http/protobuf" },
      { name: "OTEL_EXPORTER_OTLP_ENDPOINT", value: "http://collector:4318" },
    ]);
    expect(
      jobOtlpEnvironment(
        { otlpEndpoint: "" },
        { OTEL_TRACES_EXPORTER: "otlp", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://c:4318/v1/traces" },
      ),
    ).toEqual([
      { name: "OTEL_TRACES_EXPORTER", value: "otlp" },
      { name: "OTEL_EXPORTER_OTLP_PROTOCOL", value: "http/protobuf" },
      { name: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", value: "http://c:4318/v1/traces" },
    ]);
  });
});
