// The Jobs phase: the object's Jobs observed; those finished since the last pass bookkept (marked only after the status patch).
import type { JsonValue } from "@captf/contract";
import { annotations, groupVersion } from "@captf/contract/api";
import { exportsHash, stateSecretName } from "@captf/render";
import { runSecretName } from "../jobs/build-job.js";
import type { JobResult, MetricKind } from "../metrics/captf-metrics.js";
import { ignoreNotFound } from "../runtime/api-errors.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import { passClient } from "../runtime/pass-client.js";
import { finishedCondition } from "../runtime/job-conditions.js";
import { adoptState, type StateOwner } from "../state/state-ownership.js";
import { guardedApprovalHash, stateNotSavedMessage, vanishedApplyMessage } from "./compute-status.js";
import {
  annotateDurableInputs,
  appliedClusterOutputsKey,
  exportsRecordFits,
  type DurableInputs,
  appliedExportsHash,
} from "./durable-inputs.js";
import { exportsRecordOf, type ExportsRecord } from "./held-exports.js";
import { jobError, retryNumber, stepLabel } from "./job-metrics.js";
import { imagePullDeadlineMs, pinnedImageReference, type ObservedJob, observeJobs } from "./observe-jobs.js";
import { clusterLeaseName, releaseLease, runLeaseName } from "./run-lease.js";
import { type Pass, next, type Phase } from "./types.js";
import { patchObject } from "./pass-writes.js";

function metricResult(job: ObservedJob): JobResult {
  if (job.deadlineExceeded) return "deadline";
  if (job.outcome === "state-save") return "failed";
  return job.outcome === "plan-changed" ? "plan_changed" : (job.outcome as JobResult);
}

/** A succeeded apply: the interruption it finished, its state adopted, the applied mark, the digest of the image it pulled pinned. */
async function bookkeepSucceededApply(pass: Pass, job: ObservedJob): Promise<void> {
  const { object, events, subject, durable } = pass;
  const notes = pass.durableNotes.annotations;
  // The change an interrupted apply may have left half-done is now applied in full.
  if (job.job.metadata?.annotations?.[annotations.afterInterruptedApply]) notes[annotations.interruptedApply] = null;
  // A successful apply adopts the state: its chunks owned by the object, its inputs hash on the base Secret.
  if (job.inputsHash) await adoptStateOf(pass, job);
  notes[annotations.applied] = "true";
  // The image it ran was pulled: the images its checks and destroy skipped may be tried again.
  if (durable?.unpullableImages.length) notes[annotations.unpullableImages] = null;
  const imageReference = durable?.image ?? object.spec.source.image;
  const pinnedDigest = job.imageId ? pinnedImageReference(imageReference, job.imageId) : undefined;
  if (pinnedDigest && pinnedDigest !== durable?.imageDigest) {
    notes[annotations.imageDigest] = pinnedDigest;
    void events.record(subject, "DigestPinned", `pinned ${imageReference} to ${pinnedDigest} after Job ${job.name} succeeded`);
  }
}

/** A succeeded restore: the restored state adopted (or its inputs hash dropped), the request annotation removed, its lineage anew. */
async function restoreSucceeded(pass: Pass, job: ObservedJob, serial: number): Promise<void> {
  const { deps, object, namespace, suffix, events, subject, durable } = pass;
  // The restored state is adopted with the inputs hash its backup recorded (none: an apply is due).
  const hash = job.inputsHash && job.inputsHash !== "h2:none" ? job.inputsHash : null;
  if (hash) await adoptStateOf(pass, job);
  else {
    const dropHash = { metadata: { annotations: { [annotations.inputsHash]: null } } };
    await deps.client.patch(builtinTypes.secret, namespace, stateSecretName(suffix), dropHash, "merge").catch(ignoreNotFound);
  }
  await patchObject(pass, { metadata: { annotations: { [annotations.restoreState]: null } } });
  // The user chose this backup: its lineage is recorded anew on the next read.
  if (durable?.stateLineage) {
    pass.durableNotes.annotations[annotations.stateLineage] = null;
    delete durable.stateLineage;
  }
  delete object.metadata.annotations?.[annotations.restoreState];
  void events.record(subject, "StateRestored", `state restored from backup serial ${serial} by Job ${job.name}`);
}

