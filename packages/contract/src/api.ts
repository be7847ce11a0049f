/**
 * Constants of the `infrastructure.cluster.x-k8s.io/v1alpha1` API: the group and kinds,
 * condition types and their reasons, event reasons, annotations, labels and finalizers.
 * One source of truth for the manager, the runner and the docs.
 */

export const apiGroup = "infrastructure.cluster.x-k8s.io";
export const apiVersion = "v1alpha1";
export const groupVersion = `${apiGroup}/${apiVersion}`;

export const kinds = {
  cluster: "TerraformCluster",
  clusterTemplate: "TerraformClusterTemplate",
  machine: "TerraformMachine",
  machineTemplate: "TerraformMachineTemplate",
  machinePool: "TerraformMachinePool",
  machinePoolTemplate: "TerraformMachinePoolTemplate",
  clusterIdentity: "TerraformClusterIdentity",
  modulePolicy: "TerraformModulePolicy",
  notificationReceiver: "TerraformNotificationReceiver",
} as const;
export type Kind = (typeof kinds)[keyof typeof kinds];

/** Finalizers of the three kinds that run Jobs; the others carry none. */
export const finalizers = {
  TerraformCluster: "terraformcluster.infrastructure.cluster.x-k8s.io",
  TerraformMachine: "terraformmachine.infrastructure.cluster.x-k8s.io",
  TerraformMachinePool: "terraformmachinepool.infrastructure.cluster.x-k8s.io",
} as const;

type ConditionStatus = "True" | "False" | "Unknown";

/** Allowed reasons of one condition type, by status. */
export type ConditionReasonTable = { readonly [S in ConditionStatus]: readonly string[] };

/** The table of one condition type, its reasons kept as literal types so a setter is checked against them. */
function reasons<const T extends readonly string[], const F extends readonly string[], const U extends readonly string[]>(
  t: T,
  f: F,
  u: U,
): { readonly True: T; readonly False: F; readonly Unknown: U } {
  return { True: t, False: f, Unknown: u };
}

/**
 * Every condition type and the reasons it may carry per status (Cluster API v1beta2
 * conventions: every status has a PascalCase reason; waiting is Unknown).
 */
