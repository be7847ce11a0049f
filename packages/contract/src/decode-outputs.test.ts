import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "@jest/globals";
import { decodeOutputs, maxInstances, outputValuesFromState } from "./decode-outputs.js";

const example = (name: string): Record<string, unknown> => {
  const path = fileURLToPath(new URL(`../../../schemas/v1alpha1/examples/${name}`, import.meta.url));
  return JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
};

const health = { state: "running", healthy: true };
const cluster = {
  control_plane_endpoint: { host: "api.example.com", port: 6443 },
  failure_domains: [{ name: "fd1" }],
  exports: { vpc: "v-1", mtu: 1500 },
  health,
};
const machine = {
  provider_id: "noop:///ns/m",
  addresses: [{ type: "InternalIP", address: "10.0.0.1" }],
  failure_domain: "fd1",
  interruptible: false,
  health,
};
const pool = {
  provider_id: "group-1",
  provider_id_list: ["p/0", "p/1"],
  replicas: 2,
  instances: [{ provider_id: "p/0" }, { provider_id: "p/1", state: "running" }],
  health,
};

describe("decodeOutputs", () => {
  it("decodes the valid examples of every role", () => {
    for (const role of ["cluster", "machine", "machinepool"] as const) {
      const result = decodeOutputs(role, example(`${role}-outputs.valid.json`));
      expect(result.problems).toEqual([]);
      expect(result.reason).toBe("OutputsValid");
      expect(result.status).toBe("True");
    }
  });

  it("applies the cluster defaults and normalizations", () => {
    const result = decodeOutputs("cluster", {
      ...cluster,
      control_plane_endpoint: { host: "", port: 0 },
      failure_domains: null,
      exports: null,
      extra: 1,
    });
    expect(result.outputs.control_plane_endpoint).toEqual({ state: "ok", value: null });
    expect(result.outputs.failure_domains).toEqual({ state: "ok", value: [] });
    expect(result.outputs.exports).toEqual({ state: "ok", value: {} });
    expect(result.outputs.health).toEqual({ state: "ok", value: { state: "running", healthy: true, message: null, reasons: [] } });
    const defaults = decodeOutputs("cluster", {
      ...cluster,
      failure_domains: [{ name: "a" }, { name: "b", control_plane: false, attributes: { zone: "z" } }],
    });
    expect(defaults.outputs.failure_domains).toEqual({
      state: "ok",
      value: [
        { name: "a", control_plane: true, attributes: {} },
        { name: "b", control_plane: false, attributes: { zone: "z" } },
      ],
    });
  });

  it("tells absent (missing) from null (pending)", () => {
    const { health: _, ...withoutHealth } = machine;
    const missing = decodeOutputs("machine", withoutHealth);
    expect(missing.outputs.health).toEqual({ state: "missing" });
    expect(missing.reason).toBe("OutputsMissing");
    expect(missing.status).toBe("False");
    const pending = decodeOutputs("machine", { ...machine, health: null, provider_id: "" });
    expect(pending.outputs.health).toEqual({ state: "pending" });
    expect(pending.outputs.provider_id).toEqual({ state: "pending" });
    expect(pending.reason).toBe("OutputsPending");
    expect(pending.status).toBe("Unknown");
  });

  it("reports a half-set endpoint and a bad health state as invalid, naming the output but not the value", () => {
    const result = decodeOutputs("cluster", {
      ...cluster,
      control_plane_endpoint: { host: "SECRET-HOST", port: 0 },
      health: { state: "ok", healthy: true },
    });
    expect(result.outputs.control_plane_endpoint.state).toBe("invalid");
    expect(result.outputs.health.state).toBe("invalid");
    expect(result.reason).toBe("OutputsInvalid");
    expect(result.problems.join("\n")).toMatch(/output control_plane_endpoint is invalid: \/control_plane_endpoint\/port must be >= 1/);
    expect(result.problems.join("\n")).toMatch(/output health is invalid: \/health\/state must be one of "pending"/);
    expect(JSON.stringify(result)).not.toContain("SECRET-HOST");
  });

  it("refuses duplicate failure-domain names", () => {
    const result = decodeOutputs("cluster", { ...cluster, failure_domains: [{ name: "a" }, { name: "b" }, { name: "a" }] });
    expect(result.outputs.failure_domains).toMatchObject({ state: "invalid", reason: expect.stringMatching(/duplicate names \("a"\)/) });
  });

  it("refuses fractional numbers in exports with their path", () => {
    const result = decodeOutputs("cluster", { ...cluster, exports: { net: { ratio: 0.5 } } });
    expect(result.outputs.exports).toMatchObject({
      state: "invalid",
      reason: "output exports contains a fractional or exponent number at /net/ratio: export numbers as integers or strings",
    });
  });

  it("puts machine addresses in the canonical order without duplicates", () => {
    const addresses = [
      { type: "Hostname", address: "m1" },
      { type: "ExternalIP", address: "1.2.3.4" },
      { type: "InternalIP", address: "10.0.0.2" },
      { type: "InternalDNS", address: "m1.internal" },
      { type: "InternalIP", address: "10.0.0.10" },
      { type: "ExternalDNS", address: "m1.example.com" },
      { type: "InternalIP", address: "10.0.0.2" },
    ];
    const result = decodeOutputs("machine", { ...machine, addresses });
    expect(result.outputs.addresses).toEqual({
      state: "ok",
      value: [
        { type: "InternalIP", address: "10.0.0.10" },
        { type: "InternalIP", address: "10.0.0.2" },
        { type: "InternalDNS", address: "m1.internal" },
        { type: "ExternalIP", address: "1.2.3.4" },
        { type: "ExternalDNS", address: "m1.example.com" },
        { type: "Hostname", address: "m1" },
      ],
    });
    expect(decodeOutputs("machine", { ...machine, addresses: null, interruptible: null }).outputs).toMatchObject({
      addresses: { state: "ok", value: [] },
      interruptible: { state: "ok", value: false },
    });
  });

  it("drops duplicate addresses before it counts them against the limit of 256", () => {
    const unique = Array.from({ length: 200 }, (_, i) => ({ type: "InternalIP", address: `10.0.${Math.floor(i / 250)}.${i % 250}` }));
    const addresses = [...unique, ...unique.slice(0, 100)];
    expect(addresses).toHaveLength(300);
    const result = decodeOutputs("machine", { ...machine, addresses });
    expect(result.reason).toBe("OutputsValid");
    expect(result.outputs.addresses.state === "ok" && result.outputs.addresses.value).toHaveLength(200);
    const instances = [{ provider_id: "p/0", addresses }];
    const pooled = decodeOutputs("machinepool", { ...pool, provider_id_list: ["p/0"], replicas: 1, instances });
    expect(pooled.reason).toBe("OutputsValid");
    expect(pooled.outputs.instances.state === "ok" && pooled.outputs.instances.value[0]!.addresses).toHaveLength(200);
  });

  it("still refuses more than 256 distinct addresses", () => {
    const addresses = Array.from({ length: 257 }, (_, i) => ({ type: "InternalIP", address: `10.1.${Math.floor(i / 250)}.${i % 250}` }));
    expect(decodeOutputs("machine", { ...machine, addresses }).outputs.addresses).toMatchObject({ state: "invalid" });
  });

  it("checks a machine's failure domain against the requested one", () => {
    expect(decodeOutputs("machine", { ...machine, failure_domain: "fd2" }, { failure_domain: "fd1" })).toMatchObject({
      reason: "FailureDomainMismatch",
      status: "False",
      outputs: { failure_domain: { state: "invalid", conditionReason: "FailureDomainMismatch" } },
    });
    expect(decodeOutputs("machine", { ...machine, failure_domain: "fd2" }, { failure_domain: null }).reason).toBe("OutputsValid");
    expect(decodeOutputs("machine", { ...machine, failure_domain: null }, { failure_domain: "fd1" }).reason).toBe("FailureDomainMismatch");
  });

  it("sorts and de-duplicates provider_id_list, and says so", () => {
    const result = decodeOutputs("machinepool", { ...pool, provider_id_list: ["p/1", "p/0", "p/1"] });
    expect(result.outputs.provider_id_list).toMatchObject({
      state: "ok",
      value: ["p/0", "p/1"],
      note: expect.stringMatching(/sort\(distinct/),
    });
    expect(result.reason).toBe("OutputsValid");
  });

  it("truncates instances past 1000 with a flag and the InstancesTruncated reason", () => {
    const instances = Array.from({ length: 1500 }, (_, i) => ({
      provider_id: `p/${i}`,
      addresses: [{ type: "Hostname", address: `h${i}` }],
    }));
    const result = decodeOutputs("machinepool", { ...pool, instances });
    expect(result.instancesTruncated).toBe(true);
    expect(result.reason).toBe("InstancesTruncated");
    expect(result.status).toBe("True");
    const decoded = result.outputs.instances;
    expect(decoded.state === "ok" && decoded.value.length).toBe(maxInstances);
    expect(decoded.state === "ok" && decoded.value[0]).toEqual({
      provider_id: "p/0",
      instance_id: null,
      addresses: [{ type: "Hostname", address: "h0" }],
      failure_domain: null,
      state: null,
    });
  });

  it("keeps a pool's null provider_id and treats a null replicas as pending", () => {
    const result = decodeOutputs("machinepool", { ...pool, provider_id: null, replicas: null });
    expect(result.outputs.provider_id).toEqual({ state: "ok", value: null });
    expect(result.outputs.replicas).toEqual({ state: "pending" });
  });

  it("ranks reasons Missing > Invalid > FailureDomainMismatch > Pending", () => {
    const { interruptible: _, ...noInterruptible } = machine;
    expect(
      decodeOutputs("machine", { ...noInterruptible, health: { state: "bad" }, provider_id: null }, { failure_domain: "x" }).reason,
    ).toBe("OutputsMissing");
    expect(decodeOutputs("machine", { ...machine, health: { state: "bad" }, provider_id: null }, { failure_domain: "x" }).reason).toBe(
      "OutputsInvalid",
    );
    expect(decodeOutputs("machine", { ...machine, provider_id: null }, { failure_domain: "x" }).reason).toBe("FailureDomainMismatch");
  });

  it.each([
    ["an array", []],
    ["a string", "x"],
    ["null", null],
  ])("never throws on %s", (_, raw) => {
    const result = decodeOutputs("cluster", raw);
    expect(result.reason).toBe("OutputsMissing");
    expect(result.problems[0]).toBe("the outputs are not an object");
  });
});

describe("outputValuesFromState", () => {
  it("reads output values out of a state document", () => {
    expect(outputValuesFromState({ version: 4, outputs: { a: { value: 1, type: "number" }, b: { value: null }, c: "junk" } })).toEqual({
      a: 1,
      b: null,
    });
    expect(outputValuesFromState(null)).toEqual({});
    expect(outputValuesFromState({ outputs: [] })).toEqual({});
  });
});

describe("decodeOutputs from state", () => {
  it("reads an absent nullable output as null, since state never stores nulls", () => {
    const fromState = decodeOutputs("machine", { provider_id: "p", health }, undefined, { fromState: true });
    expect(fromState.outputs).toMatchObject({
      addresses: { state: "ok", value: [] },
      failure_domain: { state: "ok", value: null },
      interruptible: { state: "ok", value: false },
    });
    expect(fromState.reason).toBe("OutputsValid");
    expect(decodeOutputs("machine", { provider_id: "p" }, undefined, { fromState: true }).outputs.health).toEqual({ state: "missing" });
    expect(decodeOutputs("machine", { provider_id: "p", health }).outputs.failure_domain).toEqual({ state: "missing" });
  });

  it("does not change the caller's object", () => {
    const raw = { provider_id: "", health };
    decodeOutputs("machine", raw, undefined, { fromState: true });
    expect(raw).toEqual({ provider_id: "", health });
  });
});

describe("optional attributes Terraform renders as null", () => {
  it("are accepted in pool instances, failure domains and health, and default as when absent", () => {
    const pool = decodeOutputs("machinepool", {
      provider_id: null,
      provider_id_list: ["p/0"],
      replicas: 1,
      instances: [{ provider_id: "p/0", instance_id: null, addresses: null, failure_domain: null, state: null }],
      health: { state: "running", healthy: true, message: null, reasons: null },
    });
    expect(pool.reason).toBe("OutputsValid");
    expect(pool.outputs.instances).toEqual({
      state: "ok",
      value: [{ provider_id: "p/0", instance_id: null, addresses: [], failure_domain: null, state: null }],
    });
    const cluster = decodeOutputs("cluster", {
      control_plane_endpoint: null,
      failure_domains: [{ name: "fd1", control_plane: null, attributes: null }],
      exports: {},
      health: { state: "running", healthy: true },
    });
    expect(cluster.outputs.failure_domains).toEqual({ state: "ok", value: [{ name: "fd1", control_plane: true, attributes: {} }] });
  });
});
