/**
 * The act step of a pass: it executes the decision's operation. It takes the run lease (and the
 * cluster operation gate), a Job slot, writes the durable inputs of an apply, and creates the Job
 * and its per-run Secret; or it says which wait holds the operation back. Every write is idempotent:
 * Job names are deterministic, an existing Job is adopted and a lease already held by that Job is ours.
 */
import type { V1Job } from "@kubernetes/client-node";
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
import { createRunSecret, gateRequeueMs, longRequeueMs, patchObject, rootForOperation, type Pass } from "./workspace-phases.js";
import type { InputsOutcome, JobCredentials } from "./types.js";
import { httpStatusOf, isConflict } from "../runtime/api-errors.js";
import type { MetricKind } from "../metrics/captf-metrics.js";
import { checkRunImage } from "../signatures/run-image-check.js";
import { builtinTypes } from "../runtime/builtin-types.js";

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

/** Takes the leases and creates the Job (with the durable inputs of an apply and its per-run Secret). */
export async function startOperation<R extends Role>(request: StartRequest<R>): Promise<StartOutcome> {
  const { deps, adapter, object, namespace, name, suffix, clusterName, decision, run, inputs, durable, credentials, now, subject, events } =
    request;
  const { op } = run;
  const conditionType = waitConditionType(op);
  const wait = (reason: string, message: string, requeueAfterMs = gateRequeueMs): StartOutcome => ({
    action: `waiting: ${reason}`,
    requeueAfterMs,
    wait: { type: conditionType, value: { status: terminalWaits.includes(reason) ? "False" : "Unknown", reason, message } },
  });

  if ((op === "apply" || op === "plan") && inputs.kind !== "ready") {
    if (inputs.kind === "pending")
      return { action: `waiting: ${inputs.reason}`, requeueAfterMs: inputs.reason === "InputsTooLarge" ? longRequeueMs : gateRequeueMs };
    return { action: "waiting: WaitingForOwner", requeueAfterMs: gateRequeueMs };
  }
  if (credentials && !credentials.ready) {
    const why = credentials.conditions.find(({ value }) => value.status !== "True");
    return wait(
      "IdentityNotAllowed",
      why?.value.message ?? "the object's credentials are not ready",
      credentials.requeueAfterMs ?? gateRequeueMs,
    );
  }
  const root = rootForOperation(op, inputs, durable, adapter.role);
  if (!root) {
    if (op === "destroy")
      return wait(
        "DestroyFailed",
        `the durable inputs Secret of this ${adapter.kind} is missing: restore it (or its state) before it can be destroyed`,
        longRequeueMs,
      );
    return wait(
      "DurableInputsMissing",
      `the durable inputs Secret of this ${adapter.kind} is missing: the next apply writes it`,
      longRequeueMs,
    );
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
  const policy = request.jobPolicy;
  const { attempt, inputsHash: hash, tick } = run;
  let image = run.image;
  if (deps.imageVerifier) {
    const checked = await checkRunImage({
      verifier: deps.imageVerifier,
      kind: adapter.kind as MetricKind,
      namespace,
      image,
      pullSecrets: (policy.imagePullSecrets ?? []).flatMap((secret) => (secret.name ? [secret.name] : [])),
      previous: request.scope.previous?.find((condition) => condition.type === "ImageVerified"),
      events,
      subject,
      metrics: deps.metrics,
    });
    if (checked.refused)
      return {
        action: `waiting: ${checked.refused.condition.reason}`,
        requeueAfterMs: checked.refused.requeueAfterMs,
        wait: { type: "ImageVerified", value: checked.refused.condition },
      };
    // The Job runs the digest whose signature verified, not whatever the tag names when the kubelet pulls.
    image = checked.image;
    if (checked.condition) request.scope.imageVerified = checked.condition;
  }
  const restoreSet = op === "restore" ? request.restoreSet : undefined;
  if (run.digestUnknown)
    void events.record(subject, "DigestUnknown", `no digest pinned for ${image} yet: Job ${op} runs the image by its reference`);
  // Every operation of an encrypting object reads and writes its state with the key: the runtime gets it by reference.
  const encryptionKey = stateEncryptionKey(object.spec.stateEncryption);
  const jobRequest: JobRequest = {
    owner: { role: adapter.role, name, namespace, uid: object.metadata.uid, clusterName },
    op,
    attempt,
    image,
    inputsHash: hash,
    ...(tick ? { tick } : {}),
    ...(credentials?.secretName ? { credentialsSecret: credentials.secretName } : {}),
    ...(encryptionKey ? { stateEncryption: encryptionKey } : {}),
    policy: { ...policy, ...(object.spec.source.imagePullPolicy ? { imagePullPolicy: object.spec.source.imagePullPolicy } : {}) },
    ...(decision.guard
      ? {
          guard: {
            approvalHash: inputs.kind === "ready" ? inputs.rendered.approvalHash : hash,
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
  const holder = jobName(jobRequest);
  if (deps.jobSlots) {
    const clusterLimit = request.terraformCluster?.spec?.maxActiveJobs ?? deps.jobSlots.clusterDefaultLimit;
    const slotOwner = `${namespace}/${adapter.kind}/${name}`;
    const slotWait = jobSlotWait(op, deps.jobSlots.usage(namespace, clusterName, slotOwner), {
      manager: deps.jobSlots.managerLimit,
      cluster: clusterLimit,
    });
    if (slotWait) {
      // Woken when a slot frees (oldest waiter first); the requeue is only a backstop, so thousands of waiters do not flood the queue.
      deps.jobSlots.wait?.(slotOwner, { op, namespace, clusterName, clusterLimit });
      return wait("WaitingForJobSlot", slotWait, deps.jobSlots.wait ? slotWaitBackstopMs : 15_000);
    }
    deps.jobSlots.reserve?.({ owner: slotOwner, namespace, clusterName, job: holder });
  }
  const owner = { kind: adapter.kind, name, clusterName };
  const backstopSeconds = leaseBackstopSeconds(policy.activeDeadlineSeconds ?? defaultActiveDeadlineSeconds);
  const leaseClients = { client: deps.client, cache: deps.cache };
  const formerHolder = previousSchemeJobName(jobRequest);
  const runLease = await acquireLease(leaseClients, {
    kind: "run",
    name: runLeaseName(suffix),
    namespace,
    holder,
    formerHolder,
    op,
    owner,
    backstopSeconds,
    now,
  });
  if (!runLease.acquired) {
    deps.metrics?.leaseWaits.inc({ kind: adapter.kind, reason: "run_lease" });
    return wait("WaitingForRunLease", `the run lease ${runLeaseName(suffix)} is ${runLease.message}`);
  }
  const gate = (deps.clusterOperationGate ?? true) && gatedOperations.includes(op) && clusterName !== "";
  if (gate && adapter.role === "cluster") {
    const clusterLease = await acquireLease(leaseClients, {
      kind: "cluster",
      name: clusterLeaseName(namespace, clusterName),
      namespace,
      holder,
      formerHolder,
      op,
      owner,
      backstopSeconds,
      now,
    });
    if (!clusterLease.acquired) return wait("WaitingForRunLease", `the cluster lease is ${clusterLease.message}`);
    const members = await liveMemberOperations(deps.client, namespace, clusterName, now);
    if (members.length > 0) {
      deps.metrics?.leaseWaits.inc({ kind: adapter.kind, reason: "machine_operations" });
      const named = members.slice(0, 5).join(", ") + (members.length > 5 ? ` and ${members.length - 5} more` : "");
      return wait("WaitingForMachineOperations", `waiting for ${members.length} machine or pool Job(s) to finish: ${named}`);
    }
  } else if (gate) {
    const clusterJob = await liveClusterOperation(deps.client, namespace, clusterName, now);
    if (clusterJob) {
      await releaseLease(deps, namespace, runLeaseName(suffix), holder);
      deps.metrics?.leaseWaits.inc({ kind: adapter.kind, reason: "cluster_operation" });
      return wait("WaitingForClusterOperation", `the cluster's Job ${clusterJob} is changing the cluster; this ${op} starts after it`);
    }
  }

  // clusterctl move must not copy an object while its Job runs: blocked (persisted) before the Job exists.
  if (object.metadata.annotations?.[annotations.blockMove] === undefined) {
    await patchObject(request, { metadata: { annotations: { [annotations.blockMove]: "true" } } });
  }
  if (op === "apply") {
    await writeDurableInputs(
      deps.client,
      { role: adapter.role, namespace, name, uid: object.metadata.uid },
      { root, inputsHash: hash, image: object.spec.source.image, ...(credentials?.identity ? { identity: credentials.identity } : {}) },
      durable,
    );
  }
  const body = buildJob(jobRequest, deps.jobEnvironment ?? defaultJobEnvironment);
  if (decision.remediation) body.metadata!.annotations = { ...body.metadata!.annotations, [annotations.driftRemediation]: "true" };
  if (op === "apply" && adapter.role !== "machine" && durable?.interruptedApply)
    body.metadata!.annotations = { ...body.metadata!.annotations, [annotations.afterInterruptedApply]: durable.interruptedApply };
  if (op === "apply" && request.afterFailedApply)
    body.metadata!.annotations = { ...body.metadata!.annotations, [annotations.afterFailedApply]: request.afterFailedApply };
  // Who approved the plan stays on record with the Job that applies it: the object's annotation goes once it is applied.
  const approver = object.metadata.annotations?.[annotations.planApprovedBy];
  if (decision.expectPlan && approver && object.metadata.annotations?.[annotations.approvePlan] === decision.expectPlan)
    body.metadata!.annotations = { ...body.metadata!.annotations, [annotations.planApprovedBy]: approver };
  if (op === "apply" && inputs.kind === "ready" && inputs.rendered.exportsHash) {
    body.metadata!.annotations = {
      ...body.metadata!.annotations,
      [annotations.clusterOutputsHash]: inputs.rendered.exportsHash,
      // A guarded pool apply names the hash its approval must give; a held one that it renders the applied exports.
      ...(decision.guard ? { [annotations.approvalHash]: inputs.rendered.approvalHash } : {}),
      ...(inputs.rendered.held ? { [annotations.heldClusterOutputs]: "true" } : {}),
    };
  }
  const created = await deps.client.create(builtinTypes.job, namespace, body).catch(async (error) => {
    if (isConflict(error)) return deps.client.get<V1Job>(builtinTypes.job, namespace, holder);
    // A refused create proves no Job exists: the lease goes back at once.
    const code = httpStatusOf(error);
    if (code !== undefined && code >= 400 && code < 500)
      await releaseLease(deps, namespace, runLeaseName(suffix), holder).catch(() => undefined);
    // A quota or LimitRange of the namespace refused it: a wait that names it, tried again with backoff.
    const refusal = quotaRefusalOf(error);
    if (refusal) return { refused: refusal };
    throw error;
  });
  if ("refused" in created) {
    const retryMs = quotaRetryMs(previousQuotaRetryMs(request.scope.previous?.find((c) => c.type === conditionType)));
    return wait("JobQuotaExceeded", quotaRefusalMessage(created.refused, holder, retryMs), retryMs);
  }
  await createRunSecret(deps.client, namespace, created, root);
  void events.record(
    subject,
    "JobCreated",
    jobCreatedNote({ op, attempt, image, job: holder, why: decision.reason, fallbackFrom: run.fallbackFrom }),
  );
  if (run.destroyInputsMismatch)
    void events.record(
      subject,
      "DestroyInputsMismatch",
      destroyInputsMismatchNote(holder, run.destroyInputsMismatch, request.afterFailedApply),
    );
  const start = jobStartEvents({ op, job: holder, decision, inputsHash: hash, previousApplyHash: durable?.inputsHash });
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
  // Looked at again as a running Job is (its image pull, a Pod stuck without its per-run Secret): no pass comes from its appearing.
  return {
    action: `started ${op} (${decision.reason}) as ${holder}`,
    requeueAfterMs: activeJobRequeueMs,
    job: { name: holder, op, attempt, job: created },
  };
}
