/**
 * The Grafana dashboard of the manager, rendered to JSON: rows of panels whose queries read only
 * the metrics the manager exports (a test checks every query against the manager's registry).
 * Queries use Grafana's `$datasource` and `$namespace` variables and `$__rate_interval`.
 */

export interface PanelQuery {
  expr: string;
  legend: string;
}

export interface PanelSpec {
  title: string;
  type: "timeseries" | "stat" | "table";
  description: string;
  unit?: string;
  queries: readonly PanelQuery[];
}

export interface RowSpec {
  title: string;
  panels: readonly PanelSpec[];
}

export const dashboardUid = "captf-manager";
export const dashboardTitle = "captf manager";

const ns = 'namespace=~"$namespace"';
const rate = (metric: string, by: string, selector = "") =>
  `sum by (${by}) (rate(${metric}${selector ? `{${selector}}` : ""}[$__rate_interval]))`;
const increase = (metric: string, by: string, selector = "") =>
  `sum by (${by}) (increase(${metric}${selector ? `{${selector}}` : ""}[$__rate_interval]))`;
const quantile = (q: number, histogram: string, by: string, selector = "") =>
  `histogram_quantile(${q}, ${rate(`${histogram}_bucket`, `${by}, le`, selector)})`;

export const dashboardRows: readonly RowSpec[] = [
  {
    title: "Manager",
    panels: [
      {
        title: "Version",
        type: "stat",
        description: "captf_build_info of the scraped replicas",
        queries: [
          { expr: "max by (version, commit, contract) (captf_build_info)", legend: "{{version}} ({{commit}}, contract {{contract}})" },
        ],
      },
      {
        title: "Leader",
        type: "stat",
        description: "Replicas holding the leader Lease (1 expected; 0 means nothing is reconciled)",
        queries: [{ expr: 'sum(leader_election_master_status{name="controller-leader-election-captf"})', legend: "leaders" }],
      },
      {
        title: "Busy workers",
        type: "timeseries",
        unit: "percentunit",
        description: "Workers reconciling now, of each controller's --*-concurrency",
        queries: [
          {
            expr:
              "sum by (controller) (controller_runtime_active_workers) / sum by (controller) " +
              "(controller_runtime_max_concurrent_reconciles)",
            legend: "{{controller}}",
          },
        ],
      },
      {
        title: "Reconcile passes",
        type: "timeseries",
        unit: "ops",
        description: "Passes per second by controller and result",
        queries: [{ expr: rate("controller_runtime_reconcile_total", "controller, result"), legend: "{{controller}} {{result}}" }],
      },
      {
        title: "Reconcile errors",
        type: "timeseries",
        unit: "ops",
        description: "Passes ending in an error (CAPTFReconcileErrors above 0.1/s for 10 min)",
        queries: [{ expr: rate("controller_runtime_reconcile_errors_total", "controller"), legend: "{{controller}}" }],
      },
      {
        title: "Reconcile duration p99",
        type: "timeseries",
        unit: "s",
        description: "99th percentile of a pass's duration",
        queries: [{ expr: quantile(0.99, "controller_runtime_reconcile_time_seconds", "controller"), legend: "{{controller}}" }],
      },
      {
        title: "Work queue depth",
        type: "timeseries",
        unit: "short",
        description: "Keys waiting for a worker",
        queries: [{ expr: "sum by (name) (workqueue_depth)", legend: "{{name}}" }],
      },
      {
        title: "Longest running pass",
        type: "timeseries",
        unit: "s",
        description: "Age of the oldest pass in progress (CAPTFReconcileStuck above 10 min)",
        queries: [{ expr: "max by (name) (workqueue_longest_running_processor_seconds)", legend: "{{name}}" }],
      },
      {
        title: "API requests",
        type: "timeseries",
        unit: "reqps",
        description: "Requests to the API server by status code and method",
        queries: [{ expr: rate("rest_client_requests_total", "code, method"), legend: "{{method}} {{code}}" }],
      },
      {
        title: "Watch restarts",
        type: "timeseries",
        unit: "short",
        description: "Informer watch restarts by resource and reason",
        queries: [{ expr: increase("captf_informer_watch_restarts_total", "resource, reason"), legend: "{{resource}} {{reason}}" }],
      },
      {
        title: "Cached objects per shard",
        type: "timeseries",
        unit: "short",
        description:
          "Objects of the sharded kinds each replica caches, by shard (--shards > 1): a replica holds only the objects of the " +
          "shards it holds",
        queries: [{ expr: "sum by (pod, kind, shard) (captf_shard_cached_objects)", legend: "{{pod}} {{kind}} shard {{shard}}" }],
      },
      {
        title: "Informer list duration p90",
        type: "timeseries",
        unit: "s",
        description: "90th percentile of an informer's full list",
        queries: [{ expr: quantile(0.9, "captf_informer_list_duration_seconds", "resource"), legend: "{{resource}}" }],
      },
      {
        title: "Memory",
        type: "timeseries",
        unit: "bytes",
        description: "Resident memory and used heap of each replica",
        queries: [
          { expr: "process_resident_memory_bytes", legend: "{{pod}} resident" },
          { expr: "nodejs_heap_size_used_bytes", legend: "{{pod}} heap used" },
        ],
      },
      {
        title: "Event loop lag p99",
        type: "timeseries",
        unit: "s",
        description: "Node's event loop lag: high values delay every pass and watch",
        queries: [{ expr: "nodejs_eventloop_lag_p99_seconds", legend: "{{pod}}" }],
      },
    ],
  },
  {
    title: "Jobs",
    panels: [
      {
        title: "Active Jobs",
        type: "timeseries",
        unit: "short",
        description: "Terraform Jobs running now",
        queries: [{ expr: "sum by (kind, op) (captf_jobs_active)", legend: "{{kind}} {{op}}" }],
      },
      {
        title: "Finished Jobs",
        type: "timeseries",
        unit: "short",
        description: "Jobs finished per interval by result (CAPTFJobFailing above 2 failures in 30 min)",
        queries: [{ expr: increase("captf_jobs_total", "kind, op, result"), legend: "{{kind}} {{op}} {{result}}" }],
      },
      {
        title: "Failed Jobs by error",
        type: "timeseries",
        unit: "short",
        description: "Failed Jobs by error kind and failed step",
        queries: [
          { expr: increase("captf_job_errors_total", "kind, op, error_kind, step"), legend: "{{kind}} {{op}} {{error_kind}} {{step}}" },
        ],
      },
      {
        title: "Job duration p90",
        type: "timeseries",
        unit: "s",
        description: "90th percentile of finished Jobs' durations (CAPTFJobSlow above 30 min)",
        queries: [{ expr: quantile(0.9, "captf_job_duration_seconds", "kind, op"), legend: "{{kind}} {{op}}" }],
      },
      {
        title: "Time to start p90",
        type: "timeseries",
        unit: "s",
        description: "90th percentile from Job creation to its first container (CAPTFJobQueueSlow above 5 min)",
        queries: [{ expr: quantile(0.9, "captf_job_queue_seconds", "kind, op"), legend: "{{kind}} {{op}}" }],
      },
      {
        title: "Step duration p90",
        type: "timeseries",
        unit: "s",
        description: "90th percentile of the runner's steps",
        queries: [{ expr: quantile(0.9, "captf_job_step_duration_seconds", "step"), legend: "{{step}}" }],
      },
      {
        title: "Attempts p90",
        type: "timeseries",
        unit: "short",
        description: "90th percentile of the attempt number of succeeded Jobs",
        queries: [{ expr: quantile(0.9, "captf_job_attempts", "kind, op"), legend: "{{kind}} {{op}}" }],
      },
      {
        title: "Resources changed",
        type: "timeseries",
        unit: "short",
        description: "Terraform resources added, changed, destroyed and imported by Jobs",
        queries: [{ expr: increase("captf_resources_changed_total", "kind, action"), legend: "{{kind}} {{action}}" }],
      },
      {
        title: "Operations decided",
        type: "timeseries",
        unit: "short",
        description: "Operations reconcile passes chose, by reason",
        queries: [
          { expr: increase("captf_reconcile_op_decisions_total", "kind, op, reason", 'op!="none"'), legend: "{{kind}} {{op}} {{reason}}" },
        ],
      },
      {
        title: "Lease waits",
        type: "timeseries",
        unit: "short",
        description: "Waits for a run lease or the cluster operation gate",
        queries: [{ expr: increase("captf_lease_waits_total", "kind, reason"), legend: "{{kind}} {{reason}}" }],
      },
    ],
  },
  {
    title: "Objects",
    panels: [
      {
        title: "Not Ready",
        type: "stat",
        description: "Objects whose Ready condition is False or Unknown (CAPTFObjectNotReady after an hour)",
        queries: [{ expr: `count by (kind) (captf_ready{${ns}} < 1)`, legend: "{{kind}}" }],
      },
      {
        title: "Infrastructure unhealthy",
        type: "stat",
        description: "Objects whose InfrastructureHealthy condition is False or Unknown",
        queries: [{ expr: `count by (kind) (captf_infrastructure_healthy{${ns}} < 1)`, legend: "{{kind}}" }],
      },
      {
        title: "Drift detected",
        type: "stat",
        description: "Objects with drift (CAPTFClusterDrift for a cluster after an hour)",
        queries: [{ expr: `sum by (kind) (captf_drift_detected{${ns}})`, legend: "{{kind}}" }],
      },
      {
        title: "Largest states",
        type: "table",
        unit: "bytes",
        description: "Terraform state sizes (CAPTFStateNearSecretLimit above 900 KiB)",
        queries: [{ expr: `topk(10, captf_state_bytes{${ns}})`, legend: "{{kind}} {{namespace}}/{{name}}" }],
      },
      {
        title: "Largest inputs",
        type: "table",
        unit: "bytes",
        description: "Rendered inputs sizes (CAPTFInputsNearLimit above 900000 bytes)",
        queries: [{ expr: `topk(10, captf_inputs_bytes{${ns}})`, legend: "{{kind}} {{namespace}}/{{name}}" }],
      },
      {
        title: "Resources in state",
        type: "timeseries",
        unit: "short",
        description: "Resources in the Terraform states, by kind",
        queries: [{ expr: `sum by (kind) (captf_state_resources{${ns}})`, legend: "{{kind}}" }],
      },
      {
        title: "Since the last drift check or refresh",
        type: "table",
        unit: "s",
        description: "Age of each object's last successful scheduled drift or refresh Job (CAPTFNoRecentSuccess above 6 h)",
        queries: [
          {
            expr: `topk(10, time() - captf_last_success_timestamp_seconds{op=~"drift|refresh", ${ns}})`,
            legend: "{{kind}} {{namespace}}/{{name}} {{op}}",
          },
        ],
      },
      {
        title: "Unhealthy machines",
        type: "table",
        unit: "short",
        description: "Machines with consecutive unhealthy samples",
        queries: [{ expr: `captf_unhealthy_samples{${ns}} > 0`, legend: "{{namespace}}/{{name}}" }],
      },
    ],
  },
  {
    title: "State, approvals and remediation",
    panels: [
      {
        title: "State read errors",
        type: "timeseries",
        unit: "short",
        description: "Failures to read Terraform state (CAPTFStateUnreadable)",
        queries: [{ expr: increase("captf_state_read_errors_total", "kind, reason"), legend: "{{kind}} {{reason}}" }],
      },
      {
        title: "Forced unlocks",
        type: "timeseries",
        unit: "short",
        description: "State locks released by force (CAPTFForceUnlocks)",
        queries: [{ expr: increase("captf_lock_force_unlocks_total", "kind"), legend: "{{kind}}" }],
      },
      {
        title: "Backups and restores",
        type: "timeseries",
        unit: "short",
        description: "State backups taken, pruned or skipped; restores by result",
        queries: [
          { expr: increase("captf_state_backups_total", "kind, result"), legend: "backup {{kind}} {{result}}" },
          { expr: increase("captf_state_restores_total", "kind, result"), legend: "restore {{kind}} {{result}}" },
        ],
      },
      {
        title: "Plan approvals",
        type: "timeseries",
        unit: "short",
        description: "Plan approval transitions, and destructive-plan approvals consumed",
        queries: [
          { expr: increase("captf_plan_approvals_total", "kind, result"), legend: "{{kind}} {{result}}" },
          { expr: increase("captf_destructive_plan_approvals_consumed_total", "kind"), legend: "{{kind}} destructive consumed" },
        ],
      },
      {
        title: "Drift and remediation",
        type: "timeseries",
        unit: "short",
        description: "Drifted resources found, and machine remediation requests",
        queries: [
          { expr: increase("captf_drift_resources_total", "kind, action"), legend: "drift {{kind}} {{action}}" },
          { expr: increase("captf_remediation_requests_total", "action"), legend: "remediation {{action}}" },
        ],
      },
      {
        title: "Inputs and outputs",
        type: "timeseries",
        unit: "short",
        description: "Inputs hash changes and module outputs that failed validation",
        queries: [
          { expr: increase("captf_inputs_hash_changes_total", "kind"), legend: "inputs changed {{kind}}" },
          { expr: increase("captf_outputs_invalid_total", "kind, reason"), legend: "outputs invalid {{kind}} {{reason}}" },
        ],
      },
      {
        title: "Denials and image errors",
        type: "timeseries",
        unit: "short",
        description:
          "Identity resolutions denied, failures to inspect a module image, module image signature checks that refused, and " +
          "requests of module code the Jobs' state brokers refused",
        queries: [
          { expr: increase("captf_identity_denied_total", "reason"), legend: "identity {{reason}}" },
          { expr: increase("captf_image_inspect_errors_total", "reason"), legend: "image {{reason}}" },
          {
            expr: increase("captf_image_verifications_total", "kind, result", 'result!="verified"'),
            legend: "signature {{kind}} {{result}}",
          },
          { expr: increase("captf_broker_refused_requests_total", "kind, target"), legend: "broker refused {{kind}} {{target}}" },
        ],
      },
      {
        title: "Notifications",
        type: "timeseries",
        unit: "short",
        description: "Notifications to TerraformNotificationReceivers: sent, failed after their retries, dropped with the queue full",
        queries: [{ expr: increase("captf_notifications_total", "receiver, result"), legend: "{{receiver}} {{result}}" }],
      },
    ],
  },
];

