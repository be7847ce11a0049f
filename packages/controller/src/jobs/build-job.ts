import { createHash } from "node:crypto";
import type {
  V1Job,
  V1EnvVar,
  V1SecurityContext,
  V1ResourceRequirements,
  V1LocalObjectReference,
  V1PodSecurityContext,
} from "@kubernetes/client-node";
import { kindOfRole, type Role } from "@captf/contract";
import { annotations, groupVersion, labels } from "@captf/contract/api";
import { nameLabelValue } from "@captf/contract/object-names";
import { isOperation, type Operation } from "@captf/contract/run-result";
import { backendConfigValues, stateSecretSuffix } from "@captf/render";
import { reservedEnvPrefixes } from "../api/workspace.js";

/**
 * Building the Job that runs one operation of a Terraform* object: a pure function from
 * what the reconciler decided to the Job object, so the whole Job is a golden file per op.
 */

export interface JobOwner {
  role: Role;
  name: string;
  namespace: string;
  uid: string;
  clusterName: string;
}

/** The merged `spec.jobs` policy (object over cluster defaults) that shapes a Job. */
export interface JobPolicy {
  activeDeadlineSeconds?: number;
  lockTimeoutSeconds?: number;
  env?: V1EnvVar[];
  imagePullSecrets?: V1LocalObjectReference[];
  imagePullPolicy?: "Always" | "IfNotPresent" | "Never";
  resources?: V1ResourceRequirements;
  securityContext?: V1SecurityContext;
  podSecurityContext?: V1PodSecurityContext;
  serviceAccountName?: string;
}

export interface JobRequest {
  owner: JobOwner;
  op: Operation;
  /** Retained Jobs of this op + 1: part of the name, so a retry never collides with its predecessor. */
  attempt: number;
  /** The module image: `spec.source.image` for apply and plan, else the pinned digest. */
  image: string;
  /** Where the hash in the name comes from: see jobName(). */
  inputsHash: string;
  /** Distinguishes periodic runs of the same inputs (refresh/drift time, remediation, restore backup). */
  tick?: string;
  /** The identity's credential mirror Secret (`captf-creds-<identity>`), mounted and exported to the runtime. */
  credentialsSecret?: string;
  /** OpenTofu state encryption: the Secret key holding TF_ENCRYPTION, given to the runtime by reference, never as a value. */
  stateEncryption?: { secretName: string; key: string };
  policy?: JobPolicy;
  /** Runner flags decided by the reconciler. */
  guard?: { approvalHash: string; allowDeletesHash?: string };
  expectPlan?: string;
  forceUnlock?: string;
  /** Restore: the backup set's Secrets in chunk order, projected into the config volume as restore/<i>. */
  restore?: { chunks: number; resources: number; backupSecrets?: readonly string[]; serial?: number };
  /** Report runner events on the object (`--runner-events`). */
  runnerEvents?: boolean;
}

export interface JobEnvironment {
  /** The image holding the runner bundle (the manager's own image). */
  runnerImage: string;
  /** The command that copies the bundle into /captf/bin from the runner image. */
  runnerCopyCommand: string[];
  /**
   * The command that starts the state broker from the runner image's own bundle: a native sidecar,
   * the only container that holds the Job's ServiceAccount token. It serves the module's container
   * this object's state, lock and events through a kubeconfig in /captf/broker (docs/security.md).
   */
  brokerCommand: string[];
  /** With tracing on (docs/tracing.md): the runner container's TRACEPARENT and OTLP settings of a Job of this owner. */
  tracing?: { jobEnvironment(ownerUid: string, jobName: string): V1EnvVar[] };
}

/**
 * What a Job's main container runs: the bundle's node and its CommonJS runner, started directly
 * (runner.mjs would first start Node's ES module loader, about 1 ms on every run).
 */
export const runnerRunCommand: readonly string[] = ["/captf/bin/node", "/captf/bin/runner.cjs", "run"];

