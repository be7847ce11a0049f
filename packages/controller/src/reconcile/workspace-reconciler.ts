import { PatchStrategy, setHeaderOptions, type BatchV1Api, type CoreV1Api, type CustomObjectsApi, type V1Job, type V1Pod } from "@kubernetes/client-node";
import { decodeOutputs, type OutputsDecoding, type Role, type RoleInputs } from "@captf/contract";
import { annotations, apiGroup, apiVersion, finalizers, labels } from "@captf/contract/api";
import { parseRunResult, type RunResult } from "@captf/contract/run-result";
import { inputsHash, renderBackendRoot, renderGeneratedRoot, stateSecretName, stateSecretSuffix } from "@captf/render";
import { buildJob, defaultJobEnvironment, runSecretName, type JobEnvironment } from "../jobs/build-job.js";
import { infrastructureHealthy, isProvisioned, type ConditionValue } from "../kinds/map-outputs.js";
import type { InputsResult, ObjectMeta } from "../kinds/render-inputs.js";
import { readState } from "../state/read-state.js";
import { decideOperation, type Decision, type FinishedJob, type Operation } from "./decide-operation.js";

/**
 * One reconcile pass of a Terraform* object, shared by every kind: observe (live reads), decide
 * (decideOperation), act (at most one Job and its per-run Secret), record (one status patch,
 * then mark the finished Jobs bookkept). A kind adapter says how to build its inputs and how its
 * outputs map onto Cluster API fields. Every write is idempotent, so a pass cut short anywhere
 * converges on the next: Job names are deterministic and an existing Job is adopted.
 */

export interface ReconcilerDeps {
  core: CoreV1Api;
  batch: BatchV1Api;
  custom: CustomObjectsApi;
  jobEnvironment?: JobEnvironment;
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
    resourceVersion?: string;
    deletionTimestamp?: string;
    finalizers?: string[];
    ownerReferences?: { kind: string; name: string; apiVersion: string }[];
    creationTimestamp?: string;
  };
  spec: { source: { image: string }; drift?: { intervalSeconds?: number; action?: "Report" | "Remediate" }; applyPolicy?: "Automatic" | "Manual"; [key: string]: unknown };
  status?: { initialization?: { provisioned?: boolean }; [key: string]: unknown };
}

/** What a kind adds to the shared pass. */
export interface KindAdapter<R extends Role> {
  role: R;
  kind: keyof typeof finalizers;
  plural: string;
  /** The Cluster API owner and the inputs, or why they cannot be built yet. Undefined owner: not owned yet. */
  observeInputs(deps: ReconcilerDeps, object: WorkspaceObject): Promise<{ clusterName: string; inputs: InputsResult<RoleInputs[R]> } | undefined>;
  /** Also publish provisioning as the v1beta1 `status.ready` flag Cluster API still reads for this kind. */
  publishesReady?: boolean;
  /** Spec and status fields from valid outputs (providerID, addresses, failureDomains, endpoint). */
  contractFields(object: WorkspaceObject, decoding: OutputsDecoding<R>): { spec?: Record<string, unknown>; annotations?: Record<string, string>; status?: Record<string, unknown> };
}

const gateRequeueMs = 30_000;

export function isNotFound(error: unknown): boolean {
  return (error as { code?: number }).code === 404;
}

function isAlreadyExists(error: unknown): boolean {
  return (error as { code?: number }).code === 409;
}

function ignoreNotFound(error: unknown): undefined {
  if (isNotFound(error)) return undefined;
  throw error;
}

function condition(type: string, value: ConditionValue, now: number) {
  return { type, status: value.status, reason: value.reason, message: value.message ?? "", lastTransitionTime: new Date(now).toISOString().replace(/\.\d+Z$/, "Z") };
}

function jobOutcome(job: V1Job, result: RunResult | undefined): FinishedJob["outcome"] | undefined {
  const done = job.status?.conditions?.find((c) => (c.type === "Complete" || c.type === "Failed") && c.status === "True");
  if (!done) return undefined;
  if (done.type === "Complete") return "succeeded";
  const kind = result?.error?.kind;
  if (kind === "blocked" || kind === "plan-changed" || kind === "interrupted") return kind;
  return "failed";
}

async function terminationMessage(core: CoreV1Api, namespace: string, job: string): Promise<string | undefined> {
  const pods = await core.listNamespacedPod({ namespace, labelSelector: `job-name=${job}` });
  const pod: V1Pod | undefined = pods.items[0];
  return pod?.status?.containerStatuses?.find((status) => status.name === "source")?.state?.terminated?.message;
}

export function mergePatchOptions() {
  return setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
}

