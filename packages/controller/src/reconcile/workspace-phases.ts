import type { CoreV1Event, V1Job } from "@kubernetes/client-node";
import type { DecodedOutputs, HealthState, JsonValue, OutputsDecoding, Role } from "@captf/contract";
import { annotations, groupVersion, labels } from "@captf/contract/api";
import { exportsHash, renderBackendRoot, stateSecretName, type GeneratedRoot } from "@captf/render";
import type { PlanPreview } from "../api/workspace.js";
import { poolMembershipConverged } from "../kinds/map-outputs.js";
import { appliedImageChain, decideOperation, imageFallbacks, type Decision } from "./decide-operation.js";
import { historyLimits } from "./job-history.js";
import type { StoredJobPolicy } from "../jobs/merge-job-policy.js";
import { defaultDriftIntervalSeconds, driftDetectedCondition, effectiveDriftPolicy } from "./drift-policy.js";
import { observedPlan } from "./plan-approval.js";
import type { DeletionPolicy } from "./retained-state.js";
import { workspaceResourceType } from "../api/resource-types.js";
import type { TerraformClusterObject } from "./pass-reads.js";
import { runSecretName, sourceContainerName } from "../jobs/build-job.js";
import type { JobResult, MetricKind } from "../metrics/captf-metrics.js";
import { ignoreNotFound, isConflict, isNotFound } from "../runtime/api-errors.js";
import { newestResourceVersion } from "../runtime/read-cache.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import type { KubeApi } from "../runtime/kube-client.js";
import { observeState } from "../state/read-state.js";
import { readStateEncryption, withStateEncryption } from "./encrypted-state.js";
import {
  backupPlacement,
  backupSecretName,
  backupSets,
  backupsToPrune,
  listBackupSecrets,
  stateDigest,
  takeStateBackup,
  type BackupSet,
} from "../state/state-backups.js";
import type { StateReading } from "../state/decode-state.js";
import { observeStateLock, stateLockedMessage, type StateLockFinding } from "../state/state-lock.js";
import { newStateReadError } from "../state/state-read-errors.js";
import { adoptState, repairStateOwnership, type StateOwner } from "../state/state-ownership.js";
import { driftFinding, guardedApprovalHash, stateNotSavedMessage, vanishedApplyMessage, type InputsOutcome } from "./compute-status.js";
import { previousReason } from "../conditions/conditions.js";
import type { Operation } from "./decide-operation.js";
import {
  annotateDurableInputs,
  appliedClusterOutputsKey,
  exportsRecordFits,
  withUnpullableImage,
  type DurableInputs,
} from "./durable-inputs.js";
import { exportsRecordOf, type ExportsRecord } from "./held-exports.js";
import { jobError, retryNumber, stepLabel } from "./job-metrics.js";
import { imagePullDeadlineMs, jobPod, pinnedImageReference, stalledImagePull, type ObservedJob } from "./observe-jobs.js";
import { finishedCondition } from "../runtime/job-conditions.js";
import { clusterLeaseName, releaseLease, runLeaseName } from "./run-lease.js";
import { podRefusalOf, type QuotaRefusal } from "./quota-refusal.js";
import type { DriftFacts, Pass, PassResult } from "./types.js";
import { gateRequeueMs, lagRequeueMs } from "./requeue.js";

/**
 * The phases of a reconcile pass (Cluster API's `_phases.go`): each takes the pass, does the reads and
 * the bookkeeping writes of one concern, and leaves its facts on `pass.scope` for the decision and the
 * status; what the decision also needs it returns. They run in the order `reconcileWorkspace` calls them.
 */

export type { DriftFacts, Pass } from "./types.js";
export { gateRequeueMs, lagRequeueMs, longRequeueMs } from "./requeue.js";

/** Sends what the phases recorded on the durable inputs, as one patch (none when they recorded nothing). */
export async function writeDurableNotes(pass: Pass): Promise<void> {
  const { deps, adapter, namespace, name, durable, durableNotes } = pass;
  if (!durable || Object.keys(durableNotes.annotations).length === 0) return;
  const data = Object.keys(durableNotes.data).length > 0 ? durableNotes.data : undefined;
  await annotateDurableInputs(deps.client, adapter.role, namespace, name, durableNotes.annotations, data);
  pass.durableNotes = { annotations: {}, data: {} };
}

