import { PatchStrategy, setHeaderOptions, type BatchV1Api, type CoordinationV1Api, type CoreV1Api, type CustomObjectsApi, type V1Job } from "@kubernetes/client-node";
import { decodeOutputs, type DecodedOutputs, type JsonValue, type OutputsDecoding, type Role, type RoleInputs } from "@captf/contract";
import { annotations, apiGroup, apiVersion, finalizers, groupVersion, labels, type ManagerEventReason } from "@captf/contract/api";
import { approvalHash, exportsHash, inputsHash, InputsHashError, InputsTooLargeError, renderBackendRoot, renderGeneratedRoot, stateLockLeaseName, stateSecretName, stateSecretSuffix, type GeneratedRoot, type UserVariables } from "@captf/render";
import type { Logger } from "pino";
import { discardEvents, type EventRecorder, type EventSubject } from "../events/event-recorder.js";
import { buildJob, defaultActiveDeadlineSeconds, defaultJobEnvironment, jobName, previousSchemeJobName, runnerServiceAccount, runSecretName, type JobEnvironment, type JobRequest } from "../jobs/build-job.js";
import { serviceAccountOverrideCondition } from "../identity/runner-rbac.js";
import { mergedDeadlineProblem } from "../webhooks/job-policy.js";
import { mergeJobPolicy, type StoredJobPolicy } from "../jobs/merge-job-policy.js";
import { effectiveRemediation, type StoredRemediation } from "../kinds/machine-remediation.js";
import { infrastructureHealthy, isProvisioned, poolMembershipConverged, providerIDConditions, type ConditionValue } from "../kinds/map-outputs.js";
import { readUserVariables, type VariablesFromEntry } from "../kinds/read-variables.js";
import type { InputsResult, ObjectMeta } from "../kinds/render-inputs.js";
import type { CaptfMetrics, JobResult, MetricKind } from "../metrics/captf-metrics.js";
import { watchFilterLabel } from "../runtime/controller.js";
import { observeState } from "../state/read-state.js";
import { backupSets, backupsToPrune, listBackupSecrets, takeStateBackup, type BackupSet } from "../state/state-backups.js";
import type { StateReading } from "../state/decode-state.js";
import { deleteFreeStateLock, observeStateLock, stateLockedMessage, type StateLockFinding } from "../state/state-lock.js";
import { ConditionSet, previousReason, type Condition } from "./conditions.js";
import { jobPolicyDefaults } from "../api/defaults.js";
import { maxApproverLength, type PlanPreview } from "../api/workspace.js";
import { decideOperation, nextPendingRefreshes, type Decision, type Operation } from "./decide-operation.js";
import { defaultDriftIntervalSeconds, driftDetectedCondition, effectiveDriftPolicy, type StoredDriftPolicy } from "./drift-policy.js";
import { jobsToPrune } from "./job-history.js";
import { jobSlotWait, settlingJobSlot, type JobSlotSource } from "./job-slots.js";
import { approverNote, bookkeepPlans, observedPlan, previewCounts } from "./plan-approval.js";
import { adoptRetainedState, resolveDeletionPolicy, retainState, type DeletionPolicy } from "./retained-state.js";
import { annotateDurableInputs, readDurableInputs, writeDurableInputs, type DurableInputs } from "./durable-inputs.js";
import { bookkeepingAnnotations, imagePullDeadlineMs, jobPod, observeJobs, pinnedImageReference, stalledImagePull, type ObservedJob } from "./observe-jobs.js";
import { passReads, workspaceResourceType, type PassReads, type TerraformClusterObject } from "./pass-reads.js";
import { acquireLease, clusterLeaseName, gatedOperations, leaseBackstopSeconds, liveClusterOperation, liveMemberOperations, releaseLease, runLeaseName } from "./run-lease.js";
import { ignoreNotFound, isConflict, isNotFound } from "../runtime/client-node-errors.js";
import { newestResourceVersion, type ReadCache } from "../runtime/read-cache.js";
import { builtinTypes } from "../runtime/builtin-types.js";

/**
 * One reconcile pass of a Terraform* object, shared by every kind:
 * 1. observe: the object, its Cluster API owners (through the kind adapter), its Jobs, its durable
 *    inputs and its state, all read live;
 * 2. bookkeep the finished Jobs (adopt the state, pin the digest, release the run lease);
 * 3. decide (decideOperation, pure);
 * 4. act: take the run lease (and the cluster operation gate), write the durable inputs of an
 *    apply, create the Job and its per-run Secret; or drop the finalizer;
 * 5. record: one status patch, then mark the finished Jobs bookkept.
 * Every write is idempotent, so a pass cut short anywhere converges on the next: Job names are
 * deterministic, an existing Job is adopted and a lease already held by that Job is ours.
 */

/** Credentials for an object's Jobs (identity resolution and the mirror Secret), when wired. */
export interface JobCredentials {
  /** IdentityAllowed, CredentialsMirrored, RunnerRBACReady as computed. */
  conditions: { type: string; value: ConditionValue }[];
  /** Jobs may start: the mirror is in place (or no identity is needed). */
  ready: boolean;
  /** The mirror Secret to mount in Jobs. */
  secretName?: string;
  identity?: string;
  requeueAfterMs?: number;
}

export type CredentialsResolver = (request: {
  role: Role;
  object: WorkspaceObject;
  terraformCluster: TerraformClusterObject | undefined;
}) => Promise<JobCredentials>;

export interface ReconcilerDeps {
  core: CoreV1Api;
  batch: BatchV1Api;
  custom: CustomObjectsApi;
  coordination: CoordinationV1Api;
  jobEnvironment?: JobEnvironment;
  /** The manager's informer caches with its writes as expectations; without it every read is live. */
  cache?: ReadCache;
  /** Identity resolution and credential mirroring; without it Jobs carry no credentials. */
  credentials?: CredentialsResolver;
  events?: EventRecorder;
  metrics?: CaptfMetrics;
  logger?: Logger;
  /** `--drift-default-interval` in seconds (default 30 minutes). */
  driftDefaultIntervalSeconds?: number;
  /** `--runner-events` (default true): Jobs report their steps as events on the object. */
  runnerEvents?: boolean;
  /** `--watch-filter`: only objects labelled `cluster.x-k8s.io/watch-filter=<value>` are reconciled. */
  watchFilter?: string;
  /** Running Jobs, for `--max-active-jobs` and a cluster's `spec.maxActiveJobs` (from the Job cache). */
  jobSlots?: JobSlotSource;
  /** `--state-backups`: complete backup sets kept per object (default 5; 0 takes none). */
  stateBackups?: number;
  /** `--cluster-operation-gate` (default true). */
  clusterOperationGate?: boolean;
  /** Runs after a finalizer is removed: clears what captf made in a namespace left without objects. */
  sweepNamespace?: (namespace: string) => Promise<void>;
  now?: () => number;
}

export interface PassResult {
  requeueAfterMs?: number;
  /** What the pass did, for logs and tests. */
  action: string;
}

/** The fields of a Terraform* object the shared core reads. */
export interface WorkspaceObject {
  metadata: ObjectMeta & {
    uid: string;
    generation?: number;
    resourceVersion?: string;
    deletionTimestamp?: string;
    finalizers?: string[];
    ownerReferences?: { kind: string; name: string; apiVersion: string; uid?: string }[];
    creationTimestamp?: string;
  };
  spec: {
    source: { image: string; imagePullPolicy?: "Always" | "IfNotPresent" | "Never" };
    deletionPolicy?: DeletionPolicy;
    adoptRetainedState?: boolean;
    drift?: StoredDriftPolicy;
    applyPolicy?: "Automatic" | "Manual";
    jobs?: StoredJobPolicy;
    variables?: Record<string, JsonValue>;
    variablesFrom?: VariablesFromEntry[];
    identityRef?: { name?: string };
    membershipRefreshIntervalSeconds?: number;
    [key: string]: unknown;
  };
  status?: { initialization?: { provisioned?: boolean }; conditions?: Condition[]; replicas?: number; lastRestoredSerial?: number; [key: string]: unknown };
}

/** What a kind adapter sees of the pass when it builds inputs. */
export interface InputsContext {
  reads: PassReads;
  durable: DurableInputs | undefined;
}

/** What the pass knows when a kind writes back to its owner. */
export interface OwnerWriteBackContext {
  /** The status this pass writes; a kind may add fields. */
  status: Record<string, unknown>;
  events: EventRecorder;
  subject: EventSubject;
  /** InfrastructureHealthy as computed this pass, when the state was read. */
  health: ConditionValue | undefined;
  /** A refresh, drift or apply finished this pass: its health reading is a new sample. */
  sampled: boolean;
  provisioned: boolean;
  terraformCluster: TerraformClusterObject | undefined;
}

/** What a kind adds to the shared pass. */
export interface KindAdapter<R extends Role> {
  role: R;
  kind: keyof typeof finalizers;
  plural: string;
  /** The cluster name and the inputs, or undefined when the Cluster API owner is not there yet. */
  observeInputs(deps: ReconcilerDeps, object: WorkspaceObject, context: InputsContext): Promise<{ clusterName: string; inputs: InputsResult<RoleInputs[R]> } | undefined>;
  /** Also publish provisioning as the v1beta1 `status.ready` flag Cluster API still reads for this kind. */
  publishesReady?: boolean;
  /**
   * Kind-specific writes to the owner after the outputs are known (pool replicas write-back);
   * not while paused or deleting. Returns conditions for the status patch.
   */
  ownerWriteBack?(deps: ReconcilerDeps, object: WorkspaceObject, observed: OwnerWriteBackContext): Promise<{ type: string; value: ConditionValue }[]>;
  /** Spec and status fields from valid outputs (providerID, addresses, failureDomains, endpoint). */
  contractFields(object: WorkspaceObject, decoding: OutputsDecoding<R>): { spec?: Record<string, unknown>; annotations?: Record<string, string>; status?: Record<string, unknown> };
}

