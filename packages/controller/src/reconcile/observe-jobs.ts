import type { V1Job, V1Pod } from "@kubernetes/client-node";
import { annotations, labels } from "@captf/contract/api";
import { nameLabelValue } from "@captf/contract/object-names";
import { completeRunResult, parseBrokerSummary, parseRunResult, type RunResult } from "@captf/contract/run-result";
import { imageReferenceName } from "@captf/contract/oci";
import { brokerContainerName, sourceContainerName } from "../jobs/build-job.js";
import type { JobOutcome, Operation } from "./decide-operation.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import { finishedCondition, type JobConditions } from "../runtime/job-conditions.js";

/** The label the Job controller puts on a Job's Pods. */
export const jobNameLabel = "job-name";
import type { KubeApi } from "../runtime/kube-client.js";
import type { ReadCache } from "../runtime/read-cache.js";
import { passClient } from "../runtime/pass-client.js";

/**
 * What one pass knows about an object's Jobs. A finished Job not bookkept yet has its Pod read
 * (termination message, image ID); a bookkept one is described by the annotations bookkeeping
 * left on it, so settled objects cost one Job list per pass and no Pod reads.
 */

export interface ObservedJob {
  job: V1Job;
  name: string;
  op: Operation;
  attempt: number;
  /** Undefined while the Job runs. */
  outcome?: JobOutcome;
  finishedAt?: number;
  inputsHash?: string;
  bookkept: boolean;
  /** Only for a finished Job not bookkept yet. */
  result?: RunResult;
  /** The image the `source` container ran, by digest ({@link ranImageId}), only for a finished Job not bookkept yet. */
  imageId?: string;
  /** When the `source` container started (ms), only for a finished Job not bookkept yet: its queue time ends there. */
  sourceStartedAt?: number;
  /** A deadline kill (reported as its own result in metrics and conditions). */
  deadlineExceeded: boolean;
  /** An apply started to revert drift (`captf.io/drift-remediation`). */
  remediation: boolean;
  /** Its module image was not pulled within {@link imagePullDeadlineMs} (`captf.io/image-pull-failed`): a failure. */
  imagePullFailed?: boolean;
  /** The state broker's counts (its termination message), only for a finished Job not bookkept yet. */
  broker?: BrokerCounts;
}

export type BrokerCounts = NonNullable<ReturnType<typeof parseBrokerSummary>>;

/** The Job annotations that record an outcome other than succeeded/failed at bookkeeping. */
const outcomeMarks: Partial<Record<JobOutcome, string>> = {
  interrupted: annotations.interrupted,
  blocked: annotations.destructivePlanBlocked,
  "plan-changed": annotations.planChanged,
  "state-save": annotations.stateNotSaved,
};

/** A plan Job that succeeded without reporting a readable plan: nothing to show or approve, so it counts as a failure. Pure. */
export function planUnreadable(job: Pick<V1Job, "metadata">, result: RunResult | undefined): boolean {
  return job.metadata?.labels?.[labels.op] === "plan" && !result?.plan;
}

/**
 * The annotations bookkeeping writes on a finished Job: always `captf.io/bookkept`; the mark of an outcome other
 * than succeeded/failed; `captf.io/plan-unreadable` on a plan Job that succeeded without a readable plan; and
 * `captf.io/plan-hash` on a plan Job, a blocked or a plan-changed apply that reported its plan. Pure.
 */
export function bookkeepingAnnotations(outcome: JobOutcome, job?: Pick<ObservedJob, "job" | "op" | "result">): Record<string, string> {
  const mark = outcomeMarks[outcome];
  const unreadable = job?.op === "plan" && finishedCondition(job.job)?.type === "Complete" && planUnreadable(job.job, job.result);
  const planHash = job?.result?.plan?.hash;
  const showsPlan = job?.op === "plan" || outcome === "blocked" || outcome === "plan-changed";
  return {
    [annotations.bookkept]: "true",
    ...(mark ? { [mark]: "true" } : {}),
    ...(unreadable ? { [annotations.planUnreadable]: "true" } : {}),
    ...(planHash && showsPlan ? { [annotations.planHash]: planHash } : {}),
  };
}