export const brokerDir = "/captf/broker";
/** How the backend reaches the broker instead of `in_cluster_config=true`. */
export const brokerBackendConnection: readonly string[] = [`config_path=${brokerDir}/kubeconfig`];
/** The broker's name among the Pod's init containers: the manager reads its summary there. */
export const brokerContainerName = "broker";
/** The Job's main container: the module image, running the runner. */
export const sourceContainerName = "source";
const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";
/** A bound token's lifetime as the kubelet's own projection asks for it (it rotates it at 80 %). */
const brokerTokenSeconds = 3607;

/** The runtime settings every Job's runner container passes on to its steps: no prompts, no update checks. */
export const runtimeEnvironment: readonly { name: string; value: string }[] = [
  { name: "TF_IN_AUTOMATION", value: "1" },
  { name: "TF_INPUT", value: "0" },
  { name: "CHECKPOINT_DISABLE", value: "1" },
];

/** Where the runner image keeps the runner bundle (packages/controller/scripts/build-manager-image.mjs). */
const imageRunnerDir = "/opt/captf/runner";

export const defaultJobEnvironment: JobEnvironment = {
  runnerImage: "ghcr.io/captf/captf-controller:latest",
  runnerCopyCommand: ["node", `${imageRunnerDir}/runner.mjs`, "copy", "/captf/bin"],
  // A 1 MiB young generation: the broker's requests are small, and the default's pages would be most of what it adds to a Pod.
  // OpenSSL's store, empty in the image, instead of Node's ~140 public roots: the broker trusts the cluster's CA alone, and
  // skips parsing them (about 40 ms of CPU at its start).
  brokerCommand: ["node", "--max-semi-space-size=1", "--use-openssl-ca", `${imageRunnerDir}/broker.cjs`],
};

export const kindShort: Record<Role, string> = { cluster: "c", machine: "m", machinepool: "mp" };
/** Job names stay at or below 57 characters, so the pod name (`<job>-<5>`) is a valid 63-character hostname. */
export const maxJobNameLength = 57;
export const defaultActiveDeadlineSeconds = 3600;
export const defaultLockTimeoutSeconds = 300;
export const terminationGracePeriodSeconds = 600;
/** The runner stops its child 30 s before the kubelet's SIGKILL. */
export const runnerStopTimeoutSeconds = terminationGracePeriodSeconds - 30;
export const runnerServiceAccount = "captf-runner";
const nonRootUser = 65532;
const secretFileMode = 0o440;

