import { PatchStrategy, setHeaderOptions, type BatchV1Api, type CoreV1Api, type CustomObjectsApi, type V1Job, type V1Pod } from "@kubernetes/client-node";
import { decodeOutputs, type JsonValue } from "@captf/contract";
import { annotations, apiGroup, apiVersion, finalizers, labels } from "@captf/contract/api";
import { parseRunResult, type RunResult } from "@captf/contract/run-result";
import { inputsHash, renderGeneratedRoot, stateSecretName, stateSecretSuffix } from "@captf/render";
import { buildJob, defaultJobEnvironment, runSecretName, type JobEnvironment } from "../jobs/build-job.js";
import { infrastructureHealthy, isProvisioned, machineContractFields, type ConditionValue } from "../kinds/map-outputs.js";
import { machineInputs, type ObjectMeta } from "../kinds/render-inputs.js";
import { readState } from "../state/read-state.js";
import { decideOperation, type FinishedJob, type Operation } from "./decide-operation.js";

/**
 * One reconcile pass of a TerraformMachine: observe (live reads), decide (decideOperation),
 * act (at most one Job and its per-run Secret), record (one status patch, then mark the
 * finished Jobs bookkept). Every write is idempotent, so a pass cut short anywhere converges
 * on the next: Job names are deterministic and an existing Job is adopted.
 */

