/**
 * The fields TerraformCluster, TerraformMachine and TerraformMachinePool share ("workspace"
 * fields): the module image, the identity, the Job policy, user variables and deletion in spec;
 * Job bookkeeping, state and backups in status. Each kind spreads these into its own schema.
 */
import { Type, type Static } from "@sinclair/typebox";
import { kinds } from "@captf/contract/api";
import { maxInlineVariables, maxVariablesSources } from "@captf/render";
import { errorKinds, maxDriftResources, maxPlanResources, maxSummaryBytes, operations } from "@captf/contract/run-result";
import { defaultDriftAction, defaultImagePullPolicy, defaultVariablesFormat, jobPolicyDefaults, remediationDefaults } from "./defaults.js";
import {
  EnvVarSchema,
  LocalObjectReferenceSchema,
  PodSecurityContextSchema,
  ResourceRequirementsSchema,
  SecurityContextSchema,
} from "./kubernetes-types.js";
import { Int32, Int64, JsonObject, StringEnum, Timestamp, atomicList, cel, dnsSubdomainPattern, mapList, described } from "./schema.js";

/** At most this many entries in status.stateBackups. */
export const maxStateBackups = 16;
/** At most this many entries in status.lastRun.error.resources. */
export const maxErrorResources = 10;
/** status.lastRun.approvedBy is cut to this many characters. */
export const maxApproverLength = 512;
/** At most this many steps in status.lastRun.steps. */
export const maxRunSteps = 16;
/** At most this many characters in one status.plan.resources entry. */
export const maxPlanResourceLength = 600;
/** At most this many entries in spec.jobs.env. */
export const maxJobEnv = 64;
/** Environment name prefixes the runner owns: TF_* configure the runtime, KUBE_* the state backend. */
export const reservedEnvPrefixes = ["TF_", "KUBE_"] as const;
/** At most this many entries in spec.jobs.imagePullSecrets. */
export const maxImagePullSecrets = 10;

export const imagePullPolicies = ["IfNotPresent", "Always", "Never"] as const;
export const driftActions = ["Report", "Remediate"] as const;
export const variablesFormats = ["String", "JSON"] as const;
export const deletionPolicies = ["Destroy", "Retain"] as const;
export const identityReferenceKinds = [kinds.clusterIdentity, "Secret"] as const;

// ---- spec ----

export const SourceSchema = Type.Object(
  {
    image: Type.String({
      description:
        "OCI image reference (registry/repo:tag or registry/repo@sha256:digest) bundling the role module at /captf/module and " +
        "the runtime at /captf/runtime; its tag or digest is the module version. Whoever can publish to this reference runs " +
        "code with this namespace's Secrets and cloud credentials.",
      minLength: 1,
      maxLength: 512,
    }),
    imagePullPolicy: Type.Optional(
      StringEnum(imagePullPolicies, {
        description: "Pull policy of the Job's main container; use Always with a mutable tag.",
        default: defaultImagePullPolicy,
      }),
    ),
  },
  { description: "The role image: module code and runtime in one OCI image." },
);
export type Source = Static<typeof SourceSchema>;

export const IdentityReferenceSchema = Type.Object(
  {
    name: Type.String({
      description: "Name of the TerraformClusterIdentity (or, with kind Secret, of a Secret in the object's namespace).",
      minLength: 1,
      maxLength: 253,
    }),
    kind: Type.Optional(
      StringEnum(identityReferenceKinds, {
        description:
          "What name refers to: a cluster-scoped TerraformClusterIdentity, or a Secret in the object's own namespace used as is.",
        default: kinds.clusterIdentity,
      }),
    ),
  },
  { description: "The credentials the object's Jobs get." },
);
export type IdentityReference = Static<typeof IdentityReferenceSchema>;

