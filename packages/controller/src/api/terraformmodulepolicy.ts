/**
 * TerraformModulePolicy: cluster-scoped, owned by an administrator: which module images may run in which namespaces, and
 * which keys must have signed them. An authority is one way of trusting a signature; `key` (cosign, a public key) is the
 * only one today, and keyless or Notation authorities are further optional members beside it.
 */
import { Type, type Static } from "@sinclair/typebox";
import { kinds } from "@captf/contract/api";
import { LabelSelectorSchema } from "./kubernetes-types.js";
import { ageColumn, kindSchema, type KindDefinition } from "./resource.js";
import { cel, described, dnsLabelPattern, dnsSubdomainPattern, mapList } from "./schema.js";

/** At most this many image patterns in spec.images. */
export const maxPolicyImages = 64;
/** At most this many authorities in spec.authorities. */
export const maxPolicyAuthorities = 16;
/** A PEM public key is far shorter than this. */
export const maxPublicKeyLength = 8192;

export const PolicyKeySchema = Type.Object(
  {
    data: Type.Optional(
      Type.String({
        description: "The public key as PEM (cosign.pub as `cosign generate-key-pair` writes it): ECDSA P-256 or Ed25519.",
        minLength: 1,
        maxLength: maxPublicKeyLength,
      }),
    ),
    secretRef: Type.Optional(
      Type.Object(
        {
          name: Type.String({ description: "Name of the Secret.", minLength: 1, maxLength: 253, pattern: dnsSubdomainPattern }),
          namespace: Type.String({
            description: "Namespace of the Secret; the manager reads it there.",
            minLength: 1,
            maxLength: 63,
            pattern: dnsLabelPattern,
          }),
          key: Type.Optional(
            Type.String({
              description: "Data key holding the PEM; default cosign.pub.",
              minLength: 1,
              maxLength: 253,
              default: "cosign.pub",
            }),
          ),
        },
        { description: "A Secret holding the PEM public key, read by the manager each time it verifies (a rotated key is used at once)." },
      ),
    ),
  },
  {
    description: "A public key that signs module images: inline (data) or in a Secret (secretRef), exactly one.",
    ...cel({ rule: "has(self.data) != has(self.secretRef)", message: "set exactly one of data and secretRef" }),
  },
);

export const PolicyAuthoritySchema = Type.Object(
  {
    name: Type.String({
      description: "Names the authority in conditions and events.",
      minLength: 1,
      maxLength: 63,
      pattern: dnsLabelPattern,
    }),
    key: Type.Optional(PolicyKeySchema),
  },
  {
    description:
      "One way a signature is trusted: key, a cosign signature by this public key. Keyless and Notation authorities are to come.",
    ...cel({ rule: "has(self.key)", message: "an authority needs key (the only kind of authority so far)" }),
  },
);

export const PolicyImageSchema = Type.Object(
  {
    glob: Type.String({
      description:
        "An image name pattern, without tag or digest: `*` matches within one path segment, `**` across segments " +
        "(registry.example.com/modules/** covers every repository under modules/).",
      minLength: 1,
      maxLength: 512,
      pattern: "^[^\\s@]+$",
    }),
  },
  { description: "Module images the policy covers." },
);

export const TerraformModulePolicySpecSchema = Type.Object(
  {
    namespaceSelector: Type.Optional(
      described(
        LabelSelectorSchema,
        "Namespaces whose objects the policy governs, by their labels; unset or {} governs every namespace. In a governed " +
          "namespace an image that matches none of the governing policies' images is refused.",
      ),
    ),
    images: Type.Array(PolicyImageSchema, {
      description: "The images the policy admits, when a signature of one of its authorities verifies their digest.",
      minItems: 1,
      maxItems: maxPolicyImages,
      ...mapList("glob"),
    }),
    authorities: Type.Array(PolicyAuthoritySchema, {
      description: "Who may have signed the images: a signature verifying by any one authority is enough.",
      minItems: 1,
      maxItems: maxPolicyAuthorities,
      ...mapList("name"),
    }),
  },
  { description: "Desired state of a TerraformModulePolicy. Every field is mutable; a change applies to the next Job." },
);
export type TerraformModulePolicySpec = Static<typeof TerraformModulePolicySpecSchema>;

export const TerraformModulePolicySchema = kindSchema(
  "TerraformModulePolicy says which module images may run in which namespaces and which keys must have signed them: objects in a " +
    "namespace it governs start a Job only for an image whose digest carries a verifying cosign signature, and the Job runs that digest.",
  TerraformModulePolicySpecSchema,
);
export type TerraformModulePolicy = Static<typeof TerraformModulePolicySchema>;

export const terraformModulePolicyDefinition: KindDefinition<typeof TerraformModulePolicySchema> = {
  kind: kinds.modulePolicy,
  plural: "terraformmodulepolicies",
  singular: "terraformmodulepolicy",
  shortNames: [],
  scope: "Cluster",
  description: TerraformModulePolicySchema.description!,
  notes: [
    "Cluster-scoped, for cluster administrators: captf-edit does not include it.",
    "Every policy that governs an object's namespace and matches its image must be satisfied; the result is the object's " +
      "ImageVerified condition.",
  ],
  schema: TerraformModulePolicySchema,
  statusSubresource: false,
  printerColumns: [ageColumn],
};
