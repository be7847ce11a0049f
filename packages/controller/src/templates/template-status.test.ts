import { describe, expect, it } from "@jest/globals";
import { conditionReasons } from "@captf/contract/api";
import type { TerraformMachineTemplate } from "../api/templates.js";
import type { VariablesReading } from "../kinds/read-variables.js";
import type { ImageInspection } from "./inspect-image.js";
import {
  decideCapacity,
  decideTemplateStatus,
  decideVariablesValid,
  inspectRetryDelayMillis,
  resolutionNeeded,
} from "./template-status.js";

const now = Date.parse("2026-03-01T12:00:00Z");
const image = "registry.example/machine:v1";

function template(
  options: { capacity?: Record<string, string>; status?: TerraformMachineTemplate["status"]; image?: string } = {},
): TerraformMachineTemplate {
  return {
    apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
    kind: "TerraformMachineTemplate",
    metadata: { name: "workers", namespace: "team", generation: 2 },
    spec: {
      template: { spec: { source: { image: options.image ?? image } } },
      ...(options.capacity ? { capacity: options.capacity } : {}),
    },
    ...(options.status ? { status: options.status } : {}),
  } as TerraformMachineTemplate;
}

const labelled = (labels: Record<string, string>): ImageInspection => ({ ok: true, labels });
const unreadable: ImageInspection = { ok: false, failure: "not_found", message: "registry.example: GET manifests/v1 answered 404" };
const noVariables: VariablesReading = { ok: true, variables: {} };
const capacityLabels = {
  "io.captf.capacity": '{"cpu":"4","memory":"16Gi"}',
  "io.captf.node-info": '{"architecture":"arm64","operatingSystem":"linux"}',
};
const condition = (type: string, status: "True" | "False" | "Unknown", reason: string) => ({
  type,
  status,
  reason,
  message: "",
  lastTransitionTime: "2026-01-01T00:00:00Z",
});

describe("decideCapacity", () => {
  it("takes capacity and nodeInfo from the image labels", () => {
    expect(decideCapacity(template(), labelled(capacityLabels))).toEqual({
      status: {
        capacity: { cpu: "4", memory: "16Gi" },
        nodeInfo: { architecture: "arm64", operatingSystem: "linux" },
        capacitySource: { source: "Image", image },
      },
      condition: expect.objectContaining({ status: "True", reason: "CapacityResolved" }),
    });
  });

  it("lets spec.capacity win over the label as a whole, keeping nodeInfo from the image", () => {
    const decision = decideCapacity(template({ capacity: { cpu: "8" } }), labelled(capacityLabels));
    expect(decision.status).toEqual({
      capacity: { cpu: "8" },
      nodeInfo: { architecture: "arm64", operatingSystem: "linux" },
      capacitySource: { source: "Spec", image },
    });
    expect(decision.condition.reason).toBe("CapacityResolved");
  });

  it("resolves spec.capacity even when the image cannot be read, naming no image so it is read again", () => {
    const decision = decideCapacity(template({ capacity: { cpu: "8" } }), unreadable);
    expect(decision.status).toEqual({ capacity: { cpu: "8" }, capacitySource: { source: "Spec" } });
    expect(decision.condition.status).toBe("True");
  });

  it("says CapacityNotDeclared for an image without the label", () => {
    const decision = decideCapacity(template(), labelled({ "io.captf.node-info": '{"operatingSystem":"linux"}' }));
    expect(decision).toEqual({
      status: { nodeInfo: { operatingSystem: "linux" }, capacitySource: { source: "Image", image } },
      condition: expect.objectContaining({ status: "True", reason: "CapacityNotDeclared" }),
    });
  });

  it.each([
    ["a capacity label that is not JSON", { "io.captf.capacity": "cpu=4" }, "io.captf.capacity is not a JSON object of quantity strings"],
    ["a capacity label with a bad quantity", { "io.captf.capacity": '{"cpu":"four"}' }, '"four" is not a quantity for "cpu"'],
    [
      "a node-info label with an unknown architecture",
      { "io.captf.capacity": '{"cpu":"4"}', "io.captf.node-info": '{"architecture":"riscv64"}' },
      'unknown architecture "riscv64"',
    ],
  ])("gives CapacityLabelInvalid for %s and records the image", (_name, labels, message) => {
    const decision = decideCapacity(template(), labelled(labels));
    expect(decision.condition).toEqual({ status: "False", reason: "CapacityLabelInvalid", message: expect.stringContaining(message) });
    expect(decision.status).toEqual({ capacitySource: { source: "Image", image } });
  });

  it("keeps the previous image's values when the new one cannot be read, with ImageInspectFailed", () => {
    const previous = { capacity: { cpu: "2" }, capacitySource: { source: "Image" as const, image: "registry.example/machine:v0" } };
    const decision = decideCapacity(template({ status: previous }), unreadable);
    expect(decision.status).toEqual(previous);
    expect(decision.condition).toEqual({ status: "False", reason: "ImageInspectFailed", message: expect.stringContaining("answered 404") });
  });
});