const gateRequeueMs = 30_000;
/** A write lost a race with another writer, or a cache lags: look again soon. */
const lagRequeueMs = 5_000;
const defaultStateBackups = 5;
const longRequeueMs = 10 * 60_000;
const defaultMembershipRefreshSeconds = 60;

export function mergePatchOptions() {
  return setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
}

/** Inputs that can run an apply: rendered root, hash and the user variables in them. */
interface RenderedInputs {
  root: GeneratedRoot;
  hash: string;
  /** What a destructive-plan approval names: the hash, for a pool without its (rotating) bootstrap data. */
  approvalHash: string;
  /** Pool only: the hash of the cluster exports it renders. */
  exportsHash?: string;
}

type InputsOutcome = { kind: "ready"; rendered: RenderedInputs } | { kind: "pending"; reason: string; message: string; condition: "DependenciesReady" | "ApplyJobSucceeded"; status: "Unknown" | "False" } | { kind: "none" };

function renderInputs<R extends Role>(role: R, image: string, inputs: RoleInputs[R], variables: UserVariables): InputsOutcome {
  try {
    const root = renderGeneratedRoot(role, inputs, variables);
    const hashable = { role, image, inputs, variables };
    const hash = inputsHash(hashable);
    if (role !== "machinepool") return { kind: "ready", rendered: { root, hash, approvalHash: hash } };
    const exports = (inputs as RoleInputs["machinepool"]).captf_cluster_outputs as JsonValue | undefined;
    return { kind: "ready", rendered: { root, hash, approvalHash: approvalHash(hashable), exportsHash: exportsHash(exports) } };
  } catch (error) {
    if (error instanceof InputsTooLargeError) return { kind: "pending", reason: "InputsTooLarge", message: error.message, condition: "ApplyJobSucceeded", status: "False" };
    // The cluster's exports are unhashable (a fraction or exponent): its machines and pools wait for a fixed export.
    if (error instanceof InputsHashError && error.path?.startsWith("/inputs/captf_cluster_outputs")) {
      return { kind: "pending", reason: "WaitingForClusterExports", message: error.message, condition: "DependenciesReady", status: "Unknown" };
    }
    throw error;
  }
}

function metricResult(job: ObservedJob): JobResult {
  if (job.deadlineExceeded) return "deadline";
  if (job.outcome === "state-save") return "failed";
  return job.outcome === "plan-changed" ? "plan_changed" : (job.outcome as JobResult);
}

