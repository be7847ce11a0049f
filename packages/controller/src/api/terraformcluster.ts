/** TerraformCluster: the InfraCluster of Cluster API, provisioned by a cluster-role module. */
import { Type, type Static } from "@sinclair/typebox";
import { kinds } from "@captf/contract/api";
import { defaultApplyPolicy, defaultMembershipRefreshIntervalSeconds } from "./defaults.js";
import { ApiEndpointSchema, Conditions, FailureDomainSchema } from "./kubernetes-types.js";
import {
  ageColumn,
  clusterColumn,
  imageColumn,
  inputsAppliedColumn,
  kindSchema,
  provisionedColumn,
  readyColumn,
  type KindDefinition,
} from "./resource.js";
import { Int32, JsonObject, StringEnum, cel, mapList, described } from "./schema.js";
import {
  DriftPolicySchema,
  IdentityReferenceSchema,
  JobPolicySchema,
  MachineRemediationSchema,
  PlanPreviewSchema,
  deletionPolicies,
  workspaceSpecFields,
  workspaceStatusFields,
} from "./workspace.js";

export const applyPolicies = ["Automatic", "Manual"] as const;
/** At most this many failure domains in status.failureDomains. */
export const maxFailureDomains = 100;
/** status.exports is published only while its compact JSON fits in this many bytes. */
export const maxPublishedExportsBytes = 65536;

export const TerraformClusterDefaultsSchema = Type.Object(
  {
    identityRef: Type.Optional(
      described(IdentityReferenceSchema, "Identity of machines and pools that set none; spec.identityRef when unset."),
    ),
    jobs: Type.Optional(
      described(
        JobPolicySchema,
        "Job policy merged field by field under each machine's and pool's own jobs (env by name, imagePullSecrets as a union).",
      ),
    ),
    drift: Type.Optional(
      described(
        DriftPolicySchema,
        "Drift policy merged field by field under each machine's and pool's own drift. intervalSeconds 0 disables machines' " +
          "drift checks but not pools'; action reaches pools only.",
      ),
    ),
    remediation: Type.Optional(described(MachineRemediationSchema, "Remediation policy merged field by field under each machine's own.")),
    membershipRefreshIntervalSeconds: Type.Optional(
      Int32({ description: "Membership refresh interval of pools that set none.", minimum: 15, maximum: 86400 }),
    ),
    deletionPolicy: Type.Optional(
      StringEnum(deletionPolicies, {
        description: "Deletion policy of machines and pools that set none; the cluster's own deletionPolicy when unset.",
      }),
    ),
  },
  {
    description:
      "Values this cluster's TerraformMachines and TerraformMachinePools inherit field by field; they never apply to the " +
      "TerraformCluster itself.",
  },
);
export type TerraformClusterDefaults = Static<typeof TerraformClusterDefaultsSchema>;

const clusterSpecFields = {
  controlPlaneEndpoint: Type.Optional(
    described(
      ApiEndpointSchema,
      "Endpoint of the workload cluster's API server. A value set here is the module's control_plane_endpoint input; otherwise " +
        "the manager writes the module's output here once. Immutable once it has a host: every Machine and kubeconfig points at it.",
    ),
  ),
  ...workspaceSpecFields({ definition: "Mutable: a change re-applies the module." }),
  drift: Type.Optional(described(DriftPolicySchema, "Periodic drift detection of the cluster. Mutable.")),
  applyPolicy: Type.Optional(
    StringEnum(applyPolicies, {
      description:
        "Automatic applies every change (and drift remediation) as soon as it is seen; only a plan that deletes or replaces " +
        "waits for captf.io/approve-destructive-plan. Manual runs a plan Job first, shows it in status.plan and applies it once " +
        "the captf.io/approve-plan annotation names its hash, and only if it plans the same again. The first apply (no state " +
        "yet) is never gated. Mutable, not hashed.",
      default: defaultApplyPolicy,
    }),
  ),
  maxActiveJobs: Type.Optional(
    Int32({
      description:
        "Cap on the running Jobs of this cluster, its machines and pools together; the manager's --cluster-max-active-jobs when " +
        "unset. Drift and refresh start only below 80% of it.",
      minimum: 1,
    }),
  ),
  defaults: Type.Optional(TerraformClusterDefaultsSchema),
};

