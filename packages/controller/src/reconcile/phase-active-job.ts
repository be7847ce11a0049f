/**
 * The running Job, when it cannot go on by itself (its per-run Secret missing, its Pod refused by a quota, its image not pulled):
 * recovered, and the pass ends there with its status.
 */
import { annotations } from "@captf/contract/api";
import type { GeneratedRoot } from "@captf/render";
import type { CoreV1Event, V1Job } from "@kubernetes/client-node";
import { runSecretName, sourceContainerName } from "../jobs/build-job.js";
import { ignoreNotFound, isConflict, isNotFound } from "../runtime/api-errors.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import { passClient } from "../runtime/pass-client.js";
import type { InputsOutcome } from "./compute-status.js";
import { appliedImageChain, imageFallbacks } from "./decide-operation.js";
import { annotateDurableInputs, withUnpullableImage } from "./durable-inputs.js";
import { imagePullDeadlineMs, jobPod, stalledImagePull, type ObservedJob } from "./observe-jobs.js";
import { podRefusalOf, type QuotaRefusal, podRefusalMessage } from "./quota-refusal.js";
import { gateRequeueMs, lagRequeueMs } from "./requeue.js";
import { releaseLease, runLeaseName } from "./run-lease.js";
import { type Pass, type PassResult, next, type Phase } from "./types.js";
import { activeJobOf, recordWaitEvent } from "./pass-status.js";
import { createRunSecret, rootForOperation } from "./pass-writes.js";
import { waitConditionType } from "./start-operation.js";

/**
 * The running Job, when it cannot go on by itself: a pass killed between creating it and its per-run Secret
 * left it waiting for its volume (given the Secret when the inputs still render the same hash, else deleted);
 * an image it cannot pull would wait out its whole deadline (after the pull deadline it is marked and its Pod
 * deleted, so it fails and counts toward backoff). Returns how the pass ends, if it does.
 */
export async function recoverActiveJob(
  pass: Pass,
  active: ObservedJob,
  inputs: InputsOutcome<{ root: GeneratedRoot }>,
  currentHash: string | undefined,
): Promise<{ result: PassResult; jobRuns: boolean; podRefusal?: QuotaRefusal } | undefined> {
  const { deps, adapter, namespace, suffix, events, subject, durable, now } = pass;
  const { client } = deps;
  // A Job being deleted (by an image fallback, say) is left to go: a per-run Secret made for it now would outlive it under its name.
  if (active.job.metadata?.deletionTimestamp) return undefined;
  {
    const secretName = runSecretName(active.name);
    const present = (await passClient(deps).get(builtinTypes.secret, namespace, secretName, { inScope: true })) !== undefined;
    if (!present) {
      const root = rootForOperation(active.op, inputs, durable, adapter.role);
      const hashMatches = active.inputsHash === undefined || active.inputsHash === currentHash || active.op !== "apply";
      if (root && hashMatches) {
        await createRunSecret(client, namespace, active.job, root);
      } else {
        await client.delete(builtinTypes.job, namespace, active.name, { propagationPolicy: "Background" }).catch(ignoreNotFound);
        await releaseLease(deps, namespace, runLeaseName(suffix), active.name).catch(() => undefined);
        // Deleted by captf before it could start (not an interrupted apply): no Job runs now.
        void events.record(subject, "StuckJobDeleted", `deleted Job ${active.name}: its per-run Secret is missing and the inputs changed`);
        return {
          result: { action: `deleted stuck Job ${active.name}: its per-run Secret is missing and the inputs changed`, requeueAfterMs: 0 },
          jobRuns: false,
        };
      }
    }
  }

  {
    const pod = await jobPod({ client, cache: deps.cache }, namespace, active.job);
    // No Pod a while after the Job's creation: a LimitRange or a quota of the namespace may refuse it (the Job controller's
    // FailedCreate events say which). The object waits on it, naming it, while the Job controller keeps trying.
    const podRefusal = pod ? undefined : await refusedPod(pass, active.job);
    if (podRefusal)
      return {
        result: { action: `waiting: JobQuotaExceeded (the Pod of Job ${active.name})`, requeueAfterMs: gateRequeueMs },
        jobRuns: true,
        podRefusal,
      };
    const stalled = pod ? stalledImagePull(pod, now) : undefined;
    const fallback = stalled && pod ? await fallBackFromImage(pass, active, stalled) : undefined;
    if (fallback) return fallback;
    if (pod && stalled) {
      await client.patch(
        builtinTypes.job,
        namespace,
        active.name,
        { metadata: { annotations: { [annotations.imagePullFailed]: "true" } } },
        "merge",
      );
      await client.delete(builtinTypes.pod, namespace, pod.metadata!.name!).catch(ignoreNotFound);
      deps.logger?.info(
        { job: active.name, container: stalled.container, reason: stalled.reason },
        "failing a Job whose image was not pulled",
      );
      return {
        result: { action: `failing Job ${active.name}: ${imagePullMessage(stalled)}`, requeueAfterMs: lagRequeueMs },
        jobRuns: true,
      };
    }
  }

  return undefined;
}

