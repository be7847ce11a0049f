import type { V1ServiceAccount } from "@kubernetes/client-node";
import {
  decodeOutputs,
  mergePatchChanges,
  nameLabelValue,
  type JsonValue,
  type OutputsDecoding,
  type Role,
  type RoleInputs,
} from "@captf/contract";
import { annotations, conditionReasons, finalizers, groupVersion, labels, type ManagerEventReason } from "@captf/contract/api";
import {
  approvalHash,
  exportsHash,
  generatedRootBytes,
  inputsHash,
  InputsHashError,
  InputsTooLargeError,
  renderGeneratedRoot,
  stateLockLeaseName,
  stateSecretSuffix,
  type UserVariables,
} from "@captf/render";
import { discardEvents, type EventSubject } from "../events/event-recorder.js";
import { runnerServiceAccount } from "../jobs/build-job.js";
import { serviceAccountOverrideCondition } from "../identity/runner-rbac.js";
import { identityDeniedReason } from "../identity/job-credentials.js";
import { mergeJobPolicy, type StoredJobPolicy } from "../jobs/merge-job-policy.js";
import { effectiveRemediation, type StoredRemediation } from "../kinds/machine-remediation.js";
import { infrastructureHealthy, isProvisioned, providerIDConditions } from "../kinds/map-outputs.js";
import { readUserVariables } from "../kinds/read-variables.js";
import type { MetricKind } from "../metrics/captf-metrics.js";
import { watchFilterLabel } from "../runtime/controller.js";
import { deleteFreeStateLock } from "../state/state-lock.js";
import { previousReason, type Condition, type ConditionValue } from "../conditions/conditions.js";
import { startOperation, waitConditionType } from "./start-operation.js";
import {
  bookkeepFinishedJobs,
  decide,
  writeDurableNotes,
  lagRequeueMs,
  observeDrift,
  noticeVanishedApply,
  observeStateAndBackups,
  recoverActiveJob,
  type Pass,
} from "./workspace-phases.js";
import { computeStatus, startWaits, type PassOutcome, type StatusScope } from "./compute-status.js";
import { podRefusalMessage } from "./quota-refusal.js";
import { jobRun, nextPendingRefreshes, type Operation } from "./decide-operation.js";
import { historyLimits, jobsToPrune } from "./job-history.js";
import { resourceChanges, transitionEvents, type StatusView } from "./transition-events.js";
import { maxPublishedExportsBytes } from "../api/terraformcluster.js";
import { settlingJobSlot } from "./job-slots.js";
import { approverNote, bookkeepPlans, planSupersession } from "./plan-approval.js";
import { adoptRetainedState, resolveDeletionPolicy, retainState } from "./retained-state.js";
import { readDurableInputs, type DurableInputs } from "./durable-inputs.js";
import { holdsExports, pendingChangeGone } from "./held-exports.js";
import { bookkeepingAnnotations, failedApplyBefore, observeJobs, type ObservedJob } from "./observe-jobs.js";
import { terraformMachinePoolType, terraformMachineType, workspaceResourceType } from "../api/resource-types.js";
import { passReads, type TerraformClusterObject } from "./pass-reads.js";
import { runLeaseName } from "./run-lease.js";
import { ignoreNotFound, isConflict } from "../runtime/api-errors.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import type { KubeApi } from "../runtime/kube-client.js";
import type {
  ContractSpecFields,
  CredentialsResolver,
  InputsOutcome,
  JobCredentials,
  KindAdapter,
  OwnerWriteBackContext,
  PassResult,
  ReconcilerDeps,
  RenderedInputs,
  WorkspaceObject,
} from "./types.js";
// The pass's entry keeps naming its shared types for the callers that import them with it.
export type {
  ContractSpecFields,
  CredentialsResolver,
  InputsContext,
  InputsOutcome,
  JobCredentials,
  KindAdapter,
  OwnerWriteBackContext,
  PassResult,
  ReconcilerDeps,
  RenderedInputs,
  WorkspaceObject,
} from "./types.js";

/**
 * One reconcile pass of a Terraform* object, shared by every kind, cut as Cluster API cuts its controllers:
 * 1. get the object, add the finalizer (its own write, then the pass ends);
 * 2. a scope (`StatusScope`) that the phases fill with facts: inputs through the kind adapter, credentials,
 *    then the phases of workspace-phases.ts (bookkeeping of finished Jobs, a vanished apply, state and
 *    backups, a stuck active Job, drift);
 * 3. decide: `decide` (held, or decideOperation's decision) and `jobRun` (attempt, inputs hash, image, tick), pure;
 * 4. act: drop the finalizer, or execute the decision's operation (start-operation.ts: take the run
 *    lease, the cluster operation gate and a Job slot, write the durable inputs of an apply, create the
 *    Job and its per-run Secret);
 * 5. record: `computeStatus(scope, outcome)` (pure) as one status patch on every exit that leaves the
 *    object in place, sent only when it changes the status; then the finished Jobs are marked bookkept.
 * Every write is idempotent, so a pass cut short anywhere converges on the next: Job names are
 * deterministic, an existing Job is adopted and a lease already held by that Job is ours.
 */

