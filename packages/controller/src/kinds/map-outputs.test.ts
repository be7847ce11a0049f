import { describe, expect, it } from "@jest/globals";
import { decodeOutputs, type Health } from "@captf/contract";
import {
  clusterContractFields,
  infrastructureHealthy,
  isProvisioned,
  machineContractFields,
  machinePoolContractFields,
  poolMembershipConverged,
  providerIDConditions,
} from "./map-outputs.js";

const health = (state: Health["state"], healthy = true, extra: Partial<Health> = {}): Health => ({
  state,
  healthy,
  message: null,
  reasons: [],
  ...extra,
});

describe("infrastructureHealthy", () => {
  const provisioned = { applyStarted: true, provisioned: true };
  it.each<[string, Health | undefined, { applyStarted: boolean; provisioned: boolean }, string, string]>([
    ["no apply yet", undefined, { applyStarted: false, provisioned: false }, "Unknown", "WaitingForProvisioning"],
    ["provisioning", undefined, { applyStarted: true, provisioned: false }, "False", "Provisioning"],
    ["pending", health("pending", false), provisioned, "False", "InstancePending"],
    ["running and healthy", health("running"), provisioned, "True", "Healthy"],
    ["running but unhealthy", health("running", false), provisioned, "False", "InstanceUnhealthy"],
    ["degraded", health("degraded"), provisioned, "False", "InstanceDegraded"],
    ["stopped", health("stopped"), provisioned, "False", "InstanceStopped"],
    ["terminated", health("terminated"), provisioned, "False", "InstanceTerminated"],
    ["unknown", health("unknown"), provisioned, "Unknown", "HealthUnknown"],
    ["absent after provisioning", undefined, provisioned, "Unknown", "HealthUnknown"],
  ])("%s", (_, value, phase, status, reason) => {
    expect(infrastructureHealthy(value, phase)).toMatchObject({ status, reason });
  });

  it("carries the module's message, else its reasons", () => {
    expect(
      infrastructureHealthy(health("degraded", false, { reasons: ["InstanceRepairing:vm-1"] }), { applyStarted: true, provisioned: true })
        .message,
    ).toBe("InstanceRepairing:vm-1");
    expect(
      infrastructureHealthy(health("stopped", false, { message: "scaled to zero" }), { applyStarted: true, provisioned: true }).message,
    ).toBe("scaled to zero");
  });
});