/** Runs one pass for the object namespace/name of the adapter's kind. */
export async function reconcileWorkspace<R extends Role>(deps: ReconcilerDeps, adapter: KindAdapter<R>, namespace: string, name: string): Promise<PassResult> {
  const now = (deps.now ?? Date.now)();
  const { core, batch, custom } = deps;
  const events = deps.events ?? discardEvents;
  const metricKind = adapter.kind as MetricKind;
  const objectApi = { group: apiGroup, version: apiVersion, namespace, plural: adapter.plural, name };
  // From the cache (the pass changes its copy); the finalizer write carries its resourceVersion, so a stale copy conflicts rather than loses a write.
  const object = deps.cache
    ? structuredClone(await deps.cache.get<WorkspaceObject>(workspaceResourceType(adapter), namespace, name))
    : ((await custom.getNamespacedCustomObject(objectApi).catch(ignoreNotFound)) as WorkspaceObject | undefined);
  if (!object) {
    deps.metrics?.forgetObject(metricKind, namespace, name);
    return { action: "gone" };
  }
  if (deps.watchFilter && object.metadata.labels?.[watchFilterLabel] !== deps.watchFilter) return { action: "not in this manager's watch filter" };
  // Another controller owns this infrastructure (Cluster API's managed-by contract): hands off.
  if (object.metadata.annotations?.[annotations.managedBy] !== undefined) return { action: "externally managed" };

  const subject: EventSubject = { apiVersion: groupVersion, kind: adapter.kind, namespace, name, uid: object.metadata.uid };
  const mergePatch = (body: unknown) => custom.patchNamespacedCustomObject({ ...objectApi, body }, mergePatchOptions());
  const finalizer = finalizers[adapter.kind];
  // With the resourceVersion read: a finalizer list changed meanwhile makes this a conflict, not a loss.
  // A conflict is an expected lost race (Cluster API writes an object it just created): false, and the pass requeues.
  const writeFinalizers = (list: string[]) => mergePatch({ metadata: { finalizers: list, resourceVersion: object.metadata.resourceVersion } }).then(() => true, (error) => (isConflict(error) ? false : Promise.reject(error)));
  // Once the finalizer is gone, what captf made in a namespace left without objects goes too.
  const removeFinalizer = async () => (await writeFinalizers((object.metadata.finalizers ?? []).filter((f) => f !== finalizer))) && (await deps.sweepNamespace?.(namespace), true);
  const finalizerConflict: PassResult = { action: "finalizer write conflicted: the object changed meanwhile; requeued", requeueAfterMs: lagRequeueMs };
  const deleting = Boolean(object.metadata.deletionTimestamp);

  // The finalizer goes on first, in its own write, so a destroy can never be skipped.
  if (!deleting && !object.metadata.finalizers?.includes(finalizer)) {
    if (!(await writeFinalizers([...(object.metadata.finalizers ?? []), finalizer]))) return finalizerConflict;
    return { action: "added finalizer", requeueAfterMs: 0 };
  }

  const conditions = new ConditionSet();
  const previous = object.status?.conditions;
  const status: Record<string, unknown> = {};
  const suffix = stateSecretSuffix({ role: adapter.role, namespace, name });
  status.stateSecretSuffix = suffix;
  const reads = passReads(custom, namespace, deps.cache);
  const durable = await readDurableInputs(core, adapter.role, namespace, name, deps.cache);
  const wasProvisioned = object.status?.initialization?.provisioned === true;

  // Observe: owners and inputs. A provisioned machine's inputs are pinned in its durable inputs.
  const pinned = adapter.role === "machine" && wasProvisioned && durable !== undefined;
  const observedInputs = pinned ? undefined : await adapter.observeInputs(deps, object, { reads, durable });
  const clusterName = observedInputs?.clusterName ?? object.metadata.labels?.[labels.clusterName] ?? "";
  const capiCluster = await reads.capiCluster(clusterName);
  const terraformCluster = adapter.role === "cluster" ? (object as unknown as TerraformClusterObject) : await reads.terraformCluster(clusterName);
  const paused = capiCluster?.spec?.paused === true || object.metadata.annotations?.[annotations.paused] !== undefined;
  conditions.set("Paused", paused ? { status: "True", reason: "Paused" } : { status: "False", reason: "NotPaused" });

  let inputs: InputsOutcome = { kind: "none" };
  if (pinned) {
    conditions.set("DependenciesReady", { status: "True", reason: "DependenciesReady" });
  } else if (!observedInputs) {
    if (!deleting) conditions.set("DependenciesReady", { status: "Unknown", reason: "WaitingForOwner", message: `waiting for a Cluster API owner of this ${adapter.kind}` });
  } else if (observedInputs.inputs.pending) {
    const pending = observedInputs.inputs;
    // A mismatch needs someone to fix the objects; the other waits end on their own.
    const status = pending.reason === "OwnerMismatch" || pending.reason === "ClusterNotTerraform" || pending.reason === "VariablesInvalid" ? "False" : "Unknown";
    inputs = { kind: "pending", reason: pending.reason, message: pending.message, condition: "DependenciesReady", status };
    conditions.set("DependenciesReady", { status, reason: pending.reason, message: pending.message });
  } else {
    const variables = await readUserVariables(core, adapter.role, namespace, object.spec);
    if (!variables.ok) {
      inputs = { kind: "pending", reason: variables.reason, message: variables.message, condition: "DependenciesReady", status: "False" };
      conditions.set("DependenciesReady", { status: "False", reason: variables.reason, message: variables.message });
    } else {
      conditions.set("DependenciesReady", { status: "True", reason: "DependenciesReady" });
      inputs = renderInputs(adapter.role, object.spec.source.image, observedInputs.inputs.inputs, variables.variables);
      if (inputs.kind === "pending") conditions.set(inputs.condition, { status: inputs.status, reason: inputs.reason, message: inputs.message });
    }
  }
  const currentHash = inputs.kind === "ready" ? inputs.rendered.hash : undefined;

  // Credentials: identity, mirror and runner RBAC, for objects that may start a Job.
  let credentials: JobCredentials | undefined;
  if (deps.credentials && !paused) {
    credentials = await deps.credentials({ role: adapter.role, object, terraformCluster });
    for (const { type, value } of credentials.conditions) conditions.set(type, value);
  }
  const jobPolicy = mergeJobPolicy(object.spec.jobs, adapter.role === "cluster" ? undefined : (terraformCluster?.spec?.defaults?.jobs as StoredJobPolicy | undefined));
  // A ServiceAccount other than captf-runner runs Jobs only once opted in.
  let serviceAccountRefusal: ConditionValue | undefined;
  if (jobPolicy.serviceAccountName && jobPolicy.serviceAccountName !== runnerServiceAccount && !paused) {
    const account = await core.readNamespacedServiceAccount({ name: jobPolicy.serviceAccountName, namespace }).catch(ignoreNotFound);
    const runnerAccount = serviceAccountOverrideCondition(jobPolicy.serviceAccountName, namespace, account);
    conditions.set("RunnerRBACReady", runnerAccount);
    if (runnerAccount.status !== "True") serviceAccountRefusal = runnerAccount;
  }

  // Observe Jobs; bookkeep the finished ones not recorded yet.
  const jobs = await observeJobs({ core, batch, cache: deps.cache }, namespace, { kind: adapter.kind, name, uid: object.metadata.uid }, now);
  const toMark = jobs.filter((job) => job.outcome !== undefined && !job.bookkept);
  const durableNotes: Record<string, string | null> = {};
  for (const job of toMark) {
    if (job.op === "apply" && job.outcome === "succeeded") {
      // The change an interrupted apply may have left half-done is now applied in full.
      if (job.job.metadata?.annotations?.[annotations.afterInterruptedApply]) durableNotes[annotations.interruptedApply] = null;
      // A successful apply adopts the state: its inputs hash goes on the state Secret.
      if (job.inputsHash) {
        await core.patchNamespacedSecret({ name: stateSecretName(suffix), namespace, body: { metadata: { annotations: { [annotations.inputsHash]: job.inputsHash } } } }, mergePatchOptions()).catch(ignoreNotFound);
      }
      durableNotes[annotations.applied] = "true";
      // A pool's apply is guarded while its cluster exports differ from those its last successful apply rendered.
      const appliedExports = job.job.metadata?.annotations?.[annotations.clusterOutputsHash];
      if (appliedExports) durableNotes[annotations.appliedClusterOutputsHash] = appliedExports;
      const imageReference = durable?.image ?? object.spec.source.image;
      const pinnedDigest = job.imageId ? pinnedImageReference(imageReference, job.imageId) : undefined;
      if (pinnedDigest && pinnedDigest !== durable?.imageDigest) {
        durableNotes[annotations.imageDigest] = pinnedDigest;
        void events.record(subject, "DigestPinned", `pinned ${imageReference} to ${pinnedDigest} after Job ${job.name} succeeded`);
      }
    }
    if (job.op === "restore") {
      const serial = Number(job.job.metadata?.annotations?.[annotations.restoreSerial]);
      if (Number.isSafeInteger(serial)) status.lastRestoredSerial = serial;
      if (job.outcome === "succeeded") {
        // The restored state is adopted with the inputs hash its backup recorded (none: an apply is due).
        const hash = job.inputsHash && job.inputsHash !== "h2:none" ? job.inputsHash : null;
        await core.patchNamespacedSecret({ name: stateSecretName(suffix), namespace, body: { metadata: { annotations: { [annotations.inputsHash]: hash } } } }, mergePatchOptions()).catch(ignoreNotFound);
        await mergePatch({ metadata: { annotations: { [annotations.restoreState]: null } } });
        // The user chose this backup: its lineage is recorded anew on the next read.
        if (durable?.stateLineage) {
          durableNotes[annotations.stateLineage] = null;
          delete durable.stateLineage;
        }
        delete object.metadata.annotations?.[annotations.restoreState];
        conditions.set("RestoreJobSucceeded", { status: "True", reason: "StateRestored", message: `backup serial ${serial} restored by Job ${job.name}` });
        void events.record(subject, "StateRestored", `state restored from backup serial ${serial} by Job ${job.name}`);
      } else {
        conditions.set("RestoreJobSucceeded", { status: "False", reason: "RestoreFailed", message: `Job ${job.name} could not restore backup serial ${serial}${job.result?.error?.summary ? `: ${job.result.error.summary}` : ""}` });
        void events.record(subject, "StateRestoreFailed", `Job ${job.name} could not restore backup serial ${serial}`);
      }
      deps.metrics?.stateRestores.inc({ kind: adapter.kind, result: job.outcome === "succeeded" ? "succeeded" : "failed" });
    }
    await core.deleteNamespacedSecret({ name: runSecretName(job.name), namespace }).catch(ignoreNotFound);
    await releaseLease(deps, namespace, runLeaseName(suffix), job.name).catch((error) => deps.logger?.warn({ error: (error as Error).message }, "could not release the run lease"));
    if (adapter.role === "cluster" && clusterName) {
      await releaseLease(deps, namespace, clusterLeaseName(namespace, clusterName), job.name).catch((error) => deps.logger?.warn({ error: (error as Error).message }, "could not release the cluster lease"));
    }
    const summary = job.imagePullFailed ? `: an image was not pulled within ${imagePullDeadlineMs / 60_000} minutes` : job.result?.error?.summary ? `: ${job.result.error.summary}` : "";
    if (job.outcome === "succeeded") void events.record(subject, "JobSucceeded", `Job ${job.name} (${job.op}) succeeded`);
    else if (job.deadlineExceeded) void events.record(subject, "JobDeadlineExceeded", `Job ${job.name} (${job.op}) reached its deadline and was stopped`);
    else if (job.outcome === "interrupted") void events.record(subject, "JobInterrupted", `Job ${job.name} (${job.op}) was stopped from outside${summary}`);
    else if (job.outcome === "blocked") void events.record(subject, "DestructivePlanBlocked", `Job ${job.name} stopped before destroying or replacing resources${summary}`);
    else if (job.outcome === "state-save") void events.record(subject, "StateNotSaved", stateNotSavedMessage(job.name, job.op));
    else void events.record(subject, "JobFailed", `Job ${job.name} (${job.op}) failed${summary}`);
    deps.metrics?.jobFinished({
      kind: metricKind,
      op: job.op,
      result: metricResult(job),
      ...(job.job.status?.startTime ? { durationSeconds: Math.max(0, (job.finishedAt! - Date.parse(String(job.job.status.startTime))) / 1000) } : {}),
      attempt: job.attempt,
    });
    if (job.outcome === "succeeded") deps.metrics?.lastSuccess(metricKind, namespace, name, job.op, job.finishedAt!);
  }
  if (Object.keys(durableNotes).length > 0 && durable) {
    await annotateDurableInputs(core, adapter.role, namespace, name, durableNotes, mergePatchOptions());
    if (durableNotes[annotations.imageDigest]) durable.imageDigest = durableNotes[annotations.imageDigest]!;
    if (durableNotes[annotations.interruptedApply] === null) delete durable.interruptedApply;
  }
  if (durable?.imageDigest) status.source = { imageDigest: durable.imageDigest.slice(durable.imageDigest.indexOf("@") + 1) };

  // A cluster or pool apply Job deleted while it ran may have applied part of its change: recorded on the
  // durable inputs (so it survives this pass) and the current inputs applied again, without backoff.
  const recordedJob = object.status?.activeJob as { name?: string; operation?: string } | undefined;
  if (adapter.role !== "machine" && recordedJob?.operation === "apply" && recordedJob.name && !jobs.some((job) => job.name === recordedJob.name) && durable) {
    const vanished = recordedJob.name;
    // Live: a Job missing from the cache may be lag, and this writes the interruption down.
    const gone = await batch.readNamespacedJob({ name: vanished, namespace }).then(() => false, (error) => (isNotFound(error) ? true : Promise.reject(error)));
    if (gone && durable.interruptedApply !== vanished) {
      await annotateDurableInputs(core, adapter.role, namespace, name, { [annotations.interruptedApply]: vanished }, mergePatchOptions());
      durable.interruptedApply = vanished;
      await releaseLease(deps, namespace, runLeaseName(suffix), vanished).catch(() => undefined);
      if (adapter.role === "cluster" && clusterName) await releaseLease(deps, namespace, clusterLeaseName(namespace, clusterName), vanished).catch(() => undefined);
      const message = `Job ${vanished}: disappeared while it ran and may have applied part of its change; an apply of the current inputs is due`;
      conditions.set("ApplyJobSucceeded", { status: "False", reason: "ApplyFailed", message });
      void events.record(subject, "JobInterrupted", message);
    }
  }

  let active = jobs.find((job) => job.outcome === undefined);
  const stateObservation = await observeState(core, namespace, suffix, undefined, deps.cache ? { cache: deps.cache, freshAsOf: newestResourceVersion(jobs.map((job) => job.job.metadata?.resourceVersion)) } : undefined);
  // A state of another lineage is another state (pushed or restored over this object's): nothing runs on it.
  const state = lineageCheck(stateObservation.reading, durable?.stateLineage);
  if (stateObservation.reading.kind === "ok" && stateObservation.reading.state.lineage && durable && !durable.stateLineage && !deleting) {
    await annotateDurableInputs(core, adapter.role, namespace, name, { [annotations.stateLineage]: stateObservation.reading.state.lineage }, mergePatchOptions());
    durable.stateLineage = stateObservation.reading.state.lineage;
  }
  const retainedBy = stateObservation.retainedFromUids.filter((uid) => uid !== object.metadata.uid);
  // Backups: each serial read for the first time is copied; a restore names one by its serial.
  const keepBackups = deps.stateBackups ?? defaultStateBackups;
  let backups = backupSets(await listBackupSecrets(core, namespace, suffix, deps.cache));
  const restoreAnnotation = object.metadata.annotations?.[annotations.restoreState];
  const restoreSerial = restoreAnnotation !== undefined && /^[1-9][0-9]{0,15}$/.test(restoreAnnotation) ? Number(restoreAnnotation) : undefined;
  let restoreSet: BackupSet | undefined;
  const lastRestoredSerial = (status.lastRestoredSerial as number | undefined) ?? object.status?.lastRestoredSerial;
  if (restoreAnnotation !== undefined && (restoreSerial === undefined || restoreSerial !== lastRestoredSerial)) {
    restoreSet = backups.find((set) => set.serial === restoreSerial && set.complete);
    if (!restoreSet) {
      conditions.set("RestoreJobSucceeded", { status: "False", reason: "RestoreBackupNotFound", message: `${annotations.restoreState}=${restoreAnnotation} names no complete backup; status.stateBackups lists the serials kept` });
      deps.metrics?.stateRestores.inc({ kind: adapter.kind, result: "not_found" });
    }
  }
  if (state.kind === "ok" && state.state.serial >= 1 && !deleting && keepBackups > 0 && retainedBy.length === 0 && !backups.some((set) => set.serial === state.state.serial)) {
    const source = jobs.filter((job) => job.outcome === "succeeded").sort((a, b) => b.finishedAt! - a.finishedAt!)[0];
    const bytes = await takeStateBackup(core, {
      namespace,
      suffix,
      owner: { apiVersion: groupVersion, kind: adapter.kind, name, uid: object.metadata.uid },
      stateSecrets: stateObservation.secrets,
      serial: state.state.serial,
      lineage: state.state.lineage,
      resources: state.state.managedResources,
      ...(state.state.inputsHash ? { inputsHash: state.state.inputsHash } : {}),
      ...(source ? { sourceJob: source.name } : {}),
      now,
    });
    deps.metrics?.stateBackups.inc({ kind: adapter.kind, result: "taken" });
    void events.record(subject, "StateBackedUp", `state serial ${state.state.serial} backed up (${bytes} bytes)`);
    backups = backupSets(await listBackupSecrets(core, namespace, suffix, deps.cache));
  }
  const pruned = new Set(backupsToPrune(backups, keepBackups, restoreSerial));
  for (const secret of pruned) await core.deleteNamespacedSecret({ name: secret, namespace }).catch(ignoreNotFound);
  if (pruned.size > 0) deps.metrics?.stateBackups.inc({ kind: adapter.kind, result: "pruned" });
  const keptBackups = backups.filter((set) => set.complete && !set.names.some((secret) => pruned.has(secret)));
  if (keptBackups.length > 0) status.stateBackups = keptBackups.slice(0, 16).map(({ serial, takenAt, bytes }) => ({ serial, takenAt, bytes: Math.max(1, bytes) }));

  // State that was there and is gone is lost, not new: nothing but a restore (or Retain) runs on it.
  const everApplied = wasProvisioned || durable?.applied === true || durable?.imageDigest !== undefined || backups.length > 0;
  const stateLost = state.kind === "absent" && everApplied;
  if (state.kind === "unreadable") conditions.set("StateReadable", { status: "False", reason: state.reason, message: state.message });
  else if (state.kind === "ok") conditions.set("StateReadable", { status: "True", reason: "StateRead" });
  else if (stateLost) {
    conditions.set("StateReadable", { status: "False", reason: "StateLost", message: `the state Secrets are gone although this ${adapter.kind} applied before: restore a backup with ${annotations.restoreState}=<serial>` });
    if (previousReason(previous, "StateReadable") !== "StateLost") void events.record(subject, "StateLost", `the state of this ${adapter.kind} is gone; nothing runs on it until a backup is restored`);
  } else conditions.set("StateReadable", { status: "Unknown", reason: "StateNotFound", message: "no state Secret yet: the first apply creates it" });
  if (state.kind === "unreadable" && state.reason === "StateLineageChanged" && previousReason(previous, "StateReadable") !== state.reason) void events.record(subject, "StateLineageChanged", state.message);
  // The state lock, read while no Job runs: a foreign holder is reported, a stale lock of this object's own dead runner goes to the next Job's force-unlock.
  const lock: StateLockFinding = active ? { kind: "free" } : await observeStateLock({ coordination: deps.coordination, core, cache: deps.cache }, namespace, suffix, { role: adapter.role, name });
  if (lock.kind === "foreign" && state.kind !== "unreadable" && !stateLost) {
    conditions.set("StateReadable", { status: "False", reason: "StateLocked", message: stateLockedMessage(lock) });
    if (previousReason(previous, "StateReadable") !== "StateLocked") void events.record(subject, "StateLocked", stateLockedMessage(lock));
  }

  // A pass killed between creating a Job and its per-run Secret left the Job waiting for its
  // volume: give it the Secret when the inputs still render the same hash, else delete the Job.
  if (active) {
    const secretName = runSecretName(active.name);
    const present = deps.cache
      ? (await deps.cache.get(builtinTypes.secret, namespace, secretName, { inScope: true })) !== undefined
      : await core.readNamespacedSecret({ name: secretName, namespace }).then(() => true, (error) => (isNotFound(error) ? false : Promise.reject(error)));
    if (!present) {
      const root = rootForOperation(active.op, inputs, durable, adapter.role);
      const hashMatches = active.inputsHash === undefined || active.inputsHash === currentHash || active.op !== "apply";
      if (root && hashMatches) {
        await createRunSecret(core, namespace, active.job, root);
      } else {
        await batch.deleteNamespacedJob({ name: active.name, namespace, propagationPolicy: "Background" }).catch(ignoreNotFound);
        await releaseLease(deps, namespace, runLeaseName(suffix), active.name).catch(() => undefined);
        // Deleted by captf before it could start: not an interrupted apply.
        await patchStatus(deps, adapter, object, { activeJob: null });
        void events.record(subject, "StuckJobDeleted", `deleted Job ${active.name}: its per-run Secret is missing and the inputs changed`);
        return { action: `deleted stuck Job ${active.name}: its per-run Secret is missing and the inputs changed`, requeueAfterMs: 0 };
      }
    }
  }

  // A Job whose image cannot be pulled would wait out its whole deadline: after the pull deadline
  // it is marked, then its Pod deleted, so the Job fails (backoffLimit 0) and counts toward backoff.
  if (active) {
    const pod = await jobPod({ core, cache: deps.cache }, namespace, active.job);
    const stalled = pod ? stalledImagePull(pod, now) : undefined;
    if (pod && stalled) {
      await batch.patchNamespacedJob({ name: active.name, namespace, body: { metadata: { annotations: { [annotations.imagePullFailed]: "true" } } } }, mergePatchOptions());
      await core.deleteNamespacedPod({ name: pod.metadata!.name!, namespace }).catch(ignoreNotFound);
      deps.logger?.info({ job: active.name, container: stalled.container, reason: stalled.reason }, "failing a Job whose image was not pulled");
      return { action: `failing Job ${active.name}: ${imagePullMessage(stalled)}`, requeueAfterMs: lagRequeueMs };
    }
  }

  // State another (deleted) object retained: held until adopted or deleted by someone.
  const ownerReference = { apiVersion: groupVersion, kind: adapter.kind, name, uid: object.metadata.uid, controller: true };
  if (retainedBy.length > 0) {
    const retainer = retainedBy.join(", ");
    if (deleting) {
      if (!(await removeFinalizer())) return finalizerConflict;
      void events.record(subject, "FinalizerRemoved", `removed finalizer ${finalizer}; the state retained by deleted object ${retainer} is left as it is`);
      return { action: "removed finalizer" };
    }
    if (object.spec.adoptRetainedState) {
      await adoptRetainedState(core, mergePatchOptions(), { role: adapter.role, namespace, name, uid: object.metadata.uid, suffix, ownerReference });
      void events.record(subject, "RetainedStateAdopted", `adopted the state and inputs retained by deleted object ${retainer}`);
      return { action: "adopted retained state", requeueAfterMs: 0 };
    }
    conditions.set("StateReadable", { status: "False", reason: "RetainedStateFound", message: `state retained by deleted object ${retainer} is in the way: set spec.adoptRetainedState: true to take it over, or delete the Secrets labelled ${labels.retainedFromUid}=${retainer}` });
    if (previousReason(previous, "StateReadable") !== "RetainedStateFound") void events.record(subject, "RetainedStateFound", `state retained by deleted object ${retainer} found; nothing runs until it is adopted or deleted`);
  }

  // A deleting cluster waits for its machines and pools: they run on its infrastructure.
  const dependents = deleting && adapter.role === "cluster" && clusterName ? await countDependents(custom, namespace, clusterName) : 0;
  if (deleting && adapter.role === "cluster") {
    conditions.set("DeletionBlocked", dependents > 0 ? { status: "True", reason: "DependentsExist", message: `${dependents} TerraformMachine(s) or TerraformMachinePool(s) of cluster ${clusterName} still exist` } : { status: "False", reason: "NotBlocked" });
  }

  // Plans: a finished plan Job's plan is shown for approval; an approved apply consumes it.
  const plans = bookkeepPlans(toMark);
  let planShown = (object.status as { plan?: PlanPreview } | undefined)?.plan;
  if (plans.plan !== undefined) {
    status.plan = plans.plan;
    planShown = plans.plan ?? undefined;
  }
  for (const event of plans.events) void events.record(subject, event.reason, event.note);
  for (const result of plans.approvals) deps.metrics?.planApprovals.inc({ kind: adapter.kind, result });
  if (plans.removeAnnotations.length > 0) {
    await mergePatch({ metadata: { annotations: Object.fromEntries(plans.removeAnnotations.map((key) => [key, null])) } });
    for (const key of plans.removeAnnotations) delete object.metadata.annotations?.[key];
  }

  // Drift: the newest check's finding, else what the status says from an earlier pass.
  const driftPolicy = effectiveDriftPolicy(adapter.role, object.spec.drift, adapter.role === "cluster" ? undefined : terraformCluster?.spec?.defaults?.drift, deps.driftDefaultIntervalSeconds ?? defaultDriftIntervalSeconds);
  const driftChecks = jobs.filter((job) => job.op === "drift" && job.outcome === "succeeded").map((job) => job.finishedAt!);
  const lastDriftCheckAt = driftChecks.length ? Math.max(...driftChecks) : undefined;
  let driftDetected = previous?.find((c) => c.type === "DriftDetected")?.status === "True";
  const newestCheck = toMark.filter((job) => job.op === "drift" || job.op === "refresh").sort((a, b) => b.finishedAt! - a.finishedAt!)[0];
  if (newestCheck?.outcome === "succeeded" && newestCheck.op === "drift" && newestCheck.result?.drift) {
    const finding = newestCheck.result.drift;
    conditions.set("DriftJobSucceeded", { status: "True", reason: "DriftChecked" });
    conditions.set("DriftDetected", driftDetectedCondition(finding, driftPolicy.action, adapter.role));
    if (finding.detected && !driftDetected) void events.record(subject, "DriftDetected", conditions.get("DriftDetected")!.message ?? "drift detected");
    if (!finding.detected && driftDetected) void events.record(subject, "DriftResolved", "the infrastructure matches the state again");
    if (finding.detected) {
      for (const [action, count] of [["add", finding.add], ["change", finding.change], ["destroy", finding.destroy]] as const) if (count > 0) deps.metrics?.driftResources.inc({ kind: metricKind, action }, count);
    }
    driftDetected = finding.detected;
  } else if (newestCheck && newestCheck.outcome !== "succeeded" && newestCheck.outcome !== "interrupted") {
    conditions.set("DriftJobSucceeded", newestCheck.deadlineExceeded ? { status: "False", reason: "DriftJobDeadlineExceeded", message: `Job ${newestCheck.name} reached its deadline` } : { status: "False", reason: "DriftJobFailed", message: `Job ${newestCheck.name} (${newestCheck.op}) failed${newestCheck.result?.error?.summary ? `: ${newestCheck.result.error.summary}` : ""}` });
  }
  // A remediation apply that succeeded after the finding applied the current inputs over the drift: resolved at once.
  const remediated = toMark.find((job) => job.op === "apply" && job.remediation && job.outcome === "succeeded" && job.finishedAt! > (lastDriftCheckAt ?? 0));
  if (driftDetected && remediated) {
    conditions.set("DriftDetected", { status: "False", reason: "NoDrift", message: `remediation apply Job ${remediated.name} applied the current inputs over the drift` });
    void events.record(subject, "DriftResolved", `remediation apply Job ${remediated.name} succeeded: the infrastructure matches the inputs again`);
    driftDetected = false;
  }
  deps.metrics?.objectStatus(metricKind, namespace, name, { drift: driftDetected ? 1 : 0 });

  // Machines that may ask for remediation sample their health on its own interval.
  const remediation = adapter.role === "machine" ? effectiveRemediation(object.spec.remediation as StoredRemediation | undefined, terraformCluster?.spec?.defaults?.remediation) : undefined;
  const healthCheckIntervalSeconds = remediation?.annotateMachine && wasProvisioned ? remediation.healthCheckIntervalSeconds : undefined;

  // The outputs as the state holds them: the contract fields below, and the health reading that schedules refreshes.
  const decoding = state.kind === "ok" ? decodeOutputs(adapter.role, state.state.outputs, observedInputs && !observedInputs.inputs.pending ? observedInputs.inputs.inputs : undefined, { fromState: true }) : undefined;
  const healthReading = decoding?.outputs.health.state === "ok" ? decoding.outputs.health.value.state : undefined;
  const finishedSucceeded = (ops: Operation[]) => toMark.some((job) => job.outcome === "succeeded" && ops.includes(job.op));
  const pendingRefreshes = nextPendingRefreshes((object.status?.pendingRefreshes as number | undefined) ?? 0, healthReading, { applied: finishedSucceeded(["apply"]), sampled: finishedSucceeded(["refresh", "drift"]) });
  if (decoding) status.pendingRefreshes = pendingRefreshes > 0 ? pendingRefreshes : null;

  // Decide.
  const refreshes = jobs.filter((job) => job.op === "refresh" && job.outcome === "succeeded").map((job) => job.finishedAt!);
  // Deletion: Destroy runs a destroy Job; Retain leaves the infrastructure and keeps its state.
  const deletionPolicy = resolveDeletionPolicy(adapter.role, object.spec.deletionPolicy, adapter.role === "cluster" ? undefined : terraformCluster);
  conditions.set("Deleting", !deleting ? { status: "False", reason: "NotDeleting" } : deletionPolicy ? { status: "True", reason: "Deleting", message: `deletionPolicy ${deletionPolicy}` } : { status: "True", reason: "DeletionPolicyUnresolved", message: "deletionPolicy is inherited from the TerraformCluster, which is not found: set spec.deletionPolicy" });
  // Once, on the first pass that sees the deletion (the condition read NotDeleting, or nothing yet).
  const deletionSeen = ["Deleting", "DeletionPolicyUnresolved"].includes(previousReason(previous, "Deleting") ?? "");
  if (deleting && !deletionSeen) void events.record(subject, "DeletionStarted", `deletion started (deletionPolicy ${deletionPolicy ?? "unresolved"})`);
  if (deleting && deletionPolicy === "Retain" && !active && !paused && dependents === 0 && retainedBy.length === 0) {
    const kept = await retainState(core, mergePatchOptions(), { role: adapter.role, namespace, name, uid: object.metadata.uid, suffix });
    await deps.coordination.deleteNamespacedLease({ name: runLeaseName(suffix), namespace }).catch(() => undefined);
    if (!(await removeFinalizer())) return finalizerConflict;
    void events.record(subject, "InfrastructureRetained", `deletionPolicy Retain: the infrastructure stays; ${kept} Secret(s) of its state and inputs kept, labelled ${labels.retainedFromUid}=${object.metadata.uid}`);
    deps.metrics?.forgetObject(metricKind, namespace, name);
    return { action: "retained infrastructure, removed finalizer" };
  }

  const decision: Decision = paused
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
        state: stateLost || state.kind === "unreadable" ? { kind: "unreadable" } : state.kind === "absent" ? { kind: "absent" } : { kind: "present", managedResources: state.state.managedResources, ...(state.state.inputsHash ? { inputsHash: state.state.inputsHash } : {}) },
        ...(restoreSet ? { restoreRequested: true } : {}),
        ...(currentHash ? { currentInputsHash: currentHash } : {}),
        ...(object.spec.applyPolicy ? { applyPolicy: object.spec.applyPolicy } : {}),
        ...(planShown ? { plan: observedPlan(planShown)! } : {}),
        ...(object.metadata.annotations?.[annotations.approvePlan] ? { approvedPlanHash: object.metadata.annotations[annotations.approvePlan] } : {}),
        ...(object.metadata.annotations?.[annotations.approveDestructivePlan] ? { approvedDestructiveHash: object.metadata.annotations[annotations.approveDestructivePlan] } : {}),
        ...(inputs.kind === "ready" ? { approvalHash: inputs.rendered.approvalHash } : {}),
        ...(inputs.kind === "ready" && inputs.rendered.exportsHash && durable?.applied ? { exportsChanged: inputs.rendered.exportsHash !== appliedExportsHash(durable) } : {}),
        jobs: jobs.filter((job) => job.outcome !== undefined).map((job) => {
          const guardedHash = guardedApprovalHash(job.job);
          return { op: job.op, outcome: job.outcome!, finishedAt: job.finishedAt!, ...(job.inputsHash ? { inputsHash: job.inputsHash } : {}), ...(guardedHash ? { approvalHash: guardedHash } : {}), ...(job.remediation ? { remediation: true } : {}) };
        }),
        drift: { intervalSeconds: driftPolicy.intervalSeconds, action: driftPolicy.action, detected: driftDetected, ...(lastDriftCheckAt !== undefined ? { lastCheckAt: lastDriftCheckAt } : {}) },
        health: {
          ...(healthReading ? { state: healthReading } : {}),
          pendingRefreshes,
          // Until a refresh follows the newest apply, the state's reading is that apply's own.
          appliedReadingDefinite: healthReading !== undefined && healthReading !== "pending" && healthReading !== "unknown" && (adapter.role !== "machinepool" || poolMembershipConverged(decoding!.outputs as DecodedOutputs["machinepool"])),
          ...(refreshes.length ? { lastRefreshAt: Math.max(...refreshes) } : {}),
          ...(healthCheckIntervalSeconds ? { checkIntervalSeconds: healthCheckIntervalSeconds } : {}),
        },
        ...(adapter.role === "machinepool"
          ? {
              pool: {
                membershipRefreshIntervalSeconds: object.spec.membershipRefreshIntervalSeconds ?? terraformCluster?.spec?.defaults?.membershipRefreshIntervalSeconds ?? defaultMembershipRefreshSeconds,
                providerIDCount: ((object.spec as { providerIDList?: string[] }).providerIDList ?? []).length,
                statusReplicas: object.status?.replicas ?? 0,
              },
            }
          : {}),
        ...(adapter.role !== "machine" && durable?.interruptedApply ? { interruptedApply: true } : {}),
        ...(object.spec.jobs?.failedJobsHistoryLimit !== undefined ? { failedLimit: Math.max(1, object.spec.jobs.failedJobsHistoryLimit) } : {}),
        dependents,
      });
  deps.metrics?.decided(metricKind, decision.op ?? "none", decision.reason);

  // Act.
  let action = decision.reason;
  let requeueAfterMs = decision.requeueAfterMs;
  if (decision.dropFinalizer) {
    if (decision.cleanupState) {
      const secrets = await core.listNamespacedSecret({ namespace, labelSelector: `tfstateSecretSuffix=${suffix}` });
      for (const secret of secrets.items) await core.deleteNamespacedSecret({ name: secret.metadata!.name!, namespace }).catch(ignoreNotFound);
      void events.record(subject, "Destroyed", decision.reason === "Destroyed" ? `the ${adapter.role} module destroyed its infrastructure; state deleted` : "the state held no resources, so there was nothing to destroy; state deleted");
    }
    await deps.coordination.deleteNamespacedLease({ name: runLeaseName(suffix), namespace }).catch(() => undefined);
    // No state is left (destroyed or never written): its lock Lease goes too, unless someone but our own dead runner holds it.
    const lockRemoval = await deleteFreeStateLock(deps.coordination, namespace, suffix, lock.kind === "stale" ? lock.unlockId : undefined);
    if (!lockRemoval.removed) deps.logger?.warn({ lease: stateLockLeaseName(suffix), holder: lockRemoval.holder }, "the state lock Lease stays: someone holds it");
    if (!(await removeFinalizer())) return finalizerConflict;
    void events.record(subject, "FinalizerRemoved", `removed finalizer ${finalizer}`);
    deps.metrics?.forgetObject(metricKind, namespace, name);
    return { action: "removed finalizer" };
  }
  let waitCondition: { type: string; value: ConditionValue } | undefined;
  if (decision.op) {
    const started = await settlingJobSlot(deps.jobSlots, `${namespace}/${adapter.kind}/${name}`, () => startOperation({ deps, adapter, object, namespace, name, suffix, clusterName, decision, jobs, inputs, durable, currentHash, state, credentials, terraformCluster, now, subject, restoreSet, jobPolicy, serviceAccountRefusal, forceUnlock: lock.kind === "stale" ? lock.unlockId : undefined }));
    action = started.action;
    if (started.requeueAfterMs !== undefined) requeueAfterMs = started.requeueAfterMs;
    if (started.wait) waitCondition = started.wait;
    if (started.job) active = { ...started.job, bookkept: false, deadlineExceeded: false, remediation: Boolean(decision.remediation) };
  }
  status.activeJob = active ? { name: active.name, operation: active.op, attempt: active.attempt } : null; // a merge patch keeps a field unless nulled
  // No Job runs (the Job list is read live, so no cache lag): clusterctl move may proceed.
  if (!active && object.metadata.annotations?.[annotations.blockMove] !== undefined) await mergePatch({ metadata: { annotations: { [annotations.blockMove]: null } } });

  // Record: outputs onto the contract fields, conditions, one status patch.
  let provisioned = wasProvisioned;
  if (state.kind === "ok" && decoding) {
    provisioned ||= isProvisioned(adapter.role, Boolean(state.state.inputsHash), decoding);
    const fields = adapter.contractFields(object, decoding);
    Object.assign(status, fields.status);
    if (fields.spec && Object.keys(fields.spec).length > 0) {
      await mergePatch({ spec: fields.spec, ...(fields.annotations ? { metadata: { annotations: fields.annotations } } : {}) });
      if ("providerID" in fields.spec) void events.record(subject, "ProviderIDSet", `providerID set to ${String(fields.spec.providerID)}`);
      if ("controlPlaneEndpoint" in fields.spec) void events.record(subject, "ControlPlaneEndpointSet", `control-plane endpoint set from the module's output`);
    }
    if (state.state.serial >= 1) status.observedStateSerial = state.state.serial;
    const health = decoding.outputs.health.state === "ok" ? decoding.outputs.health.value : undefined;
    let outputsValid: ConditionValue | undefined = { status: decoding.status, reason: decoding.reason, ...(decoding.problems.length ? { message: decoding.problems.join("; ").slice(0, 1024) } : {}) };
    let healthValue = infrastructureHealthy(health, { applyStarted: true, provisioned });
    const latchedProviderID = (object.spec as { providerID?: string }).providerID;
    if (adapter.role === "machine" && wasProvisioned && latchedProviderID) {
      const sampled = finishedSucceeded(["refresh", "drift", "apply"]);
      const providerID = providerIDConditions((decoding as OutputsDecoding<"machine">).outputs.provider_id, { latched: latchedProviderID, sampled, previousHealthReason: previousReason(previous, "InfrastructureHealthy"), outputsReason: decoding.reason });
      if (providerID.keepOutputsValid) outputsValid = undefined;
      if (providerID.outputsValid) outputsValid = providerID.outputsValid;
      if (providerID.health) healthValue = providerID.health;
    }
    if (outputsValid) conditions.set("OutputsValid", outputsValid);
    conditions.set("InfrastructureHealthy", healthValue);
  }
  // The newest Job finished this pass: a run result, or a Job that ended without one (an image it could not
  // pull, its deadline, a Pod removed from outside).
  const newest = jobs.filter((job) => job.result || (!job.bookkept && job.outcome)).sort((a, b) => b.finishedAt! - a.finishedAt!)[0];
  if (newest) {
    const { result } = newest;
    const approvedBy = newest.job.metadata?.annotations?.[annotations.planApprovedBy];
    if (result) {
      // Every field written, null when absent: a merge patch would keep an older run's error or approver.
      status.lastRun = {
        job: newest.name,
        operation: newest.op,
        steps: result.steps.length ? result.steps.slice(0, 16).map((step) => ({ name: step.name, exitCode: step.exit, durationMilliseconds: Math.round(step.seconds * 1000) })) : null,
        error: result.error ? { kind: result.error.kind, ...(result.error.step ? { step: result.error.step } : {}), ...(result.error.summary ? { summary: result.error.summary } : {}) } : null,
        approvedBy: approvedBy ? approvedBy.slice(0, maxApproverLength) : null,
      };
    }
    const planShownOnly = newest.op === "plan" && result !== undefined && !result.error;
    if (newest.outcome === "plan-changed") {
      conditions.set("ApplyJobSucceeded", { status: "Unknown", reason: "PlanChanged", message: `Job ${newest.name} planned differently from the approved plan; the new plan waits for approval` });
    } else if ((newest.op === "apply" || newest.op === "destroy" || newest.op === "plan") && !planShownOnly) {
      conditions.set("ApplyJobSucceeded", applyJobCondition(newest));
    }
  }
  if (decision.reason === "PlanAwaitingApproval" && planShown) {
    conditions.set("ApplyJobSucceeded", { status: "Unknown", reason: "PlanAwaitingApproval", message: `plan ${planShown.planHash} (${previewCounts(planShown)}) waits for ${annotations.approvePlan}=${planShown.planHash}` });
  }
  // An empty plan's apply runs with --expect-plan too, but nobody approved it.
  if (decision.op === "apply" && decision.expectPlan && decision.expectPlan === object.metadata.annotations?.[annotations.approvePlan] && action.startsWith("started")) {
    void events.record(subject, "PlanApproved", `plan ${decision.expectPlan}${approverNote(object.metadata.annotations?.[annotations.planApprovedBy])}: applying it`);
    deps.metrics?.planApprovals.inc({ kind: adapter.kind, result: "approved" });
  }
  if (waitCondition) {
    conditions.set(waitCondition.type, waitCondition.value);
    // A wait for a lease, the cluster operation gate or a Job slot is an event once per wait, not once per pass.
    const { reason, message } = waitCondition.value;
    if (eventedWaits.includes(reason) && previousReason(previous, waitCondition.type) !== reason) void events.record(subject, reason as ManagerEventReason, message ?? reason);
  }
  if (adapter.ownerWriteBack && !paused && !deleting) {
    const sampled = toMark.some((job) => job.outcome === "succeeded" && (job.op === "refresh" || job.op === "drift" || job.op === "apply"));
    const context: OwnerWriteBackContext = { status, events, subject, health: conditions.get("InfrastructureHealthy"), sampled, provisioned, terraformCluster };
    for (const { type, value } of await adapter.ownerWriteBack(deps, object, context)) conditions.set(type, value);
  }
  if (provisioned) status.initialization = { provisioned: true };
  if (adapter.publishesReady) status.ready = provisioned;
  conditions.set("Ready", provisioned ? { status: "True", reason: "Ready" } : { status: "False", reason: "NotReady", message: action });
  status.conditions = conditions.toStatus(previous, now, object.metadata.generation);
  await patchStatus(deps, adapter, object, status);

  // Events on transitions, after the status they describe is written.
  if (provisioned && !wasProvisioned) void events.record(subject, "Provisioned", `the ${adapter.role} module's infrastructure is provisioned`);
  if (paused && previousReason(previous, "Paused") !== "Paused") void events.record(subject, "Paused", "reconciliation paused: no Job starts until it resumes");
  if (!paused && previousReason(previous, "Paused") === "Paused") void events.record(subject, "Resumed", "reconciliation resumed");
  const identity = conditions.get("IdentityAllowed");
  if (identity?.status === "False" && previousReason(previous, "IdentityAllowed") !== identity.reason) void events.record(subject, "IdentityNotAllowed", identity.message ?? identity.reason);
  deps.metrics?.objectStatus(metricKind, namespace, name, { ready: provisioned ? 1 : 0 });

  // Only after the status patch: the finished Jobs are recorded.
  for (const job of toMark) {
    await batch.patchNamespacedJob({ name: job.name, namespace, body: { metadata: { annotations: bookkeepingAnnotations(job.outcome!) } } }, mergePatchOptions()).catch(ignoreNotFound);
  }
  const history = jobs.filter((job) => job.outcome !== undefined).map((job) => ({ name: job.name, op: job.op, succeeded: job.outcome === "succeeded", finishedAt: job.finishedAt! }));
  const limits = {
    successfulJobsHistoryLimit: object.spec.jobs?.successfulJobsHistoryLimit ?? jobPolicyDefaults.successfulJobsHistoryLimit,
    failedJobsHistoryLimit: object.spec.jobs?.failedJobsHistoryLimit ?? jobPolicyDefaults.failedJobsHistoryLimit,
  };
  for (const old of jobsToPrune(history, limits)) await batch.deleteNamespacedJob({ name: old, namespace, propagationPolicy: "Background" }).catch(ignoreNotFound);
  const credentialsRequeue = credentials?.requeueAfterMs;
  const requeue = [requeueAfterMs, credentialsRequeue].filter((value): value is number => value !== undefined);
  return { action, ...(requeue.length ? { requeueAfterMs: Math.min(...requeue) } : {}) };
}

