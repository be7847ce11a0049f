// The types the reconcile pass shares with its phases, the operation starter and the kind adapters: one file below them all, so they import
// no pass.
import type { HealthState, JsonValue, OutputsDecoding, Role, RoleInputs } from "@captf/contract";
import type { finalizers } from "@captf/contract/api";
import type { GeneratedRoot } from "@captf/render";
import type { Logger } from "pino";
import type { ApiEndpoint } from "../api/kubernetes-types.js";
import type { ActiveJob, PlanPreview, StateEncryption } from "../api/workspace.js";
import type { EventRecorder, EventSubject } from "../events/event-recorder.js";
import type { JobEnvironment } from "../jobs/build-job.js";
import type { StoredJobPolicy } from "../jobs/merge-job-policy.js";
import type { VariablesFromEntry } from "../kinds/read-variables.js";
import type { InputsResult, NamespacedMeta } from "../kinds/render-inputs.js";
import type { CaptfMetrics } from "../metrics/captf-metrics.js";
import type { KubeApi } from "../runtime/kube-client.js";
import type { ReadCache } from "../runtime/read-cache.js";
import type { ImageVerifier } from "../signatures/image-verifier.js";
import type { PassClient } from "../runtime/pass-client.js";
import type { BackupSet } from "../state/state-backups.js";
import type { StateReading } from "../state/decode-state.js";
import type { StateLockFinding } from "../state/state-lock.js";
import type { InputsOutcome as StatusInputs, PassOutcome, StatusScope } from "./compute-status.js";
import type { Decision } from "./decide-operation.js";
import type { Condition, ConditionValue } from "../conditions/conditions.js";
import type { DriftPolicy, StoredDriftPolicy } from "./drift-policy.js";
import type { DurableInputs } from "./durable-inputs.js";
import type { JobSlotSource } from "./job-slots.js";
import type { ObservedJob } from "./observe-jobs.js";
import type { CapiCluster, PassReads, TerraformClusterObject } from "./pass-reads.js";
import type { DeletionPolicy } from "./retained-state.js";

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
  /** The one API client (the manager's records its writes for the cache). */
  client: KubeApi;
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
  /** The TerraformModulePolicies' signature check of the image a Job runs; without it every image runs. */
  imageVerifier?: ImageVerifier;
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
  metadata: NamespacedMeta & {
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
    stateEncryption?: StateEncryption;
    membershipRefreshIntervalSeconds?: number;
    /** A TerraformMachine's or TerraformMachinePool's, latched once set. */
    providerID?: string;
    /** A TerraformMachinePool's. */
    providerIDList?: string[];
    /** A TerraformCluster's. */
    controlPlaneEndpoint?: Partial<ApiEndpoint>;
    [key: string]: unknown;
  };
  status?: {
    initialization?: { provisioned?: boolean };
    conditions?: Condition[];
    replicas?: number;
    lastRestoredSerial?: number;
    plan?: PlanPreview;
    activeJob?: ActiveJob;
    unhealthySamples?: number;
    [key: string]: unknown;
  };
}

/** The spec fields a kind writes from its module's outputs. */
export type ContractSpecFields = Pick<WorkspaceObject["spec"], "providerID" | "providerIDList" | "controlPlaneEndpoint">;

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
  observeInputs(
    deps: ReconcilerDeps,
    object: WorkspaceObject,
    context: InputsContext,
  ): Promise<{ clusterName: string; inputs: InputsResult<RoleInputs[R]> } | undefined>;
  /** Also publish provisioning as the v1beta1 `status.ready` flag Cluster API still reads for this kind. */
  publishesReady?: boolean;
  /**
   * Kind-specific writes to the owner after the outputs are known (pool replicas write-back);
   * not while paused or deleting. Returns conditions for the status patch.
   */
  ownerWriteBack?(
    deps: ReconcilerDeps,
    object: WorkspaceObject,
    observed: OwnerWriteBackContext,
  ): Promise<{ type: string; value: ConditionValue }[]>;
  /** Spec and status fields from valid outputs (providerID, addresses, failureDomains, endpoint). */
  contractFields(
    object: WorkspaceObject,
    decoding: OutputsDecoding<R>,
  ): {
    spec?: ContractSpecFields;
    annotations?: Record<string, string>;
    status?: Record<string, unknown>;
    exportsNotPublished?: { bytes: number };
  };
}

/** Inputs that can run an apply: rendered root, hash and the user variables in them. */
export interface RenderedInputs {
  root: GeneratedRoot;
  hash: string;
  /** What a destructive-plan approval names: the hash, for a pool without its (rotating) bootstrap data. */
  approvalHash: string;
  /** Pool only: the hash of the cluster exports it renders. */
  exportsHash?: string;
  /** Pool only: it renders the exports of its last successful apply in place of a change held for approval. */
  held?: boolean;
}

export type InputsOutcome = StatusInputs<RenderedInputs>;

