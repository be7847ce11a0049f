/**
 * What a finished Job adds to the metrics beyond its count and duration: the error it failed with, and
 * its retry number. Pure; bookkeeping (workspace-phases.ts) records them once per Job.
 */
import type { JobErrorKind, JobStep } from "../metrics/captf-metrics.js";
import { consecutiveFailures } from "./decide-operation.js";
import type { ObservedJob } from "./observe-jobs.js";

const jobSteps: readonly string[] = [
  "init",
  "force-unlock",
  "validate",
  "plan",
  "show-json",
  "apply",
  "apply-refresh-only",
  "destroy",
  "state-push",
  "state-list",
  "prepare",
];

/** A metric label for a runner step name: the steps it knows, `other` for any it does not. */
export function stepLabel(step: string): JobStep {
  return (jobSteps.includes(step) ? step : "other") as JobStep;
}

/** The error kind and failed step of a Job that did not succeed; undefined for a success. Pure. */
export function jobError(
  job: Pick<ObservedJob, "outcome" | "deadlineExceeded" | "result">,
): { errorKind: JobErrorKind; step: JobStep | "none" } | undefined {
  if (job.outcome === undefined || job.outcome === "succeeded") return undefined;
  if (job.deadlineExceeded) return { errorKind: "deadline", step: "none" };
  const error = job.result?.error;
  if (error) return { errorKind: error.kind, step: error.step ? stepLabel(error.step) : "none" };
  // No result: stopped from outside, or failed without the runner reporting (an image never pulled, a plan without a readable plan).
  return { errorKind: job.outcome === "interrupted" ? "interrupted" : "unknown", step: "none" };
}

/** The retry number of a finished Job: failures of its operation since the last success before it, plus one. Pure. */
export function retryNumber(
  job: Pick<ObservedJob, "op" | "finishedAt">,
  jobs: readonly Pick<ObservedJob, "op" | "outcome" | "finishedAt">[],
): number {
  const before = jobs.filter((other) => other.op === job.op && other.outcome !== undefined && other.finishedAt! < job.finishedAt!);
  return (
    consecutiveFailures(
      before.map((other) => ({ op: other.op, outcome: other.outcome!, finishedAt: other.finishedAt! })),
      job.op,
    ).count + 1
  );
}
