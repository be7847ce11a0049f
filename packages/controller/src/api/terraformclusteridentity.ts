/** TerraformClusterIdentity: cluster-scoped cloud credentials and the namespaces that may use them. */
import { Type, type Static } from "@sinclair/typebox";
import { kinds, labels } from "@captf/contract/api";
import { Conditions, LabelSelectorSchema } from "./kubernetes-types.js";
import { ageColumn, readyColumn, kindSchema, type KindDefinition } from "./resource.js";
import { StringEnum, cel, dnsLabelPattern, dnsSubdomainPattern, setList, described } from "./schema.js";

export const identityTypes = ["Secret"] as const;
/** At most this many namespaces in spec.allowedNamespaces.list. */
export const maxAllowedNamespaces = 100;
/** At most this many namespaces in status.namespaces. */
export const maxMirrorNamespaces = 1000;
/** At most this many keys in spec.requiredKeys. */
export const maxRequiredKeys = 64;

export const AllowedNamespacesSchema = Type.Object(
  {
    list: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 63, pattern: dnsLabelPattern }), {
        description: "Names of allowed namespaces.",
        minItems: 1,
        maxItems: maxAllowedNamespaces,
        ...setList,
      }),
    ),
    selector: Type.Optional(
      described(
        LabelSelectorSchema,
        "Namespaces whose labels match are allowed; selector: {} allows every namespace, existing or not. Anyone who may label " +
          "a namespace can opt it in.",
      ),
    ),
  },
  {
    description:
      "Namespaces that may use the identity: those in list or matched by selector. Unset allows none; {} is rejected as ambiguous.",
    ...cel({
      rule: "has(self.list) || has(self.selector)",
      message: "allowedNamespaces {} is ambiguous and rejected: set list, or write selector: {} to allow every namespace",
    }),
  },
);
export type AllowedNamespaces = Static<typeof AllowedNamespacesSchema>;

export const TerraformClusterIdentitySpecSchema = Type.Object(
  {
    type: Type.Optional(
      StringEnum(identityTypes, { description: "How the credentials are held: Secret, the only type.", default: "Secret" }),
    ),
    secretRef: Type.Object(
      {
        name: Type.String({ description: "Name of the Secret.", minLength: 1, maxLength: 253, pattern: dnsSubdomainPattern }),
        namespace: Type.String({
          description: "Namespace of the Secret, any namespace; never defaulted.",
          minLength: 1,
          maxLength: 63,
          pattern: dnsLabelPattern,
        }),
      },
      {
        description:
          "The Secret holding the credentials. The manager copies it into each allowed namespace that uses the identity, and " +
          "Jobs get every key as an environment variable and a file. The creator must be allowed to get it.",
      },
    ),
    requiredKeys: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 253, pattern: "^[-._a-zA-Z0-9]+$" }), {
        description: "Keys the Secret must hold (names only); a missing one makes the identity Ready=False/CredentialsIncomplete.",
        maxItems: maxRequiredKeys,
        ...setList,
      }),
    ),
    allowedNamespaces: Type.Optional(AllowedNamespacesSchema),
  },
  {
    description: "Desired state of a TerraformClusterIdentity: the credentials Secret and who may use it. Every field is mutable.",
    minProperties: 1,
  },
);
export type TerraformClusterIdentitySpec = Static<typeof TerraformClusterIdentitySpecSchema>;

export const TerraformClusterIdentityStatusSchema = Type.Object(
  {
    conditions: Type.Optional(Conditions("Conditions of the identity: only Ready (SecretFound, SecretNotFound, CredentialsIncomplete).")),
    namespaces: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 63 }), {
        description: "Sorted namespaces holding a mirror of the Secret that an object there uses.",
        maxItems: maxMirrorNamespaces,
        ...setList,
      }),
    ),
  },
  { description: "Observed state of the identity, filled by the manager.", minProperties: 1 },
);

export const TerraformClusterIdentitySchema = kindSchema(
  "TerraformClusterIdentity names a Secret of cloud credentials and the namespaces whose TerraformClusters, TerraformMachines " +
    "and TerraformMachinePools may use it.",
  TerraformClusterIdentitySpecSchema,
  TerraformClusterIdentityStatusSchema,
);
export type TerraformClusterIdentity = Static<typeof TerraformClusterIdentitySchema>;

export const terraformClusterIdentityDefinition: KindDefinition<typeof TerraformClusterIdentitySchema> = {
  kind: kinds.clusterIdentity,
  plural: "terraformclusteridentities",
  singular: "terraformclusteridentity",
  shortNames: [],
  scope: "Cluster",
  description: TerraformClusterIdentitySchema.description!,
  notes: [
    "Cluster-scoped; no finalizer: the delete webhook refuses deleting an identity in use or still mirrored.",
    "The creator (and whoever changes secretRef or allowedNamespaces) must be allowed to get the Secret.",
  ],
  schema: TerraformClusterIdentitySchema,
  statusSubresource: true,
  printerColumns: [
    { name: "Secret", type: "string", jsonPath: ".spec.secretRef.name", description: "The credentials Secret" },
    { name: "Namespace", type: "string", jsonPath: ".spec.secretRef.namespace", description: "Namespace of the credentials Secret" },
    readyColumn,
    ageColumn,
  ],
  // clusterctl move carries identities with the objects that use them.
  extraLabels: { [labels.moveHierarchy]: "true" },
};
