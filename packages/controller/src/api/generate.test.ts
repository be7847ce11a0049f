import { describe, expect, it } from "@jest/globals";
import { fileURLToPath } from "node:url";
import { Type } from "@sinclair/typebox";
import { parse } from "yaml";
import { kinds } from "@captf/contract/api";
import { renderApiReference } from "./api-reference.js";
import { SchemaNotStructuralError, capiContractLabel, clusterctlMoveLabel, renderCrd, renderCrdFiles, toStructuralSchema } from "./crds.js";
import { staleGeneratedFiles } from "./generate.js";
import { kindDefinitions } from "./kinds.js";
import { JsonObject, Quantity, StringEnum, described } from "./schema.js";
import { JobPolicySchema } from "./workspace.js";

const packageRoot = fileURLToPath(new URL("../../", import.meta.url));
type AnyObject = Record<string, unknown>;

/** The parts of a rendered CRD's schema these tests read. */
interface SchemaNode extends AnyObject {
  properties: { spec: SchemaNode; template: SchemaNode };
  required?: string[];
  "x-kubernetes-validations"?: AnyObject[];
}

/** The parts of a rendered CRD these tests read. */
interface Crd {
  metadata: { labels: Record<string, string> };
  spec: {
    preserveUnknownFields: boolean;
    names: { categories: string[] };
    scope: string;
    versions: [AnyObject & { schema: { openAPIV3Schema: SchemaNode }; additionalPrinterColumns?: AnyObject[] }];
  };
}

function versionOf(kind: string): Crd["spec"]["versions"][0] {
  const definition = kindDefinitions.find((candidate) => candidate.kind === kind)!;
  return (renderCrd(definition) as unknown as Crd).spec.versions[0];
}

describe("generated files", () => {
  it("config/crd and docs/api-reference.md match the TypeBox source (run `pnpm --filter @captf/controller gen` when this fails)", () => {
    expect(staleGeneratedFiles(packageRoot)).toEqual([]);
  });

  it("writes one CRD per kind, named <group>_<plural>.yaml, each parsing back to the rendered object", () => {
    const files = renderCrdFiles();
    expect(files.map((file) => file.path)).toEqual(
      kindDefinitions.map((definition) => `config/crd/infrastructure.cluster.x-k8s.io_${definition.plural}.yaml`),
    );
    for (const [index, file] of files.entries()) expect(parse(file.content)).toEqual(renderCrd(kindDefinitions[index]!));
  });
});

describe("the CRDs", () => {
  it.each(kindDefinitions.map((definition) => [definition.kind, definition] as const))(
    "%s is a structural v1 CRD with the contract and clusterctl move labels and category",
    (_kind, definition) => {
      const crd = renderCrd(definition) as unknown as Crd;
      expect(crd.metadata.labels[capiContractLabel]).toBe("v1alpha1");
      expect(crd.metadata.labels[clusterctlMoveLabel]).toBe("");
      expect(crd.spec.preserveUnknownFields).toBe(false);
      expect(crd.spec.names.categories).toEqual(["cluster-api"]);
      expect(crd.spec.versions).toHaveLength(1);
      expect(crd.spec.versions[0].schema.openAPIV3Schema.required).toEqual(["spec"]);
      expect(JSON.stringify(crd)).not.toContain('"default"');
    },
  );

  it("gives every kind with a status the status subresource, and the status-less templates and module policy none", () => {
    const withStatus = kindDefinitions
      .filter((definition) => "subresources" in versionOf(definition.kind))
      .map((definition) => definition.kind);
    expect(withStatus).toEqual([
      kinds.cluster,
      kinds.machine,
      kinds.machineTemplate,
      kinds.machinePool,
      kinds.clusterIdentity,
      kinds.notificationReceiver,
    ]);
  });

  it("makes the identity cluster-scoped and part of clusterctl's move hierarchy", () => {
    const crd = renderCrd(kindDefinitions.find((definition) => definition.kind === kinds.clusterIdentity)!) as unknown as Crd;
    expect(crd.spec.scope).toBe("Cluster");
    expect(crd.metadata.labels["clusterctl.cluster.x-k8s.io/move-hierarchy"]).toBe("true");
  });

  it("puts the machine's immutability rules on the TerraformMachine kind only, not on the template's copy of its spec", () => {
    const machineRules = versionOf(kinds.machine).schema.openAPIV3Schema.properties.spec["x-kubernetes-validations"]!.map(
      (rule: AnyObject) => rule.fieldPath,
    );
    expect(machineRules).toEqual([".source", ".identityRef", ".variables", ".variablesFrom", ".providerID"]);
    expect(
      versionOf(kinds.machineTemplate).schema.openAPIV3Schema.properties.spec.properties.template.properties.spec[
        "x-kubernetes-validations"
      ],
    ).toBeUndefined();
  });

  it("requires identityRef on the TerraformCluster kind but not on the template", () => {
    const clusterRules = versionOf(kinds.cluster).schema.openAPIV3Schema.properties.spec["x-kubernetes-validations"];
    expect(clusterRules![0]).toMatchObject({ rule: "has(self.identityRef)", fieldPath: ".identityRef", reason: "FieldValueRequired" });
    expect(
      versionOf(kinds.clusterTemplate).schema.openAPIV3Schema.properties.spec.properties.template.properties.spec[
        "x-kubernetes-validations"
      ],
    ).toBeUndefined();
  });

  it("lists printer columns with Image and InputsApplied only in -o wide", () => {
    const columns = versionOf(kinds.machine).additionalPrinterColumns as AnyObject[];
    expect(columns.map((column) => `${column.name}${column.priority ? " (wide)" : ""}`)).toEqual([
      "Cluster",
      "Machine",
      "Ready",
      "Provisioned",
      "ProviderID",
      "Image (wide)",
      "InputsApplied (wide)",
      "Age",
    ]);
  });
});

