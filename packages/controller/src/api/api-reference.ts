/**
 * Renders docs/api-reference.md from the same TypeBox kinds the CRDs come from: every kind,
 * every field with its type, default, limits and description, and the rules the API server
 * enforces. A test fails when the committed page differs.
 */
import { apiGroup, apiVersion, groupVersion } from "@captf/contract/api";
import { kindDefinitions } from "./kinds.js";
import type { KindDefinition } from "./resource.js";
import type { CelRule } from "./schema.js";

/** A schema node as the kinds' TypeBox schemas emit it: the keywords this page reads, and any other (the x- extensions) as unknown. */
interface JsonSchema {
  [keyword: string]: unknown;
  type?: string;
  format?: string;
  enum?: unknown[];
  items?: JsonSchema;
  additionalProperties?: JsonSchema | boolean;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  description?: string;
  pattern?: string;
}

/** Where the page is written, relative to the package root. */
export const apiReferencePath = "../../docs/api-reference.md";

interface FieldRow {
  path: string;
  type: string;
  required: boolean;
  defaultValue: unknown;
  limits: string[];
  description: string;
}

interface RuleRow {
  path: string;
  rule: CelRule;
}

function typeName(schema: JsonSchema): string {
  if (schema["x-captf-embedded"]) return String(schema["x-captf-embedded"]);
  if (schema["x-kubernetes-int-or-string"]) return "quantity";
  switch (schema.type) {
    case "array":
      return `[]${typeName(schema.items!)}`;
    case "object":
      if (schema.additionalProperties) return `map[string]${typeName(schema.additionalProperties as JsonSchema)}`;
      if (schema["x-kubernetes-preserve-unknown-fields"]) return "JSON object";
      return "object";
    case "integer":
      return schema.format ?? "integer";
    case "string":
      if (schema.format === "date-time") return "time";
      return schema.enum ? "enum" : "string";
    default:
      return String(schema.type);
  }
}

function range(min: unknown, max: unknown, unit: string): string | undefined {
  if (min === undefined && max === undefined) return undefined;
  const suffix = unit ? ` ${unit}` : "";
  if (min !== undefined && max !== undefined) return min === max ? `exactly ${min}${suffix}` : `${min}–${max}${suffix}`;
  return min !== undefined ? `≥ ${min}${suffix}` : `≤ ${max}${suffix}`;
}

function limitsOf(schema: JsonSchema): string[] {
  const limits = [
    schema.enum ? `one of ${(schema.enum as string[]).map((value) => `\`${value}\``).join(", ")}` : undefined,
    range(schema.minimum, schema.maximum, ""),
    range(schema.minLength, schema.maxLength, "chars"),
    range(schema.minItems, schema.maxItems, "items"),
    range(schema.minProperties, schema.maxProperties, "keys"),
    schema.pattern ? `pattern \`${schema.pattern}\`` : undefined,
    schema["x-kubernetes-list-type"] === "map"
      ? `keyed by \`${(schema["x-kubernetes-list-map-keys"] as string[]).join(", ")}\``
      : undefined,
    schema["x-kubernetes-list-type"] === "set" ? "unique items" : undefined,
  ];
  return limits.filter((limit): limit is string => limit !== undefined);
}

/** Walks a schema depth first, collecting one row per field and every CEL rule with its path. */
function walk(schema: JsonSchema, path: string, required: boolean, rows: FieldRow[], rules: RuleRow[], isField = true): void {
  if (isField) {
    rows.push({
      path,
      type: typeName(schema),
      required,
      defaultValue: schema.default,
      limits: limitsOf(schema),
      description: schema.description ?? "",
    });
  }
  for (const rule of (schema["x-kubernetes-validations"] as CelRule[] | undefined) ?? []) rules.push({ path, rule });
  // Embedded Kubernetes types and template specs are documented elsewhere: name them, do not repeat them.
  if (schema["x-captf-embedded"] || schema["x-captf-same-as"]) return;
  if (schema.type === "object" && schema.properties) {
    const requiredNames = new Set<string>(schema.required ?? []);
    for (const [name, child] of Object.entries(schema.properties as Record<string, JsonSchema>)) {
      walk(child, `${path}.${name}`, requiredNames.has(name), rows, rules);
    }
  } else if (schema.type === "array" && schema.items?.type === "object") {
    walk(schema.items, `${path}[]`, false, rows, rules, false);
  }
}

