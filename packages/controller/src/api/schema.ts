/**
 * Small builders over TypeBox for the shapes a Kubernetes structural schema needs and TypeBox
 * has no direct word for: string enums, int32/int64, quantities, string maps, free JSON, CEL rules.
 * Every builder returns a TypeBox schema, so `Static<>` gives the TypeScript type of the field.
 */
import { CloneType, Type, type SchemaOptions, type TSchema, type TString, type TInteger, type TUnsafe } from "@sinclair/typebox";
import type { JsonValue } from "@captf/contract";

/** One entry of `x-kubernetes-validations`: a CEL rule the API server checks on every write. */
export interface CelRule {
  rule: string;
  message: string;
  /** Where the error is reported, relative to the schema that carries the rule (e.g. `.source`). */
  fieldPath?: string;
  reason?: "FieldValueInvalid" | "FieldValueForbidden" | "FieldValueRequired" | "FieldValueDuplicate";
}

/** Schema options carrying CEL rules. */
export function cel(...rules: CelRule[]): { "x-kubernetes-validations": CelRule[] } {
  return { "x-kubernetes-validations": rules };
}

/** A copy of `schema` with its own description: one shared type, worded for the field that uses it. */
export function described<T extends TSchema>(schema: T, description: string): T {
  // Not CloneType(schema, { description }): there the schema's own description wins.
  return Object.assign(CloneType(schema), { description });
}

/** A string restricted to `values`. */
export function StringEnum<const T extends readonly string[]>(values: T, options: SchemaOptions = {}): TUnsafe<T[number]> {
  return Type.Unsafe<T[number]>({ ...options, type: "string", enum: [...values] });
}

export function Int32(options: SchemaOptions = {}): TInteger {
  return Type.Integer({ format: "int32", ...options });
}

export function Int64(options: SchemaOptions = {}): TInteger {
  return Type.Integer({ format: "int64", ...options });
}

/** An RFC 3339 time, as metav1.Time serializes. */
export function Timestamp(options: SchemaOptions = {}): TString {
  return Type.String({ format: "date-time", ...options });
}

/** A map of string to string (labels, annotations, attributes). */
export function StringMap(options: SchemaOptions = {}): TUnsafe<Record<string, string>> {
  return Type.Unsafe<Record<string, string>>({ ...options, type: "object", additionalProperties: { type: "string" } });
}

/** The Kubernetes resource.Quantity grammar ("250m", "2Gi", 4). */
export const quantityPattern =
  "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$";

/** A resource.Quantity: an integer or a quantity string. */
export function Quantity(options: SchemaOptions = {}): TUnsafe<string | number> {
  return Type.Unsafe<string | number>({
    ...options,
    anyOf: [{ type: "integer" }, { type: "string" }],
    pattern: quantityPattern,
    "x-kubernetes-int-or-string": true,
  });
}

/** A corev1.ResourceList: resource name to quantity. */
export function QuantityMap(options: SchemaOptions = {}): TUnsafe<Record<string, string | number>> {
  return Type.Unsafe<Record<string, string | number>>({ ...options, type: "object", additionalProperties: Quantity() });
}

/** A JSON object whose content the server keeps as written (no pruning). */
export function JsonObject(options: SchemaOptions = {}): TUnsafe<Record<string, JsonValue>> {
  return Type.Unsafe<Record<string, JsonValue>>({ ...options, type: "object", "x-kubernetes-preserve-unknown-fields": true });
}

/** An object the schema does not describe further (e.g. `metadata`, which the server validates itself). */
export function OpaqueObject<T>(options: SchemaOptions = {}): TUnsafe<T> {
  return Type.Unsafe<T>({ ...options, type: "object" });
}

/**
 * Marks a schema as an embedded Kubernetes type: the API reference names it instead of listing
 * its fields (the CRD still carries them all). Dropped from the CRD.
 */
export function embedded(typeName: string): { "x-captf-embedded": string } {
  return { "x-captf-embedded": typeName };
}

/** Marks a template's spec as the spec of `kind`: the API reference links there instead of repeating it. Dropped from the CRD. */
export function sameAs(kind: string): { "x-captf-same-as": string } {
  return { "x-captf-same-as": kind };
}

/** RFC 1123 DNS subdomain: Secret, ConfigMap and object names. */
export const dnsSubdomainPattern = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";
/** RFC 1123 DNS label: namespace names. */
export const dnsLabelPattern = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";

/** A list the server replaces as a whole on merge. */
export const atomicList = { "x-kubernetes-list-type": "atomic" } as const;
/** A list of unique scalars. */
export const setList = { "x-kubernetes-list-type": "set" } as const;
/** A list merged by the given key. */
export function mapList(key: string): { "x-kubernetes-list-type": "map"; "x-kubernetes-list-map-keys": string[] } {
  return { "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": [key] };
}
