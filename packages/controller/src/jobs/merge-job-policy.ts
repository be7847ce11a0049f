import type { V1EnvVar, V1LocalObjectReference } from "@kubernetes/client-node";
import type { JobPolicy } from "./build-job.js";

/** A `spec.jobs` as stored: the Job-shaping fields plus history limits. */
export type StoredJobPolicy = JobPolicy & { successfulJobsHistoryLimit?: number; failedJobsHistoryLimit?: number };

/**
 * The effective Job policy of a machine or pool: its own `spec.jobs` over the cluster's
 * `spec.defaults.jobs`, field by field; `env` merges by name (own wins) and `imagePullSecrets`
 * is the union. Pure.
 */
export function mergeJobPolicy(own: StoredJobPolicy | undefined, clusterDefaults: StoredJobPolicy | undefined): StoredJobPolicy {
  const merged: StoredJobPolicy = { ...clusterDefaults, ...own };
  if (own?.env || clusterDefaults?.env) {
    const byName = new Map<string, V1EnvVar>();
    for (const entry of [...(clusterDefaults?.env ?? []), ...(own?.env ?? [])]) byName.set(entry.name, entry);
    merged.env = [...byName.values()];
  }
  if (own?.imagePullSecrets || clusterDefaults?.imagePullSecrets) {
    const names = new Set<string>();
    const union: V1LocalObjectReference[] = [];
    for (const secret of [...(clusterDefaults?.imagePullSecrets ?? []), ...(own?.imagePullSecrets ?? [])]) {
      if (secret.name && !names.has(secret.name)) {
        union.push(secret);
        names.add(secret.name);
      }
    }
    merged.imagePullSecrets = union;
  }
  return merged;
}