describe("toStructuralSchema", () => {
  it("drops defaults but names them in the description, so kubectl explain still shows them", () => {
    const schema = toStructuralSchema(Type.Object({ limit: Type.Integer({ description: "How many.", default: 3 }) }));
    expect(schema).toEqual({
      type: "object",
      properties: { limit: { description: "How many. Default: 3, applied by the manager when unset (never stored).", type: "integer" } },
      required: ["limit"],
    });
  });

  it("keeps int-or-string and preserve-unknown-fields nodes, the two allowed without a plain type", () => {
    expect(toStructuralSchema(Quantity())).toMatchObject({
      anyOf: [{ type: "integer" }, { type: "string" }],
      "x-kubernetes-int-or-string": true,
    });
    expect(toStructuralSchema(JsonObject())).toEqual({ type: "object", "x-kubernetes-preserve-unknown-fields": true });
    expect(toStructuralSchema(StringEnum(["A", "B"] as const))).toEqual({ type: "string", enum: ["A", "B"] });
  });

  it.each([
    ["a node without a type", { description: "x" }, "schema at .field is not structural: it has no type"],
    ["a union other than int-or-string", Type.Union([Type.String(), Type.Integer()]), "schema at .field is not structural: it has no type"],
    ["a keyword a CRD cannot carry", Type.String({ examples: ["a"], nope: true }), 'keyword "nope" is not allowed in a CRD schema'],
    ["additionalProperties: false", Type.Object({}, { additionalProperties: false }), "additionalProperties must be a schema"],
  ])("refuses %s, naming the path", (_name, field, message) => {
    expect(() => toStructuralSchema(Type.Object({ field: field as never }))).toThrow(SchemaNotStructuralError);
    expect(() => toStructuralSchema(Type.Object({ field: field as never }))).toThrow(message);
  });
});

describe("described", () => {
  it("gives a shared type its own description, keeping its rules and leaving the original alone", () => {
    const copy = described(JobPolicySchema, "Defaults for machines.");
    expect(copy.description).toBe("Defaults for machines.");
    expect(copy["x-kubernetes-validations"]).toEqual(JobPolicySchema["x-kubernetes-validations"]);
    expect(JobPolicySchema.description).toMatch(/^How the Jobs that run the module are tuned/);
  });
});

describe("the API reference", () => {
  const page = renderApiReference();

  it("documents every kind with its scope, short names and printer columns", () => {
    for (const definition of kindDefinitions) {
      expect(page).toContain(`## ${definition.kind}\n`);
      expect(page).toContain(`| Resource | \`${definition.plural}\` |`);
    }
    expect(page).toContain("| Short names | `tfm` |");
  });

  it("lists fields with type, default, limits and description", () => {
    expect(page).toContain(
      "| `spec.membershipRefreshIntervalSeconds` | int32 |  | `60` | 15–86400 | How often the manager runs apply -refresh-only " +
        "to pick up members that joined or left between applies, in seconds; the cluster's defaults when unset. |",
    );
    expect(page).toContain('| `spec.variablesFrom[].format` | enum |  | `"String"` | one of `String`, `JSON` |');
    expect(page).toContain("| `status.stateBackups` | []object |  |  | 1–16 items |");
  });

  it("lists the CEL rules with their messages, and links template specs to their kind", () => {
    expect(page).toContain("allowedNamespaces {} is ambiguous and rejected");
    expect(page).toContain("Its fields are those of [TerraformMachine spec](#terraformmachine).");
  });
});