export const JobPolicySchema = Type.Object(
  {
    successfulJobsHistoryLimit: Type.Optional(
      Int32({
        description: "Succeeded Jobs kept per operation; the newest succeeded Job of each operation is kept even at 0.",
        minimum: 0,
        maximum: 100,
        default: jobPolicyDefaults.successfulJobsHistoryLimit,
      }),
    ),
    failedJobsHistoryLimit: Type.Optional(
      Int32({
        description:
          "Failed Jobs kept per operation; the newest failed Job of an operation is kept even at 0 until a later one succeeds, " +
          "because retry backoff counts it.",
        minimum: 0,
        maximum: 100,
        default: jobPolicyDefaults.failedJobsHistoryLimit,
      }),
    ),
    activeDeadlineSeconds: Type.Optional(
      Int64({
        description:
          "Longest run of one Job, in seconds; a Job reaching it is interrupted and counts as failed. Must exceed " +
          "lockTimeoutSeconds (the built-in 300 when that is unset).",
        minimum: 1,
        maximum: 86400,
        default: jobPolicyDefaults.activeDeadlineSeconds,
      }),
    ),
    lockTimeoutSeconds: Type.Optional(
      Int32({
        description:
          "How long the runtime waits for the state lock (-lock-timeout), in seconds. Must be below activeDeadlineSeconds (the " +
          "built-in 3600 when that is unset).",
        minimum: 0,
        maximum: 3600,
        default: jobPolicyDefaults.lockTimeoutSeconds,
      }),
    ),
    serviceAccountName: Type.Optional(
      Type.String({
        description:
          "ServiceAccount of the Job pod instead of the managed captf-runner; it must exist and carry the label " +
          "captf.io/runner=true, else no Job starts.",
        minLength: 1,
        maxLength: 253,
      }),
    ),
    imagePullSecrets: Type.Optional(
      Type.Array(LocalObjectReferenceSchema, {
        description: "Pull secrets of the Job pod, for both the source image and the runner's init image.",
        minItems: 1,
        maxItems: maxImagePullSecrets,
        ...atomicList,
      }),
    ),
    resources: Type.Optional(ResourceRequirementsSchema),
    env: Type.Optional(
      Type.Array(EnvVarSchema, {
        description: "Environment variables added to the main container. TF_* and KUBE_* names are rejected: the runner owns them.",
        minItems: 1,
        maxItems: maxJobEnv,
        ...mapList("name"),
      }),
    ),
    securityContext: Type.Optional(SecurityContextSchema),
    podSecurityContext: Type.Optional(PodSecurityContextSchema),
  },
  {
    description:
      "How the Jobs that run the module are tuned. Jobs never retry pods (backoffLimit 0) and get no TTL: the manager owns " +
      "retries and pruning. Defaults are applied when the Job is built, never stored.",
    ...cel({
      rule: "!has(self.lockTimeoutSeconds) || !has(self.activeDeadlineSeconds) || self.lockTimeoutSeconds < self.activeDeadlineSeconds",
      message: "lockTimeoutSeconds must be less than activeDeadlineSeconds: a Job must outlive its wait for the state lock",
      fieldPath: ".lockTimeoutSeconds",
    }),
  },
);
export type JobPolicy = Static<typeof JobPolicySchema>;

export const DriftPolicySchema = Type.Object(
  {
    intervalSeconds: Type.Optional(
      Int32({
        description:
          "Seconds between drift checks; the manager's --drift-default-interval (30m) when unset. 0 disables drift checks and, " +
          "with them, every health sample after provisioning.",
        minimum: 0,
      }),
    ),
    action: Type.Optional(
      StringEnum(driftActions, {
        description:
          "What a check that finds drift does: Report records it; Remediate applies the current inputs, reverting out-of-band changes.",
        default: defaultDriftAction,
      }),
    ),
  },
  { description: "Periodic drift detection." },
);
export type DriftPolicy = Static<typeof DriftPolicySchema>;

export const MachineDriftPolicySchema = Type.Object(
  {
    intervalSeconds: Type.Optional(
      Int32({
        description:
          "Seconds between drift checks; inherited from the cluster, else --drift-default-interval (30m). 0 disables them, and " +
          "with remediation.annotateMachine unset it also stops health sampling after provisioning.",
        minimum: 0,
      }),
    ),
  },
  {
    description:
      "Periodic drift detection of a machine. Machine drift is always reported, never remediated: a machine is replaced, not repaired.",
  },
);
export type MachineDriftPolicy = Static<typeof MachineDriftPolicySchema>;