/** Runs one pass for the object namespace/name of the adapter's kind. */
export async function reconcileWorkspace<R extends Role>(deps: ReconcilerDeps, adapter: KindAdapter<R>, namespace: string, name: string): Promise<PassResult> {
  const now = (deps.now ?? Date.now)();
  const { core, batch, custom } = deps;
  const objectApi = { group: apiGroup, version: apiVersion, namespace, plural: adapter.plural, name };
  const object = (await custom.getNamespacedCustomObject(objectApi).catch(ignoreNotFound)) as WorkspaceObject | undefined;
  if (!object) return { action: "gone" };
  const mergePatch = (body: unknown) => custom.patchNamespacedCustomObject({ ...objectApi, body }, mergePatchOptions());
  const finalizer = finalizers[adapter.kind];
  const deleting = Boolean(object.metadata.deletionTimestamp);

  // The finalizer goes on first, in its own write, so a destroy can never be skipped.
  if (!deleting && !object.metadata.finalizers?.includes(finalizer)) {
    await mergePatch({ metadata: { finalizers: [...(object.metadata.finalizers ?? []), finalizer], resourceVersion: object.metadata.resourceVersion } });
    return { action: "added finalizer", requeueAfterMs: 0 };
  }

  const conditions: ReturnType<typeof condition>[] = [];
  const status: Record<string, unknown> = {};
  const suffix = stateSecretSuffix({ role: adapter.role, namespace, name });
  status.stateSecretSuffix = suffix;

  // Observe: owners and inputs.
  const observedInputs = await adapter.observeInputs(deps, object);
  if (!observedInputs && !deleting) {
    conditions.push(condition("DependenciesReady", { status: "Unknown", reason: "WaitingForOwner", message: `waiting for a Cluster API owner of this ${adapter.kind}` }, now));
    await patchStatus(deps, adapter, namespace, name, { ...status, conditions });
    return { action: "waiting for owner", requeueAfterMs: gateRequeueMs };
  }
  const inputs = observedInputs?.inputs;
  const clusterName = observedInputs?.clusterName ?? object.metadata.labels?.[labels.clusterName] ?? "";
  if (inputs?.pending) conditions.push(condition("DependenciesReady", { status: "Unknown", reason: inputs.reason, message: inputs.message }, now));
  else if (inputs) conditions.push(condition("DependenciesReady", { status: "True", reason: "DependenciesReady" }, now));

  // Observe: Jobs and their results; bookkeeping of the finished ones.
  const jobs = (await batch.listNamespacedJob({ namespace, labelSelector: `${labels.ownerKind}=${adapter.kind},${labels.ownerName}=${name}` })).items;
  const finished: FinishedJob[] = [];
  const toMark: V1Job[] = [];
  let newestResult: { job: V1Job; result: RunResult; finishedAt: number } | undefined;
  let activeJob: { name: string; op: Operation } | undefined;
  for (const job of jobs) {
    const op = job.metadata?.labels?.[labels.op] as Operation;
    const reading = parseRunResult(await terminationMessage(core, namespace, job.metadata!.name!));
    const result = reading.ok && "steps" in reading.result ? (reading.result as RunResult) : undefined;
    const outcome = jobOutcome(job, result);
    if (!outcome) {
      activeJob = { name: job.metadata!.name!, op };
      continue;
    }
    const finishedAt = Date.parse(String(job.status?.completionTime ?? job.status?.conditions?.at(-1)?.lastTransitionTime ?? now));
    const jobHash = job.metadata?.annotations?.[annotations.inputsHash];
    finished.push({ op, outcome, finishedAt, ...(jobHash ? { inputsHash: jobHash } : {}) });
    if (result && (!newestResult || finishedAt >= newestResult.finishedAt)) newestResult = { job, result, finishedAt };
    if (job.metadata?.annotations?.[annotations.bookkept] !== "true") {
      toMark.push(job);
      // A successful apply adopts the state: its inputs hash goes on the state Secret.
      if (op === "apply" && outcome === "succeeded" && jobHash) {
        await core.patchNamespacedSecret({ name: stateSecretName(suffix), namespace, body: { metadata: { annotations: { [annotations.inputsHash]: jobHash } } } }, mergePatchOptions()).catch(ignoreNotFound);
      }
      await core.deleteNamespacedSecret({ name: runSecretName(job.metadata!.name!), namespace }).catch(ignoreNotFound);
    }
  }

  const state = await readState(core, namespace, suffix);
  const currentHash = inputs && !inputs.pending ? inputsHash({ role: adapter.role, image: object.spec.source.image, inputs: inputs.inputs }) : undefined;

  // A pass killed between creating a Job and its per-run Secret left the Job waiting for its
  // volume: give it the Secret when the inputs still render the same hash, else delete the Job.
  if (activeJob) {
    const job = jobs.find((candidate) => candidate.metadata?.name === activeJob!.name)!;
    const secretName = runSecretName(activeJob.name);
    const present = await core.readNamespacedSecret({ name: secretName, namespace }).then(() => true, (error) => (isNotFound(error) ? false : Promise.reject(error)));
    if (!present) {
      const jobHash = job.metadata?.annotations?.[annotations.inputsHash];
      if (inputs && !inputs.pending && (jobHash === undefined || jobHash === currentHash)) {
        await createRunSecret(core, namespace, job, { ...renderGeneratedRoot(adapter.role, inputs.inputs) });
      } else {
        await batch.deleteNamespacedJob({ name: activeJob.name, namespace, propagationPolicy: "Background" }).catch(ignoreNotFound);
        return { action: `deleted stuck Job ${activeJob.name}: its per-run Secret is missing and the inputs changed`, requeueAfterMs: 0 };
      }
    }
  }
  const drift = object.spec.drift ?? {};

  // Decide.
  const decision: Decision = decideOperation({
    role: adapter.role,
    uid: object.metadata.uid,
    now,
    createdAt: Date.parse(object.metadata.creationTimestamp ?? new Date(now).toISOString()),
    deleting,
    ...(activeJob ? { activeJob } : {}),
    state: state.kind === "absent" ? { kind: "absent" } : state.kind === "unreadable" ? { kind: "unreadable" } : { kind: "present", ...(state.state.inputsHash ? { inputsHash: state.state.inputsHash } : {}) },
    ...(currentHash ? { currentInputsHash: currentHash } : {}),
    ...(object.spec.applyPolicy ? { applyPolicy: object.spec.applyPolicy } : {}),
    jobs: finished,
    drift: { intervalSeconds: drift.intervalSeconds ?? 0, action: drift.action ?? "Report", detected: false },
    health: { pendingRefreshes: 0, appliedReadingDefinite: true },
  });
  if (state.kind === "unreadable") conditions.push(condition("StateReadable", { status: "False", reason: state.reason, message: state.message }, now));

  // Act.
  let action = decision.reason;
  if (decision.dropFinalizer) {
    if (decision.cleanupState) {
      const secrets = await core.listNamespacedSecret({ namespace, labelSelector: `tfstateSecretSuffix=${suffix}` });
      for (const secret of secrets.items) await core.deleteNamespacedSecret({ name: secret.metadata!.name!, namespace }).catch(ignoreNotFound);
    }
    await mergePatch({ metadata: { finalizers: (object.metadata.finalizers ?? []).filter((f) => f !== finalizer), resourceVersion: object.metadata.resourceVersion } });
    return { action: "removed finalizer" };
  }
  if (decision.op) {
    const needsInputs = decision.op === "apply" || decision.op === "plan";
    if (needsInputs && (!inputs || inputs.pending)) {
      action = `waiting: ${inputs?.pending ? inputs.reason : "WaitingForOwner"}`;
    } else {
      const attempt = 1 + Math.max(0, ...jobs.filter((job) => job.metadata?.labels?.[labels.op] === decision.op).map((job) => Number(job.metadata?.labels?.[labels.attempt] ?? 0)));
      // Every op but restore runs in the generated root of the current inputs, when they can be built.
      const root = inputs && !inputs.pending ? renderGeneratedRoot(adapter.role, inputs.inputs) : renderBackendRoot();
      const hash = currentHash ?? (state.kind === "ok" ? state.state.inputsHash : undefined) ?? "h2:none";
      const job = buildJob(
        {
          owner: { role: adapter.role, name, namespace, uid: object.metadata.uid, clusterName },
          op: decision.op,
          attempt,
          image: object.spec.source.image,
          inputsHash: hash,
          ...(decision.guard ? { guard: { approvalHash: hash, ...(decision.guard.allowDeletesHash ? { allowDeletesHash: decision.guard.allowDeletesHash } : {}) } } : {}),
          ...(decision.expectPlan ? { expectPlan: decision.expectPlan } : {}),
        },
        deps.jobEnvironment ?? defaultJobEnvironment,
      );
      const created = await batch.createNamespacedJob({ namespace, body: job }).catch(async (error) => {
        if (isAlreadyExists(error)) return batch.readNamespacedJob({ name: job.metadata!.name!, namespace });
        throw error;
      });
      await createRunSecret(core, namespace, created, { ...root });
      action = `started ${decision.op} (${decision.reason}) as ${job.metadata!.name}`;
      activeJob = { name: job.metadata!.name!, op: decision.op };
      status.activeJob = { name: job.metadata!.name, operation: decision.op, attempt };
    }
  }
  if (!status.activeJob) status.activeJob = activeJob ? { name: activeJob.name, operation: activeJob.op, attempt: 1 } : null; // a merge patch keeps a field unless nulled

  // Record: outputs onto the contract fields, conditions, one status patch.
  let provisioned = object.status?.initialization?.provisioned === true;
  if (state.kind === "ok") {
    const decoding = decodeOutputs(adapter.role, state.state.outputs, inputs && !inputs.pending ? inputs.inputs : undefined, { fromState: true });
    provisioned ||= isProvisioned(adapter.role, Boolean(state.state.inputsHash), decoding);
    const fields = adapter.contractFields(object, decoding);
    Object.assign(status, fields.status);
    if (fields.spec && Object.keys(fields.spec).length > 0) await mergePatch({ spec: fields.spec, ...(fields.annotations ? { metadata: { annotations: fields.annotations } } : {}) });
    if (state.state.serial >= 1) status.observedStateSerial = state.state.serial;
    conditions.push(condition("OutputsValid", { status: decoding.status, reason: decoding.reason, ...(decoding.problems.length ? { message: decoding.problems.join("; ").slice(0, 1024) } : {}) }, now));
    const health = decoding.outputs.health.state === "ok" ? decoding.outputs.health.value : undefined;
    conditions.push(condition("InfrastructureHealthy", infrastructureHealthy(health, { applyStarted: true, provisioned }), now));
  }
  if (newestResult) {
    const { job, result } = newestResult;
    status.lastRun = {
      job: job.metadata!.name,
      operation: job.metadata?.labels?.[labels.op],
      ...(result.steps.length ? { steps: result.steps.slice(0, 16).map((step) => ({ name: step.name, exitCode: step.exit, durationMilliseconds: Math.round(step.seconds * 1000) })) } : {}),
      ...(result.error ? { error: { kind: result.error.kind, ...(result.error.step ? { step: result.error.step } : {}), ...(result.error.summary ? { summary: result.error.summary } : {}) } } : {}),
    };
    const op = job.metadata?.labels?.[labels.op];
    if (op === "apply" || op === "destroy" || op === "plan") {
      const verb = op === "destroy" ? "Destroy" : "Apply";
      const value: ConditionValue = !result.error
        ? { status: "True", reason: `${verb}Succeeded` }
        : result.error.kind === "blocked"
          ? { status: "False", reason: "DestructivePlanBlocked", message: result.error.summary }
          : { status: "False", reason: `${verb}Failed`, message: result.error.summary };
      conditions.push(condition("ApplyJobSucceeded", value, now));
    }
  }
  if (provisioned) status.initialization = { provisioned: true };
  if (adapter.publishesReady) status.ready = provisioned;
  conditions.push(condition("Ready", provisioned ? { status: "True", reason: "Ready" } : { status: "False", reason: "NotReady", message: action }, now));
  await patchStatus(deps, adapter, namespace, name, { ...status, conditions });

  // Only after the status patch: the finished Jobs are recorded.
  for (const job of toMark) {
    await batch.patchNamespacedJob({ name: job.metadata!.name!, namespace, body: { metadata: { annotations: { [annotations.bookkept]: "true" } } } }, mergePatchOptions()).catch(ignoreNotFound);
  }
  return { action, ...(decision.requeueAfterMs !== undefined ? { requeueAfterMs: decision.requeueAfterMs } : {}) };
}

/** The per-run Secret holding the rendered root, owned by its Job so it goes with it. */
async function createRunSecret(core: CoreV1Api, namespace: string, job: V1Job, files: Record<string, string>): Promise<void> {
  await core
    .createNamespacedSecret({
      namespace,
      body: {
        metadata: { name: runSecretName(job.metadata!.name!), labels: { [labels.managed]: "true" }, ownerReferences: [{ apiVersion: "batch/v1", kind: "Job", name: job.metadata!.name!, uid: job.metadata!.uid!, controller: true }] },
        stringData: files,
      },
    })
    .catch((error) => (isAlreadyExists(error) ? undefined : Promise.reject(error)));
}

async function patchStatus(deps: ReconcilerDeps, adapter: { plural: string }, namespace: string, name: string, status: Record<string, unknown>): Promise<void> {
  const clean = Object.fromEntries(Object.entries(status).filter(([, value]) => value !== undefined));
  await deps.custom.patchNamespacedCustomObjectStatus({ group: apiGroup, version: apiVersion, namespace, plural: adapter.plural, name, body: { status: clean } }, mergePatchOptions());
}
