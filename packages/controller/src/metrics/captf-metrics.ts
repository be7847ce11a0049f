/**
 * The `captf_*` metrics of the reference (stability ALPHA, so every HELP starts with `[ALPHA]`),
 * with their label names and label value enums as types. The runtime registers all of them at
 * start; reconcilers fill them in through the typed helpers below. Only the per-object gauges carry
 * `namespace` and `name`, and {@link CaptfMetrics.forgetObject} deletes those series with the object.
 */
import { brokerRequestTargets, type BrokerRequestTarget } from "@captf/contract/run-result";
import { Counter, Gauge, Histogram, type Registry } from "prom-client";

export const metricKinds = ["TerraformCluster", "TerraformMachine", "TerraformMachinePool"] as const;
export type MetricKind = (typeof metricKinds)[number];
export const metricOps = ["apply", "destroy", "refresh", "drift", "plan", "restore"] as const;
export type MetricOp = (typeof metricOps)[number];
export const jobResults = ["succeeded", "failed", "deadline", "interrupted", "blocked", "plan_changed"] as const;
export type JobResult = (typeof jobResults)[number];
export const jobSteps = [
  "init",
  "force-unlock",
  "validate",
  "plan",
  "show-json",
  "apply",
  "apply-refresh-only",
  "destroy",
  "state-push",
  "state-list",
  "prepare",
  "other",
] as const;
export type JobStep = (typeof jobSteps)[number];
export const jobErrorKinds = [
  "step",
  "image-layout",
  "interrupted",
  "blocked",
  "plan-changed",
  "state-save",
  "deadline",
  "unknown",
] as const;
export type JobErrorKind = (typeof jobErrorKinds)[number];
export const resourceActions = ["add", "change", "destroy", "import"] as const;
export type ResourceAction = (typeof resourceActions)[number];
export const stateReadErrorReasons = ["inconsistent", "encrypted", "corrupt", "lost", "locked"] as const;
export type StateReadErrorReason = (typeof stateReadErrorReasons)[number];
export const stateBackupResults = ["taken", "pruned", "skipped"] as const;
export type StateBackupResult = (typeof stateBackupResults)[number];
export const stateRestoreResults = ["succeeded", "failed", "not_found"] as const;
export type StateRestoreResult = (typeof stateRestoreResults)[number];
export const leaseWaitReasons = ["run_lease", "cluster_operation", "machine_operations"] as const;
export type LeaseWaitReason = (typeof leaseWaitReasons)[number];
export const planApprovalResults = ["created", "approved", "applied", "superseded", "failed", "changed"] as const;
export type PlanApprovalResult = (typeof planApprovalResults)[number];
export const identityDeniedReasons = ["notfound", "namespace"] as const;
export type IdentityDeniedReason = (typeof identityDeniedReasons)[number];
export const remediationActions = ["requested", "withdrawn"] as const;
export type RemediationAction = (typeof remediationActions)[number];
export const imageInspectErrorReasons = ["not_found", "unauthorized", "unreachable", "invalid", "label_invalid"] as const;
export type ImageInspectErrorReason = (typeof imageInspectErrorReasons)[number];
export const imageVerificationResults = [
  "verified",
  "missing",
  "invalid",
  "unknown_key",
  "unreachable",
  "not_allowed",
  "key_invalid",
] as const;
export type ImageVerificationResult = (typeof imageVerificationResults)[number];

/** captf_notifications_total results: delivered (2xx), given up after the retries (or refused for good), dropped (queue full). */
export const notificationResults = ["sent", "failed", "dropped"] as const;
export type NotificationResult = (typeof notificationResults)[number];

/** The values one enumerated label takes on the metrics named (none named: every captf_* metric with that label). */
export interface MetricLabelValues {
  label: string;
  metrics?: readonly string[];
  values: readonly string[];
}

/**
 * Every enumerated label value of the captf_* metrics, one home for docs/metrics.md's "Label values" and the names check
 * (each value is a declared name a test must assert on a series of these metrics). Free-form labels (a decision's or a
 * condition's reason, namespace, name) are not listed.
 */
