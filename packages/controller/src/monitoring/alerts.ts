/**
 * The alerts shipped as the PrometheusRule `captf-alerts` (group `captf`): the reference's eleven,
 * four about the manager itself and one about notifications. Each alert's runbook is its page docs/runbooks/<alert>.md; a
 * promtool unit test (config/monitoring/alerts.test.yaml) fires and clears each one.
 */
export type AlertSeverity = "critical" | "warning" | "info";

export interface AlertRule {
  alert: string;
  severity: AlertSeverity;
  /** How long the expression must hold before the alert fires; absent: at once. */
  for?: string;
  expr: string;
  /** One line, may use `{{ $labels.x }}` and `{{ $value }}`. */
  summary: string;
  description: string;
}

export const alertRuleName = "captf-alerts";
export const alertGroupName = "captf";
/** Where the runbooks live: one page per alert, named after it, in the book's operator guide. */
export const runbookDirectory = "https://github.com/captf-io/captf/blob/main/docs/runbooks";

/** The alert's runbook page (docs/runbooks/<alert>.md). */
export function runbookUrl(alert: string): string {
  return `${runbookDirectory}/${alert}.md`;
}

const object = "{{ $labels.kind }} {{ $labels.namespace }}/{{ $labels.name }}";

export const alertRules: readonly AlertRule[] = [
  {
    alert: "CAPTFJobFailing",
    severity: "warning",
    expr: 'sum by (kind, op) (increase(captf_jobs_total{result=~"failed|deadline"}[30m])) > 2',
    summary: "{{ $labels.kind }} {{ $labels.op }} Jobs keep failing",
    description:
      "More than 2 {{ $labels.op }} Jobs of {{ $labels.kind }} objects failed or ran past their deadline in the last 30 minutes.",
  },
  {
    alert: "CAPTFDestroyStuck",
    severity: "critical",
    for: "30m",
    expr: 'sum by (kind) (increase(captf_jobs_total{op="destroy",result!="succeeded"}[30m])) > 0',
    summary: "{{ $labels.kind }} destroys do not succeed",
    description:
      "Destroy Jobs of {{ $labels.kind }} objects have kept ending without success for over 30 minutes: the objects keep their " +
      "finalizer and their cloud resources may be half gone.",
  },
  {
    alert: "CAPTFClusterDrift",
    severity: "warning",
    for: "1h",
    expr: 'captf_drift_detected{kind="TerraformCluster"} == 1',
    summary: `Drift on ${object}`,
    description: `The cloud resources of ${object} have differed from its module for over an hour.`,
  },
  {
    alert: "CAPTFStateUnreadable",
    severity: "critical",
    expr: "sum by (kind, reason) (increase(captf_state_read_errors_total[15m])) > 0",
    summary: "Terraform state of {{ $labels.kind }} objects unreadable ({{ $labels.reason }})",
    description:
      "The manager failed to read the Terraform state of {{ $labels.kind }} objects ({{ $labels.reason }}) in the last 15 " +
      "minutes; their Jobs are held until the state reads again.",
  },
  {
    alert: "CAPTFForceUnlocks",
    severity: "warning",
    expr: "sum by (kind) (increase(captf_lock_force_unlocks_total[1h])) > 0",
    summary: "State locks of {{ $labels.kind }} objects forcibly released",
    description:
      "A runner released a stale state lock of a {{ $labels.kind }} object in the last hour: a runner died while it held the lock.",
  },
  {
    alert: "CAPTFReconcileErrors",
    severity: "warning",
    for: "10m",
    expr: 'sum by (controller) (rate(controller_runtime_reconcile_errors_total{controller=~"terraform.*"}[10m])) > 0.1',
    summary: "The {{ $labels.controller }} controller keeps failing",
    description:
      "The {{ $labels.controller }} controller's reconcile passes have ended in an error more than 6 times a minute for 10 minutes.",
  },
  {
    alert: "CAPTFJobSlow",
    severity: "info",
    for: "30m",
    expr: 'histogram_quantile(0.9, sum by (kind, op, le) (rate(captf_job_duration_seconds_bucket{result=~"succeeded|failed"}[1h]))) > 1800',
    summary: "{{ $labels.kind }} {{ $labels.op }} Jobs take over 30 minutes",
    description: "The 90th percentile of {{ $labels.kind }} {{ $labels.op }} Job durations over the last hour is above 30 minutes.",
  },
  {
    alert: "CAPTFJobQueueSlow",
    severity: "warning",
    for: "10m",
    expr: "histogram_quantile(0.9, sum by (kind, op, le) (rate(captf_job_queue_seconds_bucket[10m]))) > 300",
    summary: "{{ $labels.kind }} {{ $labels.op }} Jobs wait over 5 minutes to start",
    description:
      "The 90th percentile of the time from Job creation until its first container started is above 5 minutes for {{ " +
      "$labels.kind }} {{ $labels.op }} Jobs.",
  },
  {
    alert: "CAPTFStateNearSecretLimit",
    severity: "warning",
    for: "15m",
    expr: "captf_state_bytes > 900 * 1024",
    summary: `Terraform state of ${object} near the Secret size limit`,
    description: `The Terraform state of ${object} is {{ $value | humanize1024 }}B, above 900 KiB of the 1 MiB a Secret holds.`,
  },
  {
    alert: "CAPTFInputsNearLimit",
    severity: "warning",
    for: "15m",
    expr: "captf_inputs_bytes > 900000",
    summary: `Inputs of ${object} near their size limit`,
    description: `The rendered inputs of ${object} are {{ $value }} bytes; above 1000000 the manager refuses to run its Jobs.`,
  },
  {
    alert: "CAPTFNoRecentSuccess",
    severity: "warning",
    for: "30m",
    expr: 'time() - captf_last_success_timestamp_seconds{op=~"drift|refresh"} > 6 * 3600',
    summary: `No successful {{ $labels.op }} of ${object} for 6 hours`,
    description: `The last successful {{ $labels.op }} Job of ${object} finished {{ $value | humanizeDuration }} ago.`,
  },
  {
    alert: "CAPTFManagerAbsent",
    severity: "critical",
    for: "10m",
    expr: "absent(captf_build_info)",
    summary: "No captf manager is scraped",
    description:
      "Prometheus has scraped no captf manager for 10 minutes: no object is reconciled while the manager is down, and none of " +
      "the other captf alerts can fire.",
  },
  {
    alert: "CAPTFNoLeader",
    severity: "critical",
    for: "5m",
    expr: 'sum(leader_election_master_status{name="controller-leader-election-captf"}) < 1',
    summary: "No captf manager replica leads",
    description: "Every captf manager replica has been a standby for 5 minutes: none holds the leader Lease, so nothing is reconciled.",
  },
  {
    alert: "CAPTFReconcileStuck",
    severity: "warning",
    for: "5m",
    expr: 'max by (controller) (workqueue_longest_running_processor_seconds{controller=~"terraform.*"}) > 600',
    summary: "A {{ $labels.controller }} reconcile pass has run for over 10 minutes",
    description:
      "A reconcile pass of the {{ $labels.controller }} controller has been running for {{ $value | humanizeDuration }}; passes " +
      "normally end within seconds, since Jobs run on their own.",
  },
  {
    alert: "CAPTFObjectNotReady",
    severity: "warning",
    for: "1h",
    expr: "captf_ready < 1",
    summary: `${object} not Ready for an hour`,
    description: `The Ready condition of ${object} has been False or Unknown for over an hour.`,
  },
  {
    alert: "CAPTFNotificationsFailing",
    severity: "warning",
    expr: 'sum by (receiver) (increase(captf_notifications_total{result=~"failed|dropped"}[30m])) > 0',
    summary: "Notifications to {{ $labels.receiver }} are not delivered",
    description:
      "Notifications to the TerraformNotificationReceiver {{ $labels.receiver }} failed after their retries or were dropped " +
      "in the last 30 minutes: the people it stands for are not told of plans, drift or failures.",
  },
];

/** The Prometheus rule groups (the `spec` of the PrometheusRule, and a plain rule file for promtool). */
export function alertRuleGroups(): { groups: Record<string, unknown>[] } {
  return {
    groups: [
      {
        name: alertGroupName,
        rules: alertRules.map((rule) => ({
          alert: rule.alert,
          expr: rule.expr,
          ...(rule.for ? { for: rule.for } : {}),
          labels: { severity: rule.severity },
          annotations: { summary: rule.summary, description: rule.description, runbook_url: runbookUrl(rule.alert) },
        })),
      },
    ],
  };
}

/** The Markdown table of the alerts, as docs/metrics.md shows it, each linking its runbook page. */
export function renderAlertTable(): string {
  const rows = alertRules.map(
    (rule) =>
      `| [\`${rule.alert}\`](runbooks/${rule.alert}.md) | ${rule.severity} | ${rule.for ?? "-"} | \`${rule.expr.replace(/\|/g, "\\|")}\` |`,
  );
  return ["| Alert | Severity | For | Expression |", "| --- | --- | --- | --- |", ...rows].join("\n");
}