/** The spec of a TerraformCluster as a template carries it: without the kind-level rules. */
export const TerraformClusterSpecSchema = Type.Object(clusterSpecFields, {
  description: "Desired state of a TerraformCluster: the cluster-role module image and how to run it.",
  minProperties: 1,
});
export type TerraformClusterSpec = Static<typeof TerraformClusterSpecSchema>;

/** Rules on the TerraformCluster kind only: a TerraformClusterTemplate may leave identityRef to a ClusterClass patch. */
const clusterKindRules = cel(
  {
    rule: "has(self.identityRef)",
    message:
      "spec.identityRef is required: a TerraformCluster uses only its own identity (spec.defaults.identityRef applies to its " +
      "machines and pools); name a TerraformClusterIdentity",
    fieldPath: ".identityRef",
    reason: "FieldValueRequired",
  },
  {
    rule:
      "!has(oldSelf.controlPlaneEndpoint) || !has(oldSelf.controlPlaneEndpoint.host) || (has(self.controlPlaneEndpoint) && " +
      "has(self.controlPlaneEndpoint.host) && self.controlPlaneEndpoint.host == oldSelf.controlPlaneEndpoint.host && " +
      "(!has(oldSelf.controlPlaneEndpoint.port) || (has(self.controlPlaneEndpoint.port) && self.controlPlaneEndpoint.port == " +
      "oldSelf.controlPlaneEndpoint.port)))",
    message:
      "spec.controlPlaneEndpoint is immutable once it has a host: every Machine and kubeconfig of the cluster points at it; " +
      "create a new cluster to use another endpoint",
    fieldPath: ".controlPlaneEndpoint",
  },
);

export const TerraformClusterStatusSchema = Type.Object(
  {
    conditions: Type.Optional(
      Conditions("Conditions of the TerraformCluster; Cluster API mirrors Ready into the Cluster's InfrastructureReady."),
    ),
    ...workspaceStatusFields(),
    failureDomains: Type.Optional(
      Type.Array(FailureDomainSchema, {
        description: "Failure domains from the module's failure_domains output.",
        minItems: 1,
        maxItems: maxFailureDomains,
        ...mapList("name"),
      }),
    ),
    exports: Type.Optional(
      JsonObject({
        description:
          `Copy of the module's exports output for consumers outside captf ({} when null; not published when it is ` +
          `not a JSON object). Cleared, with an ExportsNotPublished event, when its compact JSON exceeds ` +
          `${maxPublishedExportsBytes} bytes. Readable by anyone who can get the object: never put secrets in exports. The ` +
          `manager never reads it back.`,
      }),
    ),
    plan: Type.Optional(PlanPreviewSchema),
  },
  { description: "Observed state of the TerraformCluster, rebuilt from state, durable inputs and Jobs.", minProperties: 1 },
);
export type TerraformClusterStatus = Static<typeof TerraformClusterStatusSchema>;

export const TerraformClusterSchema = kindSchema(
  "TerraformCluster is the infrastructure of one Cluster API Cluster, provisioned by running a cluster-role Terraform/OpenTofu " +
    "module image as Kubernetes Jobs.",
  Type.Object(clusterSpecFields, { description: TerraformClusterSpecSchema.description, minProperties: 1, ...clusterKindRules }),
  TerraformClusterStatusSchema,
);
export type TerraformCluster = Static<typeof TerraformClusterSchema>;

export const terraformClusterDefinition: KindDefinition<typeof TerraformClusterSchema> = {
  kind: kinds.cluster,
  plural: "terraformclusters",
  singular: "terraformcluster",
  shortNames: ["tfc"],
  scope: "Namespaced",
  description: TerraformClusterSchema.description!,
  notes: [
    "Referenced by Cluster.spec.infrastructureRef; finalizer terraformcluster.infrastructure.cluster.x-k8s.io.",
    "spec.identityRef is required; spec.controlPlaneEndpoint is immutable once it has a host. Every other field is mutable.",
    `Pools inherit spec.defaults.membershipRefreshIntervalSeconds, else ${defaultMembershipRefreshIntervalSeconds}.`,
    "Approve a plan shown in status.plan by setting the captf.io/approve-plan annotation to its planHash.",
  ],
  schema: TerraformClusterSchema,
  statusSubresource: true,
  printerColumns: [
    clusterColumn,
    readyColumn,
    provisionedColumn,
    { name: "Endpoint", type: "string", jsonPath: ".spec.controlPlaneEndpoint.host", description: "Host of the control-plane endpoint" },
    imageColumn(".spec.source.image", 1),
    inputsAppliedColumn,
    ageColumn,
  ],
};