/** Why a Job's image was not pulled, for the pass's action and log. */
function imagePullMessage(stalled: { container: string; image: string; reason: string }): string {
  return `the image ${stalled.image} of container ${stalled.container} was not pulled within ${imagePullDeadlineMs / 60_000} minutes (${stalled.reason})`;
}

/** The outcome of a finished apply, plan or destroy Job on ApplyJobSucceeded; a pull failure and the deadline before the runner's result. */
function applyJobCondition(job: ObservedJob): ConditionValue {
  const destroy = job.op === "destroy";
  if (job.imagePullFailed) {
    const images = [...(job.job.spec?.template.spec?.initContainers ?? []), ...(job.job.spec?.template.spec?.containers ?? [])].map((container) => container.image).join(", ");
    return { status: "False", reason: "ImagePullFailed", message: `Job ${job.name}: an image (${images}) was not pulled within ${imagePullDeadlineMs / 60_000} minutes; retried with backoff` };
  }
  if (job.deadlineExceeded) return { status: "False", reason: "JobDeadlineExceeded", message: `Job ${job.name} reached its deadline` };
  if (!job.result && job.outcome !== "succeeded") {
    const why = job.outcome === "interrupted" ? "was stopped from outside (its Pod deleted or evicted) before it reported; it runs again at once" : "failed without reporting a result (its runner did not finish)";
    return { status: "False", reason: destroy ? "DestroyFailed" : "ApplyFailed", message: `Job ${job.name} ${why}` };
  }
  const error = job.result?.error;
  if (!error) return { status: "True", reason: destroy ? "DestroySucceeded" : "ApplySucceeded" };
  if (error.kind === "blocked") return { status: "False", reason: "DestructivePlanBlocked", message: blockedMessage(job.job, error.summary) };
  if (error.kind === "state-save") return { status: "False", reason: "StateNotSaved", message: stateNotSavedMessage(job.name, job.op) };
  if (error.kind === "image-layout") return { status: "False", reason: "ImageInvalid", message: `the image ${String(job.job.spec?.template.spec?.containers[0]?.image)} breaks the image contract${error.summary ? `: ${error.summary}` : ""}` };
  return { status: "False", reason: destroy ? "DestroyFailed" : "ApplyFailed", ...(error.summary ? { message: error.summary } : {}) };
}