function renderInputs<R extends Role>(role: R, image: string, inputs: RoleInputs[R], variables: UserVariables): InputsOutcome {
  try {
    const root = renderGeneratedRoot(role, inputs, variables);
    const hashable = { role, image, inputs, variables };
    const hash = inputsHash(hashable);
    if (role !== "machinepool") return { kind: "ready", rendered: { root, hash, approvalHash: hash } };
    const exports = (inputs as RoleInputs["machinepool"]).captf_cluster_outputs as JsonValue | undefined;
    return { kind: "ready", rendered: { root, hash, approvalHash: approvalHash(hashable), exportsHash: exportsHash(exports) } };
  } catch (error) {
    if (error instanceof InputsTooLargeError)
      return { kind: "pending", reason: "InputsTooLarge", message: error.message, condition: "ApplyJobSucceeded", status: "False" };
    // The cluster's exports are unhashable (a fraction or exponent): its machines and pools wait for a fixed export.
    if (error instanceof InputsHashError && error.path?.startsWith("/inputs/captf_cluster_outputs")) {
      return {
        kind: "pending",
        reason: "WaitingForClusterExports",
        message: error.message,
        condition: "DependenciesReady",
        status: "Unknown",
      };
    }
    throw error;
  }
}

/**
 * The pool's inputs rendered with the exports of its last successful apply, while it holds a change of them; undefined when it holds none.
 */
function heldInputs(
  rendered: RenderedInputs,
  durable: DurableInputs,
  object: WorkspaceObject,
  render: (exports: JsonValue) => InputsOutcome,
): Extract<InputsOutcome, { kind: "ready" }> | undefined {
  const holds = holdsExports({
    pending: durable.pendingClusterOutputs,
    partial: durable.partialClusterOutputs,
    current: { exportsHash: rendered.exportsHash!, approvalHash: rendered.approvalHash },
    applied: { exportsHash: durable.appliedClusterOutputsHash, recorded: durable.appliedClusterOutputs !== undefined },
    approvedHash: object.metadata.annotations?.[annotations.approveDestructivePlan],
  });
  if (!holds || durable.appliedClusterOutputs === undefined) return undefined;
  const outcome = render(durable.appliedClusterOutputs);
  return outcome.kind === "ready" ? { kind: "ready", rendered: { ...outcome.rendered, held: true } } : undefined;
}

/**
 * The running Job as the status reports it; it started when captf created it, a time that never changes while it runs (no status write).
 */
function activeJobOf(job: Pick<ObservedJob, "name" | "op" | "attempt" | "remediation" | "job">): NonNullable<PassOutcome["active"]> {
  const started = job.job.metadata?.creationTimestamp ?? job.job.status?.startTime;
  return {
    name: job.name,
    op: job.op,
    attempt: job.attempt,
    remediation: job.remediation,
    ...(started ? { startTime: new Date(started).toISOString() } : {}),
  };
}