/** A finished restore: on the status, then what its success or failure leaves. */
async function bookkeepRestore(pass: Pass, job: ObservedJob): Promise<void> {
  const { deps, adapter, events, subject, scope } = pass;
  const serial = Number(job.job.metadata?.annotations?.[annotations.restoreSerial]);
  if (Number.isSafeInteger(serial)) scope.fields.lastRestoredSerial = serial;
  scope.restores.push({
    job: job.name,
    serial,
    succeeded: job.outcome === "succeeded",
    ...(job.result?.error?.summary ? { summary: job.result.error.summary } : {}),
  });
  if (job.outcome === "succeeded") await restoreSucceeded(pass, job, serial);
  else void events.record(subject, "StateRestoreFailed", `Job ${job.name} could not restore backup serial ${serial}`);
  deps.metrics?.stateRestores.inc({ kind: adapter.kind, result: job.outcome === "succeeded" ? "succeeded" : "failed" });
}

/** What a finished Job held goes: its per-run Secret, the run lease and (a cluster's) the cluster lease. */
async function releaseJob(pass: Pass, job: ObservedJob): Promise<void> {
  const { deps, adapter, namespace, suffix, clusterName } = pass;
  await deps.client.delete(builtinTypes.secret, namespace, runSecretName(job.name)).catch(ignoreNotFound);
  await releaseLease(deps, namespace, runLeaseName(suffix), job.name).catch((error) =>
    deps.logger?.warn({ error: (error as Error).message }, "could not release the run lease"),
  );
  if (adapter.role === "cluster" && clusterName) {
    await releaseLease(deps, namespace, clusterLeaseName(namespace, clusterName), job.name).catch((error) =>
      deps.logger?.warn({ error: (error as Error).message }, "could not release the cluster lease"),
    );
  }
}

/** The event of a finished Job: succeeded, or how it ended and why. */
function recordJobEvent(pass: Pass, job: ObservedJob): void {
  const { events, subject } = pass;
  const unreadablePlan = job.op === "plan" && job.outcome === "failed" && finishedCondition(job.job)?.type === "Complete";
  const summary = job.imagePullFailed
    ? `: an image was not pulled within ${imagePullDeadlineMs / 60_000} minutes`
    : unreadablePlan
      ? ": it succeeded without a readable plan"
      : job.result?.error?.summary
        ? `: ${job.result.error.summary}`
        : "";
  if (job.outcome === "succeeded") void events.record(subject, "JobSucceeded", `Job ${job.name} (${job.op}) succeeded`);
  else if (job.deadlineExceeded)
    void events.record(subject, "JobDeadlineExceeded", `Job ${job.name} (${job.op}) reached its deadline and was stopped`);
  else if (job.outcome === "interrupted")
    void events.record(subject, "JobInterrupted", `Job ${job.name} (${job.op}) was stopped from outside${summary}`);
  else if (job.outcome === "blocked")
    void events.record(subject, "DestructivePlanBlocked", `Job ${job.name} stopped before destroying or replacing resources${summary}`);
  else if (job.outcome === "state-save") void events.record(subject, "StateNotSaved", stateNotSavedMessage(job.name, job.op));
  else void events.record(subject, "JobFailed", `Job ${job.name} (${job.op}) failed${summary}`);
}

/** A finished Job's metrics: its result and duration, its failure, its broker's refusals, its steps, its queue time, its success. */
function recordJobMetrics(pass: Pass, job: ObservedJob, jobs: readonly ObservedJob[]): void {
  const { deps, adapter, namespace, name } = pass;
  const kind = adapter.kind as MetricKind;
  const started = job.job.status?.startTime;
  deps.metrics?.jobFinished({
    kind,
    op: job.op,
    result: metricResult(job),
    ...(started ? { durationSeconds: Math.max(0, (job.finishedAt! - Date.parse(String(started))) / 1000) } : {}),
    attempt: retryNumber(job, jobs),
  });
  const failure = jobError(job);
  if (failure) deps.metrics?.jobFailed(kind, job.op, failure.errorKind, failure.step);
  if (job.broker?.refused) {
    deps.metrics?.brokerRefused(kind, job.broker.refusedByTarget);
    deps.logger?.warn(
      { job: job.name, refused: job.broker.refused, refusedByTarget: job.broker.refusedByTarget },
      "the Job's state broker refused requests of module code",
    );
  }
  for (const step of job.result?.steps ?? [])
    deps.metrics?.jobStepDuration.observe({ kind, op: job.op, step: stepLabel(step.name) }, step.seconds);
  const created = job.job.metadata?.creationTimestamp;
  if (job.sourceStartedAt !== undefined && created)
    deps.metrics?.jobQueue.observe({ kind, op: job.op }, Math.max(0, (job.sourceStartedAt - Date.parse(String(created))) / 1000));
  if (job.outcome === "succeeded") deps.metrics?.lastSuccess(kind, namespace, name, job.op, job.finishedAt!);
}

