// The v1alpha1 API: TypeBox schemas (one source of truth), their TypeScript types, the kinds'
// CRD metadata and the generators of config/crd and docs/api-reference.md.
export * as schema from "./schema.js";
export * from "./defaults.js";
export type {
  Condition,
  LabelSelector,
  EnvVar,
  ResourceRequirements,
  SecurityContext,
  PodSecurityContext,
  ApiEndpoint,
  MachineAddress,
  FailureDomain,
  TemplateObjectMeta,
} from "./kubernetes-types.js";
export {
  SourceSchema,
  IdentityReferenceSchema,
  JobPolicySchema,
  DriftPolicySchema,
  MachineDriftPolicySchema,
  MachinePoolDriftPolicySchema,
  MachineRemediationSchema,
  VariablesSourceSchema,
  StateBackupSchema,
  PlanPreviewSchema,
  imagePullPolicies,
  driftActions,
  variablesFormats,
  deletionPolicies,
  identityReferenceKinds,
  maxStateBackups,
  maxErrorResources,
  maxRunSteps,
  maxPlanResourceLength,
  maxJobEnv,
  maxImagePullSecrets,
} from "./workspace.js";
export type {
  Source,
  IdentityReference,
  JobPolicy,
  DriftPolicy,
  MachineDriftPolicy,
  MachinePoolDriftPolicy,
  MachineRemediation,
  VariablesSource,
  StateBackup,
  PlanPreview,
} from "./workspace.js";
export {
  TerraformClusterSchema,
  TerraformClusterSpecSchema,
  TerraformClusterStatusSchema,
  TerraformClusterDefaultsSchema,
  terraformClusterDefinition,
  applyPolicies,
  maxFailureDomains,
  maxPublishedExportsBytes,
} from "./terraformcluster.js";
export type { TerraformCluster, TerraformClusterSpec, TerraformClusterStatus, TerraformClusterDefaults } from "./terraformcluster.js";
export {
  TerraformMachineSchema,
  TerraformMachineSpecSchema,
  TerraformMachineStatusSchema,
  terraformMachineDefinition,
} from "./terraformmachine.js";
export type { TerraformMachine, TerraformMachineSpec, TerraformMachineStatus } from "./terraformmachine.js";
export {
  TerraformMachinePoolSchema,
  TerraformMachinePoolSpecSchema,
  TerraformMachinePoolStatusSchema,
  MachinePoolInstanceSchema,
  terraformMachinePoolDefinition,
  maxProviderIDList,
} from "./terraformmachinepool.js";
export type { TerraformMachinePool, TerraformMachinePoolSpec, TerraformMachinePoolStatus } from "./terraformmachinepool.js";
export {
  TerraformClusterTemplateSchema,
  TerraformMachineTemplateSchema,
  TerraformMachineTemplateStatusSchema,
  TerraformMachinePoolTemplateSchema,
  terraformClusterTemplateDefinition,
  terraformMachineTemplateDefinition,
  terraformMachinePoolTemplateDefinition,
  architectures,
  capacitySources,
} from "./templates.js";
export type { TerraformClusterTemplate, TerraformMachineTemplate, TerraformMachinePoolTemplate } from "./templates.js";
export {
  TerraformClusterIdentitySchema,
  TerraformClusterIdentitySpecSchema,
  AllowedNamespacesSchema,
  terraformClusterIdentityDefinition,
  identityTypes,
  maxAllowedNamespaces,
  maxMirrorNamespaces,
  maxRequiredKeys,
} from "./terraformclusteridentity.js";
export type { TerraformClusterIdentity, TerraformClusterIdentitySpec, AllowedNamespaces } from "./terraformclusteridentity.js";
export { kindDefinitions } from "./kinds.js";
export type { KindDefinition, PrinterColumn } from "./resource.js";
export { renderCrd, renderCrdFiles, crdPath, toStructuralSchema, capiContractLabel, SchemaNotStructuralError } from "./crds.js";
export type { GeneratedFile } from "./crds.js";
export { renderApiReference, apiReferencePath } from "./api-reference.js";
export { generatedFiles, staleGeneratedFiles, crdDirectory } from "./generate.js";
