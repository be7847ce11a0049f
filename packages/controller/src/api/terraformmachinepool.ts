/** TerraformMachinePool: the InfraMachinePool of Cluster API, provisioned by a machinepool-role module. */
import { Type, type Static } from "@sinclair/typebox";
import { healthStates, maxAddresses, maxInstances } from "@captf/contract";
import { kinds } from "@captf/contract/api";
import { defaultMembershipRefreshIntervalSeconds } from "./defaults.js";
import { Conditions, MachineAddressSchema } from "./kubernetes-types.js";
import { ageColumn, clusterColumn, kindSchema, readyColumn, type KindDefinition } from "./resource.js";
import { Int32, StringEnum, atomicList, described } from "./schema.js";
import { MachinePoolDriftPolicySchema, workspaceSpecFields, workspaceStatusFields } from "./workspace.js";

/** At most this many entries in spec.providerIDList. */
export const maxProviderIDList = 10000;

const poolSpecFields = {
  providerID: Type.Optional(
    Type.String({
      description:
        "Provider ID of the scaling group, from the module's provider_id output (optional in the contract): a new ID is " +
        "followed, a null reading keeps the last one.",
      minLength: 1,
      maxLength: 512,
    }),
  ),
  providerIDList: Type.Optional(
    Type.Array(Type.String({ minLength: 1, maxLength: 512 }), {
      description:
        "Provider IDs of every non-terminated member, from the module's provider_id_list output, sorted and without duplicates; " +
        "Cluster API copies it to MachinePool.spec.providerIDList.",
      maxItems: maxProviderIDList,
      ...atomicList,
    }),
  ),
  ...workspaceSpecFields({ definition: "Mutable: a change re-applies the pool." }),
  drift: Type.Optional(
    described(
      MachinePoolDriftPolicySchema,
      `${MachinePoolDriftPolicySchema.description} Merged field by field over the cluster's defaults.drift. Mutable.`,
    ),
  ),
  membershipRefreshIntervalSeconds: Type.Optional(
    Int32({
      description:
        "How often the manager runs apply -refresh-only to pick up members that joined or left between applies, in seconds; the " +
        "cluster's defaults when unset.",
      minimum: 15,
      maximum: 86400,
      default: defaultMembershipRefreshIntervalSeconds,
    }),
  ),
};

export const TerraformMachinePoolSpecSchema = Type.Object(poolSpecFields, {
  description: "Desired state of a TerraformMachinePool: the machinepool-role module image and how to run it. Every field is mutable.",
  minProperties: 1,
});
export type TerraformMachinePoolSpec = Static<typeof TerraformMachinePoolSpecSchema>;

export const MachinePoolInstanceSchema = Type.Object(
  {
    providerID: Type.String({ description: "Provider ID of the instance.", minLength: 1, maxLength: 512 }),
    instanceID: Type.Optional(
      Type.String({ description: "Provider-defined identifier, when distinct from providerID.", minLength: 1, maxLength: 256 }),
    ),
    addresses: Type.Optional(
      Type.Array(MachineAddressSchema, { description: "Addresses of the instance.", minItems: 1, maxItems: maxAddresses, ...atomicList }),
    ),
    failureDomain: Type.Optional(Type.String({ description: "Failure domain the instance runs in.", minLength: 1, maxLength: 256 })),
    state: Type.Optional(StringEnum(healthStates, { description: "The instance's health state, as the module reports it." })),
  },
  { description: "One member of the group, from the module's instances output.", minProperties: 1 },
);

export const TerraformMachinePoolStatusSchema = Type.Object(
  {
    conditions: Type.Optional(
      Conditions("Conditions of the TerraformMachinePool; Cluster API mirrors Ready into the MachinePool's InfrastructureReady."),
    ),
    ...workspaceStatusFields(),
    ready: Type.Optional(
      Type.Boolean({ description: "The v1beta1 provisioned flag Cluster API v1.14 still reads; latched with initialization.provisioned." }),
    ),
    replicas: Type.Optional(
      Int32({
        description:
          "Desired capacity observed at the last refresh (replicas output); equals the length of providerIDList outside a " +
          "scaling transition.",
        minimum: 0,
      }),
    ),
    instances: Type.Optional(
      Type.Array(MachinePoolInstanceSchema, {
        description: `Members of the group; cut at ${maxInstances} with OutputsValid=True/InstancesTruncated.`,
        minItems: 1,
        maxItems: maxInstances,
        ...atomicList,
      }),
    ),
  },
  { description: "Observed state of the TerraformMachinePool, rebuilt from state, durable inputs and Jobs.", minProperties: 1 },
);
export type TerraformMachinePoolStatus = Static<typeof TerraformMachinePoolStatusSchema>;

export const TerraformMachinePoolSchema = kindSchema(
  "TerraformMachinePool is the infrastructure of one Cluster API MachinePool (a group of instances), provisioned by running a " +
    "machinepool-role Terraform/OpenTofu module image as Kubernetes Jobs.",
  TerraformMachinePoolSpecSchema,
  TerraformMachinePoolStatusSchema,
);
export type TerraformMachinePool = Static<typeof TerraformMachinePoolSchema>;

export const terraformMachinePoolDefinition: KindDefinition<typeof TerraformMachinePoolSchema> = {
  kind: kinds.machinePool,
  plural: "terraformmachinepools",
  singular: "terraformmachinepool",
  shortNames: [],
  scope: "Namespaced",
  description: TerraformMachinePoolSchema.description!,
  notes: [
    "Referenced by MachinePool.spec.template.spec.infrastructureRef; finalizer terraformmachinepool.infrastructure.cluster.x-k8s.io.",
    "Every spec field is mutable: a spec change, a replica change or a rotated bootstrap Secret re-applies the pool.",
  ],
  schema: TerraformMachinePoolSchema,
  statusSubresource: true,
  printerColumns: [
    clusterColumn,
    {
      name: "MachinePool",
      type: "string",
      jsonPath: '.metadata.ownerReferences[?(@.kind=="MachinePool")].name',
      description: "The MachinePool owning this object",
    },
    { name: "Replicas", type: "integer", jsonPath: ".status.replicas", description: "Observed desired capacity" },
    readyColumn,
    ageColumn,
  ],
};