export const metricLabelValues: readonly MetricLabelValues[] = [
  { label: "kind", values: metricKinds },
  { label: "op", values: metricOps },
  { label: "op", metrics: ["captf_reconcile_op_decisions_total"], values: ["none"] },
  { label: "result", metrics: ["captf_jobs_total", "captf_job_duration_seconds"], values: jobResults },
  { label: "step", metrics: ["captf_job_step_duration_seconds", "captf_job_errors_total"], values: jobSteps },
  { label: "step", metrics: ["captf_job_errors_total"], values: ["none"] },
  { label: "error_kind", metrics: ["captf_job_errors_total"], values: jobErrorKinds },
  { label: "action", metrics: ["captf_resources_changed_total"], values: resourceActions },
  { label: "action", metrics: ["captf_drift_resources_total"], values: ["add", "change", "destroy"] },
  { label: "action", metrics: ["captf_remediation_requests_total"], values: remediationActions },
  { label: "reason", metrics: ["captf_state_read_errors_total"], values: stateReadErrorReasons },
  { label: "reason", metrics: ["captf_lease_waits_total"], values: leaseWaitReasons },
  { label: "reason", metrics: ["captf_identity_denied_total"], values: identityDeniedReasons },
  { label: "reason", metrics: ["captf_image_inspect_errors_total"], values: imageInspectErrorReasons },
  { label: "result", metrics: ["captf_image_verifications_total"], values: imageVerificationResults },
  { label: "result", metrics: ["captf_notifications_total"], values: notificationResults },
  { label: "result", metrics: ["captf_state_backups_total"], values: stateBackupResults },
  { label: "result", metrics: ["captf_state_restores_total"], values: stateRestoreResults },
  { label: "result", metrics: ["captf_plan_approvals_total"], values: planApprovalResults },
  { label: "target", metrics: ["captf_broker_refused_requests_total"], values: brokerRequestTargets },
];
/** 1 true, 0 false, -1 unknown. */
export type TriState = 1 | 0 | -1;

const minute = 60;
const hour = 3600;
/** 15 s … 2 h. */
export const jobDurationBuckets = [15, 30, minute, 2 * minute, 5 * minute, 10 * minute, 15 * minute, 30 * minute, hour, 2 * hour];
/** 1 s … 2 h. */
export const jobStepDurationBuckets = [1, 2, 5, 10, 30, minute, 2 * minute, 5 * minute, 10 * minute, 30 * minute, hour, 2 * hour];
/** 5 s … 30 min, with the 300 s boundary the CAPTFJobQueueSlow alert reads. */
export const jobQueueBuckets = [5, 10, 30, minute, 2 * minute, 5 * minute, 10 * minute, 20 * minute, 30 * minute];
export const jobAttemptBuckets = [1, 2, 3, 4, 5, 6, 8, 10, 15, 20];

const alpha = (help: string) => `[ALPHA] ${help}`;

export interface BuildInfo {
  version: string;
  commit: string;
  contract: string;
}

/** The captf_* metric constructors, registered in `registry`, their help marked alpha. */
function metricFactories(registry: Registry) {
  const registers = [registry];
  return {
    counter: <L extends string>(name: string, help: string, labelNames: readonly L[]) =>
      new Counter<L>({ name, help: alpha(help), labelNames, registers }),
    gauge: <L extends string>(name: string, help: string, labelNames: readonly L[]) =>
      new Gauge<L>({ name, help: alpha(help), labelNames, registers }),
    histogram: <L extends string>(name: string, help: string, labelNames: readonly L[], buckets: number[]) =>
      new Histogram<L>({ name, help: alpha(help), labelNames, buckets, registers }),
  };
}

/** A source of active Job counts, read at scrape time (the reference reads its Job cache). */
export type ActiveJobsSource = () => Iterable<{ kind: MetricKind; op: MetricOp; count: number }>;