export const conditionReasons = {
  Ready: reasons(["Ready", "SecretFound"], ["NotReady", "SecretNotFound", "CredentialsIncomplete"], ["ReadyUnknown"]),
  DependenciesReady: reasons(
    ["DependenciesReady"],
    [
      "OwnerNotFound",
      "WaitingForOwnerMachine",
      "WaitingForOwnerMachinePool",
      "ClusterNotTerraform",
      "OwnerMismatch",
      "VariablesSourceNotFound",
      "VariablesInvalid",
    ],
    ["WaitingForOwner", "WaitingForClusterInfrastructure", "WaitingForClusterExports", "WaitingForBootstrapData"],
  ),
  IdentityAllowed: reasons(
    ["IdentityAllowed", "LocalSecret"],
    ["IdentityNotFound", "NamespaceNotAllowed", "SecretNotFound", "CredentialsIncomplete"],
    ["IdentityCheckFailed"],
  ),
  CredentialsMirrored: reasons(["Mirrored"], ["MirrorFailed"], ["MirrorPending"]),
  RunnerRBACReady: reasons(["RBACReady"], ["RBACFailed", "ServiceAccountNotOptedIn"], []),
  ApplyJobSucceeded: reasons(
    ["ApplySucceeded", "DestroySucceeded"],
    [
      "ApplyFailed",
      "DestroyFailed",
      "JobDeadlineExceeded",
      "IdentityNotAllowed",
      "ImageInvalid",
      "ImagePullFailed",
      "InputsTooLarge",
      "JobPolicyInvalid",
      "DestructivePlanBlocked",
      "StateNotSaved",
    ],
    [
      "NoApplyYet",
      "WaitingForRunLease",
      "WaitingForClusterOperation",
      "WaitingForMachineOperations",
      "PlanAwaitingApproval",
      "PlanChanged",
      "WaitingForJobSlot",
      "JobQuotaExceeded",
    ],
  ),
  StateReadable: reasons(
    ["StateRead"],
    [
      "StateEncrypted",
      "StateCorrupt",
      "StateInconsistent",
      "StateLost",
      "StateLocked",
      "StateTooLarge",
      "RetainedStateFound",
      "StateLineageChanged",
      "StateEncryptionKeyUnavailable",
    ],
    ["StateNotFound"],
  ),
  RestoreJobSucceeded: reasons(
    ["StateRestored"],
    ["RestoreFailed", "RestoreBackupNotFound"],
    ["WaitingForRunLease", "WaitingForClusterOperation", "WaitingForMachineOperations", "WaitingForJobSlot", "JobQuotaExceeded"],
  ),
  OutputsValid: reasons(
    ["OutputsValid", "InstancesTruncated"],
    ["OutputsMissing", "OutputsInvalid", "FailureDomainMismatch", "ProviderIDChanged"],
    ["OutputsPending"],
  ),
  InfrastructureHealthy: reasons(
    ["Healthy"],
    ["Provisioning", "InstancePending", "InstanceUnhealthy", "InstanceDegraded", "InstanceStopped", "InstanceTerminated"],
    ["WaitingForProvisioning", "HealthUnknown", "ProviderIDMissing"],
  ),
  InputsApplied: reasons(
    ["InputsApplied"],
    ["ApplyPending", "AwaitingApproval", "ApplyRunning", "InputsApplyFailed"],
    ["InputsUnavailable"],
  ),
  DriftJobSucceeded: reasons(
    ["DriftChecked"],
    ["DriftJobFailed", "DriftJobDeadlineExceeded"],
    ["DriftNotChecked", "DriftJobRunning", "WaitingForRunLease", "DurableInputsMissing", "WaitingForJobSlot", "JobQuotaExceeded"],
  ),
  DriftDetected: reasons(["DriftReported", "DriftPending", "DriftRemediating"], ["NoDrift"], ["DriftNotChecked"]),
  DeletionBlocked: reasons(["DependentsExist"], ["NotBlocked"], []),
  EndpointAvailable: reasons(["EndpointAvailable"], ["WaitingForEndpoint"], []),
  AutoscalingActive: reasons(
    ["ReplicasManagedByModule"],
    ["AutoscalingDisabled", "AutoscalingAnnotationsInvalid", "ReplicasManagedExternally"],
    [],
  ),
  CapacityResolved: reasons(["CapacityResolved", "CapacityNotDeclared"], ["ImageInspectFailed", "CapacityLabelInvalid"], []),
  VariablesValid: reasons(
    ["VariablesValid", "VariablesSchemaNotDeclared"],
    ["VariablesRejected"],
    ["VariablesSourcePending", "VariablesSchemaUnavailable"],
  ),
  // A TerraformModulePolicy governs the object: the signature check of the image its next Job runs.
  ImageVerified: reasons(
    ["Verified", "NoPolicy"],
    ["SignatureMissing", "SignatureInvalid", "KeyUnknown", "ImageNotAllowed", "PolicyKeyInvalid"],
    ["RegistryUnreachable"],
  ),
  Paused: reasons(["Paused"], ["NotPaused"], []),
  Deleting: reasons(["Deleting", "DeletionPolicyUnresolved", "DeletionPaused"], ["NotDeleting"], []),
} as const satisfies Record<string, ConditionReasonTable>;

export type ConditionType = keyof typeof conditionReasons;

/** A value of condition `T` with a status and one of the reasons declared for that status. */
export type DeclaredCondition<T extends ConditionType> = {
  [S in ConditionStatus]: { status: S; reason: (typeof conditionReasons)[T][S][number]; message?: string };
}[ConditionStatus];
export const conditionTypes = Object.keys(conditionReasons) as ConditionType[];

/** Conditions whose True is the bad state. */
export const negativePolarityConditions: readonly ConditionType[] = ["Deleting", "DriftDetected", "DeletionBlocked"];

/** Conditions reported for information only: never inputs of the Ready summary. */
export const conditionsNeverInReady: readonly ConditionType[] = [
  "Paused",
  "DriftDetected",
  "DriftJobSucceeded",
  "DeletionBlocked",
  "EndpointAvailable",
  "RestoreJobSucceeded",
  "AutoscalingActive",
  "InputsApplied",
  "ImageVerified",
];

/** A status may carry at most this many conditions. */
export const maxConditions = 32;

