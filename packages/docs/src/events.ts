/**
 * What every event reason means: the one source of docs/events.md, which `pnpm --filter @captf/docs gen`
 * writes from these tables and the reason lists of @captf/contract/api (renderEventsPage in reference.ts).
 * Each table is keyed by its reason type, so a reason added to the contract without a meaning here, or a
 * meaning of a reason the contract no longer has, fails to compile. The manager's and kubectl captf's
 * event types come from the contract; the runner's, which the contract does not fix, are stated here.
 * Rows appear on the page in the order of these tables.
 */
import type { ManagerEventReason, PluginEventReason, RunnerEventReason } from "@captf/contract/api";

/** A meaning: Markdown on one line of a table row. */
export interface EventDoc {
  meaning: string;
}

/** The section of docs/events.md a manager event is listed under. */
export interface ManagerEventDoc extends EventDoc {
  section: ManagerEventSection;
}

/** The runner's type of an event, as the page states it. */
export interface RunnerEventDoc extends EventDoc {
  type: "Normal" | "Warning" | "Normal or Warning";
}

/** The sections of the manager's events, in page order: a heading, and a paragraph under it when there is one. */
export const managerEventSections = {
  lifecycle: { heading: "Lifecycle" },
  jobs: { heading: "Jobs" },
  ordering: { heading: "Ordering (once per wait)" },
  plans: { heading: "Plans" },
  state: { heading: "State" },
  drift: { heading: "Drift and health" },
  identity: {
    heading: "Identity (identity events land in namespace default)",
    intro: "See [identities.md](identities.md) for when each is recorded.",
  },
  deletion: { heading: "Deletion" },
  pools: { heading: "Pools and templates" },
} as const satisfies Record<string, { heading: string; intro?: string }>;
export type ManagerEventSection = keyof typeof managerEventSections;