export class CaptfMetrics {
  readonly jobs: Counter<"kind" | "op" | "result">;
  readonly jobDuration: Histogram<"kind" | "op" | "result">;
  readonly jobStepDuration: Histogram<"kind" | "op" | "step">;
  readonly jobQueue: Histogram<"kind" | "op">;
  readonly jobErrors: Counter<"kind" | "op" | "error_kind" | "step">;
  readonly jobsActive: Gauge<"kind" | "op">;
  readonly jobAttempts: Histogram<"kind" | "op">;
  readonly resourcesChanged: Counter<"kind" | "op" | "action">;
  readonly opDecisions: Counter<"kind" | "op" | "reason">;
  readonly stateReadErrors: Counter<"kind" | "reason">;
  readonly stateResources: Gauge<"kind" | "namespace" | "name">;
  readonly stateBytes: Gauge<"kind" | "namespace" | "name">;
  readonly inputsBytes: Gauge<"kind" | "namespace" | "name">;
  readonly stateBackups: Counter<"kind" | "result">;
  readonly stateRestores: Counter<"kind" | "result">;
  readonly outputsInvalid: Counter<"kind" | "reason">;
  readonly inputsHashChanges: Counter<"kind">;
  readonly ready: Gauge<"kind" | "namespace" | "name">;
  readonly infrastructureHealthy: Gauge<"kind" | "namespace" | "name">;
  readonly driftDetected: Gauge<"kind" | "namespace" | "name">;
  readonly driftResources: Counter<"kind" | "action">;
  readonly lastSuccessTimestamp: Gauge<"kind" | "namespace" | "name" | "op">;
  readonly unhealthySamples: Gauge<"namespace" | "name">;
  readonly remediationRequests: Counter<"action">;
  readonly lockForceUnlocks: Counter<"kind">;
  readonly leaseWaits: Counter<"kind" | "reason">;
  readonly planApprovals: Counter<"kind" | "result">;
  readonly destructivePlanApprovalsConsumed: Counter<"kind">;
  readonly identityDenied: Counter<"reason">;
  readonly brokerRefusals: Counter<"kind" | "target">;
  readonly imageInspectErrors: Counter<"reason">;
  readonly imageVerifications: Counter<"kind" | "result">;
  readonly notifications: Counter<"receiver" | "result">;
  readonly buildInfo: Gauge<"version" | "commit" | "contract">;
  #activeJobs: ActiveJobsSource = () => [];