export const MachinePoolDriftPolicySchema = Type.Object(
  {
    intervalSeconds: Type.Optional(
      Int32({
        description:
          "Seconds between drift checks; inherited when positive, else --drift-default-interval (30m). A pool's drift cannot be disabled.",
        minimum: 1,
      }),
    ),
    action: Type.Optional(
      StringEnum(driftActions, { description: "What a check that finds drift does: Report or Remediate.", default: defaultDriftAction }),
    ),
  },
  { description: "Periodic drift detection of a pool." },
);
export type MachinePoolDriftPolicy = Static<typeof MachinePoolDriftPolicySchema>;

export const MachineRemediationSchema = Type.Object(
  {
    annotateMachine: Type.Optional(
      Type.Boolean({
        description:
          "Set cluster.x-k8s.io/remediate-machine on the owner Machine after unhealthyThreshold unhealthy samples (at once when " +
          "terminated), so a MachineHealthCheck replaces it; captf removes only the annotation it set, once the instance is healthy again.",
        default: remediationDefaults.annotateMachine,
      }),
    ),
    unhealthyThreshold: Type.Optional(
      Int32({
        description:
          "Consecutive unhealthy health samples before the Machine is annotated; a sample is one completed refresh or drift Job.",
        minimum: 1,
        maximum: 100,
        default: remediationDefaults.unhealthyThreshold,
      }),
    ),
    healthCheckIntervalSeconds: Type.Optional(
      Int32({
        description:
          "While annotateMachine is true, how often a provisioned machine is refreshed to sample its health, independent of drift.",
        minimum: 60,
        maximum: 86400,
        default: remediationDefaults.healthCheckIntervalSeconds,
      }),
    ),
  },
  { description: "How an unhealthy instance is signalled to Cluster API beyond the Ready condition." },
);
export type MachineRemediation = Static<typeof MachineRemediationSchema>;

export const VariablesSourceReferenceSchema = Type.Object(
  { name: Type.String({ description: "Name of the ConfigMap or Secret.", minLength: 1, maxLength: 253, pattern: dnsSubdomainPattern }) },
  { description: "A ConfigMap or Secret in the object's namespace." },
);

export const VariablesSourceSchema = Type.Object(
  {
    configMapRef: Type.Optional(described(VariablesSourceReferenceSchema, "A ConfigMap; set exactly one of configMapRef and secretRef.")),
    secretRef: Type.Optional(
      described(
        VariablesSourceReferenceSchema,
        "A Secret; its variables are declared sensitive in the generated root. Set exactly one of configMapRef and secretRef.",
      ),
    ),
    optional: Type.Optional(
      Type.Boolean({
        description:
          "A missing or unlabeled source contributes nothing instead of holding the object at DependenciesReady=False " +
          "(VariablesSourceNotFound).",
        default: false,
      }),
    ),
    format: Type.Optional(
      StringEnum(variablesFormats, {
        description: "String passes each data value as a string; JSON parses each value as JSON (lists, maps, objects).",
        default: defaultVariablesFormat,
      }),
    ),
  },
  {
    description: "Module variables read from every data key of one ConfigMap or Secret labeled captf.io/variables=true.",
    ...cel({ rule: "has(self.configMapRef) != has(self.secretRef)", message: "set exactly one of configMapRef and secretRef" }),
  },
);
export type VariablesSource = Static<typeof VariablesSourceSchema>;

/** The key of the state encryption Secret that holds TF_ENCRYPTION when secretRef names none. */
export const defaultStateEncryptionSecretKey = "TF_ENCRYPTION";
/** A Secret data key, as the API server checks it. */
export const secretKeyPattern = "^[-._a-zA-Z0-9]+$";