/** Event reasons the manager emits (recorder `captf-manager`), with their type. */
export const managerEventReasons = {
  Provisioned: "Normal",
  InputsChanged: "Normal",
  ControlPlaneEndpointSet: "Normal",
  FailureDomainsChanged: "Normal",
  ProviderIDSet: "Normal",
  Paused: "Normal",
  Resumed: "Normal",
  OutputsInvalid: "Warning",
  ExportsNotPublished: "Warning",
  ConditionChanged: "Normal",
  DigestPinned: "Normal",
  DigestUnknown: "Warning",
  ImagePullFallback: "Warning",
  DestroyInputsMismatch: "Warning",
  JobCreated: "Normal",
  JobSucceeded: "Normal",
  JobFailed: "Warning",
  JobDeadlineExceeded: "Warning",
  JobInterrupted: "Warning",
  StuckJobDeleted: "Warning",
  WaitingForRunLease: "Normal",
  WaitingForJobSlot: "Normal",
  WaitingForClusterOperation: "Normal",
  WaitingForMachineOperations: "Normal",
  JobQuotaExceeded: "Warning",
  PlanReady: "Normal",
  PlanApproved: "Normal",
  PlanApplied: "Normal",
  PlanChanged: "Warning",
  PlanSuperseded: "Normal",
  DestructivePlanBlocked: "Warning",
  DestructivePlanApprovalConsumed: "Normal",
  StateAdopted: "Normal",
  StateBackedUp: "Normal",
  StateRestored: "Normal",
  StateRestoreFailed: "Warning",
  StateLocked: "Warning",
  ForceUnlocked: "Warning",
  StateUnreadable: "Warning",
  StateLost: "Warning",
  StateNotSaved: "Warning",
  StateLineageChanged: "Warning",
  OwnerReferencesRepaired: "Normal",
  DriftDetected: "Warning",
  DriftRemediationStarted: "Normal",
  DriftResolved: "Normal",
  InstanceHealthy: "Normal",
  InstanceUnhealthy: "Warning",
  ReadyLost: "Warning",
  ReadyRegained: "Normal",
  RemediationRequested: "Warning",
  RemediationWithdrawn: "Normal",
  IdentityNotAllowed: "Warning",
  IdentitySecretFound: "Normal",
  IdentitySecretNotFound: "Warning",
  MirrorCreated: "Normal",
  MirrorRemoved: "Normal",
  DeletionStarted: "Normal",
  Destroyed: "Normal",
  FinalizerRemoved: "Normal",
  InfrastructureRetained: "Normal",
  ExternallyManagedReleased: "Normal",
  RetainedStateFound: "Warning",
  RetainedStateAdopted: "Normal",
  ReplicasWrittenBack: "Normal",
  ReplicasManagedExternally: "Warning",
  CapacityResolved: "Normal",
  ImageInspectFailed: "Warning",
  ImageVerified: "Normal",
  ImageVerificationFailed: "Warning",
} as const satisfies Record<string, "Normal" | "Warning">;
export type ManagerEventReason = keyof typeof managerEventReasons;

/** Event reasons the runner reports (reporting controller `captf.io/runner`). */
export const runnerEventReasons = [
  "RunStarted",
  "StepStarted",
  "StepSucceeded",
  "StepFailed",
  "PlanSummary",
  "ResourcesChanged",
  "RunFinished",
  // The state broker in the Job refused a request of module code (the first of the Job's).
  "BrokerRefused",
  // The plan's diff could not be kept in the object's plan diff Secret (too large, or the write failed); the run goes on.
  "PlanDiffNotKept",
] as const;
export type RunnerEventReason = (typeof runnerEventReasons)[number];

export const eventReporters = { manager: "captf-manager", runner: "captf.io/runner", plugin: "kubectl-captf" } as const;

/** Event reasons `kubectl captf` records on the object it asks something of (reporting controller `kubectl-captf`). */
export const pluginEventReasons = {
  PlanApprovalRequested: "Normal",
  StateRestoreRequested: "Normal",
} as const satisfies Record<string, "Normal" | "Warning">;
export type PluginEventReason = keyof typeof pluginEventReasons;