  constructor(registry: Registry) {
    const { counter, gauge, histogram } = metricFactories(registry);
    const object = ["kind", "namespace", "name"] as const;

    this.jobs = counter("captf_jobs_total", "Finished Terraform Jobs by kind, operation and result", ["kind", "op", "result"]);
    this.jobDuration = histogram(
      "captf_job_duration_seconds",
      "Duration of finished Terraform Jobs",
      ["kind", "op", "result"],
      jobDurationBuckets,
    );
    this.jobStepDuration = histogram(
      "captf_job_step_duration_seconds",
      "Duration of the runner's steps",
      ["kind", "op", "step"],
      jobStepDurationBuckets,
    );
    this.jobQueue = histogram(
      "captf_job_queue_seconds",
      "Time from Job creation until its source container started",
      ["kind", "op"],
      jobQueueBuckets,
    );
    this.jobErrors = counter("captf_job_errors_total", "Failed Terraform Jobs by error kind and failed step (none if no step failed)", [
      "kind",
      "op",
      "error_kind",
      "step",
    ]);
    const activeJobs = () => this.#activeJobs();
    this.jobsActive = new Gauge({
      name: "captf_jobs_active",
      help: alpha("Terraform Jobs running now, read from the Job cache at scrape time"),
      labelNames: ["kind", "op"],
      registers: [registry],
      collect() {
        this.reset();
        for (const { kind, op, count } of activeJobs()) this.set({ kind, op }, count);
      },
    });
    this.jobAttempts = histogram(
      "captf_job_attempts",
      "Retry number of each succeeded Job (failures of that op since its last success, plus one)",
      ["kind", "op"],
      jobAttemptBuckets,
    );
    this.resourcesChanged = counter(
      "captf_resources_changed_total",
      "Terraform resources finished Jobs changed, as their apply or destroy step reported (once per Job)",
      ["kind", "op", "action"],
    );
    this.opDecisions = counter(
      "captf_reconcile_op_decisions_total",
      "Operations chosen by reconcile passes (op none if nothing), by reason",
      ["kind", "op", "reason"],
    );
    this.stateReadErrors = counter("captf_state_read_errors_total", "Failures to read Terraform state", ["kind", "reason"]);
    this.stateResources = gauge("captf_state_resources", "Resources in an object's Terraform state", object);
    this.stateBytes = gauge("captf_state_bytes", "Size of an object's Terraform state as its Secrets store it (compressed)", object);
    this.inputsBytes = gauge("captf_inputs_bytes", "Size of an object's rendered inputs (main.tf.json and terraform.tfvars.json)", object);
    this.stateBackups = counter(
      "captf_state_backups_total",
      "State backups taken, pruned or skipped (a serial new to the object that a backup holds already, or a backup not written)",
      ["kind", "result"],
    );
    this.stateRestores = counter("captf_state_restores_total", "State restores by result", ["kind", "result"]);
    this.outputsInvalid = counter(
      "captf_outputs_invalid_total",
      "Transitions of OutputsValid to False (or to another False reason), by that reason",
      ["kind", "reason"],
    );
    this.inputsHashChanges = counter(
      "captf_inputs_hash_changes_total",
      "Applies started for a new inputs hash after a successful apply (once per hash, not per retry)",
      ["kind"],
    );
    this.ready = gauge("captf_ready", "Ready condition of an object: 1 true, 0 false, -1 unknown", object);
    this.infrastructureHealthy = gauge(
      "captf_infrastructure_healthy",
      "InfrastructureHealthy condition: 1 true, 0 false, -1 unknown",
      object,
    );
    this.driftDetected = gauge("captf_drift_detected", "1 while drift is detected on an object", object);
    this.driftResources = counter("captf_drift_resources_total", "Drifted resources found by drift Jobs", ["kind", "action"]);
    this.lastSuccessTimestamp = gauge(
      "captf_last_success_timestamp_seconds",
      "Time of an object's last successful Job of an operation (drift and refresh only while scheduled)",
      [...object, "op"],
    );
    this.unhealthySamples = gauge("captf_unhealthy_samples", "Consecutive unhealthy samples of a machine", ["namespace", "name"]);
    this.remediationRequests = counter("captf_remediation_requests_total", "Machine remediation requests and withdrawals", ["action"]);
    this.lockForceUnlocks = counter("captf_lock_force_unlocks_total", "State locks forcibly released", ["kind"]);
    this.leaseWaits = counter("captf_lease_waits_total", "Waits for a run lease or the cluster operation gate", ["kind", "reason"]);
    this.planApprovals = counter("captf_plan_approvals_total", "Plan approval transitions", ["kind", "result"]);
    this.destructivePlanApprovalsConsumed = counter(
      "captf_destructive_plan_approvals_consumed_total",
      "Destructive-plan approval annotations consumed (legacy flow)",
      ["kind"],
    );
    this.identityDenied = counter("captf_identity_denied_total", "Identity resolutions denied", ["reason"]);
    this.brokerRefusals = counter(
      "captf_broker_refused_requests_total",
      "Requests of module code the Jobs' state brokers refused (counted once per finished Job), by what they were aimed at: " +
        "state, lock, event or other",
      ["kind", "target"],
    );
    this.imageInspectErrors = counter("captf_image_inspect_errors_total", "Failures to inspect a module image", ["reason"]);
    this.imageVerifications = counter(
      "captf_image_verifications_total",
      "Signature checks of module images a TerraformModulePolicy governs, before a Job runs them, by result (verified or why not)",
      ["kind", "result"],
    );
    this.notifications = counter(
      "captf_notifications_total",
      "Notifications to TerraformNotificationReceivers by receiver and result: sent, failed (after the retries) or dropped (queue full)",
      ["receiver", "result"],
    );
    this.buildInfo = gauge("captf_build_info", "Build information of the manager, always 1", ["version", "commit", "contract"]);
  }

