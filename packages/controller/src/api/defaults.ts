/**
 * The built-in defaults of the v1alpha1 API. The CRDs declare none of them: the manager applies
 * them at reconcile or when it builds a Job, so a provider upgrade that changes a default reaches
 * objects stored earlier, and a stored object stays exactly as its author wrote it.
 */

/** Defaults of a JobPolicy field left unset by the object and every policy it inherits. */
export const jobPolicyDefaults = {
  successfulJobsHistoryLimit: 3,
  failedJobsHistoryLimit: 3,
  activeDeadlineSeconds: 3600,
  lockTimeoutSeconds: 300,
} as const;

/** Defaults of MachineRemediation. */
export const remediationDefaults = {
  annotateMachine: false,
  unhealthyThreshold: 3,
  healthCheckIntervalSeconds: 300,
} as const;

/** The pool's membership refresh interval when unset. */
export const defaultMembershipRefreshIntervalSeconds = 60;

/** The drift action when unset. */
export const defaultDriftAction = "Report";

/** A TerraformCluster's apply policy when unset. */
export const defaultApplyPolicy = "Automatic";

/** A source image's pull policy when unset. */
export const defaultImagePullPolicy = "IfNotPresent";

/** A variablesFrom source's format when unset. */
export const defaultVariablesFormat = "String";

/** The deletion policy when neither the object nor its cluster sets one. */
export const defaultDeletionPolicy = "Destroy";

/** The runner's UID: the Job pod's fsGroup, so a non-root image user can read 0440 credential files. */
export const runnerUid = 65532;
