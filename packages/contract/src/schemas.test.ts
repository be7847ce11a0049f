import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "@jest/globals";
import { roleTables } from "./role-table.js";
import { schemaFiles } from "./schemas.generated.js";
import { validateDocument, type DocumentKind } from "./validate.js";
import { roles } from "./version.js";

const examplesDir = fileURLToPath(new URL("../../../schemas/v1alpha1/examples/", import.meta.url));
const readExample = (name: string): unknown => JSON.parse(readFileSync(examplesDir + name, "utf8"));
const documentKinds: DocumentKind[] = ["inputs", "outputs"];

describe("the v1alpha1 schemas", () => {
  it("are embedded from schemas/v1alpha1 without drift", () => {
    const script = fileURLToPath(new URL("../scripts/generate-schemas.mjs", import.meta.url));
    expect(() => execFileSync(process.execPath, [script, "--check"], { stdio: "pipe" })).not.toThrow();
  });

  it("give every file its $id under https://captf.io/schemas/v1alpha1/", () => {
    for (const [file, schema] of Object.entries(schemaFiles)) {
      expect((schema as { $id: string }).$id).toBe(`https://captf.io/schemas/v1alpha1/${file}`);
      expect((schema as { $schema: string }).$schema).toBe("https://json-schema.org/draft/2020-12/schema");
    }
  });

  it("ship a valid and an invalid example for every role and document", () => {
    const names = readdirSync(examplesDir);
    for (const role of roles) {
      for (const kind of documentKinds) {
        expect(names).toContain(`${role}-${kind}.valid.json`);
        expect(names).toContain(`${role}-${kind}.invalid.json`);
        expect(names).toContain(`${role}-${kind}.invalid.expected.json`);
      }
    }
  });

  describe.each(roles.flatMap((role) => documentKinds.map((kind) => [role, kind] as const)))("%s %s", (role, kind) => {
    it("accepts the valid example", () => {
      const result = validateDocument(role, kind, readExample(`${role}-${kind}.valid.json`));
      expect(result.errors).toEqual([]);
      expect(result.valid).toBe(true);
    });

    it("reports every planted violation of the invalid example at its JSON pointer", () => {
      const planted = readExample(`${role}-${kind}.invalid.expected.json`) as { path: string }[];
      expect(planted.length).toBeGreaterThanOrEqual(4);
      const result = validateDocument(role, kind, readExample(`${role}-${kind}.invalid.json`));
      expect(result.valid).toBe(false);
      const reported = new Set(result.errors.map((error) => error.path));
      for (const violation of planted) expect(reported).toContain(violation.path);
      // Nothing is reported outside the planted places (or their parents, for nullable wrappers).
      for (const path of reported) {
        expect(planted.some((violation) => violation.path === path || violation.path.startsWith(path + "/"))).toBe(true);
      }
    });
  });

  it("declare exactly the role table's inputs, closed", () => {
    for (const role of roles) {
      const schema = schemaFiles[`${role}-inputs.json`] as {
        properties: Record<string, unknown>;
        required: string[];
        additionalProperties: boolean;
      };
      const tableNames = roleTables[role].inputs.map((spec) => spec.name).sort();
      const schemaNames = Object.keys(schema.properties).filter((name) => !(role === "cluster" && name === "captf_cluster_outputs"));
      expect(schemaNames.sort()).toEqual(tableNames);
      expect([...schema.required].sort()).toEqual(tableNames);
      expect(schema.additionalProperties).toBe(false);
    }
  });

  it("require exactly the role table's outputs, open to extra outputs", () => {
    for (const role of roles) {
      const schema = schemaFiles[`${role}-outputs.json`] as { required: string[]; additionalProperties?: boolean };
      expect([...schema.required].sort()).toEqual(roleTables[role].outputs.map((spec) => spec.name).sort());
      expect(schema.additionalProperties).not.toBe(false);
      const withExtra = { ...(readExample(`${role}-outputs.valid.json`) as object), module_private_output: { any: "thing" } };
      expect(validateDocument(role, "outputs", withExtra).valid).toBe(true);
    }
  });
});