export interface MachineReconcilerDeps {
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

const plural = "terraformmachines";
const gateRequeueMs = 30_000;

interface TerraformMachine {
  metadata: ObjectMeta & { uid: string; resourceVersion?: string; deletionTimestamp?: string; finalizers?: string[]; ownerReferences?: { kind: string; name: string; apiVersion: string }[]; generation?: number; creationTimestamp?: string };
  spec: { source: { image: string }; providerID?: string; drift?: { intervalSeconds?: number } };
  status?: { initialization?: { provisioned?: boolean }; lastRefresh?: string; conditions?: unknown[] };
}

function isNotFound(error: unknown): boolean {
  return (error as { code?: number }).code === 404;
}

function condition(type: string, value: ConditionValue, now: number, generation?: number) {
  return { type, status: value.status, reason: value.reason, message: value.message ?? "", lastTransitionTime: new Date(now).toISOString().replace(/\.\d+Z$/, "Z"), ...(generation ? { observedGeneration: generation } : {}) };
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

/** Runs one pass for the TerraformMachine namespace/name. */
export async function reconcileTerraformMachine(deps: MachineReconcilerDeps, namespace: string, name: string): Promise<PassResult> {
  const now = (deps.now ?? Date.now)();
  const { core, batch, custom } = deps;
  const objectApi = { group: apiGroup, version: apiVersion, namespace, plural };
  let machine: TerraformMachine;
  try {
    machine = (await custom.getNamespacedCustomObject({ ...objectApi, name })) as TerraformMachine;
  } catch (error) {
    if (isNotFound(error)) return { action: "gone" };
    throw error;
  }
  const finalizer = finalizers.TerraformMachine;
  const deleting = Boolean(machine.metadata.deletionTimestamp);

  // The finalizer goes on first, in its own write, so a destroy can never be skipped.
  if (!deleting && !machine.metadata.finalizers?.includes(finalizer)) {
    await mergePatch(deps, namespace, name, { metadata: { finalizers: [...(machine.metadata.finalizers ?? []), finalizer], resourceVersion: machine.metadata.resourceVersion } });
    return { action: "added finalizer", requeueAfterMs: 0 };
  }

  const conditions: ReturnType<typeof condition>[] = [];
  const status: Record<string, unknown> = {};
  const suffix = stateSecretSuffix({ role: "machine", namespace, name });
  status.stateSecretSuffix = suffix;

  // Observe: owner Machine, its Cluster, the cluster's exports, bootstrap data.
  const ownerRef = machine.metadata.ownerReferences?.find((ref) => ref.kind === "Machine" && ref.apiVersion.startsWith("cluster.x-k8s.io/"));
  let inputs: ReturnType<typeof machineInputs> | undefined;
  let clusterName = machine.metadata.labels?.[labels.clusterName] ?? "";
  if (!ownerRef && !deleting) {
    conditions.push(condition("DependenciesReady", { status: "Unknown", reason: "WaitingForOwner", message: "waiting for a Machine to own this TerraformMachine" }, now));
    await patchStatus(deps, namespace, name, { ...status, conditions });
    return { action: "waiting for owner", requeueAfterMs: gateRequeueMs };
  }
  if (ownerRef) {
    const capiMachine = (await custom.getNamespacedCustomObject({ group: "cluster.x-k8s.io", version: ownerRef.apiVersion.split("/")[1]!, namespace, plural: "machines", name: ownerRef.name })) as {
      metadata: ObjectMeta;
      spec?: { clusterName?: string; failureDomain?: string; version?: string; bootstrap?: { dataSecretName?: string } };
    };
    clusterName = capiMachine.spec?.clusterName ?? capiMachine.metadata.labels?.[labels.clusterName] ?? clusterName;
    const exports = await clusterExports(deps, namespace, clusterName);
    const secretName = capiMachine.spec?.bootstrap?.dataSecretName;
    const bootstrap = secretName ? await core.readNamespacedSecret({ name: secretName, namespace }).catch((error) => (isNotFound(error) ? undefined : Promise.reject(error))) : undefined;
    inputs = machineInputs({ cluster: { name: clusterName, namespace }, machine: capiMachine, terraformMachine: machine }, exports, bootstrap);
  }

  // Observe: this object's Jobs and their results.
  const jobs = (await batch.listNamespacedJob({ namespace, labelSelector: `${labels.ownerKind}=TerraformMachine,${labels.ownerName}=${name}` })).items;
  const finished: FinishedJob[] = [];
  const toMark: V1Job[] = [];
  let newestResult: { job: V1Job; result: RunResult } | undefined;
  let activeJob: { name: string; op: Operation } | undefined;
  for (const job of jobs) {
    const op = job.metadata?.labels?.[labels.op] as Operation;
    const message = await terminationMessage(core, namespace, job.metadata!.name!);
    const reading = parseRunResult(message);
    const result = reading.ok && "steps" in reading.result ? (reading.result as RunResult) : undefined;
    const outcome = jobOutcome(job, result);
    if (!outcome) {
      activeJob = { name: job.metadata!.name!, op };
      continue;
    }
    const finishedAt = Date.parse(String(job.status?.completionTime ?? job.status?.conditions?.at(-1)?.lastTransitionTime ?? now));
    const jobHash = job.metadata?.annotations?.[annotations.inputsHash];
    finished.push({ op, outcome, finishedAt, ...(jobHash ? { inputsHash: jobHash } : {}) });
    if (result && (!newestResult || finishedAt >= Date.parse(String(newestResult.job.status?.completionTime ?? 0)))) newestResult = { job, result };
    if (job.metadata?.annotations?.[annotations.bookkept] !== "true") {
      toMark.push(job);
      // A successful apply adopts the state: its inputs hash goes on the state Secret.
      if (op === "apply" && outcome === "succeeded" && jobHash) await annotateState(core, namespace, suffix, jobHash);
      await core.deleteNamespacedSecret({ name: runSecretName(job.metadata!.name!), namespace }).catch((error) => (isNotFound(error) ? undefined : Promise.reject(error)));
    }
  }

  const state = await readState(core, namespace, suffix);
  const currentHash = inputs && !inputs.pending ? inputsHash({ role: "machine", image: machine.spec.source.image, inputs: inputs.inputs }) : undefined;

  // Decide.
  const decision = decideOperation({
    role: "machine",
    uid: machine.metadata.uid,
    now,
    createdAt: Date.parse(machine.metadata.creationTimestamp ?? new Date(now).toISOString()),
    deleting,
    ...(activeJob ? { activeJob } : {}),
    state: state.kind === "absent" ? { kind: "absent" } : state.kind === "unreadable" ? { kind: "unreadable" } : { kind: "present", ...(state.state.inputsHash ? { inputsHash: state.state.inputsHash } : {}) },
    ...(currentHash ? { currentInputsHash: currentHash } : {}),
    jobs: finished,
    drift: { intervalSeconds: machine.spec.drift?.intervalSeconds ?? 0, action: "Report", detected: false },
    health: { pendingRefreshes: 0, appliedReadingDefinite: true },
  });

  // Act.
  let action = decision.reason;
  if (decision.dropFinalizer) {
    if (decision.cleanupState) {
      const secrets = await core.listNamespacedSecret({ namespace, labelSelector: `tfstateSecretSuffix=${suffix}` });
      for (const secret of secrets.items) {
        await core.deleteNamespacedSecret({ name: secret.metadata!.name!, namespace }).catch((error) => (isNotFound(error) ? undefined : Promise.reject(error)));
      }
    }
    await mergePatch(deps, namespace, name, { metadata: { finalizers: (machine.metadata.finalizers ?? []).filter((f) => f !== finalizer), resourceVersion: machine.metadata.resourceVersion } });
    return { action: "removed finalizer" };
  }
  if (decision.op) {
    if ((decision.op === "apply" || decision.op === "plan") && (!inputs || inputs.pending)) {
      const pending = inputs?.pending ? inputs : { reason: "WaitingForOwner", message: "no owner" };
      conditions.push(condition("DependenciesReady", { status: "Unknown", reason: pending.reason, message: pending.message }, now));
      action = `waiting: ${pending.reason}`;
    } else {
      const attempt = 1 + Math.max(0, ...jobs.filter((job) => job.metadata?.labels?.[labels.op] === decision.op).map((job) => Number(job.metadata?.labels?.[labels.attempt] ?? 0)));
      const root = decision.op === "apply" && inputs && !inputs.pending ? renderGeneratedRoot("machine", inputs.inputs) : undefined;
      const hash = currentHash ?? (state.kind === "ok" ? state.state.inputsHash : undefined) ?? "h2:none";
      const job = buildJob(
        { owner: { role: "machine", name, namespace, uid: machine.metadata.uid, clusterName }, op: decision.op, attempt, image: machine.spec.source.image, inputsHash: hash },
        deps.jobEnvironment ?? defaultJobEnvironment,
      );
      const created = await batch.createNamespacedJob({ namespace, body: job }).catch(async (error) => {
        if ((error as { code?: number }).code === 409) return batch.readNamespacedJob({ name: job.metadata!.name!, namespace });
        throw error;
      });
      await core
        .createNamespacedSecret({
          namespace,
          body: {
            metadata: { name: runSecretName(job.metadata!.name!), labels: { [labels.managed]: "true" }, ownerReferences: [{ apiVersion: "batch/v1", kind: "Job", name: created.metadata!.name!, uid: created.metadata!.uid!, controller: true }] },
            stringData: root ? { ...root } : { "main.tf.json": '{"terraform":{"backend":{"kubernetes":{}}}}\n', "terraform.tfvars.json": "{}\n" },
          },
        })
        .catch((error) => ((error as { code?: number }).code === 409 ? undefined : Promise.reject(error)));
      action = `started ${decision.op} (${decision.reason}) as ${job.metadata!.name}`;
      status.activeJob = { name: job.metadata!.name, operation: decision.op, attempt };
    }
  } else if (activeJob) {
    status.activeJob = { name: activeJob.name, operation: activeJob.op, attempt: 1 };
  } else {
    status.activeJob = null; // a merge patch keeps a field unless it is nulled
  }

  // Record: outputs onto the contract fields, conditions, one status patch.
  let provisioned = machine.status?.initialization?.provisioned === true;
  if (state.kind === "ok") {
    const decoding = decodeOutputs("machine", state.state.outputs, inputs && !inputs.pending ? inputs.inputs : undefined, { fromState: true });
    provisioned ||= isProvisioned("machine", Boolean(state.state.inputsHash), decoding);
    const fields = machineContractFields(decoding.outputs);
    if (fields.addresses?.length) status.addresses = fields.addresses;
    if (fields.failureDomain) status.failureDomain = fields.failureDomain;
    status.observedStateSerial = state.state.serial >= 1 ? state.state.serial : undefined;
    conditions.push(condition("OutputsValid", { status: decoding.status, reason: decoding.reason, ...(decoding.problems.length ? { message: decoding.problems.join("; ").slice(0, 1024) } : {}) }, now));
    const health = decoding.outputs.health.state === "ok" ? decoding.outputs.health.value : undefined;
    conditions.push(condition("InfrastructureHealthy", infrastructureHealthy(health, { applyStarted: true, provisioned }), now));
    if (fields.providerID && !machine.spec.providerID) {
      await mergePatch(deps, namespace, name, { spec: { providerID: fields.providerID } });
    }
  }
  if (newestResult) {
    const { job, result } = newestResult;
    status.lastRun = {
      job: job.metadata!.name,
      operation: job.metadata?.labels?.[labels.op],
      ...(result.steps.length ? { steps: result.steps.slice(0, 16).map((step) => ({ name: step.name, exitCode: step.exit, durationMilliseconds: Math.round(step.seconds * 1000) })) } : {}),
      ...(result.error ? { error: { kind: result.error.kind, ...(result.error.step ? { step: result.error.step } : {}), ...(result.error.summary ? { summary: result.error.summary } : {}) } } : {}),
    };
    const succeeded = !result.error;
    conditions.push(condition("ApplyJobSucceeded", succeeded ? { status: "True", reason: "ApplySucceeded" } : { status: "False", reason: "ApplyFailed", message: result.error?.summary ?? "" }, now));
  }
  if (provisioned) status.initialization = { provisioned: true };
  conditions.push(condition("Ready", provisioned ? { status: "True", reason: "Ready" } : { status: "False", reason: "NotReady", message: action }, now));
  await patchStatus(deps, namespace, name, { ...status, conditions });

  // Only after the status patch: the finished Jobs are recorded.
  for (const job of toMark) {
    await batch.patchNamespacedJob({ name: job.metadata!.name!, namespace, body: { metadata: { annotations: { [annotations.bookkept]: "true" } } } }, mergePatchOptions()).catch((error) => (isNotFound(error) ? undefined : Promise.reject(error)));
  }
  return { action, ...(decision.requeueAfterMs !== undefined ? { requeueAfterMs: decision.requeueAfterMs } : {}) };
}

async function clusterExports(deps: MachineReconcilerDeps, namespace: string, clusterName: string): Promise<JsonValue | undefined> {
  if (!clusterName) return undefined;
  const cluster = (await deps.custom.getNamespacedCustomObject({ group: "cluster.x-k8s.io", version: "v1beta2", namespace, plural: "clusters", name: clusterName }).catch((error) => (isNotFound(error) ? undefined : Promise.reject(error)))) as
    | { spec?: { infrastructureRef?: { name?: string } } }
    | undefined;
  const infraName = cluster?.spec?.infrastructureRef?.name;
  if (!infraName) return undefined;
  const terraformCluster = (await deps.custom.getNamespacedCustomObject({ group: apiGroup, version: apiVersion, namespace, plural: "terraformclusters", name: infraName }).catch((error) => (isNotFound(error) ? undefined : Promise.reject(error)))) as
    | { metadata: ObjectMeta }
    | undefined;
  if (!terraformCluster) return undefined;
  // An externally managed TerraformCluster runs no module: its machines get {}.
  if (terraformCluster.metadata.annotations?.[annotations.managedBy] !== undefined) return {};
  const state = await readState(deps.core, namespace, stateSecretSuffix({ role: "cluster", namespace, name: infraName }));
  if (state.kind !== "ok" || !state.state.inputsHash) return undefined;
  return (state.state.outputs.exports as JsonValue | undefined) ?? {};
}

async function annotateState(core: CoreV1Api, namespace: string, suffix: string, hash: string): Promise<void> {
  await core.patchNamespacedSecret({ name: stateSecretName(suffix), namespace, body: { metadata: { annotations: { [annotations.inputsHash]: hash } } } }, mergePatchOptions()).catch((error) => (isNotFound(error) ? undefined : Promise.reject(error)));
}

function mergePatchOptions() {
  return setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
}

async function mergePatch(deps: MachineReconcilerDeps, namespace: string, name: string, body: unknown): Promise<void> {
  await deps.custom.patchNamespacedCustomObject({ group: apiGroup, version: apiVersion, namespace, plural, name, body }, mergePatchOptions());
}

async function patchStatus(deps: MachineReconcilerDeps, namespace: string, name: string, status: Record<string, unknown>): Promise<void> {
  const clean = Object.fromEntries(Object.entries(status).filter(([, value]) => value !== undefined));

  await deps.custom.patchNamespacedCustomObjectStatus({ group: apiGroup, version: apiVersion, namespace, plural, name, body: { status: clean } }, mergePatchOptions());
}
