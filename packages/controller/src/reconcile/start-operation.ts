/**
 * The act step of a pass: it executes the decision's operation. It takes the run lease (and the
 * cluster operation gate), a Job slot, writes the durable inputs of an apply, and creates the Job
 * and its per-run Secret; or it says which wait holds the operation back. Every write is idempotent:
 * Job names are deterministic, an existing Job is adopted and a lease already held by that Job is ours.
 */
import type { V1Job } from "@kubernetes/client-node";
import type { GeneratedRoot } from "@captf/render";
import type { Role } from "@captf/contract";
import { annotations } from "@captf/contract/api";
import {
  buildJob,
  defaultActiveDeadlineSeconds,
  defaultJobEnvironment,
  jobName,
  previousSchemeJobName,
  type JobRequest,
} from "../jobs/build-job.js";
import type { StoredJobPolicy } from "../jobs/merge-job-policy.js";
import type { ConditionValue } from "../conditions/conditions.js";
import type { BackupSet } from "../state/state-backups.js";
import { mergedDeadlineProblem } from "../webhooks/job-policy.js";
import { activeJobRequeueMs, destroyInputsMismatchNote, type Decision, type JobRun, type Operation } from "./decide-operation.js";
import { writeDurableInputs } from "./durable-inputs.js";
import { stateEncryptionKey } from "./encrypted-state.js";
import { jobSlotWait } from "./job-slots.js";
import { previousQuotaRetryMs, quotaRefusalMessage, quotaRefusalOf, quotaRetryMs } from "./quota-refusal.js";
import type { TerraformClusterObject } from "./pass-reads.js";
import {
  acquireLease,
  clusterLeaseName,
  gatedOperations,
  leaseBackstopSeconds,
  liveClusterOperation,
  liveMemberOperations,
  releaseLease,
  runLeaseName,
} from "./run-lease.js";
import { jobStartEvents } from "./transition-events.js";
import { createRunSecret, patchObject, rootForOperation } from "./pass-writes.js";
import { gateRequeueMs, longRequeueMs } from "./requeue.js";
import type { InputsOutcome, JobCredentials, Pass } from "./types.js";
import { httpStatusOf, isConflict } from "../runtime/api-errors.js";
import type { MetricKind } from "../metrics/captf-metrics.js";
import { checkRunImage } from "../signatures/run-image-check.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import { passClient } from "../runtime/pass-client.js";

/** A pass waiting for a Job slot looks again after this long if no freed slot woke it first. */
const slotWaitBackstopMs = 60_000;

/** What the act step executes: the decision, with what the pass gathered for it. */
export interface StartRequest<R extends Role> extends Pass<R> {
  decision: Decision;
  /** The run the decision picked. */
  run: JobRun;
  inputs: InputsOutcome;
  credentials: JobCredentials | undefined;
  terraformCluster: TerraformClusterObject | undefined;
  restoreSet: BackupSet | undefined;
  jobPolicy: StoredJobPolicy;
  /** RunnerRBACReady=False when the Job policy names a ServiceAccount not opted in. */
  serviceAccountRefusal: ConditionValue | undefined;
  /** The lock ID of a stale state lock this object's own dead runner left: the Job force-unlocks it first. */
  forceUnlock: string | undefined;
  /** The failed apply Job an apply started now follows (`captf.io/after-failed-apply`). */
  afterFailedApply: string | undefined;
  /** The inputs hash the state records (the last successful apply's), for InputsChanged's note. */
  appliedInputsHash: string | undefined;
}

export interface StartOutcome {
  action: string;
  requeueAfterMs?: number;
  /** The condition explaining why no Job started. */
  wait?: { type: string; value: ConditionValue };
  job?: { name: string; op: Operation; attempt: number; job: V1Job };
}

/** Waits that need someone to act (False); the others resolve on their own (Unknown). */
const terminalWaits = ["InputsTooLarge", "DestroyFailed", "IdentityNotAllowed"];

/** The condition a wait of this operation is reported on. */
export function waitConditionType(op: Operation): string {
  if (op === "refresh" || op === "drift") return "DriftJobSucceeded";
  if (op === "restore") return "RestoreJobSucceeded";
  return "ApplyJobSucceeded";
}

/**
 * The JobCreated note: the operation, its attempt, the image it runs (and those it falls back from) and why it started (the decision's
 * reason). Pure.
 */
