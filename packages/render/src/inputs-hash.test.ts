import { describe, expect, it } from "@jest/globals";
import fc from "fast-check";
import { commonInputs, JsonNumber, type ClusterInputs, type MachineInputs, type MachinePoolInputs } from "@captf/contract";
import { approvalHash, exportsHash, InputsHashError, inputsHash } from "./inputs-hash.js";
import type { UserVariables } from "./user-variables.js";

const image = "ghcr.io/example/machine-module:v1.2.3";

/** The public reference's own hash fixture (internal/hash/hash_test.go) and its golden hash. */
const referenceMachineHash = "h2:e10a5fcbec6ca2745898f8cae279211c217179b1d90afa7e2ce09fb3e24b64b4";

function machineFixture(): MachineInputs {
  return {
    ...commonInputs({
      cluster: { name: "prod", namespace: "team-a" },
      kind: "TerraformMachine",
      name: "prod-md-0-abcde",
      namespace: "team-a",
      template: "prod-md-0",
    }),
    captf_cluster_outputs: { network_id: "net-1", subnets: ["a", "b"], mtu: 1500 },
    machine_name: "prod-md-0-abcde-xyz12",
    bootstrap_data: "I2Nsb3VkLWNvbmZpZw==",
    bootstrap_format: "cloud-config",
    failure_domain: "zone-a",
    kubernetes_version: "v1.36.2",
    control_plane: false,
  };
}

function clusterFixture(): ClusterInputs {
  return {
    ...commonInputs({ cluster: { name: "prod", namespace: "team-a" }, kind: "TerraformCluster", name: "prod", namespace: "team-a" }),
    control_plane_endpoint: { host: "api.prod.example.com", port: 6443 },
    kubernetes_version: "v1.36.2",
    control_plane_initialized: false,
    cluster_network: { pods: ["192.168.0.0/16"], services: [], service_domain: null, api_server_port: null },
  };
}

function poolFixture(): MachinePoolInputs {
  return {
    ...commonInputs({
      cluster: { name: "prod", namespace: "team-a" },
      kind: "TerraformMachinePool",
      name: "prod-mp-0",
      namespace: "team-a",
    }),
    captf_cluster_outputs: { network_id: "net-1", subnets: ["a", "b"], mtu: 1500 },
    machinepool_name: "prod-mp-0",
    replicas: 3,
    bootstrap_data: "I2Nsb3VkLWNvbmZpZw==",
    bootstrap_format: "cloud-config",
    failure_domains: ["zone-a"],
    cluster_failure_domains: ["zone-a", "zone-b"],
    kubernetes_version: "v1.36.2",
    node_labels: { pool: "prod-mp-0" },
    autoscaling: { enabled: true, min: 1, max: 5 },
  };
}

describe("inputsHash", () => {
  it("gives the public reference's golden hash for its fixture", () => {
    expect(inputsHash({ role: "machine", image, inputs: machineFixture() })).toBe(referenceMachineHash);
  });

  it("ignores key order, and an empty variable set hashes like none", () => {
    const reordered = Object.fromEntries(Object.entries(machineFixture()).reverse()) as unknown as MachineInputs;
    expect(inputsHash({ role: "machine", image, inputs: reordered })).toBe(referenceMachineHash);
    expect(inputsHash({ role: "machine", image, inputs: machineFixture(), variables: {} })).toBe(referenceMachineHash);
  });

  it("changes with every input leaf, the image, the role and the variables", () => {
    const base = inputsHash({ role: "machine", image, inputs: machineFixture() });
    const leaves = (value: unknown, path: string[] = []): string[][] =>
      value && typeof value === "object" && !Array.isArray(value)
        ? Object.entries(value).flatMap(([k, v]) => leaves(v, [...path, k]))
        : [path];
    for (const path of leaves(machineFixture())) {
      const mutated = structuredClone(machineFixture()) as unknown as Record<string, unknown>;
      let parent = mutated;
      for (const key of path.slice(0, -1)) parent = parent[key] as Record<string, unknown>;
      const last = path.at(-1)!;
      const old = parent[last];
      parent[last] =
        typeof old === "boolean"
          ? !old
          : typeof old === "number"
            ? old + 1
            : Array.isArray(old)
              ? [...(old as unknown[]), "x"]
              : `${String(old)}x`;
      expect([path.join("."), inputsHash({ role: "machine", image, inputs: mutated as unknown as MachineInputs })]).not.toEqual([
        path.join("."),
        base,
      ]);
    }
    expect(inputsHash({ role: "machine", image: `${image}x`, inputs: machineFixture() })).not.toBe(base);
    expect(inputsHash({ role: "cluster", image, inputs: machineFixture() as never })).not.toBe(base);
  });

  it("hashes an autoscaled pool's replicas as 0, and only then", () => {
    const pool = poolFixture();
    const base = inputsHash({ role: "machinepool", image, inputs: pool });
    expect(inputsHash({ role: "machinepool", image, inputs: { ...pool, replicas: 999 } })).toBe(base);
    expect(inputsHash({ role: "machinepool", image, inputs: { ...pool, autoscaling: { enabled: true, min: 2, max: 5 } } })).not.toBe(base);
    const fixed = { ...pool, autoscaling: { enabled: false, min: 0, max: 0 } };
    expect(inputsHash({ role: "machinepool", image, inputs: fixed })).not.toBe(
      inputsHash({ role: "machinepool", image, inputs: { ...fixed, replicas: 4 } }),
    );
  });

  it("covers user variables, their sensitivity and exact numbers, but not their formatting", () => {
    const variables: UserVariables = {
      instance_type: { value: "t3.large", sensitive: false },
      ratio: { value: 0.5, sensitive: false },
      big: { value: new JsonNumber("12345678901234567890"), sensitive: false },
      tags: { value: { b: 1, a: [true, null] }, sensitive: false },
      db_password: { value: "s3cr3t", sensitive: true },
    };
    const h = inputsHash({ role: "machine", image, inputs: machineFixture(), variables });
    expect(h).not.toBe(referenceMachineHash);
    expect(
      inputsHash({
        role: "machine",
        image,
        inputs: machineFixture(),
        variables: { ...variables, tags: { value: { a: [true, null], b: 1 }, sensitive: false } },
      }),
    ).toBe(h);
    for (const edit of <UserVariables[]>[
      { ratio: { value: 0.25, sensitive: false } },
      { big: { value: new JsonNumber("12345678901234567891"), sensitive: false } },
      { db_password: { value: "s3cr3t", sensitive: false } },
      { extra: { value: 1, sensitive: false } },
    ]) {
      expect(inputsHash({ role: "machine", image, inputs: machineFixture(), variables: { ...variables, ...edit } })).not.toBe(h);
    }
  });

  it("refuses a fractional number in the cluster's exports, naming its path", () => {
    const inputs = { ...machineFixture(), captf_cluster_outputs: { net: { ratio: 0.5 } } };
    expect(() => inputsHash({ role: "machine", image, inputs })).toThrow(InputsHashError);
    expect(() => inputsHash({ role: "machine", image, inputs })).toThrow(
      /^exports contains a fractional or exponent number at \/net\/ratio/,
    );
    const exponent = { ...machineFixture(), captf_cluster_outputs: { n: new JsonNumber("1e3") } };
    expect(() => inputsHash({ role: "machine", image, inputs: exponent })).toThrow(
      /exports contains a fractional or exponent number at \/n/,
    );
  });

  it("is always h2 with 64 hex digits", () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (name, img) => {
        const inputs = { ...clusterFixture(), captf_object: { kind: "TerraformCluster" as const, name, namespace: "ns" } };
        return /^h2:[0-9a-f]{64}$/.test(inputsHash({ role: "cluster", image: img, inputs }));
      }),
    );
  });
});

