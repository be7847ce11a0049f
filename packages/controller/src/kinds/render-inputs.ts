import {
  commonInputs,
  type Autoscaling,
  type BootstrapFormat,
  type ClusterInputs,
  type ClusterNetwork,
  type Endpoint,
  type JsonValue,
  type MachineInputs,
  type MachinePoolInputs,
} from "@captf/contract";
import { annotations, labels } from "@captf/contract/api";
import type { ObjectMeta } from "../runtime/kube-client.js";

/**
 * Building a role's contract inputs from the Cluster API objects that own a Terraform* object.
 * Pure: the reconciler reads the objects; these functions only map them, and say what is
 * missing when inputs cannot be built yet (a condition reason and a message).
 */

/** The metadata of the namespaced objects these functions read (parsed JSON): name and namespace always set. */
export type NamespacedMeta = Required<Pick<ObjectMeta, "name" | "namespace">> & Pick<ObjectMeta, "labels" | "annotations">;

interface CapiCluster {
  metadata: NamespacedMeta;
  spec?: {
    controlPlaneEndpoint?: { host?: string; port?: number };
    topology?: { version?: string };
    clusterNetwork?: {
      pods?: { cidrBlocks?: string[] };
      services?: { cidrBlocks?: string[] };
      serviceDomain?: string;
      apiServerPort?: number;
    };
  };
  status?: { initialization?: { controlPlaneInitialized?: boolean } };
}

interface TerraformClusterLike {
  metadata: NamespacedMeta;
  spec?: { controlPlaneEndpoint?: { host?: string; port?: number } };
}

/** Inputs could not be built: why (a DependenciesReady reason) and what to do. */
export interface InputsPending {
  pending: true;
  reason:
    | "WaitingForBootstrapData"
    | "WaitingForClusterInfrastructure"
    | "WaitingForClusterExports"
    | "WaitingForOwner"
    | "VariablesInvalid"
    | "OwnerMismatch"
    | "ClusterNotTerraform"
    | "OwnerNotFound"
    | "WaitingForOwnerMachine"
    | "WaitingForOwnerMachinePool";
  message: string;
}

export type InputsResult<T> = { pending: false; inputs: T } | InputsPending;

function validEndpoint(endpoint: { host?: string; port?: number } | undefined): Endpoint | null {
  if (!endpoint?.host || !endpoint.port || endpoint.port < 1 || endpoint.port > 65535) return null;
  return { host: endpoint.host, port: endpoint.port };
}

function clusterNetwork(cluster: CapiCluster): ClusterNetwork | null {
  const network = cluster.spec?.clusterNetwork;
  if (!network) return null;
  const pods = network.pods?.cidrBlocks ?? [];
  const services = network.services?.cidrBlocks ?? [];
  const serviceDomain = network.serviceDomain || null;
  const apiServerPort = network.apiServerPort || null;
  if (pods.length === 0 && services.length === 0 && serviceDomain === null && apiServerPort === null) return null;
  return { pods, services, service_domain: serviceDomain, api_server_port: apiServerPort };
}

/**
 * The cluster role's inputs. The endpoint comes from the Cluster, else the TerraformCluster,
 * unless the module owns it (`captf.io/endpoint-source: module`): then it is always null.
 * `control_plane_initialized` latches: once rendered true it stays true.
 */
export function clusterInputs(cluster: CapiCluster, terraformCluster: TerraformClusterLike, latchedInitialized = false): ClusterInputs {
  const moduleOwnsEndpoint = terraformCluster.metadata.annotations?.[annotations.endpointSource] === "module";
  const endpoint = moduleOwnsEndpoint
    ? null
    : (validEndpoint(cluster.spec?.controlPlaneEndpoint) ?? validEndpoint(terraformCluster.spec?.controlPlaneEndpoint));
  return {
    ...commonInputs({
      cluster: { name: cluster.metadata.name, namespace: cluster.metadata.namespace },
      kind: "TerraformCluster",
      name: terraformCluster.metadata.name,
      namespace: terraformCluster.metadata.namespace,
      template: terraformCluster.metadata.annotations?.[annotations.clonedFromName] ?? "",
    }),
    control_plane_endpoint: endpoint,
    kubernetes_version: cluster.spec?.topology?.version ?? null,
    control_plane_initialized: latchedInitialized || cluster.status?.initialization?.controlPlaneInitialized === true,
    cluster_network: clusterNetwork(cluster),
  };
}

/** A bootstrap Secret's data (base64 as the API serves it). */
export interface BootstrapSecret {
  data?: { value?: string; format?: string };
}

/** `bootstrap_data` is the Secret's `value` (already base64 in the API), `bootstrap_format` its `format`. */
export function bootstrapInputs(
  secret: BootstrapSecret | undefined,
): InputsResult<{ bootstrap_data: string; bootstrap_format: BootstrapFormat }> {
  const value = secret?.data?.value;
  if (!value) return { pending: true, reason: "WaitingForBootstrapData", message: "the bootstrap data Secret is not ready yet" };
  const format = secret?.data?.format ? Buffer.from(secret.data.format, "base64").toString("utf8") : "cloud-config";
  if (format !== "cloud-config" && format !== "ignition") {
    return {
      pending: true,
      reason: "WaitingForBootstrapData",
      message: `the bootstrap Secret's format is ${JSON.stringify(format)}; captf passes cloud-config or ignition`,
    };
  }
  return { pending: false, inputs: { bootstrap_data: value, bootstrap_format: format } };
}