describe("isProvisioned and the contract fields", () => {
  const machine = {
    provider_id: "noop:///ns/m",
    addresses: [
      { type: "Hostname", address: "m" },
      { type: "InternalIP", address: "10.0.0.1" },
    ],
    failure_domain: "fd1",
    interruptible: false,
    health: health("running"),
  };

  it("needs the inputs hash, valid outputs, health past pending and, for machines, a provider ID", () => {
    expect(isProvisioned("machine", true, decodeOutputs("machine", machine))).toBe(true);
    expect(isProvisioned("machine", false, decodeOutputs("machine", machine))).toBe(false);
    expect(isProvisioned("machine", true, decodeOutputs("machine", { ...machine, provider_id: null }))).toBe(false);
    expect(isProvisioned("machine", true, decodeOutputs("machine", { ...machine, health: health("pending") }))).toBe(false);
    expect(
      isProvisioned(
        "cluster",
        true,
        decodeOutputs("cluster", { control_plane_endpoint: null, failure_domains: null, exports: {}, health: health("running") }),
      ),
    ).toBe(true);
  });

  it("maps outputs onto the Cluster API fields", () => {
    expect(machineContractFields(decodeOutputs("machine", machine).outputs)).toEqual({
      providerID: "noop:///ns/m",
      addresses: [
        { type: "InternalIP", address: "10.0.0.1" },
        { type: "Hostname", address: "m" },
      ],
      failureDomain: "fd1",
      interruptible: false,
    });
    const cluster = decodeOutputs("cluster", {
      control_plane_endpoint: { host: "lb", port: 6443 },
      failure_domains: [{ name: "fd1" }, { name: "fd2", control_plane: false, attributes: { zone: "b" } }],
      exports: {},
      health: health("running"),
    });
    expect(clusterContractFields(cluster.outputs)).toEqual({
      failureDomains: [
        { name: "fd1", controlPlane: true },
        { name: "fd2", controlPlane: false, attributes: { zone: "b" } },
      ],
      moduleEndpoint: { host: "lb", port: 6443 },
    });
    const pool = decodeOutputs("machinepool", {
      provider_id: null,
      provider_id_list: ["b", "a"],
      replicas: 2,
      instances: [],
      health: health("running"),
    });
    expect(machinePoolContractFields(pool.outputs)).toEqual({ providerIDList: ["a", "b"], replicas: 2, instances: [] });
  });

  it("interruptible: the module's value, false for null, nothing for an invalid or missing output (the old value stays)", () => {
    expect(machineContractFields(decodeOutputs("machine", { ...machine, interruptible: true }).outputs).interruptible).toBe(true);
    expect(machineContractFields(decodeOutputs("machine", { ...machine, interruptible: null }).outputs).interruptible).toBe(false);
    expect(machineContractFields(decodeOutputs("machine", { ...machine, interruptible: "yes" }).outputs)).not.toHaveProperty(
      "interruptible",
    );
    const { interruptible: _, ...silent } = machine;
    expect(machineContractFields(decodeOutputs("machine", silent).outputs)).not.toHaveProperty("interruptible");
  });

  describe("a pool's providerID and instances", () => {
    const pool = (outputs: Record<string, unknown>) =>
      decodeOutputs("machinepool", {
        provider_id: "asg:///g-1",
        provider_id_list: ["a"],
        replicas: 1,
        instances: [{ provider_id: "a" }],
        health: health("running"),
        ...outputs,
      });

    it('the group\'s provider_id is providerID; null or "" gives none', () => {
      expect(machinePoolContractFields(pool({}).outputs).providerID).toBe("asg:///g-1");
      expect(machinePoolContractFields(pool({ provider_id: null }).outputs)).not.toHaveProperty("providerID");
      expect(machinePoolContractFields(pool({ provider_id: "" }).outputs)).not.toHaveProperty("providerID");
    });

    it("maps each instance onto the status form, leaving out nulls and an empty address list", () => {
      const decoded = pool({
        instances: [
          {
            provider_id: "a",
            instance_id: "i-a",
            addresses: [
              { type: "Hostname", address: "a" },
              { type: "InternalIP", address: "10.0.0.1" },
            ],
            failure_domain: "fd1",
            state: "running",
          },
          { provider_id: "b", instance_id: null, addresses: [], failure_domain: null, state: null },
          { provider_id: "c" },
        ],
      });
      expect(machinePoolContractFields(decoded.outputs).instances).toEqual([
        {
          providerID: "a",
          instanceID: "i-a",
          addresses: [
            { type: "InternalIP", address: "10.0.0.1" },
            { type: "Hostname", address: "a" },
          ],
          failureDomain: "fd1",
          state: "running",
        },
        { providerID: "b" },
        { providerID: "c" },
      ]);
    });

    it("keeps the first 1000 instances of a longer list; decoding reports InstancesTruncated (OutputsValid stays True)", () => {
      const decoded = pool({ instances: Array.from({ length: 1001 }, (_, i) => ({ provider_id: `p-${i}` })) });
      const { instances } = machinePoolContractFields(decoded.outputs);
      expect(instances).toHaveLength(1000);
      expect(instances?.at(-1)).toEqual({ providerID: "p-999" });
      expect(decoded).toMatchObject({ status: "True", reason: "InstancesTruncated", problems: [expect.stringContaining("1001 entries")] });
    });

    it("an invalid instances output gives no instances (the old value stays)", () => {
      const decoded = pool({ instances: [{ provider_id: "a", state: "flourishing" }] });
      expect(decoded.reason).toBe("OutputsInvalid");
      expect(machinePoolContractFields(decoded.outputs)).not.toHaveProperty("instances");
    });
  });

  it("poolMembershipConverged: members listed equal the capacity, and both outputs read", () => {
    const pool = (list: unknown, replicas: unknown) =>
      decodeOutputs("machinepool", { provider_id: null, provider_id_list: list, replicas, instances: [], health: health("running") })
        .outputs;
    expect(poolMembershipConverged(pool(["a", "b"], 2))).toBe(true);
    expect(poolMembershipConverged(pool([], 0))).toBe(true);
    expect(poolMembershipConverged(pool(["a"], 2))).toBe(false);
    expect(poolMembershipConverged(pool(["a", "b"], null))).toBe(false);
    expect(poolMembershipConverged(pool(undefined, 2))).toBe(false);
  });
});

describe("providerIDConditions (the two-sample rule, ProviderIDChanged)", () => {
  const latched = "aws:///i-1";
  const observed = (overrides: Partial<Parameters<typeof providerIDConditions>[1]> = {}) => ({
    latched,
    sampled: true,
    previousHealthReason: "Healthy",
    outputsReason: "OutputsValid",
    ...overrides,
  });
  const missing = { state: "pending" } as const;

  it("leaves an unchanged provider_id alone", () => {
    expect(providerIDConditions({ state: "ok", value: latched }, observed())).toEqual({});
  });
  it("a different one is ProviderIDChanged, below the reasons that take precedence", () => {
    expect(providerIDConditions({ state: "ok", value: "aws:///i-2" }, observed()).outputsValid).toMatchObject({
      status: "False",
      reason: "ProviderIDChanged",
    });
    expect(providerIDConditions({ state: "ok", value: "aws:///i-2" }, observed({ outputsReason: "FailureDomainMismatch" }))).toEqual({});
  });
  it("the first null sample is ProviderIDMissing and keeps OutputsValid", () => {
    expect(providerIDConditions(missing, observed())).toMatchObject({
      keepOutputsValid: true,
      health: { status: "Unknown", reason: "ProviderIDMissing" },
    });
  });
  it("the same reading reconciled again is not a second sample", () => {
    expect(providerIDConditions(missing, observed({ previousHealthReason: "ProviderIDMissing", sampled: false })).health?.reason).toBe(
      "ProviderIDMissing",
    );
  });
  it("a second null sample is InstanceTerminated, and it stays so while null", () => {
    expect(providerIDConditions(missing, observed({ previousHealthReason: "ProviderIDMissing" })).health).toMatchObject({
      status: "False",
      reason: "InstanceTerminated",
    });
    expect(providerIDConditions(missing, observed({ previousHealthReason: "InstanceTerminated", sampled: false })).health?.reason).toBe(
      "InstanceTerminated",
    );
  });
});