/** What the Jobs run: the image as the spec gave it for the last apply, its pinned digest, the runtime's own version (newest result). */
function recordSource(pass: Pass, toMark: readonly ObservedJob[]): void {
  const { object, durable, scope } = pass;
  const ran = toMark.filter((job) => job.result).sort((a, b) => b.finishedAt! - a.finishedAt!)[0]?.result;
  const source = {
    ...(durable?.imageDigest ? { imageDigest: durable.imageDigest.slice(durable.imageDigest.indexOf("@") + 1) } : {}),
    ...(ran ? { image: durable?.image ?? object.spec.source.image } : {}),
    ...(ran?.runtime.version ? { runtimeVersion: ran.runtime.version.slice(0, 64) } : {}),
  };
  if (Object.keys(source).length > 0) scope.fields.source = source;
}

/**
 * Bookkeeping of the Jobs that finished since the last pass: state adopted, digest pinned, leases released, events; returns them (marked
 * after the status patch).
 */
export async function bookkeepFinishedJobs(pass: Pass, jobs: readonly ObservedJob[]): Promise<ObservedJob[]> {
  const { adapter, durable } = pass;
  const toMark = jobs.filter((job) => job.outcome !== undefined && !job.bookkept);
  const { annotations: durableNotes, data: durableData } = pass.durableNotes;
  for (const job of toMark) {
    if (job.op === "apply" && adapter.role === "machinepool" && durable)
      recordPoolExports(exportsRecordOfJob(job, durable), job, durable, durableNotes, durableData);
    if (job.op === "apply" && job.outcome === "succeeded") await bookkeepSucceededApply(pass, job);
    if (job.op === "restore") await bookkeepRestore(pass, job);
    await releaseJob(pass, job);
    recordJobEvent(pass, job);
    recordJobMetrics(pass, job, jobs);
  }
  // Written with the state phase's notes (writeDurableNotes), before the status: the Jobs are marked bookkept only after it.
  if (durable && durableNotes[annotations.imageDigest]) durable.imageDigest = durableNotes[annotations.imageDigest]!;
  if (durable && durableNotes[annotations.interruptedApply] === null) delete durable.interruptedApply;
  recordSource(pass, toMark);
  return toMark;
}

/** What a finished pool apply leaves on record about its cluster's exports. */
function exportsRecordOfJob(job: ObservedJob, durable: DurableInputs): ExportsRecord {
  const notes = job.job.metadata?.annotations ?? {};
  const approvalHash = notes[annotations.approvalHash] ?? guardedApprovalHash(job.job);
  return exportsRecordOf(
    {
      name: job.name,
      outcome: job.outcome!,
      ...(notes[annotations.clusterOutputsHash] ? { exportsHash: notes[annotations.clusterOutputsHash] } : {}),
      ...(approvalHash ? { approvalHash } : {}),
      held: notes[annotations.heldClusterOutputs] === "true",
      imagePullFailed: Boolean(job.imagePullFailed),
      ...(job.result ? { result: job.result } : {}),
    },
    appliedExportsHash(durable),
  );
}

/**
 * Writes a pool's exports record into the durable inputs patch, and into the pass's copy: the applied exports
 * (their hash, and their value when the durable inputs still hold what this apply rendered and it fits), a held
 * change, or a change that may be partly applied.
 */