function sha256Hex(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

type JobNameParts = Pick<JobRequest, "owner" | "op" | "attempt" | "inputsHash" | "tick">;

/**
 * `captf-<c|m|mp>-<name>-<op>-a<attempt>-<hash6>`, hash6 over (inputs hash, op, attempt, tick)
 * joined by NUL bytes as the public reference joins them, so both name the same Job alike;
 * a name too long for that is replaced by the first 16 hex digits of its SHA-256.
 */
export function jobName(request: JobNameParts): string {
  return nameWithSeparator(request, "\u0000");
}

/** The name captf gave the same Job before it joined the parts as the reference does (newlines). */
export function previousSchemeJobName(request: JobNameParts): string {
  return nameWithSeparator(request, "\n");
}

function nameWithSeparator(request: JobNameParts, separator: string): string {
  const hash6 = sha256Hex([request.inputsHash, request.op, String(request.attempt), request.tick ?? ""].join(separator)).slice(0, 6);
  return composeJobName(request.owner, request.op, request.attempt, hash6);
}

/** The Job name of these parts, the object's name replaced by its hash when the whole would pass 57 characters. */
function composeJobName(owner: { role: Role; name: string }, op: Operation, attempt: number, hash6: string): string {
  const build = (name: string) => `captf-${kindShort[owner.role]}-${name}-${op}-a${attempt}-${hash6}`;
  const full = build(owner.name);
  return full.length <= maxJobNameLength ? full : build(sha256Hex(owner.name).slice(0, 16));
}

/**
 * Whether `pod` is named like a pod of one of this object's Jobs, any op and attempt, either hash
 * scheme: `<job>-<5 characters>`. Stale-lock detection tells the object's own runner apart by it.
 */
export function isOwnRunnerPod(owner: { role: Role; name: string }, pod: string): boolean {
  const match = /^(.+)-([a-z]+)-a([1-9][0-9]*)-([0-9a-f]{6})-[a-z0-9]{5}$/.exec(pod);
  if (!match || !isOperation(match[2])) return false;
  const [, , op, attempt, hash6] = match;
  return `${composeJobName(owner, op as Operation, Number(attempt), hash6!)}-` === pod.slice(0, -5);
}

/** The per-run Secret holding the rendered root, mounted at /captf/config and owned by the Job. */
export function runSecretName(job: string): string {
  return `captf-run-${job}`;
}

/** `--event-object`'s value: the object a run's events, and its broker, are about. */
function eventObject(owner: JobOwner): string {
  return `${groupVersion}/${kindOfRole[owner.role]}/${owner.namespace}/${owner.name}/${owner.uid}`;
}

function runnerArguments(request: JobRequest, job: string, lockTimeoutSeconds: number): string[] {
  const { owner } = request;
  const args = [
    `--op=${request.op}`,
    "--bin=/captf/runtime",
    `--image=${request.image}`,
    "--module=/captf/module",
    "--providers=/captf/providers",
    "--workdir=/captf/work",
    "--config=/captf/config",
    `--lock-timeout=${lockTimeoutSeconds}s`,
    `--stop-timeout=${runnerStopTimeoutSeconds}s`,
    "--result=/dev/termination-log",
    `--broker=${brokerDir}`,
    ...backendConfigValues(owner, brokerBackendConnection).map((value) => `--backend-config=${value}`),
  ];
  if (request.forceUnlock) args.push(`--force-unlock=${request.forceUnlock}`);
  if (request.guard) {
    args.push("--guard-deletes", `--inputs-hash=${request.guard.approvalHash}`);
    if (request.guard.allowDeletesHash) args.push(`--allow-deletes-hash=${request.guard.allowDeletesHash}`);
  }
  if (request.expectPlan) args.push(`--expect-plan=${request.expectPlan}`);
  if (request.stateEncryption) args.push("--state-encryption");
  if (request.restore) args.push(`--restore-chunks=${request.restore.chunks}`, `--restore-resources=${request.restore.resources}`);
  if (request.runnerEvents ?? true) {
    args.push(`--event-object=${eventObject(owner)}`, `--job-name=${job}`);
  }
  return args;
}

/** Environment names a Job policy may not set: the runner owns every TF_ and KUBE_ variable (the webhook refuses them too). */
export function isReservedEnvName(name: string): boolean {
  return reservedEnvPrefixes.some((prefix) => name.startsWith(prefix));
}

type PodSpec = NonNullable<NonNullable<V1Job["spec"]>["template"]["spec"]>;
type Volume = NonNullable<PodSpec["volumes"]>[number];
type Container = PodSpec["containers"][number];
type VolumeMount = NonNullable<Container["volumeMounts"]>[number];

/** The Job's labels (repeated on its Pod) and annotations. */
function jobMetadata(request: JobRequest): { labels: Record<string, string>; annotations: Record<string, string> } {
  const { owner } = request;
  const jobLabels: Record<string, string> = {
    [labels.op]: request.op,
    [labels.attempt]: String(request.attempt),
    [labels.ownerKind]: kindOfRole[owner.role],
    [labels.ownerName]: nameLabelValue(owner.name),
    [labels.clusterName]: nameLabelValue(owner.clusterName),
    [labels.managed]: "true",
  };
  const jobAnnotations: Record<string, string> = {};
  if (request.op === "apply" || request.op === "plan" || request.op === "restore")
    jobAnnotations[annotations.inputsHash] = request.inputsHash;
  if (request.expectPlan) jobAnnotations[annotations.approvedPlan] = request.expectPlan;
  if (request.restore?.serial !== undefined) jobAnnotations[annotations.restoreSerial] = String(request.restore.serial);
  return { labels: jobLabels, annotations: jobAnnotations };
}

/** The runner container's environment: the runtime's settings, the policy's entries, the state key by reference, the trace. */
function runnerEnvironment(request: JobRequest, job: string, environment: JobEnvironment): V1EnvVar[] {
  const { owner, policy = {} } = request;
  const env: V1EnvVar[] = [
    ...runtimeEnvironment.map((entry) => ({ ...entry })),
    { name: "HOME", value: "/captf/work" },
    { name: "TMPDIR", value: "/tmp" },
    { name: "KUBE_NAMESPACE", value: owner.namespace },
    { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
    ...(policy.env ?? []).filter((entry) => !isReservedEnvName(entry.name)),
  ];
  if (request.stateEncryption) {
    const { secretName, key } = request.stateEncryption;
    env.push({ name: "TF_ENCRYPTION", valueFrom: { secretKeyRef: { name: secretName, key } } });
  }
  // Last, so a policy's entry of the same name does not break the trace.
  if (environment.tracing) env.push(...environment.tracing.jobEnvironment(owner.uid, job));
  return env;
}

/** The Pod's volumes and the runner container's mounts of them. */
function jobVolumes(request: JobRequest, job: string): { volumes: Volume[]; mounts: VolumeMount[] } {
  const volumes: Volume[] = [
    { name: "runner", emptyDir: {} },
    { name: "broker", emptyDir: { medium: "Memory", sizeLimit: "1Mi" } },
    {
      name: "broker-token",
      projected: {
        defaultMode: secretFileMode,
        sources: [
          { serviceAccountToken: { path: "token", expirationSeconds: brokerTokenSeconds } },
          { configMap: { name: "kube-root-ca.crt", items: [{ key: "ca.crt", path: "ca.crt" }] } },
          { downwardAPI: { items: [{ path: "namespace", fieldRef: { apiVersion: "v1", fieldPath: "metadata.namespace" } }] } },
        ],
      },
    },
    { name: "work", emptyDir: {} },
    { name: "tmp", emptyDir: {} },
    request.restore?.backupSecrets
      ? {
          name: "config",
          projected: {
            defaultMode: secretFileMode,
            sources: [
              { secret: { name: runSecretName(job) } },
              ...request.restore.backupSecrets.map((secret, index) => ({
                secret: { name: secret, items: [{ key: "tfstate", path: `restore/${index}` }] },
              })),
            ],
          },
        }
      : { name: "config", secret: { secretName: runSecretName(job), defaultMode: secretFileMode } },
  ];
  const mounts: VolumeMount[] = [
    { name: "runner", mountPath: "/captf/bin", readOnly: true },
    { name: "broker", mountPath: brokerDir, readOnly: true },
    { name: "work", mountPath: "/captf/work" },
    { name: "tmp", mountPath: "/tmp" },
    { name: "config", mountPath: "/captf/config", readOnly: true },
  ];
  if (request.credentialsSecret) {
    volumes.push({ name: "creds", secret: { secretName: request.credentialsSecret, defaultMode: secretFileMode } });
    mounts.push({ name: "creds", mountPath: "/var/run/captf/credentials", readOnly: true });
  }
  return { volumes, mounts };
}

/** A function, so each container gets its own objects. */
function restricted(): V1SecurityContext {
  return { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] }, readOnlyRootFilesystem: true };
}

