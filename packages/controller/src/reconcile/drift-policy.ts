import type { Role } from "@captf/contract";
import type { DriftSummary } from "@captf/contract/run-result";
import type { ConditionValue } from "../conditions/conditions.js";

/** A drift policy as stored: either field may be unset. */
export interface StoredDriftPolicy {
  intervalSeconds?: number;
  action?: "Report" | "Remediate";
}

export interface DriftPolicy {
  intervalSeconds: number;
  action: "Report" | "Remediate";
}

/** `--drift-default-interval` when the manager is not told otherwise. */
export const defaultDriftIntervalSeconds = 30 * 60;

/**
 * The drift policy an object runs with. A cluster has only its own; machines and pools merge
 * theirs over the cluster's `spec.defaults.drift`. A machine always reports (it is replaced, not
 * repaired); a pool's interval cannot be 0 (its membership depends on refreshes). Pure.
 */
export function effectiveDriftPolicy(
  role: Role,
  own: StoredDriftPolicy | undefined,
  clusterDefaults: StoredDriftPolicy | undefined,
  defaultIntervalSeconds: number,
): DriftPolicy {
  if (role === "cluster") return { intervalSeconds: own?.intervalSeconds ?? defaultIntervalSeconds, action: own?.action ?? "Report" };
  if (role === "machine")
    return { intervalSeconds: own?.intervalSeconds ?? clusterDefaults?.intervalSeconds ?? defaultIntervalSeconds, action: "Report" };
  const inherited = clusterDefaults?.intervalSeconds && clusterDefaults.intervalSeconds > 0 ? clusterDefaults.intervalSeconds : undefined;
  return {
    intervalSeconds: own?.intervalSeconds ?? inherited ?? defaultIntervalSeconds,
    action: own?.action ?? clusterDefaults?.action ?? "Report",
  };
}

/** What a finished drift Job says about drift, for the DriftDetected condition. Pure. */
export function driftDetectedCondition(drift: DriftSummary, action: DriftPolicy["action"], role: Role): ConditionValue {
  if (!drift.detected) return { status: "False", reason: "NoDrift" };
  const counts = `${drift.add} to add, ${drift.change} to change, ${drift.destroy} to destroy`;
  const listed = drift.resources.length ? `: ${drift.resources.join(", ")}` : "";
  const remediating = action === "Remediate" && role !== "machine";
  return {
    status: "True",
    reason: remediating ? "DriftRemediating" : "DriftReported",
    message: `the infrastructure differs from the state (${counts})${listed}`.slice(0, 1024),
  };
}
