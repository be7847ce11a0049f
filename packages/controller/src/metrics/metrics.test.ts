import { readFileSync } from "node:fs";
import { describe, expect, it } from "@jest/globals";
import { activeJobCounts } from "./active-jobs.js";
import { createManagerMetrics } from "./manager-metrics.js";

/** The reference's `captf_*` table: name, type, labels. */
const referenceMetrics: [string, "counter" | "gauge" | "histogram", string[]][] = [
  ["captf_jobs_total", "counter", ["kind", "op", "result"]],
  ["captf_job_duration_seconds", "histogram", ["kind", "op", "result"]],
  ["captf_job_step_duration_seconds", "histogram", ["kind", "op", "step"]],
  ["captf_job_queue_seconds", "histogram", ["kind", "op"]],
  ["captf_job_errors_total", "counter", ["kind", "op", "error_kind", "step"]],
  ["captf_jobs_active", "gauge", ["kind", "op"]],
  ["captf_job_attempts", "histogram", ["kind", "op"]],
  ["captf_resources_changed_total", "counter", ["kind", "op", "action"]],
  ["captf_reconcile_op_decisions_total", "counter", ["kind", "op", "reason"]],
  ["captf_state_read_errors_total", "counter", ["kind", "reason"]],
  ["captf_state_resources", "gauge", ["kind", "namespace", "name"]],
  ["captf_state_bytes", "gauge", ["kind", "namespace", "name"]],
  ["captf_inputs_bytes", "gauge", ["kind", "namespace", "name"]],
  ["captf_state_backups_total", "counter", ["kind", "result"]],
  ["captf_state_restores_total", "counter", ["kind", "result"]],
  ["captf_outputs_invalid_total", "counter", ["kind", "reason"]],
  ["captf_inputs_hash_changes_total", "counter", ["kind"]],
  ["captf_ready", "gauge", ["kind", "namespace", "name"]],
  ["captf_infrastructure_healthy", "gauge", ["kind", "namespace", "name"]],
  ["captf_drift_detected", "gauge", ["kind", "namespace", "name"]],
  ["captf_drift_resources_total", "counter", ["kind", "action"]],
  ["captf_last_success_timestamp_seconds", "gauge", ["kind", "namespace", "name", "op"]],
  ["captf_unhealthy_samples", "gauge", ["namespace", "name"]],
  ["captf_remediation_requests_total", "counter", ["action"]],
  ["captf_lock_force_unlocks_total", "counter", ["kind"]],
  ["captf_lease_waits_total", "counter", ["kind", "reason"]],
  ["captf_plan_approvals_total", "counter", ["kind", "result"]],
  ["captf_destructive_plan_approvals_consumed_total", "counter", ["kind"]],
  ["captf_identity_denied_total", "counter", ["reason"]],
  ["captf_broker_refused_requests_total", "counter", ["kind", "target"]],
  ["captf_image_inspect_errors_total", "counter", ["reason"]],
  ["captf_build_info", "gauge", ["version", "commit", "contract"]],
];

interface MetricShape {
  name: string;
  type: string;
  help: string;
  labelNames: string[];
}

function shapes(registry: ReturnType<typeof createManagerMetrics>["registry"]): Map<string, MetricShape> {
  const result = new Map<string, MetricShape>();
  for (const metric of registry.getMetricsAsArray()) {
    const m = metric as unknown as { name: string; type: string; help: string; labelNames: string[] };
    result.set(m.name, { name: m.name, type: m.type, help: m.help, labelNames: [...m.labelNames] });
  }
  return result;
}