/**
 * The init containers. First: the broker starts from its own image's bundle while the next one copies that bundle for the
 * module's container, so it serves before the runner's first step.
 */
function initContainers(owner: JobOwner, job: string, environment: JobEnvironment): Container[] {
  return [
    {
      name: brokerContainerName,
      image: environment.runnerImage,
      restartPolicy: "Always",
      command: [...environment.brokerCommand],
      args: [
        `--event-object=${eventObject(owner)}`,
        `--state-suffix=${stateSecretSuffix(owner)}`,
        `--job-name=${job}`,
        `--dir=${brokerDir}`,
      ],
      env: [{ name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } }],
      volumeMounts: [
        { name: "broker", mountPath: brokerDir },
        { name: "broker-token", mountPath: serviceAccountDir, readOnly: true },
      ],
      resources: { requests: { cpu: "10m", memory: "16Mi" }, limits: { memory: "64Mi" } },
      terminationMessagePath: "/dev/termination-log",
      terminationMessagePolicy: "File",
      securityContext: { ...restricted(), runAsNonRoot: true, runAsUser: nonRootUser },
    },
    {
      name: "runner",
      image: environment.runnerImage,
      command: environment.runnerCopyCommand,
      volumeMounts: [{ name: "runner", mountPath: "/captf/bin" }],
      resources: { requests: { cpu: "10m", memory: "32Mi" }, limits: { memory: "64Mi" } },
      securityContext: { ...restricted(), runAsNonRoot: true, runAsUser: nonRootUser },
    },
  ];
}