/** The reading as this object may use it: a decoded state of a lineage other than the recorded one is unreadable. Pure. */
export function lineageCheck(reading: StateReading, recordedLineage: string | undefined): StateReading {
  if (reading.kind !== "ok" || !recordedLineage || !reading.state.lineage || reading.state.lineage === recordedLineage) return reading;
  return {
    kind: "unreadable",
    reason: "StateLineageChanged",
    message: `the state's lineage is ${reading.state.lineage}, not ${recordedLineage} as recorded (${annotations.stateLineage} on the durable inputs Secret): another state was written over this object's. ` +
      `Nothing runs on it: restore a backup with ${annotations.restoreState}=<serial>, or accept this state by removing that annotation`,
  };
}

/** Why an object whose apply or destroy lost its new state is held, the limit, and the documented way out (docs/reliability.md). */
export function stateNotSavedMessage(job: string, op: string): string {
  return `Job ${job}: the ${op} ran but its new state could not be saved: the state is larger than the 1 MiB a Secret holds (OpenTofu's kubernetes backend keeps one Secret). ` +
    "The state Secret still holds the state from before, so nothing runs until the inputs change: change the module or its inputs so the state compresses below 1 MiB, " +
    "with import blocks for what the lost run created (docs/reliability.md, \"State larger than a Secret\")";
}