describe("resolutionNeeded", () => {
  const resolved = {
    capacity: { cpu: "4" },
    capacitySource: { source: "Image" as const, image },
    conditions: [condition("CapacityResolved", "True", "CapacityResolved"), condition("VariablesValid", "True", "VariablesValid")],
  };

  it.each([
    ["never resolved", template(), true],
    ["resolved for this image", template({ status: resolved }), false],
    ["a new image reference", template({ status: resolved, image: "registry.example/machine:v2" }), true],
    ["spec.capacity set and different", template({ status: resolved, capacity: { cpu: "8" } }), true],
    [
      "spec.capacity equal to status.capacity",
      template({ status: { ...resolved, capacitySource: { source: "Spec", image } }, capacity: { cpu: "4" } }),
      false,
    ],
    ["spec.capacity removed", template({ status: { ...resolved, capacitySource: { source: "Spec", image } } }), true],
    [
      "spec.capacity set while the image was unreadable",
      template({ status: { ...resolved, capacitySource: { source: "Spec" } }, capacity: { cpu: "4" } }),
      true,
    ],
    [
      "the last inspection failed",
      template({
        status: {
          ...resolved,
          conditions: [
            condition("CapacityResolved", "False", "ImageInspectFailed"),
            condition("VariablesValid", "Unknown", "VariablesSchemaUnavailable"),
          ],
        },
      }),
      true,
    ],
    [
      "an invalid label on this image",
      template({
        status: {
          capacitySource: { source: "Image", image },
          conditions: [
            condition("CapacityResolved", "False", "CapacityLabelInvalid"),
            condition("VariablesValid", "True", "VariablesSchemaNotDeclared"),
          ],
        },
      }),
      false,
    ],
    [
      "a variables source not there yet",
      template({
        status: { ...resolved, conditions: [resolved.conditions[0]!, condition("VariablesValid", "Unknown", "VariablesSourcePending")] },
      }),
      true,
    ],
  ])("%s: %s", (_name, t, expected) => {
    expect(resolutionNeeded(t)).toBe(expected);
  });
});

describe("inspectRetryDelayMillis", () => {
  it("waits 30 s, doubling up to 10 minutes", () => {
    expect([1, 2, 3, 4, 5, 6, 7, 50].map(inspectRetryDelayMillis)).toEqual([
      30_000, 60_000, 120_000, 240_000, 480_000, 600_000, 600_000, 600_000,
    ]);
  });
});

