import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";
import { schemaFiles } from "./schemas.generated.js";
import { isRole, roles, type Role } from "./version.js";

export type DocumentKind = "inputs" | "outputs";

/** One violation: a JSON pointer into the document and what is wrong there. */
export interface DocumentError {
  path: string;
  message: string;
}

export interface DocumentValidation {
  valid: boolean;
  errors: DocumentError[];
}

/** At most this many errors are reported; a final entry says how many more there were. */
export const maxReportedErrors = 100;

const schemaBaseId = "https://captf.io/schemas/v1alpha1/";

let compiled: Map<string, ValidateFunction> | undefined;

function validators(): Map<string, ValidateFunction> {
  if (compiled) return compiled;
  const ajv = new Ajv2020({ allErrors: true, strict: true });
  for (const [file, schema] of Object.entries(schemaFiles)) {
    ajv.addSchema(schema, schemaBaseId + file);
  }
  const byName = new Map<string, ValidateFunction>();
  for (const role of roles) {
    for (const kind of ["inputs", "outputs"] as const) {
      const fn = ajv.getSchema(`${schemaBaseId}${role}-${kind}.json`);
      if (!fn) throw new Error(`schema ${role}-${kind}.json is missing from the generated schemas`);
      byName.set(`${role}-${kind}`, fn);
    }
  }
  compiled = byName;
  return byName;
}

/** The `$id` of a role's inputs or outputs schema. */
export function schemaId(role: Role, kind: DocumentKind): string {
  return `${schemaBaseId}${role}-${kind}.json`;
}

/**
 * Validates a role's inputs or outputs document against the contract's JSON Schema.
 * Never throws: any value (an array, a string, a huge document) gets a result.
 * Messages name the rule, never the offending value (inputs may hold secrets).
 */
export function validateDocument(role: Role, kind: DocumentKind, document: unknown): DocumentValidation {
  if (!isRole(role)) {
    return {
      valid: false,
      errors: [{ path: "", message: `unknown role ${JSON.stringify(String(role))}: expected one of ${roles.join(", ")}` }],
    };
  }
  if (kind !== "inputs" && kind !== "outputs") {
    return {
      valid: false,
      errors: [{ path: "", message: `unknown document kind ${JSON.stringify(String(kind))}: expected inputs or outputs` }],
    };
  }
  const validate = validators().get(`${role}-${kind}`)!;
  let ok: boolean;
  try {
    ok = validate(document) as boolean;
  } catch (error) {
    // ajv throws only on values JSON cannot hold (a cycle, a bigint in an unexpected place).
    return { valid: false, errors: [{ path: "", message: `the document is not a JSON value: ${(error as Error).message}` }] };
  }
  if (ok) return { valid: true, errors: [] };
  return { valid: false, errors: describeErrors(validate.errors ?? []) };
}

/** A schema from a label, compiled or why it cannot be. */
export type LabelSchemaValidation = ({ compiled: true } & DocumentValidation) | { compiled: false; message: string };

const labelSchemas = new Map<string, ValidateFunction | string>();
const maxCachedLabelSchemas = 64;

function labelSchema(text: string): ValidateFunction | string {
  const cached = labelSchemas.get(text);
  if (cached !== undefined) return cached;
  let compiledSchema: ValidateFunction | string;
  try {
    // Lenient: schemas from images may carry annotations (title, description) ajv's strict mode rejects.
    compiledSchema = new Ajv2020({ allErrors: true, strict: false }).compile(JSON.parse(text) as object);
  } catch (error) {
    compiledSchema = error instanceof SyntaxError ? "is not JSON" : `is not a JSON Schema: ${(error as Error).message}`;
  }
  if (labelSchemas.size >= maxCachedLabelSchemas) labelSchemas.delete(labelSchemas.keys().next().value!);
  labelSchemas.set(text, compiledSchema);
  return compiledSchema;
}

/**
 * Validates a document (a template's user variables) against a JSON Schema read from an image label
 * (io.captf.variables-schema). Messages name the rule, never the offending value.
 */
