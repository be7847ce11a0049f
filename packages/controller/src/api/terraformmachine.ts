/** TerraformMachine: the InfraMachine of Cluster API, provisioned by a machine-role module. */
import { Type, type Static } from "@sinclair/typebox";
import { maxAddresses } from "@captf/contract";
import { kinds } from "@captf/contract/api";
import { Conditions, MachineAddressSchema } from "./kubernetes-types.js";
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
import { Int32, atomicList, cel, type CelRule, described } from "./schema.js";
import { MachineDriftPolicySchema, MachineRemediationSchema, workspaceSpecFields, workspaceStatusFields } from "./workspace.js";

const machineSpecFields = {
  providerID: Type.Optional(
    Type.String({
      description:
        "The instance's provider ID, written once by the manager from the module's provider_id output; it must equal the Node's " +
        "spec.providerID. Set once: never changed or cleared afterwards.",
      minLength: 1,
      maxLength: 512,
    }),
  ),
  ...workspaceSpecFields({ definition: "Immutable: a machine is replaced, never changed." }),
  drift: Type.Optional(
    described(
      MachineDriftPolicySchema,
      `${MachineDriftPolicySchema.description} Merged field by field over the cluster's defaults.drift. Mutable.`,
    ),
  ),
  remediation: Type.Optional(
    described(
      MachineRemediationSchema,
      `${MachineRemediationSchema.description} Merged field by field over the cluster's defaults.remediation. Mutable.`,
    ),
  ),
};

/** The spec of a TerraformMachine as a template carries it: without the kind-level immutability rules. */
export const TerraformMachineSpecSchema = Type.Object(machineSpecFields, {
  description: "Desired state of a TerraformMachine: the machine-role module image and how to run it.",
  minProperties: 1,
});
export type TerraformMachineSpec = Static<typeof TerraformMachineSpecSchema>;

/** An optional spec field that may be neither added, removed nor changed. */
function unchanged(field: string, why: string): CelRule {
  return {
    rule: `has(self.${field}) == has(oldSelf.${field}) && (!has(self.${field}) || self.${field} == oldSelf.${field})`,
    message: `spec.${field} is immutable: ${why}`,
    fieldPath: `.${field}`,
  };
}

/**
 * On the kind, not the spec type: a TerraformMachineTemplate shares the spec type, and its
 * immutability stays with the webhook, which exempts ClusterClass dry-runs.
 */
const machineKindRules = cel(
  {
    rule: "self.source == oldSelf.source",
    message: "spec.source is immutable: a machine is replaced, never changed; roll out a new machine (a new template)",
    fieldPath: ".source",
  },
  unchanged("identityRef", "a machine is replaced, never changed; roll out a new machine with the new identity"),
  unchanged("variables", "a machine is replaced, never changed; roll out a new machine with the new variables"),
  unchanged("variablesFrom", "a machine is replaced, never changed; roll out a new machine with the new sources"),
  {
    rule: "!has(oldSelf.providerID) || (has(self.providerID) && self.providerID == oldSelf.providerID)",
    message: "spec.providerID is set once and then immutable: it must keep matching the Node's spec.providerID",
    fieldPath: ".providerID",
  },
);

export const TerraformMachineStatusSchema = Type.Object(
  {
    conditions: Type.Optional(
      Conditions("Conditions of the TerraformMachine; Cluster API mirrors Ready into the Machine's InfrastructureReady."),
    ),
    ...workspaceStatusFields(),
    addresses: Type.Optional(
      Type.Array(MachineAddressSchema, {
        description: "Addresses of the instance from the module's addresses output, in canonical order.",
        minItems: 1,
        maxItems: maxAddresses,
        ...atomicList,
      }),
    ),
    failureDomain: Type.Optional(
      Type.String({
        description:
          "Failure domain the instance runs in, from the failure_domain output; must equal Machine.spec.failureDomain when that is set.",
        minLength: 1,
        maxLength: 256,
      }),
    ),
    interruptible: Type.Optional(
      Type.Boolean({
        description: "True for a spot or preemptible instance; Cluster API then labels the Node cluster.x-k8s.io/interruptible.",
      }),
    ),
    unhealthySamples: Type.Optional(
      Int32({
        description: "Consecutive unhealthy health samples; unset while healthy. Status only: restarts after clusterctl move.",
        minimum: 1,
      }),
    ),
  },
  { description: "Observed state of the TerraformMachine, rebuilt from state, durable inputs and Jobs.", minProperties: 1 },
);
export type TerraformMachineStatus = Static<typeof TerraformMachineStatusSchema>;

export const TerraformMachineSchema = kindSchema(
  "TerraformMachine is the infrastructure of one Cluster API Machine, provisioned by running a machine-role Terraform/OpenTofu " +
    "module image as Kubernetes Jobs.",
  Type.Object(machineSpecFields, { description: TerraformMachineSpecSchema.description, minProperties: 1, ...machineKindRules }),
  TerraformMachineStatusSchema,
);
export type TerraformMachine = Static<typeof TerraformMachineSchema>;

export const terraformMachineDefinition: KindDefinition<typeof TerraformMachineSchema> = {
  kind: kinds.machine,
  plural: "terraformmachines",
  singular: "terraformmachine",
  shortNames: ["tfm"],
  scope: "Namespaced",
  description: TerraformMachineSchema.description!,
  notes: [
    "Referenced by Machine.spec.infrastructureRef; finalizer terraformmachine.infrastructure.cluster.x-k8s.io.",
    "spec.source, spec.identityRef, spec.variables and spec.variablesFrom are immutable; spec.providerID is set once, by the " +
      "manager. spec.jobs, spec.drift and spec.remediation are mutable.",
    "identityRef falls back to the cluster's spec.defaults.identityRef, then its spec.identityRef.",
  ],
  schema: TerraformMachineSchema,
  statusSubresource: true,
  printerColumns: [
    clusterColumn,
    {
      name: "Machine",
      type: "string",
      jsonPath: '.metadata.ownerReferences[?(@.kind=="Machine")].name',
      description: "The Machine owning this object",
    },
    readyColumn,
    provisionedColumn,
    { name: "ProviderID", type: "string", jsonPath: ".spec.providerID", description: "Provider ID of the instance" },
    imageColumn(".spec.source.image", 1),
    inputsAppliedColumn,
    ageColumn,
  ],
};
