// What a batch/v1 Job's conditions say: read by the pass, the watches, the run leases and the Job metrics alike.

/** The fields of a Job that say whether it finished. */
export interface JobConditions {
  status?: { conditions?: { type?: string; status?: string; reason?: string; lastTransitionTime?: Date | string }[] };
}

/** The Job's Complete or Failed condition once it finished, else undefined (it runs). */
export function finishedCondition<J extends JobConditions>(job: J) {
  return job.status?.conditions?.find((c) => (c.type === "Complete" || c.type === "Failed") && c.status === "True");
}