/** The approval hash a guarded apply Job compared (its `--inputs-hash`); undefined for an unguarded Job. */
function guardedApprovalHash(job: V1Job): string | undefined {
  return job.spec?.template.spec?.containers[0]?.args?.find((arg) => arg.startsWith("--inputs-hash="))?.slice("--inputs-hash=".length);
}

/** What a blocked apply stopped before, and the approval that lets it through (the hash its guard compared). */
function blockedMessage(job: V1Job, summary: string | undefined): string {
  const guarded = guardedApprovalHash(job);
  return [summary ?? "the plan deletes or replaces resources", ...(guarded ? [`approve it with ${annotations.approveDestructivePlan}=${guarded}`] : [])].join("; ");
}

/** The exports hash of a pool's last successful apply; before that was recorded, the exports its durable inputs hold. */
function appliedExportsHash(durable: DurableInputs): string {
  return durable.appliedClusterOutputsHash ?? exportsHash(durable.variables.captf_cluster_outputs as JsonValue | undefined);
}

async function countDependents(custom: CustomObjectsApi, namespace: string, clusterName: string): Promise<number> {
  let count = 0;
  for (const plural of ["terraformmachines", "terraformmachinepools"]) {
    const list = (await custom.listNamespacedCustomObject({ group: apiGroup, version: apiVersion, namespace, plural, labelSelector: `${labels.clusterName}=${clusterName}` })) as { items: unknown[] };
    count += list.items.length;
  }
  return count;
}

