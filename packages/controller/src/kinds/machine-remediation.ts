import { annotations } from "@captf/contract/api";
import { remediationDefaults } from "../api/defaults.js";

/**
 * Machine health samples and remediation: each completed refresh or drift Job (and an apply's own
 * reading) is one sample; consecutive unhealthy samples past the threshold, or a terminated
 * instance at once, make captf ask Cluster API to replace the Machine
 * (`cluster.x-k8s.io/remediate-machine`), and take back only its own request once the instance is
 * healthy again. Pure.
 */

export interface StoredRemediation {
  annotateMachine?: boolean;
  unhealthyThreshold?: number;
  healthCheckIntervalSeconds?: number;
}

export interface RemediationPolicy {
  annotateMachine: boolean;
  unhealthyThreshold: number;
  healthCheckIntervalSeconds: number;
}

/** The machine's own remediation policy over the cluster's `spec.defaults.remediation`, field by field. */
export function effectiveRemediation(
  own: StoredRemediation | undefined,
  clusterDefaults: StoredRemediation | undefined,
): RemediationPolicy {
  return { ...remediationDefaults, ...stripUndefined(clusterDefaults), ...stripUndefined(own) };
}

function stripUndefined(value: StoredRemediation | undefined): StoredRemediation {
  return Object.fromEntries(Object.entries(value ?? {}).filter(([, field]) => field !== undefined));
}

const unhealthyReasons = ["InstanceUnhealthy", "InstanceDegraded", "InstanceStopped"];

/** The count after one sample with this InfrastructureHealthy reason. */
export function nextUnhealthySamples(previous: number, reason: string): number {
  if (reason === "Healthy") return 0;
  return unhealthyReasons.includes(reason) ? previous + 1 : previous;
}

export type RemediationChange = { request: string } | { withdraw: true } | undefined;

/** Whether to request remediation on the Machine (with the reason), withdraw captf's request, or leave it. */
export function decideRemediation(
  policy: RemediationPolicy,
  samples: number,
  healthReason: string,
  machineAnnotations: Record<string, string> | undefined,
): RemediationChange {
  const requested = machineAnnotations?.[annotations.remediationRequested] !== undefined;
  if (healthReason === "Healthy") return requested ? { withdraw: true } : undefined;
  if (!policy.annotateMachine || requested) return undefined;
  if (healthReason === "InstanceTerminated") return { request: "InstanceTerminated" };
  if (samples >= policy.unhealthyThreshold) return { request: healthReason };
  return undefined;
}