function recordPoolExports(
  record: ExportsRecord,
  job: ObservedJob,
  durable: DurableInputs,
  notes: Record<string, string | null>,
  data: Record<string, string | null>,
): void {
  if (!record) return;
  if (record.kind === "applied") {
    notes[annotations.appliedClusterOutputsHash] = record.exportsHash;
    notes[annotations.pendingClusterOutputs] = null;
    notes[annotations.partialClusterOutputs] = null;
    const rendered = durable.inputsHash === job.inputsHash ? durable.variables.captf_cluster_outputs : undefined;
    const value = rendered === undefined ? undefined : JSON.stringify(rendered);
    const recorded =
      value !== undefined && exportsHash(rendered as JsonValue) === record.exportsHash && exportsRecordFits(durable.root, value);
    data[appliedClusterOutputsKey] = recorded ? value : null;
    durable.appliedClusterOutputsHash = record.exportsHash;
    if (recorded) durable.appliedClusterOutputs = rendered as JsonValue;
    else delete durable.appliedClusterOutputs;
    delete durable.pendingClusterOutputs;
    delete durable.partialClusterOutputs;
  } else if (record.kind === "pending") {
    notes[annotations.pendingClusterOutputs] = JSON.stringify(record.pending);
    durable.pendingClusterOutputs = record.pending;
  } else {
    notes[annotations.partialClusterOutputs] = JSON.stringify(record.partial);
    durable.partialClusterOutputs = record.partial;
  }
}

/** The object as its state Secrets' owner. */
export function stateOwner(pass: Pass): StateOwner {
  return { apiVersion: groupVersion, kind: pass.adapter.kind, name: pass.name, uid: pass.object.metadata.uid };
}

/** Adopts the state a succeeded apply or restore left (its hash differs from the base Secret's): event `StateAdopted` once per adoption. */
async function adoptStateOf(pass: Pass, job: ObservedJob): Promise<void> {
  const { deps, namespace, suffix, events, subject } = pass;
  if (await adoptState(deps.client, namespace, suffix, stateOwner(pass), job.inputsHash!)) {
    void events.record(
      subject,
      "StateAdopted",
      `Job ${job.name} (${job.op}) succeeded: its state Secrets are owned by this ${pass.adapter.kind} and hold inputs hash ` +
        `${job.inputsHash}`,
    );
  }
}

/**
 * A cluster or pool apply Job deleted while it ran may have applied part of its change: recorded on the durable inputs (so it survives this
 * pass), and the current inputs are applied again without backoff.
 */
export async function noticeVanishedApply(pass: Pass, jobs: readonly ObservedJob[]): Promise<void> {
  const { deps, adapter, object, namespace, name, suffix, clusterName, events, subject, durable, scope } = pass;
  const { client } = deps;
  const recordedJob = object.status?.activeJob;
  if (
    adapter.role !== "machine" &&
    recordedJob?.operation === "apply" &&
    recordedJob.name &&
    !jobs.some((job) => job.name === recordedJob.name) &&
    durable
  ) {
    const vanished = recordedJob.name;
    // Live: a Job missing from the cache may be lag, and this writes the interruption down.
    const gone = (await passClient(deps).live.get(builtinTypes.job, namespace, vanished)) === undefined;
    if (gone && durable.interruptedApply !== vanished) {
      // A pool's lost Job that rendered a change of the exports may have applied part of it (the durable inputs are its).
      const rendered =
        adapter.role === "machinepool" ? exportsHash(durable.variables.captf_cluster_outputs as JsonValue | undefined) : undefined;
      const partial =
        rendered !== undefined && rendered !== appliedExportsHash(durable) ? { exportsHash: rendered, job: vanished } : undefined;
      await annotateDurableInputs(client, adapter.role, namespace, name, {
        [annotations.interruptedApply]: vanished,
        ...(partial ? { [annotations.partialClusterOutputs]: JSON.stringify(partial) } : {}),
      });
      durable.interruptedApply = vanished;
      if (partial) durable.partialClusterOutputs = partial;
      await releaseLease(deps, namespace, runLeaseName(suffix), vanished).catch(() => undefined);
      if (adapter.role === "cluster" && clusterName)
        await releaseLease(deps, namespace, clusterLeaseName(namespace, clusterName), vanished).catch(() => undefined);
      scope.vanishedApply = vanished;
      void events.record(subject, "JobInterrupted", vanishedApplyMessage(vanished));
    }
  }
}

export const reconcileJobs: Phase = async (pass) => {
  const { adapter, object, namespace, name, now, facts } = pass;
  facts.jobs = await observeJobs(pass.reads, namespace, { kind: adapter.kind, name, uid: object.metadata.uid }, now);
  facts.toMark = await bookkeepFinishedJobs(pass, facts.jobs);
  await noticeVanishedApply(pass, facts.jobs);
  return next;
};