const defaultMembershipRefreshSeconds = 60;
const defaultStateBackups = 5;

/** A merge patch of the object itself (its annotations). */
export function patchObject(pass: Pass, body: unknown): Promise<unknown> {
  const { deps, adapter, namespace, name } = pass;
  return deps.client.patch(workspaceResourceType(adapter), namespace, name, body, "merge");
}

function metricResult(job: ObservedJob): JobResult {
  if (job.deadlineExceeded) return "deadline";
  if (job.outcome === "state-save") return "failed";
  return job.outcome === "plan-changed" ? "plan_changed" : (job.outcome as JobResult);
}

/**
 * Bookkeeping of the Jobs that finished since the last pass: state adopted, digest pinned, leases released, events; returns them (marked
 * after the status patch).
 */
export async function bookkeepFinishedJobs(pass: Pass, jobs: readonly ObservedJob[]): Promise<ObservedJob[]> {
  const { deps, adapter, object, namespace, name, suffix, clusterName, events, subject, durable, scope } = pass;
  const { client } = deps;
  const toMark = jobs.filter((job) => job.outcome !== undefined && !job.bookkept);
  const { annotations: durableNotes, data: durableData } = pass.durableNotes;
  const metricKindOfJob = adapter.kind as MetricKind;
  for (const job of toMark) {
    if (job.op === "apply" && adapter.role === "machinepool" && durable)
      recordPoolExports(exportsRecordOfJob(job, durable), job, durable, durableNotes, durableData);
    if (job.op === "apply" && job.outcome === "succeeded") {
      // The change an interrupted apply may have left half-done is now applied in full.
      if (job.job.metadata?.annotations?.[annotations.afterInterruptedApply]) durableNotes[annotations.interruptedApply] = null;
      // A successful apply adopts the state: its chunks owned by the object, its inputs hash on the base Secret.
      if (job.inputsHash) await adoptStateOf(pass, job);
      durableNotes[annotations.applied] = "true";
      // The image it ran was pulled: the images its checks and destroy skipped may be tried again.
      if (durable?.unpullableImages.length) durableNotes[annotations.unpullableImages] = null;
      const imageReference = durable?.image ?? object.spec.source.image;
      const pinnedDigest = job.imageId ? pinnedImageReference(imageReference, job.imageId) : undefined;
      if (pinnedDigest && pinnedDigest !== durable?.imageDigest) {
        durableNotes[annotations.imageDigest] = pinnedDigest;
        void events.record(subject, "DigestPinned", `pinned ${imageReference} to ${pinnedDigest} after Job ${job.name} succeeded`);
      }
    }
    if (job.op === "restore") {
      const serial = Number(job.job.metadata?.annotations?.[annotations.restoreSerial]);
      if (Number.isSafeInteger(serial)) scope.fields.lastRestoredSerial = serial;
      scope.restores.push({
        job: job.name,
        serial,
        succeeded: job.outcome === "succeeded",
        ...(job.result?.error?.summary ? { summary: job.result.error.summary } : {}),
      });
      if (job.outcome === "succeeded") {
        // The restored state is adopted with the inputs hash its backup recorded (none: an apply is due).
        const hash = job.inputsHash && job.inputsHash !== "h2:none" ? job.inputsHash : null;
        if (hash) await adoptStateOf(pass, job);
        else
          await client
            .patch(
              builtinTypes.secret,
              namespace,
              stateSecretName(suffix),
              { metadata: { annotations: { [annotations.inputsHash]: null } } },
              "merge",
            )
            .catch(ignoreNotFound);
        await patchObject(pass, { metadata: { annotations: { [annotations.restoreState]: null } } });
        // The user chose this backup: its lineage is recorded anew on the next read.
        if (durable?.stateLineage) {
          durableNotes[annotations.stateLineage] = null;
          delete durable.stateLineage;
        }
        delete object.metadata.annotations?.[annotations.restoreState];
        void events.record(subject, "StateRestored", `state restored from backup serial ${serial} by Job ${job.name}`);
      } else {
        void events.record(subject, "StateRestoreFailed", `Job ${job.name} could not restore backup serial ${serial}`);
      }
      deps.metrics?.stateRestores.inc({ kind: adapter.kind, result: job.outcome === "succeeded" ? "succeeded" : "failed" });
    }
    await client.delete(builtinTypes.secret, namespace, runSecretName(job.name)).catch(ignoreNotFound);
    await releaseLease(deps, namespace, runLeaseName(suffix), job.name).catch((error) =>
      deps.logger?.warn({ error: (error as Error).message }, "could not release the run lease"),
    );
    if (adapter.role === "cluster" && clusterName) {
      await releaseLease(deps, namespace, clusterLeaseName(namespace, clusterName), job.name).catch((error) =>
        deps.logger?.warn({ error: (error as Error).message }, "could not release the cluster lease"),
      );
    }
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
    deps.metrics?.jobFinished({
      kind: metricKindOfJob,
      op: job.op,
      result: metricResult(job),
      ...(job.job.status?.startTime
        ? { durationSeconds: Math.max(0, (job.finishedAt! - Date.parse(String(job.job.status.startTime))) / 1000) }
        : {}),
      attempt: retryNumber(job, jobs),
    });
    const failure = jobError(job);
    if (failure) deps.metrics?.jobFailed(metricKindOfJob, job.op, failure.errorKind, failure.step);
    if (job.broker?.refused) {
      deps.metrics?.brokerRefused(metricKindOfJob, job.broker.refusedByTarget);
      deps.logger?.warn(
        { job: job.name, refused: job.broker.refused, refusedByTarget: job.broker.refusedByTarget },
        "the Job's state broker refused requests of module code",
      );
    }
    for (const step of job.result?.steps ?? [])
      deps.metrics?.jobStepDuration.observe({ kind: metricKindOfJob, op: job.op, step: stepLabel(step.name) }, step.seconds);
    const created = job.job.metadata?.creationTimestamp;
    if (job.sourceStartedAt !== undefined && created)
      deps.metrics?.jobQueue.observe(
        { kind: metricKindOfJob, op: job.op },
        Math.max(0, (job.sourceStartedAt - Date.parse(String(created))) / 1000),
      );
    if (job.outcome === "succeeded") deps.metrics?.lastSuccess(metricKindOfJob, namespace, name, job.op, job.finishedAt!);
  }
  // Written with the state phase's notes (writeDurableNotes), before the status: the Jobs are marked bookkept only after it.
  if (durable && durableNotes[annotations.imageDigest]) durable.imageDigest = durableNotes[annotations.imageDigest]!;
  if (durable && durableNotes[annotations.interruptedApply] === null) delete durable.interruptedApply;
  // What the Jobs run: the image as the spec gave it for the last apply, its pinned digest, the runtime's own version (newest result).
  const ran = toMark.filter((job) => job.result).sort((a, b) => b.finishedAt! - a.finishedAt!)[0]?.result;
  const source = {
    ...(durable?.imageDigest ? { imageDigest: durable.imageDigest.slice(durable.imageDigest.indexOf("@") + 1) } : {}),
    ...(ran ? { image: durable?.image ?? object.spec.source.image } : {}),
    ...(ran?.runtime.version ? { runtimeVersion: ran.runtime.version.slice(0, 64) } : {}),
  };
  if (Object.keys(source).length > 0) scope.fields.source = source;

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
function stateOwner(pass: Pass): StateOwner {
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
    const gone = await client.get(builtinTypes.job, namespace, vanished).then(
      () => false,
      (error) => (isNotFound(error) ? true : Promise.reject(error)),
    );
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

/** The state as the decision sees it, and what the pass does about retained state and a requested restore. */
export interface StatePhase {
  state: StateReading;
  stateLost: boolean;
  retainedBy: string[];
  restoreSet: BackupSet | undefined;
  lock: StateLockFinding;
}

/** The state (lineage checked), its backups (taken, pruned), a requested restore's backup, and the state lock while no Job runs. */
export async function observeStateAndBackups(
  pass: Pass,
  jobs: readonly ObservedJob[],
  active: ObservedJob | undefined,
  wasProvisioned: boolean,
): Promise<StatePhase> {
  const { deps, adapter, object, namespace, name, suffix, events, subject, durable, scope, now } = pass;
  const { client } = deps;
  const { deleting, previous } = scope;
  const encryption = await readStateEncryption(client, namespace, object.spec.stateEncryption);
  const stateObservation = await observeState(
    client,
    namespace,
    suffix,
    undefined,
    deps.cache ? { cache: deps.cache, freshAsOf: newestResourceVersion(jobs.map((job) => job.job.metadata?.resourceVersion)) } : undefined,
    encryption.kind === "ready" ? encryption.decryption : undefined,
  );
  // A state of another lineage is another state (pushed or restored over this object's): nothing runs on it.
  const state = withStateEncryption(lineageCheck(stateObservation.reading, durable?.stateLineage), encryption, deleting);
  scope.state = state;
  if (stateObservation.reading.kind === "ok" && stateObservation.reading.state.lineage && durable && !durable.stateLineage && !deleting) {
    pass.durableNotes.annotations[annotations.stateLineage] = stateObservation.reading.state.lineage;
    durable.stateLineage = stateObservation.reading.state.lineage;
  }
  const retainedBy = stateObservation.retainedFromUids.filter((uid) => uid !== object.metadata.uid);
  // An adopted state's chunks stay owned: a chunk written later or stripped is re-owned while no Job writes them.
  if (
    !active &&
    !scope.paused &&
    !deleting &&
    stateObservation.retainedFromUids.length === 0 &&
    state.kind === "ok" &&
    state.state.inputsHash
  ) {
    const repaired = await repairStateOwnership(client, namespace, suffix, stateObservation.secrets, stateOwner(pass));
    if (repaired.length > 0)
      void events.record(subject, "OwnerReferencesRepaired", `state Secret(s) ${repaired.join(", ")} owned by this ${adapter.kind} again`);
  }
  // Backups: each serial read for the first time is copied; a restore names one by its serial.
  const keepBackups = deps.stateBackups ?? defaultStateBackups;
  const backupSecrets = await listBackupSecrets(client, namespace, suffix, deps.cache);
  let backups = backupSets(backupSecrets);
  const restoreAnnotation = object.metadata.annotations?.[annotations.restoreState];
  const restoreSerial =
    restoreAnnotation !== undefined && /^[1-9][0-9]{0,15}$/.test(restoreAnnotation) ? Number(restoreAnnotation) : undefined;
  let restoreSet: BackupSet | undefined;
  const lastRestoredSerial = (scope.fields.lastRestoredSerial as number | undefined) ?? object.status?.lastRestoredSerial;
  if (restoreAnnotation !== undefined && (restoreSerial === undefined || restoreSerial !== lastRestoredSerial)) {
    restoreSet = backups.find((set) => set.serial === restoreSerial && set.complete);
    if (!restoreSet) {
      scope.restoreBackupNotFound = restoreAnnotation;
      deps.metrics?.stateRestores.inc({ kind: adapter.kind, result: "not_found" });
    }
  }
  if (state.kind === "ok" && state.state.serial >= 1 && !deleting && keepBackups > 0 && retainedBy.length === 0) {
    const digest = stateDigest(stateObservation.secrets);
    const placement = backupPlacement(backups, suffix, state.state.serial, digest);
    if (placement.kind === "present") {
      // A serial new to this object whose state a backup already holds (a restored one, or a pass that lost its status): counted once.
      if (object.status?.observedStateSerial !== state.state.serial)
        deps.metrics?.stateBackups.inc({ kind: adapter.kind, result: "skipped" });
    } else {
      const source = jobs.filter((job) => job.outcome === "succeeded").sort((a, b) => b.finishedAt! - a.finishedAt!)[0];
      const taken = await takeStateBackup(client, {
        namespace,
        suffix,
        setName: placement.name,
        digest,
        owner: { apiVersion: groupVersion, kind: adapter.kind, name, uid: object.metadata.uid },
        stateSecrets: stateObservation.secrets,
        serial: state.state.serial,
        lineage: state.state.lineage,
        resources: state.state.managedResources,
        ...(state.state.inputsHash ? { inputsHash: state.state.inputsHash } : {}),
        ...(source ? { sourceJob: source.name } : {}),
        now,
      }).catch((error: unknown) => {
        // A backup never fails the pass: it is counted and logged, and the next pass tries again.
        deps.metrics?.stateBackups.inc({ kind: adapter.kind, result: "skipped" });
        deps.logger?.warn({ error: (error as Error).message, serial: state.state.serial }, "could not back up the state");
        return undefined;
      });
      if (taken) {
        deps.metrics?.stateBackups.inc({ kind: adapter.kind, result: "taken" });
        const beside =
          placement.name === backupSecretName(suffix, state.state.serial, 0)
            ? ""
            : ` as ${placement.name}, beside another state of that serial`;
        void events.record(subject, "StateBackedUp", `state serial ${state.state.serial} backed up (${taken.bytes} bytes)${beside}`);
        // The sets as listed plus the one just written (no list, which the cache could not answer yet).
        const written = new Set(taken.created.map((secret) => secret.metadata?.name));
        backups = backupSets([...backupSecrets.filter((secret) => !written.has(secret.metadata?.name)), ...taken.created]);
      }
    }
  }
  const pruned = new Set(backupsToPrune(backups, keepBackups, restoreSerial));
  for (const secret of pruned) await client.delete(builtinTypes.secret, namespace, secret).catch(ignoreNotFound);
  if (pruned.size > 0) deps.metrics?.stateBackups.inc({ kind: adapter.kind, result: "pruned" });
  const keptBackups = backups.filter((set) => set.complete && !set.names.some((secret) => pruned.has(secret)));
  if (keptBackups.length > 0)
    scope.fields.stateBackups = keptBackups
      .slice(0, 16)
      .map(({ serial, takenAt, bytes }) => ({ serial, takenAt, bytes: Math.max(1, bytes) }));

  // State that was there and is gone is lost, not new: nothing but a restore (or Retain) runs on it.
  const everApplied = wasProvisioned || durable?.applied === true || durable?.imageDigest !== undefined || backups.length > 0;
  const stateLost = state.kind === "absent" && everApplied;
  scope.stateLost = stateLost;
  if (stateLost && previousReason(previous, "StateReadable") !== "StateLost")
    void events.record(subject, "StateLost", `the state of this ${adapter.kind} is gone; nothing runs on it until a backup is restored`);
  if (state.kind === "unreadable" && state.reason === "StateLineageChanged" && previousReason(previous, "StateReadable") !== state.reason)
    void events.record(subject, "StateLineageChanged", state.message);
  // The state lock, read while no Job runs: a foreign holder is reported, a stale lock of this object's own dead runner goes to the next
  // Job's force-unlock.
  const lock: StateLockFinding = active
    ? { kind: "free" }
    : await observeStateLock({ client, cache: deps.cache }, namespace, suffix, { role: adapter.role, name });
  scope.lock = lock;
  if (lock.kind === "foreign" && state.kind !== "unreadable" && !stateLost) {
    if (previousReason(previous, "StateReadable") !== "StateLocked") void events.record(subject, "StateLocked", stateLockedMessage(lock));
  }

  // Counted once per transition into an unreadable state, with the reason StateReadable reports.
  const readableReason =
    retainedBy.length > 0 && !deleting
      ? "RetainedStateFound"
      : state.kind === "unreadable"
        ? state.reason
        : stateLost
          ? "StateLost"
          : lock.kind === "foreign"
            ? "StateLocked"
            : undefined;
  const readError = newStateReadError(previousReason(previous, "StateReadable"), readableReason);
  if (readError) deps.metrics?.stateReadErrors.inc({ kind: adapter.kind, reason: readError });

  return { state, stateLost, retainedBy, restoreSet, lock };
}

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
    const present = deps.cache
      ? (await deps.cache.get(builtinTypes.secret, namespace, secretName, { inScope: true })) !== undefined
      : await client.get(builtinTypes.secret, namespace, secretName).then(
          () => true,
          (error) => (isNotFound(error) ? false : Promise.reject(error)),
        );
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
  const failures = await deps.client
    .list<CoreV1Event>(builtinTypes.coreEvent, namespace, { fieldSelector: `involvedObject.uid=${uid},reason=FailedCreate` })
    .catch((error: unknown) => {
      // Only a better message is lost: the Job still fails at its deadline.
      deps.logger?.info({ job: job.metadata?.name, err: error }, "reading the Job's FailedCreate events failed");
      return { items: [] as CoreV1Event[] };
    });
  const at = (event: CoreV1Event) => Date.parse(String(event.lastTimestamp ?? event.eventTime ?? event.metadata.creationTimestamp));
  const newest = failures.items.sort((a, b) => at(b) - at(a))[0];
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

/** The root an operation runs in: apply and plan the current inputs; the others what was applied. */
export function rootForOperation(
  op: Operation,
  inputs: InputsOutcome<{ root: GeneratedRoot; held?: boolean }>,
  durable: DurableInputs | undefined,
  role: Role,
): GeneratedRoot | undefined {
  if (op === "apply" || op === "plan") return inputs.kind === "ready" ? inputs.rendered.root : undefined;
  // A pool holding a change of its exports checks the exports it applied: the waiting change is not drift.
  if ((op === "refresh" || op === "drift") && inputs.kind === "ready" && inputs.rendered.held) return inputs.rendered.root;
  if (op === "restore") return renderBackendRoot();
  if (durable) return durable.root;
  // Clusters and pools may fall back to fresh inputs; a machine's destroy must use what it applied.
  return role !== "machine" && inputs.kind === "ready" ? inputs.rendered.root : undefined;
}

/** The per-run Secret holding the rendered root, owned by its Job so it goes with it. */
export async function createRunSecret(client: KubeApi, namespace: string, job: V1Job, files: GeneratedRoot): Promise<void> {
  await client
    .create(builtinTypes.secret, namespace, {
      metadata: {
        name: runSecretName(job.metadata!.name!),
        labels: { [labels.managed]: "true" },
        ownerReferences: [{ apiVersion: "batch/v1", kind: "Job", name: job.metadata!.name!, uid: job.metadata!.uid!, controller: true }],
      },
      stringData: { ...files },
    })
    .catch((error) => (isConflict(error) ? undefined : Promise.reject(error)));
}

export function observeDrift(
  pass: Pass,
  jobs: readonly ObservedJob[],
  toMark: readonly ObservedJob[],
  terraformCluster: TerraformClusterObject | undefined,
): DriftFacts {
  const { deps, adapter, object, events, subject, scope } = pass;
  const { previous } = scope;
  const driftPolicy = effectiveDriftPolicy(
    adapter.role,
    object.spec.drift,
    adapter.role === "cluster" ? undefined : terraformCluster?.spec?.defaults?.drift,
    deps.driftDefaultIntervalSeconds ?? defaultDriftIntervalSeconds,
  );
  const driftChecks = jobs.filter((job) => job.op === "drift" && job.outcome === "succeeded").map((job) => job.finishedAt!);
  const lastDriftCheckAt = driftChecks.length ? Math.max(...driftChecks) : undefined;
  const wasDrifted = previous?.find((c) => c.type === "DriftDetected")?.status === "True";
  const newestCheck = toMark.filter((job) => job.op === "drift" || job.op === "refresh").sort((a, b) => b.finishedAt! - a.finishedAt!)[0];
  // A remediation apply that succeeded after the finding applied the current inputs over the drift: resolved at once.
  const remediated = toMark.find(
    (job) => job.op === "apply" && job.remediation && job.outcome === "succeeded" && job.finishedAt! > (lastDriftCheckAt ?? 0),
  );
  scope.drift = {
    action: driftPolicy.action,
    ...(newestCheck ? { newestCheck } : {}),
    ...(remediated ? { remediatedBy: remediated.name } : {}),
  };
  // The times survive the Jobs' pruning in status: the newest drift check, and the newest health reading (a refresh,
  // a drift check, or an apply's own).
  const sampledAt = jobs
    .filter((job) => (job.op === "refresh" || job.op === "drift" || job.op === "apply") && job.outcome === "succeeded")
    .map((job) => job.finishedAt!);
  const newer = (at: number | undefined, field: "lastDriftCheck" | "lastRefresh") =>
    at !== undefined && !(Date.parse(String(object.status?.[field] ?? "")) >= at);
  if (newer(lastDriftCheckAt, "lastDriftCheck")) scope.fields.lastDriftCheck = new Date(lastDriftCheckAt!).toISOString();
  const lastSampleAt = sampledAt.length ? Math.max(...sampledAt) : undefined;
  if (newer(lastSampleAt, "lastRefresh")) scope.fields.lastRefresh = new Date(lastSampleAt!).toISOString();
  const finding = newestCheck?.outcome === "succeeded" && newestCheck.op === "drift" ? newestCheck.result?.drift : undefined;
  if (finding) {
    if (finding.detected && !wasDrifted)
      void events.record(
        subject,
        "DriftDetected",
        driftDetectedCondition(finding, driftPolicy.action, adapter.role).message ?? "drift detected",
      );
    if (!finding.detected && wasDrifted) void events.record(subject, "DriftResolved", "the infrastructure matches the state again");
    if (finding.detected) {
      for (const [action, count] of [
        ["add", finding.add],
        ["change", finding.change],
        ["destroy", finding.destroy],
      ] as const)
        if (count > 0) deps.metrics?.driftResources.inc({ kind: adapter.kind as MetricKind, action }, count);
    }
  }
  if (remediated && (finding ? finding.detected : wasDrifted))
    void events.record(
      subject,
      "DriftResolved",
      `remediation apply Job ${remediated.name} succeeded: the infrastructure matches the inputs again`,
    );
  return {
    policy: driftPolicy,
    detected: driftFinding(scope)?.status === "True",
    ...(lastDriftCheckAt !== undefined ? { lastCheckAt: lastDriftCheckAt } : {}),
  };
}

/** What the decision reads beyond the pass itself. */
export interface DecisionFacts {
  active: ObservedJob | undefined;
  state: StateReading;
  stateLost: boolean;
  restoreSet: BackupSet | undefined;
  currentHash: string | undefined;
  planShown: PlanPreview | undefined;
  inputs: InputsOutcome<{ approvalHash: string; exportsHash?: string }>;
  jobs: readonly ObservedJob[];
  retainedBy: readonly string[];
  dependents: number;
  deletionPolicy: DeletionPolicy | undefined;
  terraformCluster: TerraformClusterObject | undefined;
  drift: DriftFacts;
  health: {
    healthReading: HealthState | undefined;
    pendingRefreshes: number;
    decoding: OutputsDecoding<Role> | undefined;
    healthCheckIntervalSeconds: number | undefined;
  };
  /** The effective Job policy: own `spec.jobs` over the cluster's `spec.defaults.jobs` (machines and pools). */
  jobPolicy: StoredJobPolicy;
}

/** The whole decision of the pass: held while paused, by retained state or an unresolved deletion policy; else decideOperation's. Pure. */
export function decide(pass: Pick<Pass, "adapter" | "object" | "now" | "durable" | "scope">, facts: DecisionFacts): Decision {
  const { adapter, object, now, durable } = pass;
  const { paused, deleting } = pass.scope;
  const {
    active,
    state,
    stateLost,
    restoreSet,
    currentHash,
    planShown,
    inputs,
    jobs,
    retainedBy,
    dependents,
    deletionPolicy,
    terraformCluster,
    drift,
  } = facts;
  const { healthReading, pendingRefreshes, decoding, healthCheckIntervalSeconds } = facts.health;
  const refreshes = jobs.filter((job) => job.op === "refresh" && job.outcome === "succeeded").map((job) => job.finishedAt!);
  return paused
    ? { reason: "Paused" }
    : retainedBy.length > 0
      ? { reason: "RetainedStateFound", requeueAfterMs: 60_000 }
      : deleting && !deletionPolicy
        ? { reason: "DeletionPolicyUnresolved", requeueAfterMs: gateRequeueMs }
        : decideOperation({
            role: adapter.role,
            uid: object.metadata.uid,
            now,
            createdAt: Date.parse(object.metadata.creationTimestamp ?? new Date(now).toISOString()),
            deleting,
            ...(active ? { activeJob: { name: active.name, op: active.op } } : {}),
            state:
              stateLost || state.kind === "unreadable"
                ? { kind: "unreadable" }
                : state.kind === "absent"
                  ? { kind: "absent" }
                  : {
                      kind: "present",
                      managedResources: state.state.managedResources,
                      ...(state.state.inputsHash ? { inputsHash: state.state.inputsHash } : {}),
                    },
            ...(restoreSet ? { restoreRequested: true } : {}),
            ...(currentHash ? { currentInputsHash: currentHash } : {}),
            ...(object.spec.applyPolicy ? { applyPolicy: object.spec.applyPolicy } : {}),
            ...(planShown ? { plan: observedPlan(planShown)! } : {}),
            ...(object.metadata.annotations?.[annotations.approvePlan]
              ? { approvedPlanHash: object.metadata.annotations[annotations.approvePlan] }
              : {}),
            ...(object.metadata.annotations?.[annotations.approveDestructivePlan]
              ? { approvedDestructiveHash: object.metadata.annotations[annotations.approveDestructivePlan] }
              : {}),
            ...(inputs.kind === "ready" ? { approvalHash: inputs.rendered.approvalHash } : {}),
            ...(inputs.kind === "ready" && inputs.rendered.exportsHash && durable?.applied
              ? { exportsChanged: inputs.rendered.exportsHash !== appliedExportsHash(durable) }
              : {}),
            ...(adapter.role === "machinepool" && durable?.partialClusterOutputs ? { exportsPartlyApplied: true } : {}),
            jobs: jobs
              .filter((job) => job.outcome !== undefined)
              .map((job) => {
                const guardedHash = guardedApprovalHash(job.job);
                return {
                  op: job.op,
                  outcome: job.outcome!,
                  finishedAt: job.finishedAt!,
                  ...(job.inputsHash ? { inputsHash: job.inputsHash } : {}),
                  ...(guardedHash ? { approvalHash: guardedHash } : {}),
                  ...(job.remediation ? { remediation: true } : {}),
                };
              }),
            drift: {
              intervalSeconds: drift.policy.intervalSeconds,
              action: drift.policy.action,
              detected: drift.detected,
              ...(drift.lastCheckAt !== undefined ? { lastCheckAt: drift.lastCheckAt } : {}),
            },
            health: {
              ...(healthReading ? { state: healthReading } : {}),
              pendingRefreshes,
              // Until a refresh follows the newest apply, the state's reading is that apply's own.
              appliedReadingDefinite:
                healthReading !== undefined &&
                healthReading !== "pending" &&
                healthReading !== "unknown" &&
                (adapter.role !== "machinepool" || poolMembershipConverged(decoding!.outputs as DecodedOutputs["machinepool"])),
              ...(refreshes.length ? { lastRefreshAt: Math.max(...refreshes) } : {}),
              ...(healthCheckIntervalSeconds ? { checkIntervalSeconds: healthCheckIntervalSeconds } : {}),
            },
            ...(adapter.role === "machinepool"
              ? {
                  pool: {
                    membershipRefreshIntervalSeconds:
                      object.spec.membershipRefreshIntervalSeconds ??
                      terraformCluster?.spec?.defaults?.membershipRefreshIntervalSeconds ??
                      defaultMembershipRefreshSeconds,
                    providerIDCount: (object.spec.providerIDList ?? []).length,
                    statusReplicas: object.status?.replicas ?? 0,
                  },
                }
              : {}),
            ...(adapter.role !== "machine" && durable?.interruptedApply ? { interruptedApply: true } : {}),
            failedLimit: Math.max(1, historyLimits(facts.jobPolicy).failedJobsHistoryLimit),
            dependents,
          });
}

/** The exports hash of a pool's last successful apply; before that was recorded, the exports its durable inputs hold. */
function appliedExportsHash(durable: DurableInputs): string {
  return durable.appliedClusterOutputsHash ?? exportsHash(durable.variables.captf_cluster_outputs as JsonValue | undefined);
}

/** The reading as this object may use it: a decoded state of a lineage other than the recorded one is unreadable. Pure. */
export function lineageCheck(reading: StateReading, recordedLineage: string | undefined): StateReading {
  if (reading.kind !== "ok" || !recordedLineage || !reading.state.lineage || reading.state.lineage === recordedLineage) return reading;
  return {
    kind: "unreadable",
    reason: "StateLineageChanged",
    message:
      `the state's lineage is ${reading.state.lineage}, not ${recordedLineage} as recorded (${annotations.stateLineage} on the ` +
      `durable inputs Secret): another state was written over this object's. ` +
      `Nothing runs on it: restore a backup with ${annotations.restoreState}=<serial>, or accept this state by removing that annotation`,
  };
}