  setBuildInfo(info: BuildInfo): void {
    this.buildInfo.reset();
    this.buildInfo.set({ ...info }, 1);
  }

  /** Where `captf_jobs_active` reads its counts at scrape time. */
  setActiveJobsSource(source: ActiveJobsSource): void {
    this.#activeJobs = source;
  }

  /** One finished Job: counted, timed, and (when it succeeded) its attempt number recorded. */
  jobFinished(job: { kind: MetricKind; op: MetricOp; result: JobResult; durationSeconds?: number; attempt?: number }): void {
    this.jobs.inc({ kind: job.kind, op: job.op, result: job.result });
    if (job.durationSeconds !== undefined)
      this.jobDuration.observe({ kind: job.kind, op: job.op, result: job.result }, job.durationSeconds);
    if (job.result === "succeeded" && job.attempt !== undefined) this.jobAttempts.observe({ kind: job.kind, op: job.op }, job.attempt);
  }

  jobFailed(kind: MetricKind, op: MetricOp, errorKind: JobErrorKind, step: JobStep | "none" = "none"): void {
    this.jobErrors.inc({ kind, op, error_kind: errorKind, step });
  }

  /** A finished Job's broker refusals, by target. */
  brokerRefused(kind: MetricKind, refusedByTarget: Partial<Record<BrokerRequestTarget, number>>): void {
    for (const [target, count] of Object.entries(refusedByTarget)) if (count) this.brokerRefusals.inc({ kind, target }, count);
  }

  decided(kind: MetricKind, op: MetricOp | "none", reason: string): void {
    this.opDecisions.inc({ kind, op, reason });
  }

  /** Sets an object's condition gauges; `undefined` leaves a gauge as it is. */
  objectStatus(kind: MetricKind, namespace: string, name: string, status: { ready?: TriState; healthy?: TriState; drift?: 0 | 1 }): void {
    const labels = { kind, namespace, name };
    if (status.ready !== undefined) this.ready.set(labels, status.ready);
    if (status.healthy !== undefined) this.infrastructureHealthy.set(labels, status.healthy);
    if (status.drift !== undefined) this.driftDetected.set(labels, status.drift);
  }

  objectSizes(
    kind: MetricKind,
    namespace: string,
    name: string,
    sizes: { stateResources?: number; stateBytes?: number; inputsBytes?: number },
  ): void {
    const labels = { kind, namespace, name };
    if (sizes.stateResources !== undefined) this.stateResources.set(labels, sizes.stateResources);
    if (sizes.stateBytes !== undefined) this.stateBytes.set(labels, sizes.stateBytes);
    if (sizes.inputsBytes !== undefined) this.inputsBytes.set(labels, sizes.inputsBytes);
  }

  lastSuccess(kind: MetricKind, namespace: string, name: string, op: MetricOp, atMillis: number): void {
    this.lastSuccessTimestamp.set({ kind, namespace, name, op }, atMillis / 1000);
  }

  /** Deletes every per-object series of a deleted object (the 8 gauges carrying namespace and name). */
  forgetObject(kind: MetricKind, namespace: string, name: string): void {
    const labels = { kind, namespace, name };
    for (const gauge of [
      this.stateResources,
      this.stateBytes,
      this.inputsBytes,
      this.ready,
      this.infrastructureHealthy,
      this.driftDetected,
    ])
      gauge.remove(labels);
    for (const op of metricOps) this.lastSuccessTimestamp.remove({ ...labels, op });
    if (kind === "TerraformMachine") this.unhealthySamples.remove({ namespace, name });
  }
}
