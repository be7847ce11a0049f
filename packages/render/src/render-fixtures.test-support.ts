// Inputs shared by the render tests: the same objects the public reference's goldens render.
import { commonInputs, type ClusterInputs, type MachineInputs, type MachinePoolInputs } from "@captf/contract";
import type { UserVariables } from "./user-variables.js";

export const bootstrapData = "I2Nsb3VkLWNvbmZpZwpydW5jbWQ6CiAgLSBlY2hvIDxyZWFkeT4gJiBkb25lCg==";

export function clusterInputs(): ClusterInputs {
  return {
    ...commonInputs({ cluster: { name: "prod", namespace: "team-a" }, kind: "TerraformCluster", name: "prod", namespace: "team-a" }),
    control_plane_endpoint: { host: "api.prod.example.com", port: 6443 },
    kubernetes_version: "v1.36.2",
    control_plane_initialized: true,
    cluster_network: { pods: ["192.168.0.0/16"], services: ["10.96.0.0/12"], service_domain: "cluster.local", api_server_port: 6443 },
  };
}

export function machineInputs(): MachineInputs {
  return {
    ...commonInputs({
      cluster: { name: "prod", namespace: "team-a" },
      kind: "TerraformMachine",
      name: "prod-md-0-abcde",
      namespace: "team-a",
    }),
    captf_cluster_outputs: { network_id: "net-1", note: "a<b & c>d" },
    machine_name: "prod-md-0-abcde-xyz12",
    bootstrap_data: bootstrapData,
    bootstrap_format: "cloud-config",
    failure_domain: null,
    kubernetes_version: "v1.36.2",
    control_plane: false,
  };
}

export function machinePoolInputs(): MachinePoolInputs {
  return {
    ...commonInputs({
      cluster: { name: "prod", namespace: "team-a" },
      kind: "TerraformMachinePool",
      name: "prod-mp-0",
      namespace: "team-a",
    }),
    captf_cluster_outputs: { network_id: "net-1", note: "a<b & c>d" },
    machinepool_name: "prod-mp-0",
    replicas: 3,
    bootstrap_data: bootstrapData,
    bootstrap_format: "cloud-config",
    failure_domains: [],
    cluster_failure_domains: ["zone-a", "zone-b"],
    kubernetes_version: "v1.36.2",
    node_labels: { pool: "prod-mp-0" },
    autoscaling: { enabled: false, min: 0, max: 0 },
  };
}

export const userVariables: UserVariables = {
  instance_type: { value: "t3.large", sensitive: false },
  disk_gib: { value: 40, sensitive: false },
  ratio: { value: 0.5, sensitive: false },
  subnet_ids: { value: ["subnet-a", "subnet-b"], sensitive: false },
  db_password: { value: "s3cr3t-<pw>", sensitive: true },
};
