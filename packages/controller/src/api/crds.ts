/**
 * Renders the CustomResourceDefinitions from the TypeBox kinds: structural OpenAPI v3 schemas
 * (every node typed, no pruning surprises), CEL rules, printer columns, the status subresource
 * and the Cluster API contract label. `scripts/generate-crds.mjs` writes what this returns;
 * a test fails when the files on disk differ.
 */
import type { TSchema } from "@sinclair/typebox";
import { stringify } from "yaml";
import { apiGroup, apiVersion, labels } from "@captf/contract/api";
import { kindDefinitions } from "./kinds.js";
import type { KindDefinition } from "./resource.js";

/** The Cluster API contract label: CAPI v1beta2 reads this provider's objects at v1alpha1. */
export const capiContractLabel = labels.capiContract;
/** The label `clusterctl move` finds the kinds to move by. */
export const clusterctlMoveLabel = "clusterctl.cluster.x-k8s.io";

/** Keywords a structural schema may carry, in the order the YAML lists them. */
const structuralKeys = [
  "description",
  "type",
  "format",
  "enum",
  "minimum",
  "maximum",
  "minLength",
  "maxLength",
  "pattern",
  "minItems",
  "maxItems",
  "minProperties",
  "maxProperties",
  "nullable",
  "anyOf",
  "properties",
  "required",
  "additionalProperties",
  "items",
  "x-kubernetes-int-or-string",
  "x-kubernetes-preserve-unknown-fields",
  "x-kubernetes-list-type",
  "x-kubernetes-list-map-keys",
  "x-kubernetes-map-type",
  "x-kubernetes-validations",
] as const;

/** Keywords TypeBox or this package add that a CRD must not carry. */
const droppedKeys = new Set(["default", "$id", "title", "examples", "x-captf-embedded", "x-captf-same-as"]);

export class SchemaNotStructuralError extends Error {
  constructor(path: string, problem: string) {
    super(`schema at ${path || "<root>"} is not structural: ${problem}; fix the TypeBox definition in src/api`);
    this.name = "SchemaNotStructuralError";
  }
}

type JsonSchema = Record<string, unknown>;

/**
 * The structural OpenAPI v3 form of a TypeBox schema. Defaults are dropped on purpose (the
 * manager applies them at reconcile; the stored object stays as written) and named in the
 * description instead, so `kubectl explain` still shows them.
 */
export function toStructuralSchema(schema: TSchema | JsonSchema, path = ""): JsonSchema {
  const source = schema as JsonSchema;
  for (const key of Object.keys(source)) {
    if (!(structuralKeys as readonly string[]).includes(key) && !droppedKeys.has(key)) {
      throw new SchemaNotStructuralError(path, `keyword ${JSON.stringify(key)} is not allowed in a CRD schema`);
    }
  }
  const preserve = source["x-kubernetes-preserve-unknown-fields"] === true;
  const intOrString = source["x-kubernetes-int-or-string"] === true;
  if (source.type === undefined && !preserve && !intOrString) throw new SchemaNotStructuralError(path, "it has no type");
  if (source.anyOf !== undefined && !intOrString) throw new SchemaNotStructuralError(path, "anyOf is only used for int-or-string");

  const out: JsonSchema = {};
  for (const key of structuralKeys) {
    const value = source[key];
    if (value === undefined) continue;
    switch (key) {
      case "description":
        out.description = describeDefault(value as string, source.default);
        break;
      case "properties":
        out.properties = Object.fromEntries(
          Object.entries(value as Record<string, JsonSchema>).map(([name, child]) => [name, toStructuralSchema(child, `${path}.${name}`)]),
        );
        break;
      case "items":
        out.items = toStructuralSchema(value as JsonSchema, `${path}[]`);
        break;
      case "additionalProperties":
        if (typeof value !== "object")
          throw new SchemaNotStructuralError(path, "additionalProperties must be a schema (false is implied by properties)");
        out.additionalProperties = toStructuralSchema(value as JsonSchema, `${path}{}`);
        break;
      case "anyOf":
        out.anyOf = (value as JsonSchema[]).map((branch) => ({ ...branch }));
        break;
      default:
        out[key] = structuredClone(value);
    }
  }
  if (out.description === undefined && source.default !== undefined) out.description = describeDefault("", source.default);
  return out;
}

function describeDefault(description: string, value: unknown): string {
  if (value === undefined) return description;
  const note = `Default: ${JSON.stringify(value)}, applied by the manager when unset (never stored).`;
  return description ? `${description} ${note}` : note;
}

/** The CustomResourceDefinition of one kind, as a plain object. */
export function renderCrd(definition: KindDefinition): Record<string, unknown> {
  const schema = toStructuralSchema(definition.schema);
  // apiVersion, kind and metadata are filled in by clients and the server: only spec is required.
  schema.required = ["spec"];
  const version: Record<string, unknown> = {
    name: apiVersion,
    served: true,
    storage: true,
    schema: { openAPIV3Schema: schema },
    additionalPrinterColumns: definition.printerColumns.map((column) => ({ ...column })),
  };
  if (definition.statusSubresource) version.subresources = { status: {} };
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: {
      name: `${definition.plural}.${apiGroup}`,
      // clusterctl move moves the kinds of CRDs with this label, however captf was installed.
      labels: { [capiContractLabel]: apiVersion, [clusterctlMoveLabel]: "", ...definition.extraLabels },
    },
    spec: {
      group: apiGroup,
      names: {
        kind: definition.kind,
        listKind: `${definition.kind}List`,
        plural: definition.plural,
        singular: definition.singular,
        ...(definition.shortNames.length > 0 ? { shortNames: [...definition.shortNames] } : {}),
        categories: ["cluster-api"],
      },
      scope: definition.scope,
      preserveUnknownFields: false,
      versions: [version],
    },
  };
}

export interface GeneratedFile {
  /** Relative to the package root. */
  path: string;
  content: string;
}

const generatedHeader =
  "# Generated from packages/controller/src/api by scripts/generate-crds.mjs. Do not edit: run `pnpm --filter @captf/controller gen`.\n";

/** Where a kind's CRD is written, relative to the package root. */
export function crdPath(definition: KindDefinition): string {
  return `config/crd/${apiGroup}_${definition.plural}.yaml`;
}

/** Every CRD file, rendered. */
export function renderCrdFiles(): GeneratedFile[] {
  return kindDefinitions.map((definition) => ({
    path: crdPath(definition),
    // lineWidth 0: no folding, so a diff shows whole descriptions.
    content: generatedHeader + stringify(renderCrd(definition), { lineWidth: 0 }),
  }));
}
