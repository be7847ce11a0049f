import type { Operation } from "./decide-operation.js";

/**
 * Job slots: `--max-active-jobs` caps the manager's running Jobs, a TerraformCluster's
 * `spec.maxActiveJobs` (else `--cluster-max-active-jobs`) those of one cluster. Background
 * operations (drift, refresh) start only below 80% of a limit, so they never crowd out an apply
 * or a destroy. Counts come from the Job cache: soft limits. Pure.
 */

export interface JobSlotUsage {
  /** Running captf Jobs of the manager. */
  total: number;
  /** Running captf Jobs of the object's cluster. */
  cluster: number;
}

export interface JobSlotLimits {
  /** 0: no limit. */
  manager: number;
  /** 0: no limit. */
  cluster: number;
}

const backgroundShare = 0.8;

function full(used: number, limit: number, background: boolean): boolean {
  if (limit <= 0) return false;
  return background ? used >= Math.floor(limit * backgroundShare) : used >= limit;
}

/** Why no slot is free for `op`, or undefined when one is. */
export function jobSlotWait(op: Operation, usage: JobSlotUsage, limits: JobSlotLimits): string | undefined {
  const background = op === "drift" || op === "refresh";
  const share = background ? " (drift and refresh use at most 80% of it)" : "";
  if (full(usage.total, limits.manager, background)) return `${usage.total} Jobs run for this manager; --max-active-jobs is ${limits.manager}${share}`;
  if (full(usage.cluster, limits.cluster, background)) return `${usage.cluster} Jobs run for this cluster; its limit is ${limits.cluster}${share}`;
  return undefined;
}