/** What every phase of one pass shares; the facts it gathers for the status go on `scope`. */
export interface Pass<R extends Role = Role> {
  deps: ReconcilerDeps;
  adapter: KindAdapter<R>;
  object: WorkspaceObject;
  namespace: string;
  name: string;
  /** The object's state Secret suffix. */
  suffix: string;
  clusterName: string;
  now: number;
  events: EventRecorder;
  subject: EventSubject;
  /** The durable inputs as read, kept current with the pass's own annotations of them. */
  durable: DurableInputs | undefined;
  /** What the phases record on the durable inputs (annotations, data keys as text; null removes), sent as one patch. */
  durableNotes: { annotations: Record<string, string | null>; data: Record<string, string | null> };
  scope: StatusScope;
}

/** The drift finding of this pass: what the newest check found (its events and metrics), else what the status says from an earlier pass. */
export interface DriftFacts {
  policy: DriftPolicy;
  detected: boolean;
  lastCheckAt?: number;
}

/**
 * The facts of one pass beyond its status scope, each set by one step (named first) and read by the later ones. Before its step
 * runs a fact holds the value `gatherScope` gives it.
 */
export interface PassFacts<R extends Role = Role> {
  /** gatherScope: what the kind adapter observed (undefined: pinned, or no Cluster API owner yet). */
  observedInputs: { clusterName: string; inputs: InputsResult<RoleInputs[R]> } | undefined;
  /** gatherScope: the owner's Cluster and the cluster's TerraformCluster. */
  capiCluster: CapiCluster | undefined;
  terraformCluster: TerraformClusterObject | undefined;
  /** gatherScope: `status.initialization.provisioned` as read. */
  wasProvisioned: boolean;
  /** gatherScope: the Job policy, the object's over its cluster's defaults. */
  jobPolicy: StoredJobPolicy;
  /** reconcileInputs (reconcileHeldExports for a pool holding a change): the inputs a Job runs, and their hash. */
  inputs: InputsOutcome;
  currentHash: string | undefined;
  /** reconcileInputs: renders the pool's inputs with other cluster exports (those of its last successful apply). */
  renderHeld: ((exports: JsonValue) => InputsOutcome) | undefined;
  /** reconcileCredentials (reconcileOperation for a deleting object). */
  credentials: JobCredentials | undefined;
  /** reconcileCredentials: RunnerRBACReady=False of a ServiceAccount not opted in. */
  serviceAccountRefusal: ConditionValue | undefined;
  /** reconcileJobs: the object's Jobs, and those finished since the last pass (marked bookkept after the status). */
  jobs: readonly ObservedJob[];
  toMark: ObservedJob[];
  /** reconcileState: the running Job (reconcileOperation: the one it started). */
  active: ObservedJob | undefined;
  /** reconcileState: the state, lost or not, the retained state in the way, a requested restore's backup, the state lock. */
  state: StateReading;
  stateLost: boolean;
  retainedBy: string[];
  restoreSet: BackupSet | undefined;
  lock: StateLockFinding;
  /** reconcilePlans: the plan shown for approval after this pass. */
  planShown: PlanPreview | undefined;
  /** reconcileDrift: the drift policy and finding; the health sampling interval of a machine that may ask for remediation. */
  drift: DriftFacts | undefined;
  healthCheckIntervalSeconds: number | undefined;
  /** reconcileHealth: the outputs as the state holds them, their health reading, the refreshes still due. */
  decoding: OutputsDecoding<Role> | undefined;
  healthReading: HealthState | undefined;
  pendingRefreshes: number;
  /** reconcileDeletionFacts: the deletion policy, and the machines and pools a deleting cluster waits for. */
  deletionPolicy: DeletionPolicy | undefined;
  dependents: number;
  /** reconcileDecision: the whole decision (pure). */
  decision: Decision | undefined;
  /** reconcileOperation: what the pass did, and when to look again. */
  action: string;
  requeueAfterMs: number | undefined;
  /** reconcileOutputs: the cluster's exports too large to publish. */
  exportsNotPublished: { bytes: number } | undefined;
  /** The pass's status step: the status as computed and patched. */
  written: Record<string, unknown>;
}

/** A pass with its client, its facts and the outcome of its decision and act step: what the phases take. */
export interface ReconcilePass<R extends Role = Role> extends Pass<R> {
  /** Reads from the caches by default, live ones by name (`reads.live`). */
  reads: PassClient;
  facts: PassFacts<R>;
  outcome: PassOutcome;
}

/**
 * How a phase leaves the pass: on to the next phase (`continue`); ended, with its status written (`end`); or ended with the
 * object let go (its finalizer removed, or that write conflicted), when no status is written (`leave`).
 */
export type PhaseResult = { kind: "continue" } | { kind: "end"; result: PassResult } | { kind: "leave"; result: PassResult };

/** One phase of the pass (Cluster API's `reconcilePhase`): the reads and writes of one concern, its facts left on the pass. */
export type Phase = (pass: ReconcilePass) => Promise<PhaseResult>;

/** On to the next phase. */
export const next: PhaseResult = { kind: "continue" };