/** The failed apply Job an apply starting now follows: the newest finished apply, when it failed (`captf.io/after-failed-apply`). Pure. */
export function failedApplyBefore(jobs: readonly Pick<ObservedJob, "name" | "op" | "outcome" | "finishedAt">[]): string | undefined {
  const newestApply = jobs
    .filter((job) => job.op === "apply" && job.outcome !== undefined)
    .sort((a, b) => b.finishedAt! - a.finishedAt!)[0];
  return newestApply?.outcome === "failed" ? newestApply.name : undefined;
}

/** The outcome of a finished Job from its condition, its runner's result and whether its Pod was removed from outside. Pure. */
export function outcomeOf(
  job: JobConditions & Pick<V1Job, "metadata">,
  result: RunResult | undefined,
  pod: Pick<V1Pod, "metadata" | "status"> | undefined,
): JobOutcome {
  const done = finishedCondition(job)!;
  if (done.type === "Complete") return planUnreadable(job, result) ? "failed" : "succeeded";
  // A deadline kill counts toward backoff even when the runner reported an interruption; so does an image
  // not pulled in time (the manager deleted that Pod itself).
  if (done.reason === "DeadlineExceeded" || job.metadata?.annotations?.[annotations.imagePullFailed] === "true") return "failed";
  const kind = result?.error?.kind;
  if (kind === "blocked" || kind === "plan-changed" || kind === "interrupted" || kind === "state-save") return kind;
  // A failed Job keeps its Pod: one deleted, evicted or disrupted from outside took the runner's result with it.
  if (
    !result &&
    (!pod || pod.metadata?.deletionTimestamp || pod.status?.conditions?.some((c) => c.type === "DisruptionTarget" && c.status === "True"))
  )
    return "interrupted";
  return "failed";
}

function bookkeptOutcome(job: V1Job): JobOutcome {
  const notes = job.metadata?.annotations ?? {};
  if (finishedCondition(job)!.type === "Complete") return notes[annotations.planUnreadable] === "true" ? "failed" : "succeeded";
  for (const [outcome, mark] of Object.entries(outcomeMarks)) if (notes[mark] === "true") return outcome as JobOutcome;
  return "failed";
}

/** How long a Job's Pod may wait on an image it cannot pull before the Job is failed. */
export const imagePullDeadlineMs = 2 * 60_000;
const pullErrors = ["ErrImagePull", "ImagePullBackOff"];

/**
 * The container whose image the Pod could not pull, once the Pod has waited on it for
 * {@link imagePullDeadlineMs} since it started (the kubelet never started a container, so the
 * Pod's start is when pulling began); else undefined. Pure.
 */
export function stalledImagePull(pod: V1Pod, now: number): { container: string; image: string; reason: string } | undefined {
  const since = Date.parse(String(pod.status?.startTime ?? pod.metadata?.creationTimestamp));
  if (!(now - since >= imagePullDeadlineMs)) return undefined;
  const statuses = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
  const stuck = statuses.find((status) => pullErrors.includes(status.state?.waiting?.reason ?? ""));
  return stuck ? { container: stuck.name, image: stuck.image, reason: stuck.state!.waiting!.reason! } : undefined;
}

/**
 * The Pod of a Job (captf's Jobs run one Pod: backoffLimit 0): from the manager's Pod cache once it
 * has seen the Job as read (the Job controller writes a finished Pod's Job after the Pod), else live.
 */
export async function jobPod(
  clients: { client: KubeApi; cache?: ReadCache | undefined },
  namespace: string,
  job: V1Job,
): Promise<V1Pod | undefined> {
  const labelSelector = `${jobNameLabel}=${job.metadata!.name!}`;
  const freshAsOf = job.metadata?.resourceVersion;
  const pods = await passClient(clients).list<V1Pod>(builtinTypes.pod, namespace, labelSelector, {
    inScope: true,
    ...(freshAsOf ? { freshAsOf } : {}),
  });
  // A Pod of an earlier Job of the same name (deleted for an image it could not pull, its Pod not collected yet) is not this one's.
  const uid = job.metadata?.uid;
  return pods.find((pod) => !uid || !pod.metadata?.ownerReferences?.some((ref) => ref.controller && ref.uid !== uid));
}

