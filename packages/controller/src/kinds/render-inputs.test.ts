import { describe, expect, it } from "@jest/globals";
import { validateDocument } from "@captf/contract";
import { autoscalingFromAnnotations, bootstrapInputs, clusterInputs, machineInputs, machinePoolInputs } from "./render-inputs.js";

const meta = (name: string, extra: Record<string, unknown> = {}) => ({ name, namespace: "team-a", ...extra });
const b64 = (text: string) => Buffer.from(text).toString("base64");
const bootstrap = { data: { value: b64("#cloud-config\nruncmd: []\n"), format: b64("cloud-config") } };
const cluster = { name: "prod", namespace: "team-a" };

describe("clusterInputs", () => {
  const capi = {
    metadata: meta("prod"),
    spec: {
      controlPlaneEndpoint: { host: "api.example.com", port: 6443 },
      topology: { version: "v1.36.2" },
      clusterNetwork: { pods: { cidrBlocks: ["10.244.0.0/16"] }, services: { cidrBlocks: ["10.96.0.0/12"] }, apiServerPort: 6443 },
    },
    status: { initialization: { controlPlaneInitialized: false } },
  };

  it("maps the Cluster onto valid inputs", () => {
    const inputs = clusterInputs(capi, { metadata: meta("prod", { annotations: { "cluster.x-k8s.io/cloned-from-name": "tmpl" } }) });
    expect(validateDocument("cluster", "inputs", inputs).errors).toEqual([]);
    expect(inputs.control_plane_endpoint).toEqual({ host: "api.example.com", port: 6443 });
    expect(inputs.cluster_network).toEqual({
      pods: ["10.244.0.0/16"],
      services: ["10.96.0.0/12"],
      service_domain: null,
      api_server_port: 6443,
    });
    expect(inputs.captf_tags["captf.io/template"]).toBe("tmpl");
  });

  it("renders no endpoint once the module owns it, and falls back to the TerraformCluster's", () => {
    expect(
      clusterInputs(capi, { metadata: meta("prod", { annotations: { "captf.io/endpoint-source": "module" } }) }).control_plane_endpoint,
    ).toBeNull();
    const noEndpoint = { ...capi, spec: { ...capi.spec, controlPlaneEndpoint: { host: "", port: 0 } } };
    expect(
      clusterInputs(noEndpoint, { metadata: meta("prod"), spec: { controlPlaneEndpoint: { host: "lb.example.com", port: 443 } } })
        .control_plane_endpoint,
    ).toEqual({ host: "lb.example.com", port: 443 });
  });

  it("latches control_plane_initialized and renders no network when none is set", () => {
    const bare = { metadata: meta("prod") };
    expect(clusterInputs(bare, { metadata: meta("prod") }, true)).toMatchObject({
      control_plane_initialized: true,
      cluster_network: null,
      kubernetes_version: null,
    });
  });
});

describe("machineInputs", () => {
  const machine = {
    metadata: meta("prod-md-0-x", { labels: { "cluster.x-k8s.io/control-plane": "" } }),
    spec: { failureDomain: "zone-a", version: "v1.36.2+rke2r1" },
  };

  it("maps the Machine and its bootstrap Secret onto valid inputs", () => {
    const result = machineInputs({ cluster, machine, terraformMachine: { metadata: meta("prod-md-0-x") } }, { vpc: "v-1" }, bootstrap);
    expect(result.pending).toBe(false);
    if (result.pending) return;
    expect(validateDocument("machine", "inputs", result.inputs).errors).toEqual([]);
    expect(result.inputs).toMatchObject({
      control_plane: true,
      failure_domain: "zone-a",
      kubernetes_version: "v1.36.2+rke2r1",
      bootstrap_format: "cloud-config",
    });
    expect(Buffer.from(result.inputs.bootstrap_data, "base64").toString()).toBe("#cloud-config\nruncmd: []\n");
  });

  it("waits for the cluster's infrastructure (its first apply) and for bootstrap data", () => {
    expect(machineInputs({ cluster, machine, terraformMachine: { metadata: meta("m") } }, undefined, bootstrap)).toMatchObject({
      pending: true,
      reason: "WaitingForClusterInfrastructure",
    });
    expect(machineInputs({ cluster, machine, terraformMachine: { metadata: meta("m") } }, {}, undefined)).toMatchObject({
      pending: true,
      reason: "WaitingForBootstrapData",
    });
    expect(bootstrapInputs({ data: { value: b64("x"), format: b64("yaml") } })).toMatchObject({
      pending: true,
      message: expect.stringContaining('"yaml"'),
    });
    expect(bootstrapInputs({ data: { value: b64("{}") } })).toMatchObject({ pending: false, inputs: { bootstrap_format: "cloud-config" } });
  });
});

describe("machinePoolInputs", () => {
  const pool = (annotations: Record<string, string> = {}, replicas = 3) => ({
    metadata: meta("workers", { annotations }),
    spec: { replicas, failureDomains: ["zone-a"], template: { metadata: { labels: { pool: "workers" } }, spec: { version: "v1.36.2" } } },
  });

  it("maps the MachinePool onto valid inputs", () => {
    const result = machinePoolInputs(
      { cluster, machinePool: pool(), terraformMachinePool: { metadata: meta("workers") } },
      {},
      ["zone-a", "zone-b"],
      bootstrap,
    );
    expect(result.pending).toBe(false);
    if (result.pending) return;
    expect(validateDocument("machinepool", "inputs", result.inputs).errors).toEqual([]);
    expect(result.inputs).toMatchObject({ replicas: 3, autoscaling: { enabled: false, min: 0, max: 0 }, node_labels: { pool: "workers" } });
  });

  it("takes the observed replicas, clamped, when autoscaling", () => {
    const annotations = {
      "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size": "2",
      "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size": "5",
    };
    const observed = (replicas?: number) =>
      machinePoolInputs(
        {
          cluster,
          machinePool: pool(annotations, 3),
          terraformMachinePool: { metadata: meta("workers"), status: replicas === undefined ? {} : { replicas } },
        },
        {},
        [],
        bootstrap,
      );
    expect(observed(4)).toMatchObject({ inputs: { replicas: 4, autoscaling: { enabled: true, min: 2, max: 5 } } });
    expect(observed(9)).toMatchObject({ inputs: { replicas: 5 } });
    expect(observed(0)).toMatchObject({ inputs: { replicas: 2 } });
    expect(observed(undefined)).toMatchObject({ inputs: { replicas: 3 } });
  });

  it.each([
    [{}, "AutoscalingDisabled"],
    [{ "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size": "1" }, "AutoscalingAnnotationsInvalid"],
    [
      {
        "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size": "5",
        "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size": "2",
      },
      "AutoscalingAnnotationsInvalid",
    ],
    [
      {
        "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size": "-1",
        "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size": "2",
      },
      "AutoscalingAnnotationsInvalid",
    ],
    [
      {
        "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size": "0",
        "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size": "0",
      },
      "ReplicasManagedByModule",
    ],
  ])("reads autoscaler annotations %j as %s", (annotations, reason) => {
    expect(autoscalingFromAnnotations({ metadata: meta("p", { annotations }) }).reason).toBe(reason);
  });
});