export const StateEncryptionSchema = Type.Object(
  {
    secretRef: Type.Object(
      {
        name: Type.String({
          description: "Name of the Secret, in the object's namespace.",
          minLength: 1,
          maxLength: 253,
          pattern: dnsSubdomainPattern,
        }),
        key: Type.Optional(
          Type.String({
            description: "The Secret's key holding the configuration.",
            minLength: 1,
            maxLength: 253,
            pattern: secretKeyPattern,
            default: defaultStateEncryptionSecretKey,
          }),
        ),
      },
      {
        description:
          "The Secret key holding OpenTofu's encryption configuration (TF_ENCRYPTION, in its JSON form): given to every Job " +
          "by reference and read by the manager to decrypt serial, lineage and outputs.",
      },
    ),
  },
  {
    description:
      "OpenTofu state encryption: the runtime encrypts the state it writes and the manager decrypts it with the same configuration. " +
      "The rendered root and the inputs hash do not change. Terraform images are refused. Rotate keys through the configuration's " +
      "fallback block. Mutable.",
  },
);
export type StateEncryption = Static<typeof StateEncryptionSchema>;

/** spec fields every Job-running kind shares; `mutability` words the kind's rule into the descriptions. */
export function workspaceSpecFields(mutability: { definition: string }) {
  return {
    source: SourceSchema,
    identityRef: Type.Optional(IdentityReferenceSchema),
    jobs: Type.Optional(described(JobPolicySchema, `${JobPolicySchema.description} Mutable.`)),
    variables: Type.Optional(
      JsonObject({
        description:
          `Module variables, a JSON object: each key becomes a named argument of the role module. Keys are Terraform ` +
          `identifiers; captf_ names, the role's contract inputs and module meta-arguments are reserved. Inline variables win ` +
          `over variablesFrom. ${mutability.definition}`,
        minProperties: 1,
        maxProperties: maxInlineVariables,
      }),
    ),
    variablesFrom: Type.Optional(
      Type.Array(VariablesSourceSchema, {
        description:
          `ConfigMaps and Secrets read for module variables in list order: a later source wins on a key, inline ` +
          `variables win over all. ${mutability.definition}`,
        minItems: 1,
        maxItems: maxVariablesSources,
        ...atomicList,
      }),
    ),
    deletionPolicy: Type.Optional(
      StringEnum(deletionPolicies, {
        description:
          "What deleting the object does with its infrastructure: Destroy runs a destroy Job; Retain keeps the infrastructure " +
          "and its state for a later object of the same name to adopt. Unset inherits from the cluster, else Destroy. Mutable, " +
          "also while deleting.",
      }),
    ),
    stateEncryption: Type.Optional(StateEncryptionSchema),
    adoptRetainedState: Type.Optional(
      Type.Boolean({
        description:
          "Take over the state an earlier object of the same kind, namespace and name retained at deletion. Never inherited. Mutable.",
      }),
    ),
  };
}

// ---- status ----

export const InitializationSchema = Type.Object(
  {
    provisioned: Type.Optional(
      Type.Boolean({
        description:
          "True once the infrastructure is provisioned: derived from state until it first holds, then latched for the object's life.",
      }),
    ),
  },
  { description: "The Cluster API v1beta2 contract's initialization status.", minProperties: 1 },
);

export const ActiveJobSchema = Type.Object(
  {
    name: Type.String({ description: "Name of the Job.", minLength: 1, maxLength: 63 }),
    operation: StringEnum(operations, { description: "Operation the Job runs." }),
    attempt: Int32({
      description: "Sequence number of the operation's Job (a<N> in its name), counting retained Jobs, not retries.",
      minimum: 1,
    }),
    startTime: Type.Optional(Timestamp({ description: "When captf created the Job (its creationTimestamp; its Pod may start later)." })),
  },
  { description: "The Job running for the object now." },
);

export type ActiveJob = Static<typeof ActiveJobSchema>;