describe("the manager's metrics", () => {
  it("register every captf_* metric of the reference with its type and labels, as ALPHA", () => {
    const registered = shapes(createManagerMetrics({ processMetrics: false }).registry);
    for (const [name, type, labels] of referenceMetrics) {
      expect(registered.get(name)).toMatchObject({ type, labelNames: labels });
      expect(registered.get(name)?.help).toMatch(/^\[ALPHA\] /);
    }
  });

  it("use their own registry, not prom-client's global one", async () => {
    const [a, b] = [createManagerMetrics({ processMetrics: true }), createManagerMetrics({ processMetrics: true })];
    a.captf.inputsHashChanges.inc({ kind: "TerraformCluster" });
    expect(await a.registry.metrics()).toContain('captf_inputs_hash_changes_total{kind="TerraformCluster"} 1');
    expect(await b.registry.metrics()).not.toContain('captf_inputs_hash_changes_total{kind="TerraformCluster"} 1');
    expect(await a.registry.metrics()).toContain("process_cpu_seconds_total");
  });

  it("create a controller's series at zero", async () => {
    const { registry, runtime } = createManagerMetrics({ processMetrics: false });
    runtime.initController("terraformmachine", 10);
    runtime.workQueueSink("terraformmachine");
    const text = await registry.metrics();
    for (const result of ["success", "error", "requeue", "requeue_after"])
      expect(text).toContain(`controller_runtime_reconcile_total{controller="terraformmachine",result="${result}"} 0`);
    expect(text).toContain('controller_runtime_reconcile_errors_total{controller="terraformmachine"} 0');
    expect(text).toContain('controller_runtime_max_concurrent_reconciles{controller="terraformmachine"} 10');
    expect(text).toContain('workqueue_depth{name="terraformmachine",controller="terraformmachine"} 0');
  });

  it("read unfinished work at scrape time", async () => {
    let now = 10_000;
    const { registry, runtime } = createManagerMetrics({ processMetrics: false, now: () => now });
    runtime.trackInFlight("q", () => [4_000, 7_000]);
    now = 10_000;
    const text = await registry.metrics();
    expect(text).toContain('workqueue_unfinished_work_seconds{name="q",controller="q"} 9');
    expect(text).toContain('workqueue_longest_running_processor_seconds{name="q",controller="q"} 6');
  });

  it("fill job metrics through typed helpers", async () => {
    const { registry, captf } = createManagerMetrics({ processMetrics: false });
    captf.jobFinished({ kind: "TerraformMachine", op: "apply", result: "succeeded", durationSeconds: 42, attempt: 2 });
    captf.jobFailed("TerraformMachine", "apply", "step", "plan");
    captf.decided("TerraformMachine", "none", "UpToDate");
    captf.setActiveJobsSource(() => [{ kind: "TerraformCluster", op: "destroy", count: 3 }]);
    captf.jobQueue.observe({ kind: "TerraformMachine", op: "apply" }, 250);
    const text = await registry.metrics();
    expect(text).toContain('captf_jobs_total{kind="TerraformMachine",op="apply",result="succeeded"} 1');
    expect(text).toContain('captf_job_duration_seconds_bucket{le="60",kind="TerraformMachine",op="apply",result="succeeded"} 1');
    expect(text).toContain('captf_job_attempts_sum{kind="TerraformMachine",op="apply"} 2');
    expect(text).toContain('captf_job_errors_total{kind="TerraformMachine",op="apply",error_kind="step",step="plan"} 1');
    expect(text).toContain('captf_reconcile_op_decisions_total{kind="TerraformMachine",op="none",reason="UpToDate"} 1');
    expect(text).toContain('captf_jobs_active{kind="TerraformCluster",op="destroy"} 3');
    expect(text).toContain('captf_job_queue_seconds_bucket{le="300",kind="TerraformMachine",op="apply"} 1');
    expect(text).toContain('captf_job_queue_seconds_bucket{le="120",kind="TerraformMachine",op="apply"} 0');
  });

  it("read the sharded kinds' cached objects per shard at scrape time, keeping no series of a shard gone from the caches", async () => {
    const { registry, runtime } = createManagerMetrics({ processMetrics: false });
    let counts = [
      { kind: "TerraformMachine", shard: "0", count: 4 },
      { kind: "TerraformCluster", shard: "0", count: 2 },
    ];
    runtime.setShardCacheSource(() => counts);
    expect(await registry.metrics()).toContain('captf_shard_cached_objects{kind="TerraformMachine",shard="0"} 4');
    counts = [{ kind: "TerraformMachine", shard: "2", count: 1 }];
    const text = await registry.metrics();
    expect(text).toContain('captf_shard_cached_objects{kind="TerraformMachine",shard="2"} 1');
    expect(text).not.toContain('shard="0"');
  });

  it("delete a deleted object's per-object series", async () => {
    const { registry, captf } = createManagerMetrics({ processMetrics: false });
    captf.objectStatus("TerraformMachine", "ns", "m1", { ready: 1, healthy: -1, drift: 0 });
    captf.objectSizes("TerraformMachine", "ns", "m1", { stateResources: 4, stateBytes: 2048, inputsBytes: 512 });
    captf.lastSuccess("TerraformMachine", "ns", "m1", "drift", 1_700_000_000_000);
    captf.unhealthySamples.set({ namespace: "ns", name: "m1" }, 2);
    captf.objectStatus("TerraformMachine", "ns", "m2", { ready: 0 });
    expect(await registry.metrics()).toContain(
      'captf_last_success_timestamp_seconds{kind="TerraformMachine",namespace="ns",name="m1",op="drift"} 1700000000',
    );
    captf.forgetObject("TerraformMachine", "ns", "m1");
    const text = await registry.metrics();
    expect(text).not.toContain('name="m1"');
    expect(text).toContain('captf_ready{kind="TerraformMachine",namespace="ns",name="m2"} 0');
  });

  it("are all listed in docs/metrics.md with their type", () => {
    const doc = readFileSync(new URL("../../../../docs/metrics.md", import.meta.url), "utf8");
    for (const metric of shapes(createManagerMetrics({ processMetrics: false }).registry).values()) {
      const row = doc.split("\n").find((line) => line.startsWith(`| \`${metric.name}\``));
      expect(row).toBeDefined();
      expect(row).toContain(`| ${metric.type} |`);
      for (const label of metric.labelNames) expect(row).toContain(`\`${label}\``);
    }
  });
});

describe("activeJobCounts", () => {
  it("counts running captf Jobs by kind and operation, not finished or foreign ones", () => {
    const job = (kind: string, op: string, finished?: "Complete" | "Failed") => ({
      metadata: { labels: { "captf.infrastructure.cluster.x-k8s.io/owner-kind": kind, "captf.infrastructure.cluster.x-k8s.io/op": op } },
      status: finished ? { conditions: [{ type: finished, status: "True" }] } : {},
    });
    expect(
      activeJobCounts([
        job("TerraformMachine", "apply"),
        job("TerraformMachine", "apply"),
        job("TerraformMachine", "apply", "Complete"),
        job("TerraformCluster", "drift"),
        job("TerraformCluster", "plan", "Failed"),
        { metadata: { labels: {} } },
      ]),
    ).toEqual([
      { kind: "TerraformMachine", op: "apply", count: 2 },
      { kind: "TerraformCluster", op: "drift", count: 1 },
    ]);
  });
});