describe("decideVariablesValid", () => {
  const schema = JSON.stringify({
    type: "object",
    properties: { size: { type: "string" }, count: { type: "number" } },
    required: ["size"],
    additionalProperties: false,
  });
  const variables = (values: Record<string, unknown>): VariablesReading => ({
    ok: true,
    variables: Object.fromEntries(Object.entries(values).map(([name, value]) => [name, { value: value as never, sensitive: false }])),
  });

  it.each([
    ["valid variables", labelled({ "io.captf.variables-schema": schema }), variables({ size: "m5.large" }), "True", "VariablesValid"],
    ["no schema label", labelled({}), variables({ anything: 1 }), "True", "VariablesSchemaNotDeclared"],
    [
      "a variable the schema lacks and one missing",
      labelled({ "io.captf.variables-schema": schema }),
      variables({ sise: "m5.large" }),
      "False",
      "VariablesRejected",
    ],
    ["an unreadable image", unreadable, noVariables, "Unknown", "VariablesSchemaUnavailable"],
    ["a label that is not JSON", labelled({ "io.captf.variables-schema": "{" }), noVariables, "Unknown", "VariablesSchemaUnavailable"],
    [
      "a variables source not there yet",
      labelled({}),
      { ok: false, reason: "VariablesSourceNotFound", message: "ConfigMap x ..." } as VariablesReading,
      "Unknown",
      "VariablesSourcePending",
    ],
    [
      "variables that do not merge",
      labelled({}),
      { ok: false, reason: "VariablesInvalid", message: "bad" } as VariablesReading,
      "False",
      "VariablesRejected",
    ],
  ])("%s", (_name, inspection, reading, status, reason) => {
    const result = decideVariablesValid(inspection, reading);
    expect([result.status, result.reason]).toEqual([status, reason]);
    expect(conditionReasons.VariablesValid[result.status]).toContain(result.reason);
  });

  it("names the paths and rules of rejected variables, never their values", () => {
    const result = decideVariablesValid(
      labelled({ "io.captf.variables-schema": schema }),
      variables({ size: 42, secretish: "s3cr3t-value" }),
    );
    expect(result.message).toContain("size must be string");
    expect(result.message).toContain("secretish is not allowed here");
    expect(result.message).not.toContain("s3cr3t-value");
    expect(result.message).not.toContain("42");
  });
});

describe("decideTemplateStatus", () => {
  it("records CapacityResolved once, when capacity is resolved to a new value", () => {
    const first = decideTemplateStatus({ template: template(), inspection: labelled(capacityLabels), variables: noVariables, now });
    expect(first.event).toEqual({ reason: "CapacityResolved", note: `cpu=4, memory=16Gi from the image ${image}` });
    expect(first.changed).toBe(true);
    const again = decideTemplateStatus({
      template: template({ status: first.status as TerraformMachineTemplate["status"] }),
      inspection: labelled(capacityLabels),
      variables: noVariables,
      now: now + 1000,
    });
    expect(again.changed).toBe(false);
    expect(again.event).toBeUndefined();
  });

  it("records ImageInspectFailed for an invalid label once per image", () => {
    const first = decideTemplateStatus({
      template: template(),
      inspection: labelled({ "io.captf.capacity": "[]" }),
      variables: noVariables,
      now,
    });
    expect(first.event?.reason).toBe("ImageInspectFailed");
    const again = decideTemplateStatus({
      template: template({ status: first.status as TerraformMachineTemplate["status"] }),
      inspection: labelled({ "io.captf.capacity": "[]" }),
      variables: noVariables,
      now,
    });
    expect(again.event).toBeUndefined();
  });

  it("uses only reasons the conditions table allows", () => {
    for (const inspection of [labelled(capacityLabels), labelled({}), labelled({ "io.captf.capacity": "x" }), unreadable]) {
      for (const t of [template(), template({ capacity: { cpu: "1" } })]) {
        for (const c of decideTemplateStatus({ template: t, inspection, variables: noVariables, now }).status.conditions) {
          expect(conditionReasons[c.type as "CapacityResolved" | "VariablesValid"][c.status]).toContain(c.reason);
        }
      }
    }
  });
});