export function jobCreatedNote(job: {
  op: Operation;
  attempt: number;
  image: string;
  job: string;
  why: string;
  fallbackFrom?: readonly string[] | undefined;
}): string {
  const fallback = job.fallbackFrom?.length ? ` (falling back: ${job.fallbackFrom.join(", ")} could not be pulled)` : "";
  return `started ${job.op} attempt ${job.attempt} as Job ${job.job} with image ${job.image}${fallback}, because ${job.why}`;
}

/** A wait of this operation, reported on its condition: False when someone must act, Unknown when it ends by itself. */
function startWait(op: Operation, reason: string, message: string, requeueAfterMs = gateRequeueMs): StartOutcome {
  return {
    action: `waiting: ${reason}`,
    requeueAfterMs,
    wait: { type: waitConditionType(op), value: { status: terminalWaits.includes(reason) ? "False" : "Unknown", reason, message } },
  };
}

/** What holds the operation back before any write: inputs, credentials, the root it runs, the Job policy, its ServiceAccount. Pure. */
function precondition<R extends Role>(request: StartRequest<R>, root: GeneratedRoot | undefined): StartOutcome | undefined {
  const { adapter, inputs, credentials } = request;
  const { op } = request.run;
  if ((op === "apply" || op === "plan") && inputs.kind !== "ready") {
    if (inputs.kind === "pending")
      return { action: `waiting: ${inputs.reason}`, requeueAfterMs: inputs.reason === "InputsTooLarge" ? longRequeueMs : gateRequeueMs };
    return { action: "waiting: WaitingForOwner", requeueAfterMs: gateRequeueMs };
  }
  if (credentials && !credentials.ready) {
    const why = credentials.conditions.find(({ value }) => value.status !== "True");
    const message = why?.value.message ?? "the object's credentials are not ready";
    return startWait(op, "IdentityNotAllowed", message, credentials.requeueAfterMs ?? gateRequeueMs);
  }
  if (!root) {
    const what = `the durable inputs Secret of this ${adapter.kind} is missing`;
    if (op === "destroy")
      return startWait(op, "DestroyFailed", `${what}: restore it (or its state) before it can be destroyed`, longRequeueMs);
    return startWait(op, "DurableInputsMissing", `${what}: the next apply writes it`, longRequeueMs);
  }
  // The webhook checks each policy alone; the merge of a machine's or pool's with its cluster's defaults is checked here.
  const policyProblem = op !== "destroy" && op !== "restore" ? mergedDeadlineProblem(request.jobPolicy) : undefined;
  if (policyProblem)
    return {
      action: "waiting: JobPolicyInvalid",
      requeueAfterMs: longRequeueMs,
      wait: { type: "ApplyJobSucceeded", value: { status: "False", reason: "JobPolicyInvalid", message: policyProblem } },
    };
  if (request.serviceAccountRefusal)
    return {
      action: "waiting: ServiceAccountNotOptedIn",
      requeueAfterMs: gateRequeueMs,
      wait: { type: "RunnerRBACReady", value: request.serviceAccountRefusal },
    };
  return undefined;
}

/** The image the Job runs: the digest whose signature a TerraformModulePolicy verified, or the run's image without a verifier. */
async function verifiedImage<R extends Role>(request: StartRequest<R>): Promise<{ image: string } | { refused: StartOutcome }> {
  const { deps, adapter, namespace, events, subject } = request;
  if (!deps.imageVerifier) return { image: request.run.image };
  const checked = await checkRunImage({
    verifier: deps.imageVerifier,
    kind: adapter.kind as MetricKind,
    namespace,
    image: request.run.image,
    pullSecrets: (request.jobPolicy.imagePullSecrets ?? []).flatMap((secret) => (secret.name ? [secret.name] : [])),
    previous: request.scope.previous?.find((condition) => condition.type === "ImageVerified"),
    events,
    subject,
    metrics: deps.metrics,
  });
  if (checked.refused)
    return {
      refused: {
        action: `waiting: ${checked.refused.condition.reason}`,
        requeueAfterMs: checked.refused.requeueAfterMs,
        wait: { type: "ImageVerified", value: checked.refused.condition },
      },
    };
  if (checked.condition) request.scope.imageVerified = checked.condition;
  // The Job runs the digest whose signature verified, not whatever the tag names when the kubelet pulls.
  return { image: checked.image };
}

