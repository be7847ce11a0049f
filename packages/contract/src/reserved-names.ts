/**
 * Names captf declares but does not produce on a tested path yet, each with why: `scripts/check-names-produced.mjs`
 * fails the test command on a declared name that no tested path produces unless it is listed here, and on a name
 * listed here that is produced now (or no longer declared). Shrinking this table is issue 13's work.
 */
export const reservedNames: Record<string, string> = {
  "condition-reason:WaitingForClusterInfrastructure": "declared only: nothing produces it yet (issue 13)",
  "condition-reason:LocalSecret": "named in packages/controller/src/identity/job-credentials.ts on a path no test in the test command reaches yet (issue 13)",
  "condition-reason:DurableInputsMissing": "named in packages/controller/src/reconcile/workspace-reconciler.ts on a path no test in the test command reaches yet (issue 13)",
  "event:FailureDomainsChanged": "declared only: nothing produces it yet (issue 13)",
  "event:OutputsInvalid": "declared only: nothing produces it yet (issue 13)",
  "event:ExportsNotPublished": "declared only: nothing produces it yet (issue 13)",
  "event:ConditionChanged": "declared only: nothing produces it yet (issue 13)",
  "event:DriftRemediationStarted": "declared only: nothing produces it yet (issue 13)",
  "event:InstanceHealthy": "declared only: nothing produces it yet (issue 13)",
  "event:InstanceUnhealthy": "declared only: nothing produces it yet (issue 13)",
  "annotation:captf.io/pending-cluster-outputs": "declared only: nothing produces it yet (issue 13)",
  "annotation:captf.io/partial-cluster-outputs": "declared only: nothing produces it yet (issue 13)",
  "annotation:captf.io/approval-hash": "declared only: nothing produces it yet (issue 13)",
  "annotation:captf.io/held-cluster-outputs": "declared only: nothing produces it yet (issue 13)",
  "annotation:captf.io/mirrored": "declared only: nothing produces it yet (issue 13)",
  "metric:captf_resources_changed_total": "declared only: nothing produces it yet (issue 13)",
  "metric:captf_outputs_invalid_total": "declared only: nothing produces it yet (issue 13)",
  "metric:captf_inputs_hash_changes_total": "declared only: nothing produces it yet (issue 13)",
  "metric:captf_destructive_plan_approvals_consumed_total": "declared only: nothing produces it yet (issue 13)",
  "metric:captf_identity_denied_total": "declared only: nothing produces it yet (issue 13)",
  "metric:captf_informer_watch_restarts_total": "named in packages/controller/src/metrics/runtime-metrics.ts on a path no test in the test command reaches yet (issue 13)",
};