interface CapiMachine {
  metadata: NamespacedMeta;
  spec?: { failureDomain?: string; version?: string; bootstrap?: { dataSecretName?: string } };
}

/** Why a machine or pool waits before its cluster's first apply (Cluster API providers' WaitingForClusterInfrastructure). */
const clusterInfrastructureWait =
  "the TerraformCluster has not applied its module yet: machines and pools start once its state holds the cluster's " +
  "infrastructure and exports";

/**
 * The machine role's inputs. `exports` is the cluster state's `exports` output, or `{}` for an
 * externally managed TerraformCluster; undefined means the cluster has not published it yet.
 */
export function machineInputs(
  owner: { cluster: { name: string; namespace: string }; machine: CapiMachine; terraformMachine: { metadata: NamespacedMeta } },
  exports: JsonValue | undefined,
  bootstrap: BootstrapSecret | undefined,
): InputsResult<MachineInputs> {
  if (exports === undefined) return { pending: true, reason: "WaitingForClusterInfrastructure", message: clusterInfrastructureWait };
  const boot = bootstrapInputs(bootstrap);
  if (boot.pending) return boot;
  const { machine, terraformMachine } = owner;
  return {
    pending: false,
    inputs: {
      ...commonInputs({
        cluster: owner.cluster,
        kind: "TerraformMachine",
        name: terraformMachine.metadata.name,
        namespace: terraformMachine.metadata.namespace,
        template: terraformMachine.metadata.annotations?.[annotations.clonedFromName] ?? "",
      }),
      captf_cluster_outputs: exports,
      machine_name: machine.metadata.name,
      ...boot.inputs,
      failure_domain: machine.spec?.failureDomain || null,
      kubernetes_version: machine.spec?.version ?? null,
      control_plane: machine.metadata.labels?.[labels.controlPlane] !== undefined,
    },
  };
}

interface CapiMachinePool {
  metadata: NamespacedMeta;
  spec?: {
    replicas?: number;
    failureDomains?: string[];
    template?: { metadata?: { labels?: Record<string, string> }; spec?: { version?: string } };
  };
}

/** Autoscaling from the MachinePool's autoscaler annotations: on only when both are non-negative integers with min ≤ max. */
export function autoscalingFromAnnotations(pool: { metadata: NamespacedMeta }): {
  autoscaling: Autoscaling;
  reason: "ReplicasManagedByModule" | "AutoscalingDisabled" | "AutoscalingAnnotationsInvalid";
} {
  const min = pool.metadata.annotations?.[annotations.autoscalerMinSize];
  const max = pool.metadata.annotations?.[annotations.autoscalerMaxSize];
  const off = { enabled: false, min: 0, max: 0 };
  if (min === undefined && max === undefined) return { autoscaling: off, reason: "AutoscalingDisabled" };
  const parse = (text: string | undefined) => (text !== undefined && /^(0|[1-9][0-9]{0,9})$/.test(text) ? Number(text) : NaN);
  const lo = parse(min);
  const hi = parse(max);
  if (!Number.isSafeInteger(lo) || !Number.isSafeInteger(hi) || lo > hi || hi > 2_147_483_647)
    return { autoscaling: off, reason: "AutoscalingAnnotationsInvalid" };
  return { autoscaling: { enabled: true, min: lo, max: hi }, reason: "ReplicasManagedByModule" };
}

/**
 * The machinepool role's inputs. With autoscaling on, `replicas` is the observed count
 * (`status.replicas` of the TerraformMachinePool), else the MachinePool's own, clamped to [min, max].
 */
export function machinePoolInputs(
  owner: {
    cluster: { name: string; namespace: string };
    machinePool: CapiMachinePool;
    terraformMachinePool: { metadata: NamespacedMeta; status?: { replicas?: number } };
  },
  exports: JsonValue | undefined,
  clusterFailureDomains: readonly string[],
  bootstrap: BootstrapSecret | undefined,
): InputsResult<MachinePoolInputs> {
  if (exports === undefined) return { pending: true, reason: "WaitingForClusterInfrastructure", message: clusterInfrastructureWait };
  const boot = bootstrapInputs(bootstrap);
  if (boot.pending) return boot;
  const { machinePool, terraformMachinePool } = owner;
  const { autoscaling } = autoscalingFromAnnotations(machinePool);
  const specReplicas = machinePool.spec?.replicas ?? 1;
  const replicas = autoscaling.enabled
    ? Math.min(Math.max(terraformMachinePool.status?.replicas ?? specReplicas, autoscaling.min), autoscaling.max)
    : specReplicas;
  return {
    pending: false,
    inputs: {
      ...commonInputs({
        cluster: owner.cluster,
        kind: "TerraformMachinePool",
        name: terraformMachinePool.metadata.name,
        namespace: terraformMachinePool.metadata.namespace,
        template: terraformMachinePool.metadata.annotations?.[annotations.clonedFromName] ?? "",
      }),
      captf_cluster_outputs: exports,
      machinepool_name: machinePool.metadata.name,
      replicas,
      ...boot.inputs,
      failure_domains: [...(machinePool.spec?.failureDomains ?? [])],
      cluster_failure_domains: [...clusterFailureDomains],
      kubernetes_version: machinePool.spec?.template?.spec?.version ?? null,
      node_labels: { ...(machinePool.spec?.template?.metadata?.labels ?? {}) },
      autoscaling,
    },
  };
}
