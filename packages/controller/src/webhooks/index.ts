// The validating webhooks' pure validators, one per kind; the HTTPS admission server wraps them.
export { verdict, sameValue, isDeleting } from "./verdict.js";
export type { Verdict, Requester, AdmissionContext } from "./verdict.js";
export { imageReferenceProblem } from "./image-reference.js";
export { jobPolicyProblems, securityContextProblems, podSecurityContextProblems, reservedEnvPrefixes, safeSysctls, allowedSeLinuxTypes } from "./job-policy.js";
export { workspaceProblems, variablesProblems, variablesFromProblems } from "./workspace.js";
export type { WorkspaceSpec, WorkspaceCheck } from "./workspace.js";
export { validateTerraformCluster, clusterSpecProblems } from "./terraformcluster.js";
export { validateTerraformMachine, validateTerraformMachineDeletion, machineSpecProblems } from "./terraformmachine.js";
export type { MachineDeletionFacts } from "./terraformmachine.js";
export { validateTerraformMachinePool, poolSpecProblems } from "./terraformmachinepool.js";
export { validateTerraformClusterTemplate, validateTerraformMachineTemplate, validateTerraformMachinePoolTemplate, topologyDryRunAnnotation } from "./templates.js";
export { validateTerraformClusterIdentity, validateTerraformClusterIdentityDeletion, identityNeedsAccessReview } from "./terraformclusteridentity.js";
export type { IdentityAdmissionContext, SecretAccess, IdentityUser } from "./terraformclusteridentity.js";
