/**
 * What a kind needs beyond its schema to become a CustomResourceDefinition: names, scope,
 * printer columns, subresources. Each kind module exports one {@link KindDefinition}.
 */
import { Type, type TObject, type TOptional, type TSchema, type TString, type TUnsafe } from "@sinclair/typebox";
import type { V1ObjectMeta } from "@kubernetes/client-node";
import { apiGroup, apiVersion, type Kind } from "@captf/contract/api";
import { OpaqueObject, embedded } from "./schema.js";

/** Where a kind lives in the API. */
export interface ResourceType {
  /** "" for the core group. */
  group: string;
  version: string;
  plural: string;
  kind: string;
  namespaced: boolean;
}

export interface PrinterColumn {
  name: string;
  type: "string" | "integer" | "number" | "boolean" | "date";
  jsonPath: string;
  description: string;
  /** 1 shows the column only with `-o wide`. */
  priority?: number;
}

export interface KindDefinition<Schema extends TObject = TObject> {
  kind: Kind;
  plural: string;
  singular: string;
  shortNames: readonly string[];
  scope: "Namespaced" | "Cluster";
  /** What the kind is, one paragraph; the CRD's and the API reference's description. */
  description: string;
  /** Facts the API reference lists under the kind: who creates it, what is immutable. */
  notes: readonly string[];
  schema: Schema;
  statusSubresource: boolean;
  printerColumns: readonly PrinterColumn[];
  /** Labels on the CRD besides the Cluster API contract label. */
  extraLabels?: Readonly<Record<string, string>>;
}

type RootFields<Spec extends TSchema, Status extends TSchema | undefined> = {
  apiVersion: TOptional<TString>;
  kind: TOptional<TString>;
  metadata: TOptional<TUnsafe<V1ObjectMeta>>;
  spec: Spec;
} & (Status extends TSchema ? { status: TOptional<Status> } : unknown);

/** The top-level object schema of a kind: apiVersion, kind, metadata, spec and (optionally) status. */
export function kindSchema<Spec extends TSchema, Status extends TSchema | undefined = undefined>(
  description: string,
  spec: Spec,
  status?: Status,
): TObject<RootFields<Spec, Status>> {
  const fields = {
    apiVersion: Type.Optional(
      Type.String({ description: "Version of the schema of this object: infrastructure.cluster.x-k8s.io/v1alpha1." }),
    ),
    kind: Type.Optional(Type.String({ description: "Kind of this object." })),
    // The server validates metadata itself and refuses a schema that says more than its type.
    metadata: Type.Optional(OpaqueObject<V1ObjectMeta>(embedded("metav1.ObjectMeta"))),
    spec,
    ...(status ? { status: Type.Optional(status) } : {}),
  };
  return Type.Object(fields as RootFields<Spec, Status>, { description });
}

/** `.status.conditions[type=<type>].status` as a printer column path. */
export function conditionStatusPath(type: string): string {
  return `.status.conditions[?(@.type=="${type}")].status`;
}

export const readyColumn: PrinterColumn = {
  name: "Ready",
  type: "string",
  jsonPath: conditionStatusPath("Ready"),
  description: "Status of the Ready condition",
};
export const ageColumn: PrinterColumn = {
  name: "Age",
  type: "date",
  jsonPath: ".metadata.creationTimestamp",
  description: "Time since creation",
};
export const clusterColumn: PrinterColumn = {
  name: "Cluster",
  type: "string",
  jsonPath: ".metadata.labels['cluster\\.x-k8s\\.io/cluster-name']",
  description: "The Cluster API Cluster this object belongs to",
};
export const provisionedColumn: PrinterColumn = {
  name: "Provisioned",
  type: "boolean",
  jsonPath: ".status.initialization.provisioned",
  description: "Whether the infrastructure is provisioned",
};
export const inputsAppliedColumn: PrinterColumn = {
  name: "InputsApplied",
  type: "string",
  jsonPath: conditionStatusPath("InputsApplied"),
  description: "Whether the current inputs are applied",
  priority: 1,
};
export function imageColumn(jsonPath: string, priority?: number): PrinterColumn {
  return { name: "Image", type: "string", jsonPath, description: "The module image", ...(priority === undefined ? {} : { priority }) };
}

/** Where a captf kind's objects live in the API: what the client and the informers take. */
export function resourceTypeOf(definition: Pick<KindDefinition, "kind" | "plural" | "scope">): ResourceType {
  return {
    group: apiGroup,
    version: apiVersion,
    plural: definition.plural,
    kind: definition.kind,
    namespaced: definition.scope === "Namespaced",
  };
}