function cell(text: string): string {
  return text.replace(/\|/g, "\\|").replace(/\n/g, " ");
}

function renderKind(definition: KindDefinition): string {
  const rows: FieldRow[] = [];
  const rules: RuleRow[] = [];
  const schema = definition.schema as unknown as JsonSchema;
  for (const top of ["spec", "status"]) {
    const child = schema.properties![top] as JsonSchema | undefined;
    if (child) walk(child, top, top === "spec", rows, rules);
  }
  const normal = definition.printerColumns.filter((column) => !column.priority).map((column) => column.name);
  const wide = definition.printerColumns.filter((column) => column.priority).map((column) => column.name);
  const lines = [
    `## ${definition.kind}`,
    "",
    definition.description,
    "",
    "| Property | Value |",
    "| --- | --- |",
    `| API version | \`${groupVersion}\` |`,
    `| Resource | \`${definition.plural}\` |`,
    `| Scope | ${definition.scope} |`,
    `| Short names | ${definition.shortNames.length > 0 ? definition.shortNames.map((name) => `\`${name}\``).join(", ") : "none"} |`,
    "| Categories | `cluster-api` |",
    `| Status subresource | ${definition.statusSubresource ? "yes" : "no"} |`,
    `| Printer columns | ${normal.join(", ")}${wide.length > 0 ? `; with \`-o wide\` also ${wide.join(", ")}` : ""} |`,
    "",
    ...definition.notes.map((note) => `- ${note}`),
    "",
  ];
  if (rules.length > 0) {
    lines.push(
      "### Rules the API server enforces",
      "",
      "Besides the types and limits below, these CEL rules reject a write with `422 Invalid`:",
      "",
    );
    lines.push("| Field | Rejected when | Message |", "| --- | --- | --- |");
    for (const { path, rule } of rules)
      lines.push(`| \`${path}${rule.fieldPath ?? ""}\` | \`${cell(rule.rule)}\` is false | ${cell(rule.message)} |`);
    lines.push("");
  }
  lines.push("### Fields", "", "| Field | Type | Required | Default | Limits | Description |", "| --- | --- | --- | --- | --- | --- |");
  for (const row of rows) {
    const sameAs = fieldSameAs(schema, row.path);
    const description = sameAs ? `${row.description} Its fields are those of [${sameAs} spec](#${sameAs.toLowerCase()}).` : row.description;
    lines.push(
      `| \`${row.path}\` | ${cell(row.type)} | ${row.required ? "yes" : ""} | ` +
        `${row.defaultValue === undefined ? "" : `\`${JSON.stringify(row.defaultValue)}\``} | ${cell(row.limits.join("; "))} | ` +
        `${cell(description)} |`,
    );
  }
  lines.push("");
  return lines.join("\n");
}

function fieldSameAs(schema: JsonSchema, path: string): string | undefined {
  let node: JsonSchema | undefined = schema;
  for (const name of path.split(".")) node = node?.properties?.[name];
  return node?.["x-captf-same-as"] as string | undefined;
}

/** The whole API reference page. */
export function renderApiReference(): string {
  const header = [
    `# API reference: \`${apiGroup}/${apiVersion}\``,
    "",
    "<!-- Generated from packages/controller/src/api by packages/controller/scripts/generate-crds.mjs. Do not edit: run `pnpm " +
      "--filter @captf/controller gen`. -->",
    "",
    "The captf manager serves seven kinds. TerraformCluster, TerraformMachine and TerraformMachinePool run a Terraform/OpenTofu " +
      "module image as Kubernetes Jobs; the three templates are what Cluster API clones them from; TerraformClusterIdentity " +
      "holds the credentials.",
    "",
    "**Defaults are not stored.** The CRDs declare no schema defaults: the Default column is what the manager applies at " +
      "reconcile or when it builds a Job, so a stored object stays exactly as written and a provider upgrade that changes a " +
      "default reaches every object. Where the default depends on the cluster or a manager flag, the description says so.",
    "",
    "**Validation happens in two places.** The CRD schema and its CEL rules (below) are enforced by the API server itself; the " +
      "validating webhooks add the rules a schema cannot express (reserved variable names, Job security contexts, image " +
      "reference syntax, who may set a providerID, templates' immutability, identity access checks).",
    "",
    ...kindDefinitions.map((definition) => `- [${definition.kind}](#${definition.kind.toLowerCase()})`),
    "",
  ];
  return [...header, ...kindDefinitions.map(renderKind)].join("\n");
}