export const RunStepSchema = Type.Object(
  {
    name: Type.String({ description: "The step, e.g. init, validate, plan, apply, apply-refresh-only.", minLength: 1, maxLength: 64 }),
    exitCode: Int32({ description: "Exit code of the step." }),
    durationMilliseconds: Type.Optional(Int64({ description: "Wall time of the step.", minimum: 0 })),
  },
  { description: "One runtime command the runner ran." },
);

export const RunErrorSchema = Type.Object(
  {
    kind: StringEnum(errorKinds, {
      description:
        "image-layout: the image breaks the image contract; step: a runtime step failed; interrupted: the pod was stopped from " +
        "outside; blocked: a destructive plan awaits approval; plan-changed: an approved plan planned differently; state-save: " +
        "an apply or destroy ran but its new state could not be saved (larger than a Secret holds), so nothing is retried.",
    }),
    step: Type.Optional(Type.String({ description: "The failed step, for kind step.", minLength: 1, maxLength: 64 })),
    summary: Type.Optional(
      Type.String({
        description: "The runner's redacted summary of the failure, not raw stderr (the Job's log has that).",
        minLength: 1,
        maxLength: maxSummaryBytes,
      }),
    ),
    resources: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 512 }), {
        description: "Failed resources as '<address>: <summary>'.",
        minItems: 1,
        maxItems: maxErrorResources,
        ...atomicList,
      }),
    ),
  },
  { description: "Why the run failed." },
);

export const DriftSummarySchema = Type.Object(
  {
    add: Type.Optional(Int32({ description: "Resources the plan would create.", minimum: 0 })),
    change: Type.Optional(Int32({ description: "Resources the plan would update in place.", minimum: 0 })),
    destroy: Type.Optional(Int32({ description: "Resources the plan would destroy, replacements included.", minimum: 0 })),
    resources: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 512 }), {
        description: "Addresses of the drifted resources.",
        minItems: 1,
        maxItems: maxDriftResources,
        ...atomicList,
      }),
    ),
  },
  { description: "The drift a drift run found.", minProperties: 1 },
);

export const LastRunSchema = Type.Object(
  {
    job: Type.String({ description: "Name of the Job.", minLength: 1, maxLength: 63 }),
    operation: StringEnum(operations, { description: "Operation the Job ran." }),
    steps: Type.Optional(
      Type.Array(RunStepSchema, { description: "Steps the runner ran, in order.", minItems: 1, maxItems: maxRunSteps, ...atomicList }),
    ),
    error: Type.Optional(RunErrorSchema),
    drift: Type.Optional(DriftSummarySchema),
    approvedBy: Type.Optional(
      Type.String({
        description:
          "Who approved the plan this apply Job applied (applyPolicy Manual): the user captf's mutating webhook recorded in " +
          "captf.io/plan-approved-by, kept on the Job.",
        minLength: 1,
        maxLength: maxApproverLength,
      }),
    ),
  },
  { description: "The result of the newest finished Job, from the runner's termination message." },
);

export const SourceStatusSchema = Type.Object(
  {
    image: Type.Optional(Type.String({ description: "The image reference last run, as the spec gave it.", minLength: 1, maxLength: 512 })),
    imageDigest: Type.Optional(
      Type.String({
        description: "The digest the container runtime resolved it to (informational; the pinned copy is on the durable inputs Secret).",
        minLength: 1,
        maxLength: 512,
      }),
    ),
    runtimeVersion: Type.Optional(Type.String({ description: "Version the runtime reported.", minLength: 1, maxLength: 64 })),
  },
  { description: "What the last Job actually ran.", minProperties: 1 },
);

export const StateBackupSchema = Type.Object(
  {
    serial: Int64({
      description: "State serial the backup holds; name it in the captf.io/restore-state annotation to restore it.",
      minimum: 1,
    }),
    takenAt: Timestamp({ description: "When the manager copied the state." }),
    bytes: Int64({ description: "Compressed size of the backup over all its Secrets.", minimum: 1 }),
  },
  { description: "One copy of the state, kept in captf-state-backup-* Secrets." },
);
export type StateBackup = Static<typeof StateBackupSchema>;

