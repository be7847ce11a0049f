// The validating webhooks' pure validators, one per kind; the HTTPS admission server wraps them.
export { verdict, isDeleting } from "./verdict.js";
export type { Verdict, Requester, AdmissionContext } from "./verdict.js";
export { imageReferenceProblem } from "@captf/contract/oci";
export { jobPolicyProblems, securityContextProblems, podSecurityContextProblems, safeSysctls, allowedSeLinuxTypes } from "./job-policy.js";
export { reservedEnvPrefixes } from "../api/workspace.js";
export { workspaceProblems, variablesProblems, variablesFromProblems } from "./workspace.js";
export type { WorkspaceSpec, WorkspaceCheck } from "./workspace.js";
export { validateTerraformCluster, clusterSpecProblems } from "./terraformcluster.js";
export { validateTerraformMachine, validateTerraformMachineDeletion, machineSpecProblems } from "./terraformmachine.js";
export type { MachineDeletionFacts } from "./terraformmachine.js";
export { validateTerraformMachinePool, poolSpecProblems } from "./terraformmachinepool.js";
export {
  validateTerraformClusterTemplate,
  validateTerraformMachineTemplate,
  validateTerraformMachinePoolTemplate,
  topologyDryRunAnnotation,
} from "./templates.js";
export {
  validateTerraformClusterIdentity,
  validateTerraformClusterIdentityDeletion,
  identityNeedsAccessReview,
} from "./terraformclusteridentity.js";
export type { IdentityAdmissionContext, SecretAccess, IdentityUser } from "./terraformclusteridentity.js";
export { approverPatch, recordedApprover } from "./approver.js";
export type { JsonPatchOperation } from "./approver.js";
export {
  buildMutatingWebhookConfiguration,
  approverWebhook,
  defaultMutatingWebhookConfigurationName,
  buildValidatingWebhookConfiguration,
  validatingWebhooks,
  webhookPath,
  webhookName,
  renderWebhookTable,
  defaultWebhookConfigurationName,
  defaultWebhookTimeoutSeconds,
  WebhookConfigurationError,
} from "./configuration.js";
export type {
  ValidatingWebhookDefinition,
  WebhookConfigurationOptions,
  WebhookEndpoint,
  WebhookService,
  AdmissionOperation,
} from "./configuration.js";
export {
  startAdmissionServer,
  reviewAdmissionRequest,
  reviewApproverRequest,
  decodeAdmissionReview,
  WebhookCertificateError,
  defaultMaxBodyBytes,
  defaultCertificatePollMillis,
  admissionReviewApiVersion,
} from "./server.js";
export type { AdmissionServer, AdmissionServerOptions, AdmissionRequest, AdmissionResponse, ReviewDependencies } from "./server.js";
export { kubernetesAdmissionFacts, machineDeletionFactsFrom, identityUsersFrom, FactLookupError, clusterApiCoordinates } from "./facts.js";
export type { AdmissionFacts, AdmissionUserInfo, KubernetesAdmissionFactsOptions } from "./facts.js";