/** Events the manager records (`captf-manager`); their types are `managerEventReasons`. */
export const managerEventDocs: Record<ManagerEventReason, ManagerEventDoc> = {
  Provisioned: { section: "lifecycle", meaning: "The object's infrastructure is provisioned." },
  InputsChanged: {
    section: "lifecycle",
    meaning:
      "An apply of changed inputs started after a successful apply (decision `InputsChanged`); once per new inputs hash, not " +
      "for a retry of the same inputs. The note gives the old and new hash.",
  },
  ControlPlaneEndpointSet: { section: "lifecycle", meaning: "Cluster: the control plane endpoint was set." },
  FailureDomainsChanged: {
    section: "lifecycle",
    meaning:
      "Cluster: `status.failureDomains` changed (names, control-plane flags or attributes) or went away; not on their first " +
      "publication, which provisioning reports. The note names the domains before and after, nothing else.",
  },
  ProviderIDSet: { section: "lifecycle", meaning: "Machine or pool: the provider ID was set." },
  Paused: { section: "lifecycle", meaning: "The object was paused." },
  Resumed: { section: "lifecycle", meaning: "The object was resumed." },
  OutputsInvalid: {
    section: "lifecycle",
    meaning:
      "`OutputsValid` turned False (or appeared False), or changed to another False reason; the note gives the reason, the " +
      "condition's message lists the problems (never output values in the note). Its recovery is a Normal `ConditionChanged`.",
  },
  ExportsNotPublished: {
    section: "lifecycle",
    meaning:
      "Cluster: the module's `exports`, as compact JSON, exceed 65536 bytes: `status.exports` is cleared. Once when published " +
      "exports are cleared (or on the first state read); not again while they stay too large. Machines and pools still read exports " +
      "from the cluster's state.",
  },
  ConditionChanged: {
    section: "lifecycle",
    meaning:
      "Generic fallback (Warning type when the condition turns bad): Warning when a condition moves to (or appears in) its bad " +
      "state, Normal when it recovers, for `DependenciesReady`, `CredentialsMirrored`, `RunnerRBACReady`, `ApplyJobSucceeded`, " +
      "`StateReadable`, `OutputsValid` (recovery), `DriftJobSucceeded`, `DeletionBlocked`, `EndpointAvailable` and " +
      "`AutoscalingActive`. Never for a transition that has its own event (`JobFailed`, `JobSucceeded`, `StateLocked`, " +
      "`OutputsInvalid`, ...), nor for `Ready`, `InputsApplied` or the conditions whose every transition has its own event. The note " +
      "names the condition, its status and reason before and after.",
  },
  DigestPinned: { section: "lifecycle", meaning: "The module image's digest was pinned." },
  DigestUnknown: {
    section: "lifecycle",
    meaning:
      "A Job that must run what was applied (destroy, refresh, drift) starts with no digest pinned on the durable inputs: it " +
      "runs the image by its reference, which may have moved since the apply. Once per Job started so.",
  },
  ImagePullFallback: {
    section: "lifecycle",
    meaning:
      "A destroy, refresh, drift or restore Job could not pull its module image (a pinned digest the registry garbage collected, " +
      "say) within 2 minutes: the image is recorded in `captf.io/unpullable-images` on the durable inputs Secret, the Job is " +
      "deleted and the operation starts again on the next image it may run (the pinned digest, then the reference the apply ran, " +
      "then `spec.source.image`). The note names the image, the kubelet's reason, the Job and the next image. With no image left, " +
      "the Job fails with `ImagePullFailed` and is retried with backoff. A successful apply clears the list.",
  },
  DestroyInputsMismatch: {
    section: "deletion",
    meaning:
      "A destroy Job started on inputs whose hash is not the one the state records: those of an apply that failed after the last " +
      "successful one (it may have changed resources; the durable inputs hold the newest apply that started), or, when the state " +
      "records no inputs hash, the last ones applied. The note names the Job, the failed apply when there is one, and both hashes.",
  },
  JobCreated: {
    section: "jobs",
    meaning:
      "A Job was created. The note names its operation, its attempt (one more than the newest Job of that operation), the image it " +
      "runs (by digest once pinned) and why it started (the decision's reason, such as `NoState`, `InputsChanged` or `DriftDue`): " +
      "`started apply attempt 2 as Job <name> with image <image>, because LastApplyFailed`. A destroy, refresh, drift or restore " +
      "that falls back from images it could not pull (`ImagePullFallback`) says so after the image: `(falling back: <images> " +
      "could not be pulled)`.",
  },
  JobSucceeded: { section: "jobs", meaning: "A Job succeeded." },
  JobFailed: {
    section: "jobs",
    meaning: "A Job failed (including an image not pulled within 2 minutes), or an apply/destroy could not start.",
  },
  JobDeadlineExceeded: { section: "jobs", meaning: "A Job ran past its deadline." },
  JobInterrupted: {
    section: "jobs",
    meaning: "A Job was interrupted, or (cluster, pool) an apply Job was deleted while it ran; it is retried without backoff.",
  },
  StuckJobDeleted: { section: "jobs", meaning: "A stuck Job was deleted." },
  WaitingForRunLease: { section: "ordering", meaning: "Waiting for the object's run lease." },
  WaitingForJobSlot: { section: "ordering", meaning: "Waiting for a free Job slot." },
  WaitingForClusterOperation: { section: "ordering", meaning: "Machine or pool: waiting for an operation of its cluster." },
  WaitingForMachineOperations: { section: "ordering", meaning: "Cluster: waiting for operations of its machines and pools." },
  JobQuotaExceeded: {
    section: "ordering",
    meaning:
      "A ResourceQuota of the namespace (count/jobs.batch) refused the Job's create; the note names the quota and what it refused " +
      "(requested, used, limited). No Job exists; the object tries again after 10 s, then waits twice as long each time up to 2 min. " +
      "Or a quota (pods, compute) or a LimitRange refused the Job's Pod: the note names the quota, or the bound the Pod breaks, from " +
      "the Job controller's FailedCreate event, which keeps trying until the Job's deadline.",
  },
  PlanReady: {
    section: "plans",
    meaning:
      "Cluster: a plan is ready; the note gives its hash and counts (adds, changes, destroys, then imports, moves and output " +
      "changes when any).",
  },
  PlanApproved: {
    section: "plans",
    meaning:
      "An approved plan's apply started; the note names the approver (`captf.io/plan-approved-by`). Not for an empty plan, " +
      "which needs no approval.",
  },
  PlanApplied: {
    section: "plans",
    meaning: "An approved plan was applied; the note names the approver (also kept in `status.lastRun.approvedBy`). Not for an empty plan.",
  },
  PlanChanged: { section: "plans", meaning: "Cluster: the plan changed." },
  PlanSuperseded: {
    section: "plans",
    meaning:
      "The plan in `status.plan` stopped waiting: a newer plan replaced it, or its inputs or `applyPolicy: Manual` changed. " +
      "Recorded as a Warning when the plan had been approved (its approval is removed).",
  },
  DestructivePlanBlocked: { section: "plans", meaning: "Cluster or pool: a destructive plan was blocked; replaces JobFailed." },
  DestructivePlanApprovalConsumed: { section: "plans", meaning: "An approval of a destructive plan was used." },
  StateAdopted: {
    section: "state",
    meaning:
      "After a successful apply or restore, the state Secrets got an owner reference to the object and the base Secret the " +
      "Job's `captf.io/inputs-hash`.",
  },
  StateBackedUp: { section: "state", meaning: "The state was backed up." },
  StateRestored: { section: "state", meaning: "The state was restored." },
  StateRestoreFailed: { section: "state", meaning: "Restoring the state failed." },
  StateLocked: {
    section: "state",
    meaning: "The state lock is held by something other than this object's runner (once per transition; names the holder).",
  },
  ForceUnlocked: {
    section: "state",
    meaning: "A stale state lock left by this object's own runner that is gone is released by the named Job's `force-unlock`.",
  },
  StateUnreadable: {
    section: "state",
    meaning:
      "The state is there but cannot be read: once per transition of `StateReadable` to `StateCorrupt`, `StateEncrypted`, " +
      "`StateInconsistent` or `StateTooLarge` (another of these reasons is another transition). Nothing runs on it until it is " +
      "repaired or a backup restored; its recovery is a Normal `ConditionChanged`.",
  },
  StateLost: { section: "state", meaning: "The state was lost." },
  StateNotSaved: {
    section: "state",
    meaning:
      "An apply or destroy ran but could not save its new state (larger than the 1 MiB a Secret holds); the object is held " +
      "(`ApplyJobSucceeded=False/StateNotSaved`); replaces JobFailed.",
  },
  StateLineageChanged: {
    section: "state",
    meaning:
      "The state's lineage differs from the one this object recorded; the object is held (`StateReadable=False/StateLineageChanged`).",
  },
  OwnerReferencesRepaired: {
    section: "state",
    meaning:
      "State Secrets of an adopted state that lacked the owner reference (a new chunk, a stripped reference) are owned again; " +
      "the note names them.",
  },
  DriftDetected: { section: "drift", meaning: "Drift was found (once per finding)." },
  DriftRemediationStarted: {
    section: "drift",
    meaning: "A drift-remediation apply Job was created (`captf.io/drift-remediation`); the note names it.",
  },
  DriftResolved: { section: "drift", meaning: "Drift was resolved." },
  InstanceHealthy: {
    section: "drift",
    meaning:
      "`InfrastructureHealthy` became True/Healthy from `InstanceUnhealthy`, `InstanceDegraded`, `InstanceStopped` or " +
      "`InstanceTerminated` (not the first Healthy, which provisioning reports).",
  },
  InstanceUnhealthy: {
    section: "drift",
    meaning:
      "`InfrastructureHealthy` became False with `InstanceUnhealthy`, `InstanceDegraded`, `InstanceStopped` or " +
      "`InstanceTerminated` (again when it changes among them); not for `Provisioning`, `InstancePending` or an Unknown reading. The " +
      "note gives the reasons, not the module's health message.",
  },
  ReadyLost: {
    section: "drift",
    meaning:
      "`Ready` left True (to False or Unknown) while the object is not being deleted; the note gives the reason before and " +
      "after. A [notification](notifications.md) by default.",
  },
  ReadyRegained: {
    section: "drift",
    meaning:
      "`Ready` became True again on an object provisioned before this pass (its first Ready is `Provisioned`'s news); the note " +
      "gives the reason it had. A [notification](notifications.md) by default.",
  },
  RemediationRequested: { section: "drift", meaning: "Machine: remediation was requested." },
  RemediationWithdrawn: { section: "drift", meaning: "Machine: a remediation request was withdrawn." },
  IdentityNotAllowed: { section: "identity", meaning: "The identity is not allowed for the object." },
  IdentitySecretFound: { section: "identity", meaning: "Identity: its credentials Secret was found." },
  IdentitySecretNotFound: {
    section: "identity",
    meaning: "Identity: its credentials Secret was not found, or lacks keys (CredentialsIncomplete).",
  },
  MirrorCreated: { section: "identity", meaning: "The credentials mirror was created." },
  MirrorRemoved: { section: "identity", meaning: "The credentials mirror was removed." },
  DeletionStarted: { section: "deletion", meaning: "Deletion started." },
  Destroyed: { section: "deletion", meaning: "The infrastructure was destroyed." },
  FinalizerRemoved: { section: "deletion", meaning: "The finalizer was removed." },
  InfrastructureRetained: { section: "deletion", meaning: "The infrastructure was retained, not destroyed." },
  ExternallyManagedReleased: {
    section: "deletion",
    meaning:
      "An object deleted while another controller manages it (`cluster.x-k8s.io/managed-by`) lost only captf's finalizer: no " +
      "destroy; its state and inputs are kept, labelled `captf.io/retained-from-uid`.",
  },
  RetainedStateFound: { section: "deletion", meaning: "Retained state was found." },
  RetainedStateAdopted: { section: "deletion", meaning: "Retained state was adopted." },
  ReplicasWrittenBack: { section: "pools", meaning: "Pool: the replica count was written back (note `X → Y`)." },
  ReplicasManagedExternally: { section: "pools", meaning: "Pool: replicas are managed externally." },
  CapacityResolved: {
    section: "pools",
    meaning: "Template: its capacity was resolved to a new value (note: the quantities and `spec.capacity` or the image).",
  },
  ImageInspectFailed: {
    section: "pools",
    meaning:
      "Template: reading the module image's config failed (first failure of an image, not each retry), or its capacity labels " +
      "are invalid (once per image).",
  },
  ImageVerified: {
    section: "jobs",
    meaning:
      "A TerraformModulePolicy governs the object and a signature of one of its keys verified the image's digest, which the " +
      "Job runs (note: image, digest, key); once per newly verified digest, so a re-pushed tag shows as a new one.",
  },
  ImageVerificationFailed: {
    section: "jobs",
    meaning:
      "No Job starts: the image's signature is missing, invalid or by an unknown key, the image is not allowed, a policy key " +
      "is unreadable, or the registry is unreachable (the ImageVerified reason); once per reason, not per retry.",
  },
};