export function validateAgainstLabelSchema(schemaText: string, document: unknown): LabelSchemaValidation {
  const validate = labelSchema(schemaText);
  if (typeof validate === "string") return { compiled: false, message: validate };
  if (validate(document) as boolean) return { compiled: true, valid: true, errors: [] };
  return { compiled: true, valid: false, errors: describeErrors(validate.errors ?? []) };
}

function describeErrors(raw: readonly ErrorObject[]): DocumentError[] {
  const mapped = raw.map((error) => ({ path: errorPath(error), message: errorMessage(error), keyword: error.keyword, type: error.params }));
  // A failed anyOf (e.g. "null or an endpoint") also reports each branch; keep the specific errors.
  const specific = mapped.filter((error, _, all) => {
    if (error.keyword === "anyOf" || error.keyword === "oneOf") {
      return !all.some(
        (other) =>
          other !== error &&
          isWithin(other.path, error.path) &&
          other.keyword !== "anyOf" &&
          other.keyword !== "oneOf" &&
          !isNullBranch(other),
      );
    }
    if (isNullBranch(error)) {
      return !all.some(
        (other) =>
          other !== error &&
          isWithin(other.path, error.path) &&
          !isNullBranch(other) &&
          other.keyword !== "anyOf" &&
          other.keyword !== "oneOf",
      );
    }
    return true;
  });
  const seen = new Set<string>();
  const unique: DocumentError[] = [];
  for (const error of specific) {
    const key = `${error.path}\u0000${error.message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    unique.push({ path: error.path, message: error.message });
  }
  if (unique.length <= maxReportedErrors) return unique;
  const shown = unique.slice(0, maxReportedErrors);
  shown.push({ path: "", message: `and ${unique.length - maxReportedErrors} more errors` });
  return shown;
}

function isNullBranch(error: { keyword: string; type: unknown }): boolean {
  return error.keyword === "type" && (error.type as { type?: unknown }).type === "null";
}

function isWithin(path: string, parent: string): boolean {
  return path === parent || path.startsWith(parent + "/");
}

function escapePointerToken(token: string): string {
  return token.replace(/~/g, "~0").replace(/\//g, "~1");
}

function errorPath(error: ErrorObject): string {
  const params = error.params as Record<string, unknown>;
  if (error.keyword === "required" && typeof params.missingProperty === "string") {
    return `${error.instancePath}/${escapePointerToken(params.missingProperty)}`;
  }
  if (error.keyword === "additionalProperties" && typeof params.additionalProperty === "string") {
    return `${error.instancePath}/${escapePointerToken(params.additionalProperty)}`;
  }
  if (error.keyword === "unevaluatedProperties" && typeof params.unevaluatedProperty === "string") {
    return `${error.instancePath}/${escapePointerToken(params.unevaluatedProperty)}`;
  }
  if (error.keyword === "propertyNames" && typeof params.propertyName === "string") {
    return `${error.instancePath}/${escapePointerToken(params.propertyName)}`;
  }
  return error.instancePath;
}

function errorMessage(error: ErrorObject): string {
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case "required":
      return "is required but missing";
    case "additionalProperties":
    case "unevaluatedProperties":
      return "is not allowed here: this object is closed";
    case "const":
      return `must be ${JSON.stringify(params.allowedValue)}`;
    case "enum":
      return `must be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(", ")}`;
    case "type":
      return `must be ${Array.isArray(params.type) ? params.type.join(" or ") : String(params.type)}`;
    case "pattern":
      return `does not match the pattern ${String(params.pattern)}`;
    case "minLength":
      return `must be at least ${String(params.limit)} characters long`;
    case "maxLength":
      return `must be at most ${String(params.limit)} characters long`;
    case "minItems":
      return `must have at least ${String(params.limit)} items`;
    case "maxItems":
      return `must have at most ${String(params.limit)} items`;
    case "minimum":
    case "maximum":
    case "exclusiveMinimum":
    case "exclusiveMaximum":
      return `must be ${String(params.comparison)} ${String(params.limit)}`;
    case "propertyNames":
      return "is not an allowed key";
    case "anyOf":
    case "oneOf":
      return "does not match any allowed shape";
    default:
      return error.message ?? `fails ${error.keyword}`;
  }
}