/** The module image's container, running the runner. */
function sourceContainer(request: JobRequest, job: string, environment: JobEnvironment, mounts: VolumeMount[]): Container {
  const { policy = {} } = request;
  return {
    name: sourceContainerName,
    image: request.image,
    imagePullPolicy: policy.imagePullPolicy ?? "IfNotPresent",
    command: [...runnerRunCommand],
    args: runnerArguments(request, job, policy.lockTimeoutSeconds ?? defaultLockTimeoutSeconds),
    env: runnerEnvironment(request, job, environment),
    envFrom: request.credentialsSecret ? [{ secretRef: { name: request.credentialsSecret } }] : undefined,
    volumeMounts: mounts,
    resources: policy.resources ?? { requests: { cpu: "250m", memory: "512Mi" }, limits: { memory: "2Gi" } },
    terminationMessagePath: "/dev/termination-log",
    terminationMessagePolicy: "File",
    securityContext: { ...policy.securityContext, ...restricted() },
  };
}

/** Builds the Job of one operation. Pure: the reconciler creates it (AlreadyExists = adopt). */
export function buildJob(request: JobRequest, environment: JobEnvironment = defaultJobEnvironment): V1Job {
  const { owner, policy = {} } = request;
  const name = jobName(request);
  const kind = kindOfRole[owner.role];
  const metadata = jobMetadata(request);
  const { volumes, mounts } = jobVolumes(request, name);
  return {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: {
      name,
      namespace: owner.namespace,
      labels: metadata.labels,
      annotations: metadata.annotations,
      ownerReferences: [{ apiVersion: groupVersion, kind, name: owner.name, uid: owner.uid, controller: true, blockOwnerDeletion: true }],
    },
    spec: {
      backoffLimit: 0,
      activeDeadlineSeconds: policy.activeDeadlineSeconds || defaultActiveDeadlineSeconds,
      template: {
        metadata: { labels: { ...metadata.labels }, annotations: { [annotations.safeToEvict]: "false" } },
        spec: {
          restartPolicy: "Never",
          terminationGracePeriodSeconds,
          serviceAccountName: policy.serviceAccountName ?? runnerServiceAccount,
          // Module code gets no token: only the broker mounts one (broker-token).
          automountServiceAccountToken: false,
          imagePullSecrets: policy.imagePullSecrets,
          securityContext: {
            runAsNonRoot: true,
            fsGroup: nonRootUser,
            seccompProfile: { type: "RuntimeDefault" },
            ...policy.podSecurityContext,
          },
          initContainers: initContainers(owner, name, environment),
          containers: [sourceContainer(request, name, environment, mounts)],
          volumes,
        },
      },
    },
  };
}