/** The Job to build: its owner, operation, attempt, image, hash, credentials, key, policy, guard, plan, restore, force-unlock. Pure. */
function jobRequestOf<R extends Role>(request: StartRequest<R>, image: string): JobRequest {
  const { deps, adapter, object, namespace, name, clusterName, decision, run, inputs, credentials } = request;
  const restoreSet = run.op === "restore" ? request.restoreSet : undefined;
  // Every operation of an encrypting object reads and writes its state with the key: the runtime gets it by reference.
  const encryptionKey = stateEncryptionKey(object.spec.stateEncryption);
  const pullPolicy = object.spec.source.imagePullPolicy;
  return {
    owner: { role: adapter.role, name, namespace, uid: object.metadata.uid, clusterName },
    op: run.op,
    attempt: run.attempt,
    image,
    inputsHash: run.inputsHash,
    ...(run.tick ? { tick: run.tick } : {}),
    ...(credentials?.secretName ? { credentialsSecret: credentials.secretName } : {}),
    ...(encryptionKey ? { stateEncryption: encryptionKey } : {}),
    policy: { ...request.jobPolicy, ...(pullPolicy ? { imagePullPolicy: pullPolicy } : {}) },
    ...(decision.guard
      ? {
          guard: {
            approvalHash: inputs.kind === "ready" ? inputs.rendered.approvalHash : run.inputsHash,
            ...(decision.guard.allowDeletesHash ? { allowDeletesHash: decision.guard.allowDeletesHash } : {}),
          },
        }
      : {}),
    ...(decision.expectPlan ? { expectPlan: decision.expectPlan } : {}),
    runnerEvents: deps.runnerEvents ?? true,
    ...(restoreSet
      ? {
          restore: {
            chunks: restoreSet.names.length,
            resources: restoreSet.resources,
            backupSecrets: restoreSet.names,
            serial: restoreSet.serial,
          },
        }
      : {}),
    ...(request.forceUnlock ? { forceUnlock: request.forceUnlock } : {}),
  };
}

/** A Job slot (`--max-active-jobs`, a cluster's `spec.maxActiveJobs`): reserved for `holder`, or the wait for one. */
function reserveJobSlot<R extends Role>(request: StartRequest<R>, holder: string): StartOutcome | undefined {
  const { deps, adapter, namespace, name, clusterName } = request;
  const { op } = request.run;
  if (!deps.jobSlots) return undefined;
  const clusterLimit = request.terraformCluster?.spec?.maxActiveJobs ?? deps.jobSlots.clusterDefaultLimit;
  const slotOwner = `${namespace}/${adapter.kind}/${name}`;
  const limits = { manager: deps.jobSlots.managerLimit, cluster: clusterLimit };
  const slotWait = jobSlotWait(op, deps.jobSlots.usage(namespace, clusterName, slotOwner), limits);
  if (slotWait) {
    // Woken when a slot frees (oldest waiter first); the requeue is only a backstop, so thousands of waiters do not flood the queue.
    deps.jobSlots.wait?.(slotOwner, { op, namespace, clusterName, clusterLimit });
    return startWait(op, "WaitingForJobSlot", slotWait, deps.jobSlots.wait ? slotWaitBackstopMs : 15_000);
  }
  deps.jobSlots.reserve?.({ owner: slotOwner, namespace, clusterName, job: holder });
  return undefined;
}