/** The root an operation runs in: apply and plan the current inputs; the others what was applied. */
function rootForOperation(op: Operation, inputs: InputsOutcome, durable: DurableInputs | undefined, role: Role): GeneratedRoot | undefined {
  if (op === "apply" || op === "plan") return inputs.kind === "ready" ? inputs.rendered.root : undefined;
  if (op === "restore") return renderBackendRoot();
  if (durable) return durable.root;
  // Clusters and pools may fall back to fresh inputs; a machine's destroy must use what it applied.
  return role !== "machine" && inputs.kind === "ready" ? inputs.rendered.root : undefined;
}

interface StartRequest<R extends Role> {
  deps: ReconcilerDeps;
  adapter: KindAdapter<R>;
  object: WorkspaceObject;
  namespace: string;
  name: string;
  suffix: string;
  clusterName: string;
  decision: Decision;
  jobs: ObservedJob[];
  inputs: InputsOutcome;
  durable: DurableInputs | undefined;
  currentHash: string | undefined;
  state: StateReading;
  credentials: JobCredentials | undefined;
  terraformCluster: TerraformClusterObject | undefined;
  now: number;
  subject: EventSubject;
  restoreSet: BackupSet | undefined;
  jobPolicy: StoredJobPolicy;
  /** RunnerRBACReady=False when the Job policy names a ServiceAccount not opted in. */
  serviceAccountRefusal: ConditionValue | undefined;
  /** The lock ID of a stale state lock this object's own dead runner left: the Job force-unlocks it first. */
  forceUnlock: string | undefined;
}

interface StartOutcome {
  action: string;
  requeueAfterMs?: number;
  /** The condition explaining why no Job started. */
  wait?: { type: string; value: ConditionValue };
  job?: { name: string; op: Operation; attempt: number; job: V1Job };
}

/** Waits that need someone to act (False); the others resolve on their own (Unknown). */
const terminalWaits = ["InputsTooLarge", "DestroyFailed", "IdentityNotAllowed"];

/** The condition a wait of this operation is reported on. */
/** The waits that are also events (reference: "the Normal events of the same names once per wait"). */
const eventedWaits: readonly string[] = ["WaitingForRunLease", "WaitingForClusterOperation", "WaitingForMachineOperations", "WaitingForJobSlot"];

function waitConditionType(op: Operation): string {
  if (op === "refresh" || op === "drift") return "DriftJobSucceeded";
  if (op === "restore") return "RestoreJobSucceeded";
  return "ApplyJobSucceeded";
}

