import { describe, expect, it } from "@jest/globals";
import { JsonNumber, type JsonValue } from "@captf/contract";
import { maxInlineVariables, mergeUserVariables, reservedVariableReason, UserVariablesError } from "./user-variables.js";

describe("mergeUserVariables", () => {
  it("merges sources in list order, inline last, and marks Secret-sourced winners sensitive", () => {
    const merged = mergeUserVariables("machine", { size: "inline" }, [
      { kind: "ConfigMap", name: "defaults", data: { size: "cm", region: "eu", token: "cm-token" } },
      { kind: "Secret", name: "creds", data: { token: "s3cr3t", region: "us" } },
      { kind: "ConfigMap", name: "override", data: { region: "ap" } },
    ]);
    expect(merged).toEqual({
      size: { value: "inline", sensitive: false },
      region: { value: "ap", sensitive: false },
      token: { value: "s3cr3t", sensitive: true },
    });
  });

  it("parses JSON-format sources exactly and reports bad JSON by key and source, never by value", () => {
    const merged = mergeUserVariables("cluster", undefined, [
      { kind: "ConfigMap", name: "sizes", format: "JSON", data: { n: "40", r: "1.50", l: '["a"]' } },
    ]);
    expect(merged).toEqual({
      n: { value: 40, sensitive: false },
      r: { value: new JsonNumber("1.50"), sensitive: false },
      l: { value: ["a"], sensitive: false },
    });
    const attempt = () =>
      mergeUserVariables("cluster", undefined, [{ kind: "Secret", name: "bad", format: "JSON", data: { pw: "{CANARY-s3cr3t" } }]);
    expect(attempt).toThrow(UserVariablesError);
    expect(attempt).toThrow(/key "pw" of Secret bad is not valid JSON/);
    expect(attempt).not.toThrow(/CANARY/);
  });

  it.each([
    ["captf_extra", /reserved: the captf_ prefix/],
    ["machine_name", /reserved: it is a machine contract input/],
    ["bootstrap_data", /reserved: it is a machine contract input/],
    ["count", /reserved: it is a module meta-argument/],
    ["lifecycle", /meta-argument/],
    ["9lives", /not a valid Terraform identifier/],
    ["has space", /not a valid Terraform identifier/],
  ])("rejects the reserved or invalid name %s, naming it", (name, message) => {
    expect(() => mergeUserVariables("machine", { [name]: 1 })).toThrow(message);
    try {
      mergeUserVariables("machine", { [name]: 1 });
    } catch (error) {
      expect((error as UserVariablesError).variable).toBe(name);
      expect((error as Error).message).toContain(JSON.stringify(name));
    }
    expect(() => mergeUserVariables("machine", undefined, [{ kind: "ConfigMap", name: "src", data: { [name]: "1" } }])).toThrow(
      /of ConfigMap src/,
    );
  });

  it("allows a name that is reserved only for another role", () => {
    expect(reservedVariableReason("cluster", "machine_name")).toBeUndefined();
    expect(reservedVariableReason("machinepool", "machine_name")).toBeUndefined();
    expect(reservedVariableReason("machine", "replicas")).toBeUndefined();
    expect(reservedVariableReason("machinepool", "replicas")).toMatch(/contract input/);
  });

  it("enforces the documented limits", () => {
    const many = Object.fromEntries(Array.from({ length: maxInlineVariables + 1 }, (_, i) => [`v${i}`, i]));
    expect(() => mergeUserVariables("machine", many)).toThrow(/at most 256 are allowed/);
    const sources = Array.from({ length: 17 }, (_, i) => ({ kind: "ConfigMap" as const, name: `s${i}`, data: {} }));
    expect(() => mergeUserVariables("machine", {}, sources)).toThrow(/at most 16 are allowed/);
  });

  it("treats __proto__ as an ordinary name", () => {
    const merged = mergeUserVariables("machine", JSON.parse('{"__proto__": "x"}') as Record<string, JsonValue>);
    expect(Object.keys(merged)).toEqual(["__proto__"]);
  });
});