/** The template variables: the Prometheus data source, and the namespaces of captf objects. */
export const namespaceVariableQuery = "label_values(captf_ready, namespace)";

const datasource = { type: "prometheus", uid: "${datasource}" };
const panelWidth = 8;
const panelHeight = 8;

function panelJson(panel: PanelSpec, id: number, x: number, y: number): Record<string, unknown> {
  return {
    id,
    type: panel.type,
    title: panel.title,
    description: panel.description,
    datasource,
    gridPos: { x, y, w: panelWidth, h: panelHeight },
    fieldConfig: { defaults: { unit: panel.unit ?? "short" }, overrides: [] },
    options:
      panel.type === "stat" ? { reduceOptions: { calcs: ["lastNotNull"], fields: "", values: false }, textMode: "value_and_name" } : {},
    targets: panel.queries.map((query, index) => ({
      refId: String.fromCharCode(65 + index),
      datasource,
      expr: query.expr,
      legendFormat: query.legend,
      ...(panel.type === "table" ? { instant: true, format: "table" } : {}),
    })),
  };
}

/** The dashboard model Grafana imports (schema version 39). */
export function dashboardJson(): Record<string, unknown> {
  const panels: Record<string, unknown>[] = [];
  let id = 1;
  let y = 0;
  for (const row of dashboardRows) {
    panels.push({ id: id++, type: "row", title: row.title, collapsed: false, gridPos: { x: 0, y, w: 24, h: 1 }, panels: [] });
    y += 1;
    row.panels.forEach((panel, index) => {
      const column = index % (24 / panelWidth);
      panels.push(panelJson(panel, id++, column * panelWidth, y + Math.floor(index / (24 / panelWidth)) * panelHeight));
    });
    y += Math.ceil(row.panels.length / (24 / panelWidth)) * panelHeight;
  }
  return {
    uid: dashboardUid,
    title: dashboardTitle,
    description: "Jobs, reconcile passes and objects of the captf Cluster API infrastructure provider",
    tags: ["captf", "cluster-api"],
    editable: true,
    schemaVersion: 39,
    time: { from: "now-6h", to: "now" },
    refresh: "30s",
    timezone: "",
    graphTooltip: 1,
    templating: {
      list: [
        { name: "datasource", label: "Data source", type: "datasource", query: "prometheus", current: {}, hide: 0 },
        {
          name: "namespace",
          label: "Namespace",
          type: "query",
          datasource,
          query: { query: namespaceVariableQuery, refId: "namespace" },
          definition: namespaceVariableQuery,
          includeAll: true,
          multi: true,
          allValue: ".*",
          current: { text: "All", value: "$__all" },
          refresh: 2,
          sort: 1,
        },
      ],
    },
    annotations: { list: [] },
    panels,
  };
}