/** The run lease, and for a gated operation the cluster operation gate (a cluster's lease and members, a member's cluster Job). */
async function takeLeases<R extends Role>(
  request: StartRequest<R>,
  jobRequest: JobRequest,
  holder: string,
): Promise<StartOutcome | undefined> {
  const { deps, adapter, namespace, name, suffix, clusterName, now } = request;
  const { op } = request.run;
  const lease = {
    namespace,
    holder,
    formerHolder: previousSchemeJobName(jobRequest),
    op,
    owner: { kind: adapter.kind, name, clusterName },
    backstopSeconds: leaseBackstopSeconds(request.jobPolicy.activeDeadlineSeconds ?? defaultActiveDeadlineSeconds),
    now,
  };
  const leaseClients = { client: deps.client, cache: deps.cache };
  const runLease = await acquireLease(leaseClients, { kind: "run", name: runLeaseName(suffix), ...lease });
  if (!runLease.acquired) {
    deps.metrics?.leaseWaits.inc({ kind: adapter.kind, reason: "run_lease" });
    return startWait(op, "WaitingForRunLease", `the run lease ${runLeaseName(suffix)} is ${runLease.message}`);
  }
  const gate = (deps.clusterOperationGate ?? true) && gatedOperations.includes(op) && clusterName !== "";
  if (gate && adapter.role === "cluster") {
    const clusterLease = await acquireLease(leaseClients, { kind: "cluster", name: clusterLeaseName(namespace, clusterName), ...lease });
    if (!clusterLease.acquired) return startWait(op, "WaitingForRunLease", `the cluster lease is ${clusterLease.message}`);
    const members = await liveMemberOperations(deps.client, namespace, clusterName, now);
    if (members.length > 0) {
      deps.metrics?.leaseWaits.inc({ kind: adapter.kind, reason: "machine_operations" });
      const named = members.slice(0, 5).join(", ") + (members.length > 5 ? ` and ${members.length - 5} more` : "");
      return startWait(op, "WaitingForMachineOperations", `waiting for ${members.length} machine or pool Job(s) to finish: ${named}`);
    }
  } else if (gate) {
    const clusterJob = await liveClusterOperation(deps.client, namespace, clusterName, now);
    if (clusterJob) {
      await releaseLease(deps, namespace, runLeaseName(suffix), holder);
      deps.metrics?.leaseWaits.inc({ kind: adapter.kind, reason: "cluster_operation" });
      return startWait(
        op,
        "WaitingForClusterOperation",
        `the cluster's Job ${clusterJob} is changing the cluster; this ${op} starts after it`,
      );
    }
  }
  return undefined;
}

/** What a Job carries from its pass: remediation, the interrupted or failed apply it follows, its approver, held exports. Pure. */
function jobAnnotations<R extends Role>(request: StartRequest<R>): Record<string, string> {
  const { adapter, object, decision, inputs, durable } = request;
  const { op } = request.run;
  const notes: Record<string, string> = {};
  if (decision.remediation) notes[annotations.driftRemediation] = "true";
  if (op === "apply" && adapter.role !== "machine" && durable?.interruptedApply)
    notes[annotations.afterInterruptedApply] = durable.interruptedApply;
  if (op === "apply" && request.afterFailedApply) notes[annotations.afterFailedApply] = request.afterFailedApply;
  // Who approved the plan stays on record with the Job that applies it: the object's annotation goes once it is applied.
  const approver = object.metadata.annotations?.[annotations.planApprovedBy];
  if (decision.expectPlan && approver && object.metadata.annotations?.[annotations.approvePlan] === decision.expectPlan)
    notes[annotations.planApprovedBy] = approver;
  if (op === "apply" && inputs.kind === "ready" && inputs.rendered.exportsHash) {
    notes[annotations.clusterOutputsHash] = inputs.rendered.exportsHash;
    // A guarded pool apply names the hash its approval must give; a held one that it renders the applied exports.
    if (decision.guard) notes[annotations.approvalHash] = inputs.rendered.approvalHash;
    if (inputs.rendered.held) notes[annotations.heldClusterOutputs] = "true";
  }
  return notes;
}

/** Creates the Job (an existing one of its name is adopted); a refusal by a quota or LimitRange is a wait that names it. */
async function createJob<R extends Role>(
  request: StartRequest<R>,
  body: V1Job,
  holder: string,
): Promise<V1Job | { refused: StartOutcome }> {
  const { deps, namespace, suffix } = request;
  const created = await deps.client.create(builtinTypes.job, namespace, body).catch(async (error) => {
    // Created by an earlier pass whose answer was lost: the Job the cache may not have yet, read live.
    if (isConflict(error)) return (await passClient(deps).live.get<V1Job>(builtinTypes.job, namespace, holder)) ?? Promise.reject(error);
    // A refused create proves no Job exists: the lease goes back at once.
    const code = httpStatusOf(error);
    if (code !== undefined && code >= 400 && code < 500)
      await releaseLease(deps, namespace, runLeaseName(suffix), holder).catch(() => undefined);
    // A quota or LimitRange of the namespace refused it: a wait that names it, tried again with backoff.
    const refusal = quotaRefusalOf(error);
    if (refusal) return { refused: refusal };
    throw error;
  });
  if (!("refused" in created)) return created;
  const { op } = request.run;
  const previous = request.scope.previous?.find((c) => c.type === waitConditionType(op));
  const retryMs = quotaRetryMs(previousQuotaRetryMs(previous));
  return { refused: startWait(op, "JobQuotaExceeded", quotaRefusalMessage(created.refused, holder, retryMs), retryMs) };
}