describe("approvalHash", () => {
  it("ignores a pool's bootstrap data and equals the inputs hash for a cluster", () => {
    const pool = poolFixture();
    expect(approvalHash({ role: "machinepool", image, inputs: { ...pool, bootstrap_data: "b3RoZXI=" } })).toBe(
      approvalHash({ role: "machinepool", image, inputs: pool }),
    );
    expect(approvalHash({ role: "machinepool", image, inputs: pool })).not.toBe(inputsHash({ role: "machinepool", image, inputs: pool }));
    expect(approvalHash({ role: "cluster", image, inputs: clusterFixture() })).toBe(
      inputsHash({ role: "cluster", image, inputs: clusterFixture() }),
    );
  });

  it("takes its role from the type: a role with another role's inputs does not compile, and a machine's hash views are its inputs", () => {
    const machine = machineFixture();
    // @ts-expect-error a pool's inputs under the machine role
    expect(() => inputsHash({ role: "machine", image, inputs: poolFixture() })).not.toThrow();
    expect(approvalHash({ role: "machine", image, inputs: machine })).toBe(inputsHash({ role: "machine", image, inputs: machine }));
    expect(inputsHash({ role: "machine", image, inputs: machine })).toBe(referenceMachineHash);
  });
});

describe("exportsHash", () => {
  it("hashes null and {} alike and keeps numbers as written", () => {
    expect(exportsHash(null)).toBe(exportsHash({}));
    expect(exportsHash(undefined)).toBe("h2:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a");
    expect(exportsHash({ r: 0.5, a: 1 })).toBe(exportsHash({ a: 1, r: 0.5 }));
    expect(exportsHash({ r: new JsonNumber("1.50") })).not.toBe(exportsHash({ r: 1.5 }));
  });
});

describe("the worked example of docs/inputs-hash.md", () => {
  const inputs: ClusterInputs = {
    ...commonInputs({ cluster: { name: "demo", namespace: "default" }, kind: "TerraformCluster", name: "demo", namespace: "default" }),
    control_plane_endpoint: null,
    kubernetes_version: "v1.36.2",
    control_plane_initialized: false,
    cluster_network: null,
  };
  const exampleImage = "ghcr.io/example/noop-cluster:v0.1.0";

  it("hashes to the documented values", () => {
    expect(inputsHash({ role: "cluster", image: exampleImage, inputs })).toBe(
      "h2:b5271d9c16db44086c2c8a778931ba12344d81d13c012f718db62bd55f065b4f",
    );
    expect(inputsHash({ role: "cluster", image: exampleImage, inputs, variables: { size: { value: "small", sensitive: false } } })).toBe(
      "h2:60709717fbf79c96209b44387ba04b5188a480abecc74ac773f2ac12ac25acf7",
    );
  });
});