/** Annotations captf reads or writes. */
export const annotations = {
  // set by users
  restoreState: "captf.io/restore-state",
  approvePlan: "captf.io/approve-plan",
  approveDestructivePlan: "captf.io/approve-destructive-plan",
  // set by captf's mutating webhook from the request's user, never by users
  planApprovedBy: "captf.io/plan-approved-by",
  // on Terraform* objects and Machines
  endpointSource: "captf.io/endpoint-source",
  remediationRequested: "captf.io/remediation-requested",
  // on state Secrets, durable inputs and Jobs
  inputsHash: "captf.io/inputs-hash",
  image: "captf.io/image",
  imageDigest: "captf.io/image-digest",
  identity: "captf.io/identity",
  applied: "captf.io/applied",
  interruptedApply: "captf.io/interrupted-apply",
  stateLineage: "captf.io/state-lineage",
  unpullableImages: "captf.io/unpullable-images",
  pendingClusterOutputs: "captf.io/pending-cluster-outputs",
  partialClusterOutputs: "captf.io/partial-cluster-outputs",
  appliedClusterOutputsHash: "captf.io/applied-cluster-outputs-hash",
  bookkept: "captf.io/bookkept",
  interrupted: "captf.io/interrupted",
  destructivePlanBlocked: "captf.io/destructive-plan-blocked",
  planChanged: "captf.io/plan-changed",
  stateNotSaved: "captf.io/state-not-saved",
  planUnreadable: "captf.io/plan-unreadable",
  driftRemediation: "captf.io/drift-remediation",
  approvedPlan: "captf.io/approved-plan",
  planHash: "captf.io/plan-hash",
  afterFailedApply: "captf.io/after-failed-apply",
  afterInterruptedApply: "captf.io/after-interrupted-apply",
  restoreSerial: "captf.io/restore-serial",
  approvalHash: "captf.io/approval-hash",
  clusterOutputsHash: "captf.io/cluster-outputs-hash",
  heldClusterOutputs: "captf.io/held-cluster-outputs",
  imagePullFailed: "captf.io/image-pull-failed",
  // state backups
  stateBackupSerial: "captf.io/state-backup-serial",
  stateBackupLineage: "captf.io/state-backup-lineage",
  stateBackupTakenAt: "captf.io/state-backup-taken-at",
  stateBackupSourceJob: "captf.io/state-backup-source-job",
  stateBackupDigest: "captf.io/state-backup-digest",
  stateBackupResources: "captf.io/state-backup-resources",
  stateBackupChunk: "captf.io/state-backup-chunk",
  stateBackupChunks: "captf.io/state-backup-chunks",
  /** The backup set a chunk belongs to: its first Secret's name (two sets of one serial differ in it). */
  stateBackupSet: "captf.io/state-backup-set",
  // leases and credential mirrors
  lease: "captf.io/lease",
  leaseOp: "captf.io/lease-op",
  leaseAcquiredAt: "captf.io/lease-acquired-at",
  sourceHash: "captf.io/source-hash",
  // Cluster API and clusterctl keys captf uses
  clonedFromName: "cluster.x-k8s.io/cloned-from-name",
  paused: "cluster.x-k8s.io/paused",
  managedBy: "cluster.x-k8s.io/managed-by",
  remediateMachine: "cluster.x-k8s.io/remediate-machine",
  replicasManagedBy: "cluster.x-k8s.io/replicas-managed-by",
  autoscalerMinSize: "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size",
  autoscalerMaxSize: "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size",
  blockMove: "clusterctl.cluster.x-k8s.io/block-move",
  deleteForMove: "clusterctl.cluster.x-k8s.io/delete-for-move",
  safeToEvict: "cluster-autoscaler.kubernetes.io/safe-to-evict",
  topologyDryRun: "topology.cluster.x-k8s.io/dry-run",
} as const;

/** Labels captf reads or writes. */
export const labels = {
  variablesSource: "captf.io/variables",
  runnerServiceAccount: "captf.io/runner",
  managed: "captf.io/managed",
  /** On a credentials mirror Secret (`captf-creds-<identity>`), with {@link labels.managed}. */
  mirrored: "captf.io/mirrored",
  stateBackup: "captf.io/state-backup",
  stateBackupSuffix: "captf.io/state-backup-suffix",
  retainedFromUid: "captf.io/retained-from-uid",
  /**
   * With `--shards` > 1: the shard (`0` … N-1) of a TerraformCluster, TerraformMachine or TerraformMachinePool, kept by the manager;
   * each replica watches the shards it holds.
   */
  shard: "captf.io/shard",
  ownerKind: "captf.infrastructure.cluster.x-k8s.io/owner-kind",
  ownerName: "captf.infrastructure.cluster.x-k8s.io/owner-name",
  op: "captf.infrastructure.cluster.x-k8s.io/op",
  attempt: "captf.infrastructure.cluster.x-k8s.io/attempt",
  clusterName: "cluster.x-k8s.io/cluster-name",
  controlPlane: "cluster.x-k8s.io/control-plane",
  watchFilter: "cluster.x-k8s.io/watch-filter",
  move: "clusterctl.cluster.x-k8s.io/move",
  moveHierarchy: "clusterctl.cluster.x-k8s.io/move-hierarchy",
  /** On a CRD: the Cluster API contract version it implements, mapped to its API version. */
  capiContract: "cluster.x-k8s.io/v1beta2",
} as const;

/** The values of `captf.io/endpoint-source`. */
export const endpointSources = ["user", "module"] as const;

/** The value captf writes to `cluster.x-k8s.io/replicas-managed-by`. */
export const replicasManagedByValue = "captf";