/** The events and counts of a Job started: JobCreated, a destroy of other inputs, the start's transitions, a force-unlock. */
function recordJobStart<R extends Role>(request: StartRequest<R>, holder: string, image: string): void {
  const { deps, adapter, decision, run, durable, events, subject } = request;
  const { op, attempt } = run;
  const note = jobCreatedNote({ op, attempt, image, job: holder, why: decision.reason, fallbackFrom: run.fallbackFrom });
  void events.record(subject, "JobCreated", note);
  if (run.destroyInputsMismatch)
    void events.record(
      subject,
      "DestroyInputsMismatch",
      destroyInputsMismatchNote(holder, run.destroyInputsMismatch, request.afterFailedApply),
    );
  const start = jobStartEvents({
    op,
    job: holder,
    decision,
    inputsHash: run.inputsHash,
    startedApplyHash: durable?.inputsHash,
    appliedHash: request.appliedInputsHash,
  });
  for (const event of start.events) void events.record(subject, event.reason, event.note);
  if (start.inputsHashChanged) deps.metrics?.inputsHashChanges.inc({ kind: adapter.kind });
  if (request.forceUnlock) {
    void events.record(
      subject,
      "ForceUnlocked",
      `the state lock ${request.forceUnlock} left by this object's runner that is gone is released by Job ${holder} ` +
        `(force-unlock before its ${op})`,
    );
    deps.metrics?.lockForceUnlocks.inc({ kind: adapter.kind });
  }
}

/** Takes the leases and creates the Job (with the durable inputs of an apply and its per-run Secret). */
export async function startOperation<R extends Role>(request: StartRequest<R>): Promise<StartOutcome> {
  const { deps, adapter, object, namespace, name, decision, run, durable, credentials } = request;
  const { op, attempt } = run;
  const root = rootForOperation(op, request.inputs, durable, adapter.role);
  const held = precondition(request, root);
  if (held || !root) return held!;
  const verified = await verifiedImage(request);
  if ("refused" in verified) return verified.refused;
  const { image } = verified;
  if (run.digestUnknown)
    void request.events.record(
      request.subject,
      "DigestUnknown",
      `no digest pinned for ${image} yet: Job ${op} runs the image by its reference`,
    );
  const jobRequest = jobRequestOf(request, image);
  const holder = jobName(jobRequest);
  const waiting = reserveJobSlot(request, holder) ?? (await takeLeases(request, jobRequest, holder));
  if (waiting) return waiting;
  // clusterctl move must not copy an object while its Job runs: blocked (persisted) before the Job exists.
  if (object.metadata.annotations?.[annotations.blockMove] === undefined)
    await patchObject(request, { metadata: { annotations: { [annotations.blockMove]: "true" } } });
  if (op === "apply") {
    const identity = credentials?.identity ? { identity: credentials.identity } : {};
    const record = { root, inputsHash: run.inputsHash, image: object.spec.source.image, ...identity };
    await writeDurableInputs(deps.client, { role: adapter.role, namespace, name, uid: object.metadata.uid }, record, durable);
  }
  const body = buildJob(jobRequest, deps.jobEnvironment ?? defaultJobEnvironment);
  const notes = jobAnnotations(request);
  if (Object.keys(notes).length > 0) body.metadata!.annotations = { ...body.metadata!.annotations, ...notes };
  const created = await createJob(request, body, holder);
  if ("refused" in created) return created.refused;
  await createRunSecret(deps.client, namespace, created, root);
  recordJobStart(request, holder, image);
  // Looked at again as a running Job is (its image pull, a Pod stuck without its per-run Secret): no pass comes from its appearing.
  return {
    action: `started ${op} (${decision.reason}) as ${holder}`,
    requeueAfterMs: activeJobRequeueMs,
    job: { name: holder, op, attempt, job: created },
  };
}