/** Events the runner reports (`captf.io/runner`). */
export const runnerEventDocs: Record<RunnerEventReason, RunnerEventDoc> = {
  RunStarted: { type: "Normal", meaning: "A run started (image, runtime version)." },
  StepStarted: { type: "Normal", meaning: "A step started." },
  StepSucceeded: { type: "Normal", meaning: "A step succeeded." },
  StepFailed: { type: "Warning", meaning: "A step failed." },
  PlanSummary: { type: "Normal", meaning: "The plan's counts of changes." },
  ResourcesChanged: { type: "Normal", meaning: "A step changed resources (added, changed, destroyed, imported)." },
  RunFinished: { type: "Normal or Warning", meaning: "The run finished: Normal when it succeeded, Warning otherwise." },
  BrokerRefused: {
    type: "Warning",
    meaning:
      "The Job's state broker refused a request of module code: the first refusal of the Job (the note names the request and " +
      "why); the rest are counted in `captf_broker_refused_requests_total` ([security](security.md)).",
  },
  PlanDiffNotKept: {
    type: "Warning",
    meaning:
      "The plan's diff was not kept for `kubectl captf plan show --diff`: it was larger than 512 KiB compressed, or writing the " +
      "object's plan diff Secret failed (the note says which); the run goes on, and the Job's log has the plan.",
  },
};