export async function observeJobs(
  clients: { client: KubeApi; cache?: ReadCache | undefined },
  namespace: string,
  owner: { kind: string; name: string; uid: string },
  now: number,
): Promise<ObservedJob[]> {
  const labelSelector = `${labels.ownerKind}=${owner.kind},${labels.ownerName}=${nameLabelValue(owner.name)}`;
  // From the Job cache: the Jobs this manager created or bookkept are expectations, read live until the cache shows them.
  const jobs = await passClient(clients).list<V1Job>(builtinTypes.job, namespace, labelSelector);
  const observed: ObservedJob[] = [];
  for (const job of jobs) {
    // Jobs of an earlier object of the same name wait for the garbage collector; they are not ours.
    if (job.metadata?.ownerReferences?.some((ref) => ref.controller && ref.uid !== owner.uid)) continue;
    const name = job.metadata!.name!;
    const notes = job.metadata?.annotations ?? {};
    const base = {
      job,
      name,
      op: job.metadata?.labels?.[labels.op] as Operation,
      attempt: Number(job.metadata?.labels?.[labels.attempt] ?? 1),
      bookkept: notes[annotations.bookkept] === "true",
      remediation: notes[annotations.driftRemediation] === "true",
      imagePullFailed: notes[annotations.imagePullFailed] === "true",
      ...(notes[annotations.inputsHash] ? { inputsHash: notes[annotations.inputsHash] } : {}),
    };
    const done = finishedCondition(job);
    if (!done) {
      observed.push({ ...base, deadlineExceeded: false });
      continue;
    }
    const finishedAt = Date.parse(String(job.status?.completionTime ?? done.lastTransitionTime ?? new Date(now).toISOString()));
    const deadlineExceeded = done.type === "Failed" && done.reason === "DeadlineExceeded";
    if (base.bookkept) {
      observed.push({ ...base, outcome: bookkeptOutcome(job), finishedAt, deadlineExceeded });
      continue;
    }
    const pod = await jobPod(clients, namespace, job);
    const status = pod?.status?.containerStatuses?.find((container) => container.name === "source");
    const reading = parseRunResult(status?.state?.terminated?.message);
    const broker = parseBrokerSummary(
      pod?.status?.initContainerStatuses?.find((container) => container.name === brokerContainerName)?.state?.terminated?.message,
    );
    // The shrunk form keeps what matters (the error's kind, the plan's hash): read as a full document.
    const result = reading.ok ? completeRunResult(reading.result) : undefined;
    observed.push({
      ...base,
      outcome: outcomeOf(job, result, pod),
      finishedAt,
      deadlineExceeded,
      ...(result ? { result } : {}),
      ...(broker ? { broker } : {}),
      ...(ranImageId(job, status?.imageID) ? { imageId: ranImageId(job, status?.imageID) } : {}),
      ...(status?.state?.terminated?.startedAt ? { sourceStartedAt: Date.parse(String(status.state.terminated.startedAt)) } : {}),
    });
  }
  return observed;
}

/**
 * What a finished Job ran, as a digest reference: the `source` container's image when the Job named a digest (an image a
 * TerraformModulePolicy verified runs by the digest cosign signed, a multi-platform image's index, where a Pod's imageID may name
 * the platform's manifest, whose digest carries no signature), else the Pod's image ID.
 */
export function ranImageId(job: V1Job, podImageId: string | undefined): string | undefined {
  const named = job.spec?.template.spec?.containers.find((container) => container.name === sourceContainerName)?.image;
  return named && /@sha256:[0-9a-f]{64}$/.test(named) ? named : podImageId || undefined;
}

/**
 * The digest reference to pin from a Pod's image ID (`repo@sha256:…`, with or without a
 * `docker-pullable://` scheme; a bare `sha256:…` is joined to the image's repository).
 * Undefined when the ID names no digest.
 */
export function pinnedImageReference(image: string, imageId: string): string | undefined {
  const id = imageId.replace(/^[a-z-]+:\/\//, "");
  const digest = /@?(sha256:[0-9a-f]{64})$/.exec(id)?.[1];
  if (!digest) return undefined;
  return `${imageReferenceName(image)}@${digest}`;
}