/** How long a Job may be without a Pod before the pass reads why (the Job controller creates it within a second or two). */
export const podRefusalAfterMs = 10_000;

/** The quota or LimitRange refusal of the Job's Pod its newest FailedCreate event tells, once it has waited {@link podRefusalAfterMs}. */
async function refusedPod(pass: Pass, job: V1Job): Promise<QuotaRefusal | undefined> {
  const { deps, namespace, now } = pass;
  const uid = job.metadata?.uid;
  if (!uid || !(now - Date.parse(String(job.metadata?.creationTimestamp)) >= podRefusalAfterMs)) return undefined;
  const failures = await passClient(deps)
    .live.listByFields<CoreV1Event>(builtinTypes.coreEvent, namespace, `involvedObject.uid=${uid},reason=FailedCreate`)
    .catch((error: unknown) => {
      // Only a better message is lost: the Job still fails at its deadline.
      deps.logger?.info({ job: job.metadata?.name, err: error }, "reading the Job's FailedCreate events failed");
      return [] as CoreV1Event[];
    });
  const at = (event: CoreV1Event) => Date.parse(String(event.lastTimestamp ?? event.eventTime ?? event.metadata.creationTimestamp));
  const newest = failures.sort((a, b) => at(b) - at(a))[0];
  return newest?.message ? podRefusalOf(newest.message) : undefined;
}

/**
 * A destroy, refresh, drift or restore Job whose module image cannot be pulled (a pinned digest the registry garbage collected, say)
 * would fail on it at every retry: with another image of the applied chain left, its image is recorded unpullable on the durable
 * inputs, the Job deleted (it never started) and the operation starts again on the next image. Apply and plan run the spec's
 * image, which only the operator can fix. Returns how the pass ends when it fell back.
 */
async function fallBackFromImage(
  pass: Pass,
  active: ObservedJob,
  stalled: { container: string; image: string; reason: string },
): Promise<{ result: PassResult; jobRuns: boolean } | undefined> {
  const { deps, adapter, object, namespace, name, suffix, events, subject, durable } = pass;
  const image = active.job.spec?.template.spec?.containers.find((container) => container.name === sourceContainerName)?.image;
  if (active.op === "apply" || active.op === "plan" || stalled.container !== sourceContainerName || !durable || !image) return undefined;
  const next = imageFallbacks(appliedImageChain(durable, object.spec.source.image), image, durable.unpullableImages)[0];
  if (!next) return undefined;
  // Listed already: an earlier pass recorded it and did not get to the rest; the Job is deleted now, with no second event.
  const added = !durable.unpullableImages.includes(image);
  if (added) {
    const unpullable = withUnpullableImage(durable.unpullableImages, image);
    await annotateDurableInputs(deps.client, adapter.role, namespace, name, { [annotations.unpullableImages]: JSON.stringify(unpullable) });
    durable.unpullableImages = unpullable;
  }
  // Only this Job (its uid): the next one gets the same name, and a stale read must not delete it, its Secret or its lease. The per-run
  // Secret goes now, not when the garbage collector gets to it, so the next Job of this name gets a Secret of its own.
  const uid = active.job.metadata?.uid;
  const gone = await deps.client
    .delete(builtinTypes.job, namespace, active.name, { propagationPolicy: "Background", ...(uid ? { preconditions: { uid } } : {}) })
    .then(
      () => "deleted" as const,
      (error: unknown) => (isNotFound(error) ? ("already" as const) : isConflict(error) ? ("replaced" as const) : Promise.reject(error)),
    );
  if (gone === "deleted") await deps.client.delete(builtinTypes.secret, namespace, runSecretName(active.name)).catch(ignoreNotFound);
  if (gone !== "replaced") await releaseLease(deps, namespace, runLeaseName(suffix), active.name).catch(() => undefined);
  if (added)
    void events.record(
      subject,
      "ImagePullFallback",
      `could not pull ${image} (${stalled.reason}): deleted ${active.op} Job ${active.name}; retrying ${active.op} with ${next}`,
    );
  return {
    result: { action: `deleted Job ${active.name}: ${image} was not pulled; ${active.op} runs ${next} next`, requeueAfterMs: 0 },
    jobRuns: false,
  };
}

/** Why a Job's image was not pulled, for the pass's action and log. */
function imagePullMessage(stalled: { container: string; image: string; reason: string }): string {
  return (
    `the image ${stalled.image} of container ${stalled.container} was not pulled within ${imagePullDeadlineMs / 60_000} ` +
    `minutes (${stalled.reason})`
  );
}

export const reconcileActiveJob: Phase = async (pass) => {
  const { facts, outcome } = pass;
  const active = facts.active;
  const stuck = active && (await recoverActiveJob(pass, active, facts.inputs, facts.currentHash));
  if (!active || !stuck) return next;
  if (stuck.jobRuns) outcome.active = activeJobOf(active);
  if (stuck.podRefusal) {
    const message = podRefusalMessage(stuck.podRefusal, active.name);
    outcome.wait = { type: waitConditionType(active.op), value: { status: "Unknown", reason: "JobQuotaExceeded", message } };
    recordWaitEvent(pass, outcome.wait);
  }
  return { kind: "end", result: stuck.result };
};