/** Events kubectl captf records (`kubectl-captf`); their types are `pluginEventReasons`. */
export const pluginEventDocs: Record<PluginEventReason, EventDoc> = {
  PlanApprovalRequested: {
    meaning:
      "`plan approve` set `captf.io/approve-plan` to the plan's hash; the note names the hash and the approver (the webhook's " +
      "`captf.io/plan-approved-by`, else the user the API server authenticated).",
  },
  StateRestoreRequested: {
    meaning: "`restore` set `captf.io/restore-state` to a backup's serial; the note names the serial and the user.",
  },
};

/**
 * Event reasons of the public reference implementation that captf does not record, each with why: docs/events.md lists them so a
 * user of the reference knows what to watch instead.
 */
export const referenceEventsNotRecorded: Record<string, string> = {
  AppliedInputsUnknown:
    "The reference keeps what a successful apply ran in an applied record copied, on success, from the per-run Secret or the " +
    "attempt record, and warns when neither holds it any more. captf keeps one durable inputs Secret, written before the apply " +
    "Job is created and read by destroy, refresh and drift: a succeeded apply's inputs are always the ones it holds, and if the " +
    "Secret was deleted there is no older apply's inputs to fall back to (`DurableInputsMissing`, or a machine's destroy waits " +
    "with `DestroyFailed`).",
};