/** status fields every Job-running kind shares. Nothing here is load-bearing: all of it is rebuilt after clusterctl move. */
export function workspaceStatusFields() {
  return {
    initialization: Type.Optional(InitializationSchema),
    observedGeneration: Type.Optional(Int64({ description: "The metadata.generation this status was computed for.", minimum: 1 })),
    activeJob: Type.Optional(ActiveJobSchema),
    lastRun: Type.Optional(LastRunSchema),
    lastDriftCheck: Type.Optional(Timestamp({ description: "When the last drift check finished." })),
    lastRefresh: Type.Optional(
      Timestamp({ description: "When the last refresh or drift check finished, or the apply whose health reading stood in for one." }),
    ),
    pendingRefreshes: Type.Optional(
      Int32({
        description:
          "Consecutive health samples that read pending since the last other reading or apply; spaces refreshes 30s, 1m, 2m, " +
          "4m, then 5m. Status only: restarts after clusterctl move.",
        minimum: 1,
      }),
    ),
    observedStateSerial: Type.Optional(Int64({ description: "The state serial the outputs were read from.", minimum: 1 })),
    lastRestoredSerial: Type.Optional(
      Int64({
        description: "Backup serial of the last restore Job consumed (succeeded or failed), so the same request does not run twice.",
        minimum: 1,
      }),
    ),
    stateSecretSuffix: Type.Optional(
      Type.String({
        description: "secret_suffix of the object's state in the kubernetes backend (informational).",
        minLength: 1,
        maxLength: 63,
      }),
    ),
    source: Type.Optional(SourceStatusSchema),
    stateBackups: Type.Optional(
      Type.Array(StateBackupSchema, {
        description: "State backups kept, newest first.",
        minItems: 1,
        maxItems: maxStateBackups,
        ...atomicList,
      }),
    ),
  };
}

/** The plan of a TerraformCluster change waiting for approval (applyPolicy Manual). */
export const PlanPreviewSchema = Type.Object(
  {
    inputsHash: Type.String({ description: "Hash of the inputs the plan was made for.", minLength: 1, maxLength: 128 }),
    job: Type.String({
      description: "The Job that made the plan: a plan Job, or an approved apply that planned differently.",
      minLength: 1,
      maxLength: 63,
    }),
    planHash: Type.String({
      description:
        "Fingerprint of the plan's changes (p1:<sha256>); approve the plan by setting the captf.io/approve-plan annotation to it.",
      minLength: 1,
      maxLength: 128,
    }),
    add: Type.Optional(Int32({ description: "Resources the plan creates.", minimum: 0 })),
    change: Type.Optional(Int32({ description: "Resources the plan updates in place.", minimum: 0 })),
    destroy: Type.Optional(Int32({ description: "Resources the plan destroys, replacements included.", minimum: 0 })),
    import: Type.Optional(
      Int32({
        description:
          "Resources the plan imports (import blocks), counted apart from add, change and destroy; an import alone needs approval.",
        minimum: 0,
      }),
    ),
    move: Type.Optional(
      Int32({
        description:
          "Resources the plan moves to a new address (moved blocks), counted apart from add, change and destroy; a move alone " +
          "needs approval.",
        minimum: 0,
      }),
    ),
    outputChanges: Type.Optional(
      Int32({
        description: "Root outputs the plan changes; an output change alone needs approval, since exports feed every machine and pool.",
        minimum: 0,
      }),
    ),
    resources: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: maxPlanResourceLength }), {
        description: "'<address> (<action>)' of each changed resource, sorted by address; never a value.",
        minItems: 1,
        maxItems: maxPlanResources,
        ...atomicList,
      }),
    ),
    truncated: Type.Optional(Type.Boolean({ description: "True when resources lists fewer resources than the plan changes." })),
    createdAt: Type.Optional(Timestamp({ description: "When the plan was made." })),
  },
  { description: "The plan waiting for approval under applyPolicy Manual; cleared once the approved apply succeeds." },
);
export type PlanPreview = Static<typeof PlanPreviewSchema>;
