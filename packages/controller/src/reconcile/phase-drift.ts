// The drift phase: the drift policy and finding (events and metrics of the newest check), and a machine's health sampling interval.
import type { MetricKind } from "../metrics/captf-metrics.js";
import { driftFinding } from "./compute-status.js";
import { defaultDriftIntervalSeconds, driftDetectedCondition, effectiveDriftPolicy } from "./drift-policy.js";
import type { ObservedJob } from "./observe-jobs.js";
import type { TerraformClusterObject } from "./pass-reads.js";
import { type DriftFacts, type Pass, next, type Phase } from "./types.js";
import { effectiveRemediation, type StoredRemediation } from "../kinds/machine-remediation.js";

/** The drift policy and finding of this pass: the newest check's events and metrics, the times of the newest check and sample. */
export function observeDrift(
  pass: Pass,
  jobs: readonly ObservedJob[],
  toMark: readonly ObservedJob[],
  terraformCluster: TerraformClusterObject | undefined,
): DriftFacts {
  const { deps, adapter, object, events, subject, scope } = pass;
  const { previous } = scope;
  const driftPolicy = effectiveDriftPolicy(
    adapter.role,
    object.spec.drift,
    adapter.role === "cluster" ? undefined : terraformCluster?.spec?.defaults?.drift,
    deps.driftDefaultIntervalSeconds ?? defaultDriftIntervalSeconds,
  );
  const driftChecks = jobs.filter((job) => job.op === "drift" && job.outcome === "succeeded").map((job) => job.finishedAt!);
  const lastDriftCheckAt = driftChecks.length ? Math.max(...driftChecks) : undefined;
  const wasDrifted = previous?.find((c) => c.type === "DriftDetected")?.status === "True";
  const newestCheck = toMark.filter((job) => job.op === "drift" || job.op === "refresh").sort((a, b) => b.finishedAt! - a.finishedAt!)[0];
  // A remediation apply that succeeded after the finding applied the current inputs over the drift: resolved at once.
  const remediated = toMark.find(
    (job) => job.op === "apply" && job.remediation && job.outcome === "succeeded" && job.finishedAt! > (lastDriftCheckAt ?? 0),
  );
  scope.drift = {
    action: driftPolicy.action,
    ...(newestCheck ? { newestCheck } : {}),
    ...(remediated ? { remediatedBy: remediated.name } : {}),
  };
  // The times survive the Jobs' pruning in status: the newest drift check, and the newest health reading (a refresh,
  // a drift check, or an apply's own).
  const sampledAt = jobs
    .filter((job) => (job.op === "refresh" || job.op === "drift" || job.op === "apply") && job.outcome === "succeeded")
    .map((job) => job.finishedAt!);
  const newer = (at: number | undefined, field: "lastDriftCheck" | "lastRefresh") =>
    at !== undefined && !(Date.parse(String(object.status?.[field] ?? "")) >= at);
  if (newer(lastDriftCheckAt, "lastDriftCheck")) scope.fields.lastDriftCheck = new Date(lastDriftCheckAt!).toISOString();
  const lastSampleAt = sampledAt.length ? Math.max(...sampledAt) : undefined;
  if (newer(lastSampleAt, "lastRefresh")) scope.fields.lastRefresh = new Date(lastSampleAt!).toISOString();
  const finding = newestCheck?.outcome === "succeeded" && newestCheck.op === "drift" ? newestCheck.result?.drift : undefined;
  if (finding) {
    if (finding.detected && !wasDrifted)
      void events.record(
        subject,
        "DriftDetected",
        driftDetectedCondition(finding, driftPolicy.action, adapter.role).message ?? "drift detected",
      );
    if (!finding.detected && wasDrifted) void events.record(subject, "DriftResolved", "the infrastructure matches the state again");
    if (finding.detected) {
      for (const [action, count] of [
        ["add", finding.add],
        ["change", finding.change],
        ["destroy", finding.destroy],
      ] as const)
        if (count > 0) deps.metrics?.driftResources.inc({ kind: adapter.kind as MetricKind, action }, count);
    }
  }
  if (remediated && (finding ? finding.detected : wasDrifted))
    void events.record(
      subject,
      "DriftResolved",
      `remediation apply Job ${remediated.name} succeeded: the infrastructure matches the inputs again`,
    );
  return {
    policy: driftPolicy,
    detected: driftFinding(scope)?.status === "True",
    ...(lastDriftCheckAt !== undefined ? { lastCheckAt: lastDriftCheckAt } : {}),
  };
}

export const reconcileDrift: Phase = async (pass) => {
  const { deps, adapter, object, namespace, name, facts } = pass;
  facts.drift = observeDrift(pass, facts.jobs, facts.toMark, facts.terraformCluster);
  deps.metrics?.objectStatus(adapter.kind as MetricKind, namespace, name, { drift: facts.drift.detected ? 1 : 0 });
  // Machines that may ask for remediation sample their health on its own interval.
  const remediation =
    adapter.role === "machine"
      ? effectiveRemediation(object.spec.remediation as StoredRemediation | undefined, facts.terraformCluster?.spec?.defaults?.remediation)
      : undefined;
  facts.healthCheckIntervalSeconds =
    remediation?.annotateMachine && facts.wasProvisioned ? remediation.healthCheckIntervalSeconds : undefined;
  return next;
};
