import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "@jest/globals";
import { maxReportedErrors, validateDocument } from "./validate.js";
import type { Role } from "./version.js";

const validMachineInputs = JSON.parse(
  readFileSync(fileURLToPath(new URL("../../../schemas/v1alpha1/examples/machine-inputs.valid.json", import.meta.url)), "utf8"),
) as Record<string, unknown>;

describe("validateDocument", () => {
  it.each([
    ["an array", []],
    ["a string", "inputs"],
    ["null", null],
    ["a number", 42],
    ["undefined", undefined],
  ])("rejects %s without throwing", (_, document) => {
    const result = validateDocument("machine", "inputs", document);
    expect(result.valid).toBe(false);
    expect(result.errors[0]).toEqual({ path: "", message: "must be object" });
  });

  it("rejects an unknown role or document kind with a message naming the choices", () => {
    expect(validateDocument("bogus" as Role, "inputs", {}).errors[0]?.message).toMatch(
      /unknown role "bogus": expected one of cluster, machine, machinepool/,
    );
    expect(validateDocument("machine", "state" as "inputs", {}).errors[0]?.message).toMatch(/expected inputs or outputs/);
  });

  it("never quotes the offending value, which may be a secret", () => {
    const canary = "CANARY-not-base64-s3cr3t!";
    const result = validateDocument("machine", "inputs", { ...validMachineInputs, bootstrap_data: canary });
    expect(result.valid).toBe(false);
    expect(JSON.stringify(result)).not.toContain(canary);
    expect(result.errors).toEqual([{ path: "/bootstrap_data", message: expect.stringContaining("does not match the pattern") }]);
  });

  it("validates a 10 MB document and caps the number of reported errors", () => {
    const huge = { ...validMachineInputs, captf_cluster_outputs: { blob: "x".repeat(10 * 1024 * 1024) } };
    expect(validateDocument("machine", "inputs", huge).valid).toBe(true);
    const manyExtras = Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`extra_${i}`, i]));
    const result = validateDocument("machine", "inputs", { ...validMachineInputs, ...manyExtras });
    expect(result.errors).toHaveLength(maxReportedErrors + 1);
    expect(result.errors.at(-1)?.message).toBe(`and ${500 - maxReportedErrors} more errors`);
  });

  it("names a missing key and an extra key by their own pointer", () => {
    const { machine_name: _, ...withoutName } = validMachineInputs;
    const result = validateDocument("machine", "inputs", { ...withoutName, "a/b": 1 });
    expect(result.errors).toEqual([
      { path: "/machine_name", message: "is required but missing" },
      { path: "/a~1b", message: "is not allowed here: this object is closed" },
    ]);
  });
});
