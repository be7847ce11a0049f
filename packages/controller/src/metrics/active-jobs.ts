import { labels } from "@captf/contract/api";
import { finishedCondition, type JobConditions } from "../runtime/job-conditions.js";
import { metricKinds, metricOps, type MetricKind, type MetricOp } from "./captf-metrics.js";

/** The fields of a Job `captf_jobs_active` reads. */
export interface JobLike extends JobConditions {
  metadata?: { labels?: Record<string, string> };
}

/** Running captf Jobs by kind and operation, from the manager's Job cache. Pure. */
export function activeJobCounts(jobs: Iterable<JobLike>): { kind: MetricKind; op: MetricOp; count: number }[] {
  const counts = new Map<string, number>();
  for (const job of jobs) {
    const kind = job.metadata?.labels?.[labels.ownerKind];
    const op = job.metadata?.labels?.[labels.op];
    if (!kind || !(metricKinds as readonly string[]).includes(kind) || !op || !(metricOps as readonly string[]).includes(op)) continue;
    if (finishedCondition(job)) continue;
    counts.set(`${kind}/${op}`, (counts.get(`${kind}/${op}`) ?? 0) + 1);
  }
  return [...counts].map(([key, count]) => {
    const [kind, op] = key.split("/") as [MetricKind, MetricOp];
    return { kind, op, count };
  });
}

/** A captf Job that has not finished: it holds a Job slot. Pure. */
export function runningCaptfJob(job: JobLike): boolean {
  return Boolean(job.metadata?.labels?.[labels.ownerKind]) && finishedCondition(job) === undefined;
}