/** Takes the leases and creates the Job (with the durable inputs of an apply and its per-run Secret). */
async function startOperation<R extends Role>(request: StartRequest<R>): Promise<StartOutcome> {
  const { deps, adapter, object, namespace, name, suffix, clusterName, decision, jobs, inputs, durable, currentHash, state, credentials, now, subject } = request;
  const events = deps.events ?? discardEvents;
  const op = decision.op!;
  const conditionType = waitConditionType(op);
  const wait = (reason: string, message: string, requeueAfterMs = gateRequeueMs): StartOutcome => ({
    action: `waiting: ${reason}`,
    requeueAfterMs,
    wait: { type: conditionType, value: { status: terminalWaits.includes(reason) ? "False" : "Unknown", reason, message } },
  });

  if ((op === "apply" || op === "plan") && inputs.kind !== "ready") {
    if (inputs.kind === "pending") return { action: `waiting: ${inputs.reason}`, requeueAfterMs: inputs.reason === "InputsTooLarge" ? longRequeueMs : gateRequeueMs };
    return { action: "waiting: WaitingForOwner", requeueAfterMs: gateRequeueMs };
  }
  if (credentials && !credentials.ready) {
    const why = credentials.conditions.find(({ value }) => value.status !== "True");
    return wait("IdentityNotAllowed", why?.value.message ?? "the object's credentials are not ready", credentials.requeueAfterMs ?? gateRequeueMs);
  }
  const root = rootForOperation(op, inputs, durable, adapter.role);
  if (!root) {
    if (op === "destroy") return wait("DestroyFailed", `the durable inputs Secret of this ${adapter.kind} is missing: restore it (or its state) before it can be destroyed`, longRequeueMs);
    return wait("DurableInputsMissing", `the durable inputs Secret of this ${adapter.kind} is missing: the next apply writes it`, longRequeueMs);
  }

  // The webhook checks each policy alone; the merge of a machine's or pool's with its cluster's defaults is checked here.
  const policyProblem = op !== "destroy" && op !== "restore" ? mergedDeadlineProblem(request.jobPolicy) : undefined;
  if (policyProblem) return { action: "waiting: JobPolicyInvalid", requeueAfterMs: longRequeueMs, wait: { type: "ApplyJobSucceeded", value: { status: "False", reason: "JobPolicyInvalid", message: policyProblem } } };
  if (request.serviceAccountRefusal) return { action: "waiting: ServiceAccountNotOptedIn", requeueAfterMs: gateRequeueMs, wait: { type: "RunnerRBACReady", value: request.serviceAccountRefusal } };
  const policy = request.jobPolicy;
  const attempt = 1 + Math.max(0, ...jobs.filter((job) => job.op === op).map((job) => job.attempt));
  const hash = op === "apply" || op === "plan" ? currentHash! : op === "restore" ? (request.restoreSet?.inputsHash ?? "h2:none") : ((state.kind === "ok" ? state.state.inputsHash : undefined) ?? durable?.inputsHash ?? currentHash ?? "h2:none");
  const lastSuccessAt = (of: Operation) => String(Math.max(0, ...jobs.filter((job) => job.op === of && job.outcome === "succeeded").map((job) => job.finishedAt!)));
  const restoreSet = op === "restore" ? request.restoreSet : undefined;
  const tick = op === "refresh" || op === "drift" ? lastSuccessAt(op) : decision.remediation ? `remediate/${lastSuccessAt("drift")}` : restoreSet ? `restore/${restoreSet.names[0]}` : undefined;
  // Every operation but apply and plan runs the image that was applied, pinned by digest when known.
  let image = object.spec.source.image;
  if (op !== "apply" && op !== "plan") {
    image = durable?.imageDigest ?? durable?.image ?? image;
    if (!durable?.imageDigest) void events.record(subject, "DigestUnknown", `no digest pinned for ${image} yet: Job ${op} runs the image by its reference`);
  }
  const jobRequest: JobRequest = {
    owner: { role: adapter.role, name, namespace, uid: object.metadata.uid, clusterName },
    op,
    attempt,
    image,
    inputsHash: hash,
    ...(tick ? { tick } : {}),
    ...(credentials?.secretName ? { credentialsSecret: credentials.secretName } : {}),
    policy: { ...policy, ...(object.spec.source.imagePullPolicy ? { imagePullPolicy: object.spec.source.imagePullPolicy } : {}) },
    ...(decision.guard ? { guard: { approvalHash: inputs.kind === "ready" ? inputs.rendered.approvalHash : hash, ...(decision.guard.allowDeletesHash ? { allowDeletesHash: decision.guard.allowDeletesHash } : {}) } } : {}),
    ...(decision.expectPlan ? { expectPlan: decision.expectPlan } : {}),
    runnerEvents: deps.runnerEvents ?? true,
    ...(restoreSet ? { restore: { chunks: restoreSet.names.length, resources: restoreSet.resources, backupSecrets: restoreSet.names, serial: restoreSet.serial } } : {}),
    ...(request.forceUnlock ? { forceUnlock: request.forceUnlock } : {}),
  };
  const holder = jobName(jobRequest);
  if (deps.jobSlots) {
    const clusterLimit = (request.terraformCluster?.spec as { maxActiveJobs?: number } | undefined)?.maxActiveJobs ?? deps.jobSlots.clusterDefaultLimit;
    const slotWait = jobSlotWait(op, deps.jobSlots.usage(namespace, clusterName), { manager: deps.jobSlots.managerLimit, cluster: clusterLimit });
    if (slotWait) return wait("WaitingForJobSlot", slotWait, 15_000);
    deps.jobSlots.reserve?.({ owner: `${namespace}/${adapter.kind}/${name}`, namespace, clusterName, job: holder });
  }
  const owner = { kind: adapter.kind, name, clusterName };
  const backstopSeconds = leaseBackstopSeconds(policy.activeDeadlineSeconds ?? defaultActiveDeadlineSeconds);
  const leaseClients = { coordination: deps.coordination, batch: deps.batch, cache: deps.cache };
  const formerHolder = previousSchemeJobName(jobRequest);
  const runLease = await acquireLease(leaseClients, { kind: "run", name: runLeaseName(suffix), namespace, holder, formerHolder, op, owner, backstopSeconds, now });
  if (!runLease.acquired) {
    deps.metrics?.leaseWaits.inc({ kind: adapter.kind, reason: "run_lease" });
    return wait("WaitingForRunLease", `the run lease ${runLeaseName(suffix)} is ${runLease.message}`);
  }
  const gate = (deps.clusterOperationGate ?? true) && gatedOperations.includes(op) && clusterName !== "";
  if (gate && adapter.role === "cluster") {
    const clusterLease = await acquireLease(leaseClients, { kind: "cluster", name: clusterLeaseName(namespace, clusterName), namespace, holder, formerHolder, op, owner, backstopSeconds, now });
    if (!clusterLease.acquired) return wait("WaitingForRunLease", `the cluster lease is ${clusterLease.message}`);
    const members = await liveMemberOperations(leaseClients, namespace, clusterName, now);
    if (members.length > 0) {
      deps.metrics?.leaseWaits.inc({ kind: adapter.kind, reason: "machine_operations" });
      const named = members.slice(0, 5).join(", ") + (members.length > 5 ? ` and ${members.length - 5} more` : "");
      return wait("WaitingForMachineOperations", `waiting for ${members.length} machine or pool Job(s) to finish: ${named}`);
    }
  } else if (gate) {
    const clusterJob = await liveClusterOperation(leaseClients, namespace, clusterName, now);
    if (clusterJob) {
      await releaseLease(deps, namespace, runLeaseName(suffix), holder);
      deps.metrics?.leaseWaits.inc({ kind: adapter.kind, reason: "cluster_operation" });
      return wait("WaitingForClusterOperation", `the cluster's Job ${clusterJob} is changing the cluster; this ${op} starts after it`);
    }
  }

  // clusterctl move must not copy an object while its Job runs: blocked (persisted) before the Job exists.
  if (object.metadata.annotations?.[annotations.blockMove] === undefined) {
    await deps.custom.patchNamespacedCustomObject({ group: apiGroup, version: apiVersion, namespace, plural: adapter.plural, name, body: { metadata: { annotations: { [annotations.blockMove]: "true" } } } }, mergePatchOptions());
  }
  if (op === "apply") {
    await writeDurableInputs(deps.core, { role: adapter.role, namespace, name, uid: object.metadata.uid }, { root, inputsHash: hash, image: object.spec.source.image, ...(credentials?.identity ? { identity: credentials.identity } : {}) }, durable);
  }
  const body = buildJob(jobRequest, deps.jobEnvironment ?? defaultJobEnvironment);
  if (decision.remediation) body.metadata!.annotations = { ...body.metadata!.annotations, [annotations.driftRemediation]: "true" };
  if (op === "apply" && adapter.role !== "machine" && durable?.interruptedApply) body.metadata!.annotations = { ...body.metadata!.annotations, [annotations.afterInterruptedApply]: durable.interruptedApply };
  // Who approved the plan stays on record with the Job that applies it: the object's annotation goes once it is applied.
  const approver = object.metadata.annotations?.[annotations.planApprovedBy];
  if (decision.expectPlan && approver && object.metadata.annotations?.[annotations.approvePlan] === decision.expectPlan) body.metadata!.annotations = { ...body.metadata!.annotations, [annotations.planApprovedBy]: approver };
  if (op === "apply" && inputs.kind === "ready" && inputs.rendered.exportsHash) body.metadata!.annotations = { ...body.metadata!.annotations, [annotations.clusterOutputsHash]: inputs.rendered.exportsHash };
  const created = await deps.batch.createNamespacedJob({ namespace, body }).catch(async (error) => {
    if (isConflict(error)) return deps.batch.readNamespacedJob({ name: holder, namespace });
    // A refused create proves no Job exists: the lease goes back at once.
    const code = (error as { code?: number }).code;
    if (code !== undefined && code >= 400 && code < 500) await releaseLease(deps, namespace, runLeaseName(suffix), holder).catch(() => undefined);
    throw error;
  });
  await createRunSecret(deps.core, namespace, created, root);
  void events.record(subject, "JobCreated", `started ${op} (${decision.reason}) as Job ${holder}`);
  if (request.forceUnlock) {
    void events.record(subject, "ForceUnlocked", `the state lock ${request.forceUnlock} left by this object's runner that is gone is released by Job ${holder} (force-unlock before its ${op})`);
    deps.metrics?.lockForceUnlocks.inc({ kind: adapter.kind });
  }
  return { action: `started ${op} (${decision.reason}) as ${holder}`, job: { name: holder, op, attempt, job: created } };
}

/** The per-run Secret holding the rendered root, owned by its Job so it goes with it. */
async function createRunSecret(core: CoreV1Api, namespace: string, job: V1Job, files: GeneratedRoot): Promise<void> {
  await core
    .createNamespacedSecret({
      namespace,
      body: {
        metadata: { name: runSecretName(job.metadata!.name!), labels: { [labels.managed]: "true" }, ownerReferences: [{ apiVersion: "batch/v1", kind: "Job", name: job.metadata!.name!, uid: job.metadata!.uid!, controller: true }] },
        stringData: { ...files },
      },
    })
    .catch((error) => (isConflict(error) ? undefined : Promise.reject(error)));
}

/** JSON with object keys sorted and undefined members left out: the API server returns an object's keys in its own order. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value).filter(([, member]) => member !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, member]) => `${JSON.stringify(key)}:${canonicalJson(member)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "undefined";
}

/** Whether a JSON merge patch changes `current` (null removes a field; objects merge; anything else replaces). Pure. */
export function mergePatchChanges(current: unknown, patch: unknown): boolean {
  if (patch === null || typeof patch !== "object" || Array.isArray(patch)) return canonicalJson(current) !== canonicalJson(patch);
  const base = current !== null && typeof current === "object" && !Array.isArray(current) ? (current as Record<string, unknown>) : undefined;
  if (!base) return true;
  return Object.entries(patch).some(([key, value]) => (value === null ? key in base : value !== undefined && (!(key in base) || mergePatchChanges(base[key], value))));
}

/** Patches the status, only when that changes it (the object as read this pass). */
async function patchStatus(deps: ReconcilerDeps, adapter: { plural: string }, object: WorkspaceObject, status: Record<string, unknown>): Promise<void> {
  const clean = Object.fromEntries(Object.entries(status).filter(([, value]) => value !== undefined));
  if (!mergePatchChanges(object.status ?? {}, clean)) return;
  const { namespace, name } = object.metadata;
  await deps.custom.patchNamespacedCustomObjectStatus({ group: apiGroup, version: apiVersion, namespace, plural: adapter.plural, name, body: { status: clean } }, mergePatchOptions());
}
