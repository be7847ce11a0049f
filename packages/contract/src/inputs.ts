import { contractVersion, type RoleKind } from "./version.js";

/**
 * A JSON value as the contract carries it. Numbers may be JS numbers, bigints
 * (integers beyond 2^53) or {@link JsonNumber} literals kept exactly as written.
 */
export type JsonValue =
  | null
  | boolean
  | number
  | bigint
  | string
  | JsonNumber
  | readonly JsonValue[]
  | { readonly [key: string]: JsonValue };

/**
 * A JSON number kept as its literal text, for values JS numbers cannot carry
 * exactly (`1.50`, `12345678901234567890`). The canonical encoder writes the
 * literal verbatim.
 */
export class JsonNumber {
  readonly literal: string;
  constructor(literal: string) {
    if (!/^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/.test(literal)) {
      throw new TypeError("not a JSON number literal");
    }
    this.literal = literal;
  }
  /** True when the literal is a plain integer: no fraction, no exponent. */
  get isInteger(): boolean {
    return /^-?(?:0|[1-9][0-9]*)$/.test(this.literal);
  }
  toJSON(): number {
    return Number(this.literal);
  }
}

/** `captf_cluster`: the owning Cluster API Cluster. */
export interface CaptfCluster {
  name: string;
  namespace: string;
}

/** `captf_object`: the Terraform* object whose module runs. */
export interface CaptfObject {
  kind: RoleKind;
  name: string;
  namespace: string;
}

/** The six keys of `captf_tags`, in the order the contract lists them. */
export const captfTagKeys = [
  "captf.io/cluster",
  "captf.io/namespace",
  "captf.io/kind",
  "captf.io/name",
  "captf.io/managed-by",
  "captf.io/template",
] as const;
export type CaptfTagKey = (typeof captfTagKeys)[number];
export type CaptfTags = Record<CaptfTagKey, string>;

/** The value of `captf.io/managed-by`. */
export const managedByValue = "captf";

/**
 * Builds `captf_tags`. `template` is the object's `cluster.x-k8s.io/cloned-from-name`
 * annotation, or "" when it was not cloned from a template.
 */
export function captfTags(object: { cluster: string; namespace: string; kind: RoleKind; name: string; template?: string }): CaptfTags {
  return {
    "captf.io/cluster": object.cluster,
    "captf.io/namespace": object.namespace,
    "captf.io/kind": object.kind,
    "captf.io/name": object.name,
    "captf.io/managed-by": managedByValue,
    "captf.io/template": object.template ?? "",
  };
}

interface CommonInputs {
  captf_contract: typeof contractVersion;
  captf_cluster: CaptfCluster;
  captf_object: CaptfObject;
  captf_tags: CaptfTags;
}

export interface Endpoint {
  host: string;
  port: number;
}

export interface ClusterNetwork {
  pods: string[];
  services: string[];
  service_domain: string | null;
  api_server_port: number | null;
}

export interface ClusterInputs extends CommonInputs {
  control_plane_endpoint: Endpoint | null;
  kubernetes_version: string | null;
  control_plane_initialized: boolean;
  cluster_network: ClusterNetwork | null;
}

export type BootstrapFormat = "cloud-config" | "ignition";

export interface MachineInputs extends CommonInputs {
  /** The cluster's `exports` output verbatim; `{}` for an externally managed cluster. */
  captf_cluster_outputs: JsonValue;
  machine_name: string;
  /** Standard padded base64. Sensitive: never log it. */
  bootstrap_data: string;
  bootstrap_format: BootstrapFormat;
  failure_domain: string | null;
  kubernetes_version: string | null;
  control_plane: boolean;
}

export interface Autoscaling {
  enabled: boolean;
  min: number;
  max: number;
}

export interface MachinePoolInputs extends CommonInputs {
  captf_cluster_outputs: JsonValue;
  machinepool_name: string;
  replicas: number;
  bootstrap_data: string;
  bootstrap_format: BootstrapFormat;
  failure_domains: string[];
  cluster_failure_domains: string[];
  kubernetes_version: string | null;
  node_labels: Record<string, string>;
  autoscaling: Autoscaling;
}

export interface RoleInputs {
  cluster: ClusterInputs;
  machine: MachineInputs;
  machinepool: MachinePoolInputs;
}

/** The common inputs every role receives. */
export function commonInputs(object: {
  cluster: CaptfCluster;
  kind: RoleKind;
  name: string;
  namespace: string;
  template?: string;
}): CommonInputs {
  return {
    captf_contract: contractVersion,
    captf_cluster: { name: object.cluster.name, namespace: object.cluster.namespace },
    captf_object: { kind: object.kind, name: object.name, namespace: object.namespace },
    captf_tags: captfTags({
      cluster: object.cluster.name,
      namespace: object.namespace,
      kind: object.kind,
      name: object.name,
      template: object.template ?? "",
    }),
  };
}
