/**
 * The three template kinds Cluster API clones from: TerraformClusterTemplate (ClusterClass),
 * TerraformMachineTemplate (MachineDeployment, MachineSet, control planes, ClusterClass) and
 * TerraformMachinePoolTemplate. Their spec.template.spec is immutable (webhook-only, so a
 * ClusterClass dry-run can still validate patches).
 */
import { Type, type Static, type TObject } from "@sinclair/typebox";
import { kinds } from "@captf/contract/api";
import { Conditions, TemplateObjectMetaSchema } from "./kubernetes-types.js";
import { ageColumn, imageColumn, kindSchema, type KindDefinition } from "./resource.js";
import { QuantityMap, StringEnum, cel, described, sameAs } from "./schema.js";
import { TerraformClusterSpecSchema } from "./terraformcluster.js";
import { TerraformMachineSpecSchema } from "./terraformmachine.js";
import { TerraformMachinePoolSpecSchema } from "./terraformmachinepool.js";

function templateResource<Spec extends TObject>(kind: string, spec: Spec, specNote: string) {
  return Type.Object(
    {
      metadata: Type.Optional(TemplateObjectMetaSchema),
      spec: Object.assign(
        described(spec, `Spec of each ${kind} created from the template. Immutable: create a new template instead. ${specNote}`.trim()),
        sameAs(kind),
      ),
    },
    { description: `The ${kind} created from this template.`, minProperties: 1 },
  );
}

const templateImageColumn = imageColumn(".spec.template.spec.source.image");

// ---- TerraformClusterTemplate ----

export const TerraformClusterTemplateSchema = kindSchema(
  "TerraformClusterTemplate holds the TerraformCluster a ClusterClass creates for each Cluster of the class.",
  Type.Object(
    {
      template: templateResource(
        kinds.cluster,
        TerraformClusterSpecSchema,
        "identityRef may be left to a ClusterClass patch (admitted with a warning).",
      ),
    },
    { description: "Desired state of a TerraformClusterTemplate." },
  ),
);
export type TerraformClusterTemplate = Static<typeof TerraformClusterTemplateSchema>;

export const terraformClusterTemplateDefinition: KindDefinition<typeof TerraformClusterTemplateSchema> = {
  kind: kinds.clusterTemplate,
  plural: "terraformclustertemplates",
  singular: "terraformclustertemplate",
  shortNames: ["tfct"],
  scope: "Namespaced",
  description: TerraformClusterTemplateSchema.description!,
  notes: [
    "Referenced by ClusterClass.spec.infrastructure.templateRef. No status.",
    "spec.template.spec is immutable; spec.template.metadata is mutable.",
  ],
  schema: TerraformClusterTemplateSchema,
  statusSubresource: false,
  printerColumns: [templateImageColumn, ageColumn],
};

// ---- TerraformMachineTemplate ----

export const architectures = ["amd64", "arm64", "s390x", "ppc64le"] as const;
export const capacitySources = ["Spec", "Image"] as const;

export const TerraformMachineTemplateStatusSchema = Type.Object(
  {
    conditions: Type.Optional(Conditions("Conditions of the template: CapacityResolved and VariablesValid (no Ready).")),
    capacity: Type.Optional(
      QuantityMap({
        description:
          "Resources of the nodes the template creates: spec.capacity when set, else the image label io.captf.capacity. Read by " +
          "the Cluster Autoscaler to scale from zero.",
      }),
    ),
    nodeInfo: Type.Optional(
      Type.Object(
        {
          architecture: Type.Optional(StringEnum(architectures, { description: "CPU architecture of the nodes." })),
          operatingSystem: Type.Optional(
            Type.String({ description: "Operating system of the nodes, e.g. linux.", minLength: 1, maxLength: 64 }),
          ),
        },
        { description: "Platform of the nodes, from the image label io.captf.node-info.", minProperties: 1 },
      ),
    ),
    capacitySource: Type.Optional(
      Type.Object(
        {
          source: Type.Optional(
            StringEnum(capacitySources, { description: "Spec when capacity is spec.capacity, Image when it comes from the image label." }),
          ),
          image: Type.Optional(
            Type.String({ description: "The spec.template.spec.source.image last resolved.", minLength: 1, maxLength: 512 }),
          ),
        },
        {
          description: "Where capacity and nodeInfo came from; they are resolved again when the image or spec.capacity changes.",
          ...cel({
            rule: "!has(self.source) || self.source != 'Image' || has(self.image)",
            message: "image is required when source is Image",
            fieldPath: ".image",
          }),
        },
      ),
    ),
  },
  { description: "Node size and platform the template's image declares, for Cluster Autoscaler scale from zero.", minProperties: 1 },
);

export const TerraformMachineTemplateSchema = kindSchema(
  "TerraformMachineTemplate is the TerraformMachine Cluster API clones for each Machine of a MachineDeployment, MachineSet, " +
    "control plane or ClusterClass.",
  Type.Object(
    {
      template: templateResource(kinds.machine, TerraformMachineSpecSchema, "providerID must stay empty."),
      capacity: Type.Optional(
        QuantityMap({
          description:
            "Resources of the nodes the template creates (e.g. cpu: 4, memory: 16Gi), overriding the image label " +
            "io.captf.capacity as a whole. Mutable; never copied to machines.",
        }),
      ),
    },
    { description: "Desired state of a TerraformMachineTemplate." },
  ),
  TerraformMachineTemplateStatusSchema,
);
export type TerraformMachineTemplate = Static<typeof TerraformMachineTemplateSchema>;

export const terraformMachineTemplateDefinition: KindDefinition<typeof TerraformMachineTemplateSchema> = {
  kind: kinds.machineTemplate,
  plural: "terraformmachinetemplates",
  singular: "terraformmachinetemplate",
  shortNames: ["tfmt"],
  scope: "Namespaced",
  description: TerraformMachineTemplateSchema.description!,
  notes: [
    "Referenced by the infrastructureRef of MachineDeployments, MachineSets, control planes and ClusterClasses.",
    "spec.template.spec is immutable (even the fields mutable on a TerraformMachine); spec.template.metadata and spec.capacity " +
      "are mutable.",
  ],
  schema: TerraformMachineTemplateSchema,
  statusSubresource: true,
  printerColumns: [templateImageColumn, ageColumn],
};

// ---- TerraformMachinePoolTemplate ----

export const TerraformMachinePoolTemplateSchema = kindSchema(
  "TerraformMachinePoolTemplate holds the TerraformMachinePool a ClusterClass creates for a machine pool class.",
  Type.Object(
    { template: templateResource(kinds.machinePool, TerraformMachinePoolSpecSchema, "") },
    { description: "Desired state of a TerraformMachinePoolTemplate." },
  ),
);
export type TerraformMachinePoolTemplate = Static<typeof TerraformMachinePoolTemplateSchema>;

export const terraformMachinePoolTemplateDefinition: KindDefinition<typeof TerraformMachinePoolTemplateSchema> = {
  kind: kinds.machinePoolTemplate,
  plural: "terraformmachinepooltemplates",
  singular: "terraformmachinepooltemplate",
  shortNames: [],
  scope: "Namespaced",
  description: TerraformMachinePoolTemplateSchema.description!,
  notes: ["No status: pools do not scale from zero.", "spec.template.spec is immutable; spec.template.metadata is mutable."],
  schema: TerraformMachinePoolTemplateSchema,
  statusSubresource: false,
  printerColumns: [templateImageColumn, ageColumn],
};
