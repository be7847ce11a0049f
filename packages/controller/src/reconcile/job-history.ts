import { jobPolicyDefaults } from "../api/defaults.js";
import type { StoredJobPolicy } from "../jobs/merge-job-policy.js";
import type { Operation } from "./decide-operation.js";

/** A finished, bookkept Job as history pruning sees it. */
export interface HistoryJob {
  name: string;
  op: Operation;
  succeeded: boolean;
  finishedAt: number;
}

export interface HistoryLimits {
  successfulJobsHistoryLimit: number;
  failedJobsHistoryLimit: number;
}

/**
 * The history limits of an effective Job policy (a machine's or pool's already merged over its cluster's `spec.defaults.jobs`):
 * pruning and retry backoff both read them. Pure.
 */
export function historyLimits(policy: StoredJobPolicy): HistoryLimits {
  return {
    successfulJobsHistoryLimit: policy.successfulJobsHistoryLimit ?? jobPolicyDefaults.successfulJobsHistoryLimit,
    failedJobsHistoryLimit: policy.failedJobsHistoryLimit ?? jobPolicyDefaults.failedJobsHistoryLimit,
  };
}

/**
 * The finished Jobs to delete, per operation, oldest first beyond the history limits. The newest
 * success of each operation is always kept, and so is the newest failure while no later success
 * exists, because retry backoff counts it. Running Jobs never reach this function. Pure.
 */
export function jobsToPrune(jobs: readonly HistoryJob[], limits: HistoryLimits): string[] {
  const prune: string[] = [];
  const ops = new Set(jobs.map((job) => job.op));
  for (const op of ops) {
    const newestFirst = jobs.filter((job) => job.op === op).sort((a, b) => b.finishedAt - a.finishedAt);
    const newestSuccess = newestFirst.find((job) => job.succeeded);
    const newestFailure = newestFirst.find((job) => !job.succeeded);
    const keepFailure =
      newestFailure && (!newestSuccess || newestFailure.finishedAt > newestSuccess.finishedAt) ? newestFailure : undefined;
    let successes = 0;
    let failures = 0;
    for (const job of newestFirst) {
      if (job === newestSuccess || job === keepFailure) {
        if (job.succeeded) successes++;
        else failures++;
        continue;
      }
      const within = job.succeeded ? ++successes <= limits.successfulJobsHistoryLimit : ++failures <= limits.failedJobsHistoryLimit;
      if (!within) prune.push(job.name);
    }
  }
  return prune.reverse();
}
