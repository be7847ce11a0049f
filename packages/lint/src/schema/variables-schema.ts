// The JSON Schema of a module's user variables: the io.captf.variables-schema label's value.
import { reservedInputPrefix, roleTables, type Role } from "@captf/contract/roles";
import { parseType, type TypeExpr } from "../checks/type-match.js";
import { configSet, type LoadedModule } from "../module/load.js";

/** The label's size limit: the manager reads it on every image inspection. */
export const maxSchemaLabelBytes = 32 * 1024;

/** A schema node; keys are declared in the order the label prints them. */
export interface SchemaNode {
  type?: "string" | "number" | "boolean" | "array" | "object";
  properties?: Record<string, SchemaNode>;
  required?: string[];
  items?: SchemaNode;
  prefixItems?: SchemaNode[];
  additionalProperties?: boolean | SchemaNode;
}

/** User variables (neither captf_ nor a contract input) as an object schema; a variable without default is required. */
export function variablesSchema(module: LoadedModule, role: Role): SchemaNode {
  const inputs = new Set(roleTables[role].inputs.map((s) => s.name));
  const properties: Record<string, SchemaNode> = {};
  const required: string[] = [];
  const variables = configSet(module).variables;
  for (const name of [...variables.keys()].sort()) {
    if (name.startsWith(reservedInputPrefix) || inputs.has(name)) continue;
    const v = variables.get(name)!;
    let node: SchemaNode = {};
    if (v.type && v.type.text.trim() !== "") {
      try {
        node = schemaOf(parseType(v.type.text));
      } catch {
        node = {};
      }
    }
    properties[name] = node;
    if (v.default === undefined) required.push(name);
  }
  return { type: "object", ...nonEmpty(properties, required), additionalProperties: false };
}

export function schemaOf(t: TypeExpr): SchemaNode {
  switch (t.kind) {
    case "string":
      return { type: "string" };
    case "number":
      return { type: "number" };
    case "bool":
      return { type: "boolean" };
    case "any":
      return {};
    case "list":
    case "set":
      return { type: "array", items: schemaOf(t.element) };
    case "map":
      return { type: "object", additionalProperties: schemaOf(t.element) };
    case "tuple":
      return t.elements.length > 0 ? { type: "array", prefixItems: t.elements.map(schemaOf) } : { type: "array" };
    case "object": {
      const names = [...t.attributes.keys()].sort();
      const properties: Record<string, SchemaNode> = {};
      for (const n of names) properties[n] = schemaOf(t.attributes.get(n)!.type);
      const required = names.filter((n) => !t.attributes.get(n)!.optional);
      return { type: "object", ...nonEmpty(properties, required) };
    }
  }
}

/** Empty `properties` and `required` are left out, as the label always printed them. */
function nonEmpty(properties: Record<string, SchemaNode>, required: string[]): Pick<SchemaNode, "properties" | "required"> {
  return { ...(Object.keys(properties).length > 0 ? { properties } : {}), ...(required.length > 0 ? { required } : {}) };
}