/** Runs one pass for the object namespace/name of the adapter's kind. */
export async function reconcileWorkspace<R extends Role>(
  deps: ReconcilerDeps,
  adapter: KindAdapter<R>,
  namespace: string,
  name: string,
): Promise<PassResult> {
  const now = (deps.now ?? Date.now)();
  const { client } = deps;
  const events = deps.events ?? discardEvents;
  const metricKind = adapter.kind as MetricKind;
  const objectType = workspaceResourceType(adapter);
  // From the cache (the pass changes its copy); the finalizer write carries its resourceVersion, so a stale copy conflicts rather than
  // loses a write.
  const object = deps.cache
    ? structuredClone(await deps.cache.get<WorkspaceObject>(objectType, namespace, name))
    : await client.get<WorkspaceObject>(objectType, namespace, name).catch(ignoreNotFound);
  if (!object) {
    deps.metrics?.forgetObject(metricKind, namespace, name);
    return { action: "gone" };
  }
  if (deps.watchFilter && object.metadata.labels?.[watchFilterLabel] !== deps.watchFilter)
    return { action: "not in this manager's watch filter" };
  const subject: EventSubject = { apiVersion: groupVersion, kind: adapter.kind, namespace, name, uid: object.metadata.uid };
  const mergePatch = (body: unknown) => client.patch<WorkspaceObject>(objectType, namespace, name, body, "merge");
  const finalizer = finalizers[adapter.kind];
  // With the resourceVersion read: a finalizer list changed meanwhile makes this a conflict, not a loss.
  // A conflict is an expected lost race (Cluster API writes an object it just created): false, and the pass requeues.
  const writeFinalizers = (list: string[]) =>
    mergePatch({ metadata: { finalizers: list, resourceVersion: object.metadata.resourceVersion } }).then(
      () => true,
      (error) => (isConflict(error) ? false : Promise.reject(error)),
    );
  // Once the finalizer is gone, what captf made in a namespace left without objects goes too.
  const removeFinalizer = async () =>
    (await writeFinalizers((object.metadata.finalizers ?? []).filter((f) => f !== finalizer))) &&
    (await deps.sweepNamespace?.(namespace), true);
  const finalizerConflict: PassResult = {
    action: "finalizer write conflicted: the object changed meanwhile; requeued",
    requeueAfterMs: lagRequeueMs,
  };
  const deleting = Boolean(object.metadata.deletionTimestamp);

  // Another controller owns this infrastructure (Cluster API's managed-by contract): hands off. Deleted while it holds captf's
  // finalizer (the annotation came later), it loses only that finalizer: the infrastructure and its state stay for that manager.
  if (object.metadata.annotations?.[annotations.managedBy] !== undefined) {
    if (!deleting || !object.metadata.finalizers?.includes(finalizer)) return { action: "externally managed" };
    const kept = await retainState(client, {
      role: adapter.role,
      namespace,
      name,
      uid: object.metadata.uid,
      suffix: stateSecretSuffix({ role: adapter.role, namespace, name }),
    });
    if (!(await removeFinalizer())) return finalizerConflict;
    const manager = object.metadata.annotations[annotations.managedBy] || "another controller";
    void events.record(
      subject,
      "ExternallyManagedReleased",
      `removed finalizer ${finalizer}: the object is managed by ${manager}, so its infrastructure is left to it; ${kept} ` +
        `Secret(s) of its state and inputs kept, labelled ${labels.retainedFromUid}=${object.metadata.uid}`,
    );
    return { action: "externally managed: released, removed finalizer" };
  }

  // Deleting without captf's finalizer: its cleanup is done (or nothing ever ran), and nothing may be made for it again.
  if (deleting && !object.metadata.finalizers?.includes(finalizer)) return { action: "gone" };
  // The finalizer goes on first, in its own write, so a destroy can never be skipped.
  if (!deleting && !object.metadata.finalizers?.includes(finalizer)) {
    if (!(await writeFinalizers([...(object.metadata.finalizers ?? []), finalizer]))) return finalizerConflict;
    // No requeue: the watch event of this write starts the next pass, with the cache already showing it.
    return { action: "added finalizer" };
  }

  const previous = object.status?.conditions;
  const suffix = stateSecretSuffix({ role: adapter.role, namespace, name });
  const reads = passReads(client, namespace, deps.cache);
  const durable = await readDurableInputs(client, adapter.role, namespace, name, deps.cache);
  const wasProvisioned = object.status?.initialization?.provisioned === true;

  // Observe: owners and inputs. A provisioned machine's inputs are pinned in its durable inputs.
  const pinned = adapter.role === "machine" && wasProvisioned && durable !== undefined;
  const observedInputs = pinned ? undefined : await adapter.observeInputs(deps, object, { reads, durable });
  const clusterName = observedInputs?.clusterName ?? object.metadata.labels?.[labels.clusterName] ?? "";
  const capiCluster = await reads.capiCluster(clusterName);
  const terraformCluster =
    adapter.role === "cluster" ? (object as unknown as TerraformClusterObject) : await reads.terraformCluster(clusterName);
  const paused = capiCluster?.spec?.paused === true || object.metadata.annotations?.[annotations.paused] !== undefined;
  // The facts the status is computed from, gathered as the pass goes; the outcome of its decision and act step.
  const scope: StatusScope = {
    role: adapter.role,
    kind: adapter.kind,
    now,
    ...(object.metadata.generation !== undefined ? { generation: object.metadata.generation } : {}),
    previous,
    paused,
    ...(paused ? { pausedBy: capiCluster?.spec?.paused === true ? ("Cluster" as const) : ("annotation" as const) } : {}),
    deleting,
    clusterName,
    pinned,
    inputs: { kind: "none" },
    credentials: [],
    restores: [],
    ownerConditions: [],
    provisioned: wasProvisioned,
    fields: { stateSecretSuffix: suffix },
  };
  const outcome: PassOutcome = {};
  const pass: Pass<R> = {
    deps,
    adapter,
    object,
    namespace,
    name,
    suffix,
    clusterName,
    now,
    events,
    subject,
    durable,
    durableNotes: { annotations: {}, data: {} },
    scope,
  };
  // One status patch on every exit that leaves the object in place (it is skipped when nothing changed).
  let written: Record<string, unknown> = {};
  let exportsNotPublished: { bytes: number } | undefined;
  // A wait for a lease, the cluster operation gate, a Job slot or a quota is an event once per wait, not once per pass.
  const recordWaitEvent = ({ type, value }: NonNullable<PassOutcome["wait"]>) => {
    if (startWaits.includes(value.reason) && previousReason(previous, type) !== value.reason)
      void events.record(subject, value.reason as ManagerEventReason, value.message ?? value.reason);
  };
  const finish = async (result: PassResult): Promise<PassResult> => {
    written = computeStatus(scope, outcome);
    await patchStatus(deps, adapter, object, written);
    // Events on condition transitions, after the status they describe is written, on every exit path.
    const facts = {
      kind: adapter.kind,
      ...(exportsNotPublished ? { exportsNotPublished: { ...exportsNotPublished, limit: maxPublishedExportsBytes } } : {}),
    };
    for (const event of transitionEvents((object.status ?? {}) as StatusView, written as StatusView, facts)) {
      void events.record(subject, event.reason, event.note, undefined, event.type);
      if (event.reason === "OutputsInvalid" && event.cause) deps.metrics?.outputsInvalid.inc({ kind: adapter.kind, reason: event.cause });
    }
    return result;
  };

  let inputs: InputsOutcome = { kind: "none" };
  /** Renders the pool's inputs with other cluster exports (those of its last successful apply). */
  let renderHeld: ((exports: JsonValue) => InputsOutcome) | undefined;
  const observed = pinned ? undefined : observedInputs?.inputs;
  if (observed?.pending) {
    // A mismatch or a missing owner needs someone to fix the objects (False, as declared); the other waits end on their own.
    const status = (conditionReasons.DependenciesReady.False as readonly string[]).includes(observed.reason) ? "False" : "Unknown";
    inputs = { kind: "pending", reason: observed.reason, message: observed.message, condition: "DependenciesReady", status };
  } else if (observed) {
    const variables = await readUserVariables(client, adapter.role, namespace, object.spec);
    inputs = variables.ok
      ? renderInputs(adapter.role, object.spec.source.image, observed.inputs, variables.variables)
      : { kind: "pending", reason: variables.reason, message: variables.message, condition: "DependenciesReady", status: "False" };
    if (variables.ok)
      renderHeld = (exports) =>
        renderInputs(
          adapter.role,
          object.spec.source.image,
          { ...observed.inputs, captf_cluster_outputs: exports } as RoleInputs[R],
          variables.variables,
        );
  }
  scope.inputs = inputs;
  let currentHash = inputs.kind === "ready" ? inputs.rendered.hash : undefined;
  // A provisioned machine's inputs are fixed: the hash it applied.
  const targetHash = currentHash ?? (pinned ? durable?.inputsHash : undefined);
  if (targetHash) scope.currentHash = targetHash;

  // Credentials: identity, mirror and runner RBAC, for objects that may start a Job.
  let credentials: JobCredentials | undefined;
  const resolveCredentials = async (resolver: CredentialsResolver) => {
    credentials = await resolver({ role: adapter.role, object, terraformCluster });
    scope.credentials = credentials.conditions;
  };
  // A deleting object makes them only when its Job is about to start (reference: deletionCredentials), so a late
  // pass over a stale cached copy never re-creates what the namespace sweep removed after its finalizer went.
  if (deps.credentials && !paused && !deleting) await resolveCredentials(deps.credentials);
  const jobPolicy = mergeJobPolicy(
    object.spec.jobs,
    adapter.role === "cluster" ? undefined : (terraformCluster?.spec?.defaults?.jobs as StoredJobPolicy | undefined),
  );
  // A ServiceAccount other than captf-runner runs Jobs only once opted in.
  let serviceAccountRefusal: ConditionValue | undefined;
  if (jobPolicy.serviceAccountName && jobPolicy.serviceAccountName !== runnerServiceAccount && !paused) {
    const account = await client
      .get<V1ServiceAccount>(builtinTypes.serviceAccount, namespace, jobPolicy.serviceAccountName)
      .catch(ignoreNotFound);
    const runnerAccount = serviceAccountOverrideCondition(jobPolicy.serviceAccountName, namespace, account);
    scope.serviceAccount = runnerAccount;
    if (runnerAccount.status !== "True") serviceAccountRefusal = runnerAccount;
  }

  // Observe Jobs; bookkeep the finished ones not recorded yet.
  const jobs = await observeJobs({ client, cache: deps.cache }, namespace, { kind: adapter.kind, name, uid: object.metadata.uid }, now);
  const toMark = await bookkeepFinishedJobs(pass, jobs);
  await noticeVanishedApply(pass, jobs);

  // A pool whose change of the cluster's exports waits for approval goes on with the exports it applied last.
  const unheld = adapter.role === "machinepool" && inputs.kind === "ready" ? inputs.rendered : undefined;
  const held = unheld && durable && renderHeld ? heldInputs(unheld, durable, object, renderHeld) : undefined;
  if (held) {
    // The approval names the inputs with the change, not the held ones.
    scope.heldExports = { pending: durable!.pendingClusterOutputs!, approvalHash: unheld!.approvalHash };
    inputs = held;
    scope.inputs = held;
    currentHash = held.rendered.hash;
    scope.currentHash = currentHash;
  } else if (unheld && durable?.pendingClusterOutputs) {
    const pending = durable.pendingClusterOutputs;
    const gone = pendingChangeGone(
      pending,
      { exportsHash: unheld.exportsHash! },
      durable.appliedClusterOutputsHash,
      object.metadata.annotations?.[annotations.approveDestructivePlan],
    );
    if (gone?.removeApproval) {
      await mergePatch({ metadata: { annotations: { [annotations.approveDestructivePlan]: null } } });
      delete object.metadata.annotations?.[annotations.approveDestructivePlan];
    }
    // The blocked Job stays the newest apply until another runs: until then the condition names the withdrawn change.
    const [newestApply, ...olderApplies] = jobs
      .filter((job) => job.op === "apply" && job.outcome !== undefined)
      .sort((a, b) => b.finishedAt! - a.finishedAt!);
    if (gone?.withdrawn && newestApply?.name === pending.job) {
      const applyBefore = olderApplies.find((job) => job.outcome !== "blocked");
      scope.withdrawnExports = { job: pending.job, ...(applyBefore ? { applyBefore } : {}) };
    }
  }

  let active = jobs.find((job) => job.outcome === undefined);
  const { state, stateLost, retainedBy, restoreSet, lock } = await observeStateAndBackups(pass, jobs, active, wasProvisioned);
  await writeDurableNotes(pass);

  const stuck = active && (await recoverActiveJob(pass, active, inputs, currentHash));
  if (stuck) {
    if (stuck.jobRuns) outcome.active = activeJobOf(active!);
    if (stuck.podRefusal) {
      const message = podRefusalMessage(stuck.podRefusal, active!.name);
      outcome.wait = { type: waitConditionType(active!.op), value: { status: "Unknown", reason: "JobQuotaExceeded", message } };
      recordWaitEvent(outcome.wait);
    }
    return finish(stuck.result);
  }

  // State another (deleted) object retained: held until adopted or deleted by someone.
  const ownerReference = { apiVersion: groupVersion, kind: adapter.kind, name, uid: object.metadata.uid, controller: true };
  if (retainedBy.length > 0) {
    const retainer = retainedBy.join(", ");
    if (deleting) {
      if (!(await removeFinalizer())) return finalizerConflict;
      void events.record(
        subject,
        "FinalizerRemoved",
        `removed finalizer ${finalizer}; the state retained by deleted object ${retainer} is left as it is`,
      );
      return { action: "removed finalizer" };
    }
    if (object.spec.adoptRetainedState) {
      await adoptRetainedState(client, { role: adapter.role, namespace, name, uid: object.metadata.uid, suffix, ownerReference });
      void events.record(subject, "RetainedStateAdopted", `adopted the state and inputs retained by deleted object ${retainer}`);
      // The state is this object's now: the next pass (at once, not on the next relist) reads it as its own.
      return finish({ action: "adopted retained state", requeueAfterMs: 0 });
    }
    scope.retainedBy = retainedBy;
    if (previousReason(previous, "StateReadable") !== "RetainedStateFound")
      void events.record(
        subject,
        "RetainedStateFound",
        `state retained by deleted object ${retainer} found; nothing runs until it is adopted or deleted`,
      );
  }

  // A deleting cluster waits for its machines and pools: they run on its infrastructure.
  const dependents = deleting && adapter.role === "cluster" && clusterName ? await countDependents(client, namespace, clusterName) : 0;
  if (deleting && adapter.role === "cluster") scope.dependents = dependents;

  // Plans: a finished plan Job's plan is shown for approval; an approved apply consumes it.
  const plans = bookkeepPlans(toMark);
  const shownBefore = object.status?.plan;
  let planShown = shownBefore;
  if (plans.plan !== undefined) {
    scope.fields.plan = plans.plan;
    planShown = plans.plan ?? undefined;
  }
  // A plan replaced by a newer one, or no longer for these inputs, stops waiting for approval.
  const supersession = planSupersession({
    shownBefore,
    shown: planShown,
    ...(plans.events.some((event) => event.reason === "PlanReady") ? { replacedBy: plans.plan ?? undefined } : {}),
    currentHash,
    manual: object.spec.applyPolicy === "Manual",
    jobRuns: active !== undefined,
    paused,
    deleting,
    approvedPlanHash: object.metadata.annotations?.[annotations.approvePlan],
  });
  if (supersession?.drop) {
    scope.fields.plan = null;
    planShown = undefined;
  }
  if (supersession) {
    plans.removeAnnotations.push(...supersession.removeAnnotations);
    plans.approvals.push("superseded");
    void events.record(subject, supersession.event.reason, supersession.event.note, undefined, supersession.event.type);
  }
  if (planShown) scope.planShown = planShown;
  for (const event of plans.events) {
    void events.record(subject, event.reason, event.note);
    if (event.reason === "DestructivePlanApprovalConsumed") deps.metrics?.destructivePlanApprovalsConsumed.inc({ kind: adapter.kind });
  }
  for (const result of plans.approvals) deps.metrics?.planApprovals.inc({ kind: adapter.kind, result });
  if (plans.removeAnnotations.length > 0) {
    await mergePatch({ metadata: { annotations: Object.fromEntries(plans.removeAnnotations.map((key) => [key, null])) } });
    for (const key of plans.removeAnnotations) delete object.metadata.annotations?.[key];
  }

  const drift = observeDrift(pass, jobs, toMark, terraformCluster);
  const driftDetected = drift.detected;
  deps.metrics?.objectStatus(metricKind, namespace, name, { drift: driftDetected ? 1 : 0 });

  // Machines that may ask for remediation sample their health on its own interval.
  const remediation =
    adapter.role === "machine"
      ? effectiveRemediation(object.spec.remediation as StoredRemediation | undefined, terraformCluster?.spec?.defaults?.remediation)
      : undefined;
  const healthCheckIntervalSeconds = remediation?.annotateMachine && wasProvisioned ? remediation.healthCheckIntervalSeconds : undefined;

  // The outputs as the state holds them: the contract fields below, and the health reading that schedules refreshes.
  const decoding =
    state.kind === "ok"
      ? decodeOutputs(
          adapter.role,
          state.state.outputs,
          observedInputs && !observedInputs.inputs.pending ? observedInputs.inputs.inputs : undefined,
          { fromState: true },
        )
      : undefined;
  const healthReading = decoding?.outputs.health.state === "ok" ? decoding.outputs.health.value.state : undefined;
  const finishedSucceeded = (ops: Operation[]) => toMark.some((job) => job.outcome === "succeeded" && ops.includes(job.op));
  const pendingRefreshes = nextPendingRefreshes((object.status?.pendingRefreshes as number | undefined) ?? 0, healthReading, {
    applied: finishedSucceeded(["apply"]),
    sampled: finishedSucceeded(["refresh", "drift"]),
  });
  if (decoding) scope.fields.pendingRefreshes = pendingRefreshes > 0 ? pendingRefreshes : null;

  // Decide.
  // Deletion: Destroy runs a destroy Job; Retain leaves the infrastructure and keeps its state.
  const deletionPolicy = resolveDeletionPolicy(
    adapter.role,
    object.spec.deletionPolicy,
    adapter.role === "cluster" ? undefined : terraformCluster,
  );
  if (deletionPolicy) scope.deletionPolicy = deletionPolicy;
  // Once, on the first pass that sees the deletion (the condition read NotDeleting, or nothing yet).
  const deletionSeen = ["Deleting", "DeletionPolicyUnresolved", "DeletionPaused"].includes(previousReason(previous, "Deleting") ?? "");
  if (deleting && !deletionSeen)
    void events.record(subject, "DeletionStarted", `deletion started (deletionPolicy ${deletionPolicy ?? "unresolved"})`);
  if (deleting && deletionPolicy === "Retain" && !active && !paused && dependents === 0 && retainedBy.length === 0) {
    const kept = await retainState(client, { role: adapter.role, namespace, name, uid: object.metadata.uid, suffix });
    await client.delete(builtinTypes.lease, namespace, runLeaseName(suffix)).catch(() => undefined);
    if (!(await removeFinalizer())) return finalizerConflict;
    void events.record(
      subject,
      "InfrastructureRetained",
      `deletionPolicy Retain: the infrastructure stays; ${kept} Secret(s) of its state and inputs kept, labelled ` +
        `${labels.retainedFromUid}=${object.metadata.uid}`,
    );
    deps.metrics?.forgetObject(metricKind, namespace, name);
    return { action: "retained infrastructure, removed finalizer" };
  }

  const decision = decide(pass, {
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
    health: { healthReading, pendingRefreshes, decoding, healthCheckIntervalSeconds },
    jobPolicy,
  });
  outcome.decision = decision;
  if (durable?.interruptedApply && adapter.role !== "machine") scope.interruptedApply = true;
  deps.metrics?.decided(metricKind, decision.op ?? "none", decision.reason);

  // Act.
  let action = decision.reason;
  let requeueAfterMs = decision.requeueAfterMs;
  if (decision.dropFinalizer) {
    if (decision.cleanupState) {
      const secrets = await client.list(builtinTypes.secret, namespace, { labelSelector: `tfstateSecretSuffix=${suffix}` });
      for (const secret of secrets.items) await client.delete(builtinTypes.secret, namespace, secret.metadata!.name!).catch(ignoreNotFound);
      void events.record(
        subject,
        "Destroyed",
        decision.reason === "Destroyed"
          ? `the ${adapter.role} module destroyed its infrastructure; state deleted`
          : "the state held no resources, so there was nothing to destroy; state deleted",
      );
    }
    await client.delete(builtinTypes.lease, namespace, runLeaseName(suffix)).catch(() => undefined);
    // No state is left (destroyed or never written): its lock Lease goes too, unless someone but our own dead runner holds it.
    const lockRemoval = await deleteFreeStateLock(client, namespace, suffix, lock.kind === "stale" ? lock.unlockId : undefined);
    if (!lockRemoval.removed)
      deps.logger?.warn({ lease: stateLockLeaseName(suffix), holder: lockRemoval.holder }, "the state lock Lease stays: someone holds it");
    if (!(await removeFinalizer())) return finalizerConflict;
    void events.record(subject, "FinalizerRemoved", `removed finalizer ${finalizer}`);
    deps.metrics?.forgetObject(metricKind, namespace, name);
    return { action: "removed finalizer" };
  }
  if (decision.op) {
    if (deleting && deps.credentials && !paused) await resolveCredentials(deps.credentials);
    const run = jobRun(
      { ...decision, op: decision.op },
      {
        jobs,
        image: object.spec.source.image,
        ...(currentHash ? { currentInputsHash: currentHash } : {}),
        ...(state.kind === "ok" && state.state.inputsHash ? { stateInputsHash: state.state.inputsHash } : {}),
        ...(durable
          ? {
              applied: {
                inputsHash: durable.inputsHash,
                image: durable.image,
                ...(durable.imageDigest ? { imageDigest: durable.imageDigest } : {}),
                unpullableImages: durable.unpullableImages,
              },
            }
          : {}),
        ...(restoreSet
          ? { restore: { ...(restoreSet.inputsHash ? { inputsHash: restoreSet.inputsHash } : {}), firstSecret: restoreSet.names[0]! } }
          : {}),
      },
    );
    const started = await settlingJobSlot(deps.jobSlots, `${namespace}/${adapter.kind}/${name}`, () =>
      startOperation({
        ...pass,
        decision,
        run,
        inputs,
        credentials,
        terraformCluster,
        restoreSet,
        jobPolicy,
        serviceAccountRefusal,
        forceUnlock: lock.kind === "stale" ? lock.unlockId : undefined,
        afterFailedApply: failedApplyBefore(jobs),
      }),
    );
    action = started.action;
    if (started.requeueAfterMs !== undefined) requeueAfterMs = started.requeueAfterMs;
    if (started.wait) outcome.wait = started.wait;
    if (started.job) active = { ...started.job, bookkept: false, deadlineExceeded: false, remediation: Boolean(decision.remediation) };
  }
  if (active) outcome.active = activeJobOf(active);
  // What the pass writes to the object itself, as one patch: the contract fields and its own annotations.
  const objectPatch: { spec?: ContractSpecFields; annotations: Record<string, string | null> } = { annotations: {} };
  // No Job runs: clusterctl move may proceed.
  if (!active && object.metadata.annotations?.[annotations.blockMove] !== undefined) objectPatch.annotations[annotations.blockMove] = null;

  // Record: outputs onto the contract fields, conditions, one status patch.
  let provisioned = wasProvisioned;
  if (state.kind === "ok" && decoding) {
    provisioned ||= isProvisioned(adapter.role, Boolean(state.state.inputsHash), decoding);
    const fields = adapter.contractFields(object, decoding);
    Object.assign(scope.fields, fields.status);
    exportsNotPublished = fields.exportsNotPublished;
    if (fields.spec && Object.keys(fields.spec).length > 0) {
      objectPatch.spec = fields.spec;
      Object.assign(objectPatch.annotations, fields.annotations);
    }
    if (state.state.serial >= 1) scope.fields.observedStateSerial = state.state.serial;
    const health = decoding.outputs.health.state === "ok" ? decoding.outputs.health.value : undefined;
    let outputsValid: ConditionValue | undefined = {
      status: decoding.status,
      reason: decoding.reason,
      ...(decoding.problems.length ? { message: decoding.problems.join("; ").slice(0, 1024) } : {}),
    };
    let healthValue = infrastructureHealthy(health, { applyStarted: true, provisioned });
    const latchedProviderID = object.spec.providerID;
    if (adapter.role === "machine" && wasProvisioned && latchedProviderID) {
      const sampled = finishedSucceeded(["refresh", "drift", "apply"]);
      const providerID = providerIDConditions((decoding as OutputsDecoding<"machine">).outputs.provider_id, {
        latched: latchedProviderID,
        sampled,
        previousHealthReason: previousReason(previous, "InfrastructureHealthy"),
        outputsReason: decoding.reason,
      });
      if (providerID.keepOutputsValid) outputsValid = undefined;
      if (providerID.outputsValid) outputsValid = providerID.outputsValid;
      if (providerID.health) healthValue = providerID.health;
    }
    scope.outputs = { ...(outputsValid ? { outputsValid } : {}), health: healthValue };
    const endpoint = fields.spec?.controlPlaneEndpoint ?? object.spec.controlPlaneEndpoint ?? capiCluster?.spec?.controlPlaneEndpoint;
    if (endpoint?.host) scope.endpointHost = endpoint.host;
  }
  scope.provisioned = provisioned;
  // The newest Job finished this pass: a run result, or a Job that ended without one (an image it could not
  // pull, its deadline, a Pod removed from outside).
  const newest = jobs.filter((job) => job.result || (!job.bookkept && job.outcome)).sort((a, b) => b.finishedAt! - a.finishedAt!)[0];
  if (newest) scope.newestJob = newest;
  // An empty plan's apply runs with --expect-plan too, but nobody approved it.
  if (
    decision.op === "apply" &&
    decision.expectPlan &&
    decision.expectPlan === object.metadata.annotations?.[annotations.approvePlan] &&
    action.startsWith("started")
  ) {
    void events.record(
      subject,
      "PlanApproved",
      `plan ${decision.expectPlan}${approverNote(object.metadata.annotations?.[annotations.planApprovedBy])}: applying it`,
    );
    deps.metrics?.planApprovals.inc({ kind: adapter.kind, result: "approved" });
  }
  if (outcome.wait) recordWaitEvent(outcome.wait);
  if (adapter.ownerWriteBack && !paused && !deleting) {
    const sampled = toMark.some((job) => job.outcome === "succeeded" && (job.op === "refresh" || job.op === "drift" || job.op === "apply"));
    const context: OwnerWriteBackContext = {
      status: scope.fields,
      events,
      subject,
      health: scope.outputs?.health,
      sampled,
      provisioned,
      terraformCluster,
    };
    scope.ownerConditions = await adapter.ownerWriteBack(deps, object, context);
  }
  if (objectPatch.spec || Object.keys(objectPatch.annotations).length > 0) {
    const patched = (await mergePatch({
      ...(objectPatch.spec ? { spec: objectPatch.spec } : {}),
      ...(Object.keys(objectPatch.annotations).length > 0 ? { metadata: { annotations: objectPatch.annotations } } : {}),
    })) as WorkspaceObject;
    // The status this pass writes observes the generation the spec patch made: no second status write for it.
    if (patched?.metadata?.generation !== undefined) scope.generation = patched.metadata.generation;
    if (objectPatch.spec && "providerID" in objectPatch.spec)
      void events.record(subject, "ProviderIDSet", `providerID set to ${String(objectPatch.spec.providerID)}`);
    if (objectPatch.spec && "controlPlaneEndpoint" in objectPatch.spec)
      void events.record(subject, "ControlPlaneEndpointSet", `control-plane endpoint set from the module's output`);
  }
  if (adapter.publishesReady) scope.fields.ready = provisioned;
  await finish({ action });

  // Events on transitions, after the status they describe is written.
  if (provisioned && !wasProvisioned)
    void events.record(subject, "Provisioned", `the ${adapter.role} module's infrastructure is provisioned`);
  if (paused && previousReason(previous, "Paused") !== "Paused")
    void events.record(subject, "Paused", "reconciliation paused: no Job starts until it resumes");
  if (!paused && previousReason(previous, "Paused") === "Paused") void events.record(subject, "Resumed", "reconciliation resumed");
  const identity = scope.credentials.find(({ type }) => type === "IdentityAllowed")?.value;
  if (identity?.status === "False" && previousReason(previous, "IdentityAllowed") !== identity.reason) {
    void events.record(subject, "IdentityNotAllowed", identity.message ?? identity.reason);
    const denied = identityDeniedReason(identity.reason);
    if (denied) deps.metrics?.identityDenied.inc({ reason: denied });
  }
  // What each finished Job changed, counted once: these Jobs are marked bookkept below.
  for (const job of toMark)
    for (const { action, count } of resourceChanges(job.result?.changes))
      deps.metrics?.resourcesChanged.inc({ kind: adapter.kind, op: job.op, action }, count);
  const conditionGauge = (type: string) => {
    const status = (written.conditions as Condition[]).find((condition) => condition.type === type)?.status;
    return status === "True" ? 1 : status === "False" ? 0 : -1;
  };
  deps.metrics?.objectStatus(metricKind, namespace, name, {
    ready: conditionGauge("Ready"),
    ...(scope.outputs ? { healthy: conditionGauge("InfrastructureHealthy") } : {}),
  });
  // Sizes against their limits: the state as its Secrets store it (compressed), the rendered inputs.
  deps.metrics?.objectSizes(metricKind, namespace, name, {
    ...(state.kind === "ok" ? { stateResources: state.state.managedResources, stateBytes: state.state.compressedBytes } : {}),
    ...(inputs.kind === "ready" ? { inputsBytes: generatedRootBytes(inputs.rendered.root) } : {}),
  });

  // Only after the status patch: the finished Jobs are recorded.
  for (const job of toMark) {
    await client
      .patch(builtinTypes.job, namespace, job.name, { metadata: { annotations: bookkeepingAnnotations(job.outcome!, job) } }, "merge")
      .catch(ignoreNotFound);
  }
  const history = jobs
    .filter((job) => job.outcome !== undefined)
    .map((job) => ({ name: job.name, op: job.op, succeeded: job.outcome === "succeeded", finishedAt: job.finishedAt! }));
  for (const old of jobsToPrune(history, historyLimits(jobPolicy)))
    await client.delete(builtinTypes.job, namespace, old, { propagationPolicy: "Background" }).catch(ignoreNotFound);
  const credentialsRequeue = credentials?.requeueAfterMs;
  const requeue = [requeueAfterMs, credentialsRequeue].filter((value): value is number => value !== undefined);
  return { action, ...(requeue.length ? { requeueAfterMs: Math.min(...requeue) } : {}) };
}

async function countDependents(client: KubeApi, namespace: string, clusterName: string): Promise<number> {
  let count = 0;
  for (const type of [terraformMachineType, terraformMachinePoolType]) {
    // A name over 63 characters is no label value: selected by its hash, as captf's own labels carry it.
    const list = await client.list(type, namespace, { labelSelector: `${labels.clusterName}=${nameLabelValue(clusterName)}` });
    count += list.items.length;
  }
  return count;
}

/** Patches the status, only when that changes it (the object as read this pass). */
async function patchStatus(
  deps: ReconcilerDeps,
  adapter: Pick<KindAdapter<Role>, "kind" | "plural">,
  object: WorkspaceObject,
  status: Record<string, unknown>,
): Promise<void> {
  const clean = Object.fromEntries(Object.entries(status).filter(([, value]) => value !== undefined));
  if (!mergePatchChanges(object.status ?? {}, clean)) return;
  const { namespace, name } = object.metadata;
  await deps.client.patchStatus(workspaceResourceType(adapter), namespace, name, { status: clean }, "merge");
}
