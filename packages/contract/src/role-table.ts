import { contractVersion, type Role } from "./version.js";

/** One contract input of a role: how the generated root declares it and what a module must accept. */
export interface InputSpec {
  readonly name: string;
  /** The contract's Terraform type expression: what a module's variable should declare. */
  readonly type: string;
  /** The type the generated root declares; `any` where the module picks the precise type. */
  readonly rootType: string;
  /** May be null; the generated root gives it `default = null`. */
  readonly nullable: boolean;
  /** The module must declare it (every contract input except the cluster's absent `captf_cluster_outputs`). */
  readonly required: boolean;
  /** The controller always renders a value (possibly null for nullable inputs). */
  readonly alwaysSet: boolean;
  /** Declared `sensitive = true` in the generated root. */
  readonly sensitive: boolean;
  /** What the value is, as a module's declaration describes it (`tfcapi-lint inputs`). */
  readonly description: string;
  /** What every value the controller sends satisfies: a module's validation blocks (`tfcapi-lint inputs`). */
  readonly validations: readonly InputValidation[];
}

/** One validation block of a contract input: a Terraform condition on `var.<name>` and its message. */
export interface InputValidation {
  readonly condition: string;
  readonly errorMessage: string;
}

/** One contract output of a role. */
export interface OutputSpec {
  readonly name: string;
  /** The decoded shape, as a Terraform type expression. */
  readonly type: string;
  /** A null value is meaningful (pending, cleared or defaulted) rather than an error. */
  readonly nullable: boolean;
  /** The module must declare it. Every contract output is required. */
  readonly required: true;
}

export interface RoleTable {
  readonly role: Role;
  /** Inputs in the order the generated tfvars lists them. */
  readonly inputs: readonly InputSpec[];
  /** Outputs in the order the contract lists them. */
  readonly outputs: readonly OutputSpec[];
}

const typeEndpoint = "object({host=string, port=number})";
const typeClusterNetwork = "object({pods=list(string), services=list(string), service_domain=string, api_server_port=number})";
const typeAutoscaling = "object({enabled=bool, min=number, max=number})";
const typeAddress = "object({type=string, address=string})";
const typeHealth = "object({state=string, healthy=bool, message=optional(string), reasons=optional(list(string), [])})";

function input(
  name: string,
  type: string,
  description: string,
  options: { rootType?: string; nullable?: boolean; sensitive?: boolean; validations?: readonly InputValidation[] } = {},
): InputSpec {
  return {
    name,
    type,
    rootType: options.rootType ?? type,
    nullable: options.nullable ?? false,
    required: true,
    alwaysSet: true,
    sensitive: options.sensitive ?? false,
    description,
    validations: options.validations ?? [],
  };
}

// Kubernetes label syntax: keys [prefix/]name, values a name or empty (they may reach shell scripts).
const labelKey = "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$";
const labelValue = "^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$";

const validations = {
  contract: [
    {
      condition: `var.captf_contract == "${contractVersion}"`,
      errorMessage: `captf_contract must be \"${contractVersion}\": this module implements contract ${contractVersion} only.`,
    },
  ],
  bootstrapData: [
    {
      condition: 'can(regex("^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$", var.bootstrap_data))',
      errorMessage: "bootstrap_data must be standard padded base64.",
    },
  ],
  bootstrapFormat: [
    {
      condition: 'contains(["cloud-config", "ignition"], var.bootstrap_format)',
      errorMessage: "bootstrap_format must be cloud-config or ignition.",
    },
  ],
  replicas: [
    {
      condition: "var.replicas >= 0 && floor(var.replicas) == var.replicas",
      errorMessage: "replicas must be a whole number of at least 0.",
    },
  ],
  nodeLabels: [
    {
      condition: `alltrue([for k, v in var.node_labels : can(regex("${labelKey}", k)) && can(regex("${labelValue}", v))])`,
      errorMessage:
        "node_labels must be Kubernetes labels: keys [prefix/]name with a name of at most 63 characters of [A-Za-z0-9-_.], " +
        "and values likewise or empty.",
    },
  ],
  autoscaling: [
    {
      condition:
        "!var.autoscaling.enabled || (var.autoscaling.min >= 0 && var.autoscaling.min <= var.autoscaling.max && " +
        "floor(var.autoscaling.min) == var.autoscaling.min && floor(var.autoscaling.max) == var.autoscaling.max)",
      errorMessage: "With autoscaling enabled, min and max must be whole numbers with 0 <= min <= max.",
    },
  ],
  endpoint: [
    {
      condition:
        "var.control_plane_endpoint == null || try(length(var.control_plane_endpoint.host) > 0 && " +
        "var.control_plane_endpoint.port >= 1 && var.control_plane_endpoint.port <= 65535 && " +
        "floor(var.control_plane_endpoint.port) == var.control_plane_endpoint.port, false)",
      errorMessage: "control_plane_endpoint needs a non-empty host and a whole port between 1 and 65535.",
    },
  ],
} as const;

function output(name: string, type: string, nullable: boolean): OutputSpec {
  return { name, type, nullable, required: true };
}

const commonInputs: readonly InputSpec[] = [
  input("captf_contract", "string", "The contract version the controller rendered the root for.", { validations: validations.contract }),
  input("captf_cluster", "object({name=string, namespace=string})", "The owning Cluster API Cluster.", { rootType: "any" }),
  input("captf_object", "object({kind=string, name=string, namespace=string})", "The Terraform* object this module runs for.", {
    rootType: "any",
  }),
  input("captf_tags", "map(string)", "Tags for every taggable resource: the six captf.io/ keys."),
];

const clusterOutputsInput = input(
  "captf_cluster_outputs",
  "any",
  "The cluster module's exports, verbatim, or {} when the TerraformCluster is externally managed.",
);
const bootstrapInputs: readonly InputSpec[] = [
  input("bootstrap_data", "string", "Standard padded base64 of the bootstrap data (cloud-config or Ignition, maybe gzipped). It rotates.", {
    sensitive: true,
    validations: validations.bootstrapData,
  }),
  input("bootstrap_format", "string", "The bootstrap data's format: cloud-config or ignition.", {
    validations: validations.bootstrapFormat,
  }),
];

/** The single table of every role's inputs and outputs; the renderer and the linter both read it. */
export const roleTables: { readonly [R in Role]: RoleTable } = {
  cluster: {
    role: "cluster",
    inputs: [
      ...commonInputs,
      input("control_plane_endpoint", typeEndpoint, "The endpoint the user set, or null when the module must provide one.", {
        nullable: true,
        validations: validations.endpoint,
      }),
      input("kubernetes_version", "string", "The ClusterClass topology version, verbatim, or null.", { nullable: true }),
      input("control_plane_initialized", "bool", "Whether the control plane has been initialized (latched once true)."),
      input(
        "cluster_network",
        typeClusterNetwork,
        "Cluster.spec.clusterNetwork, or null when none is set. Unset lists are [], unset scalars null.",
        { nullable: true },
      ),
    ],
    outputs: [
      output("control_plane_endpoint", typeEndpoint, true),
      output(
        "failure_domains",
        "list(object({name=string, control_plane=optional(bool, true), attributes=optional(map(string), {})}))",
        true,
      ),
      output("exports", "any", true),
      output("health", typeHealth, false),
    ],
  },
  machine: {
    role: "machine",
    inputs: [
      ...commonInputs,
      clusterOutputsInput,
      input("machine_name", "string", "The owning Machine's name."),
      ...bootstrapInputs,
      input("failure_domain", "string", "The failure domain the Machine asks for, or null.", { nullable: true }),
      input("kubernetes_version", "string", "The Machine's Kubernetes version, verbatim, or null.", { nullable: true }),
      input("control_plane", "bool", "Whether the Machine is a control-plane machine."),
    ],
    outputs: [
      output("provider_id", "string", true),
      output("addresses", `list(${typeAddress})`, true),
      output("failure_domain", "string", true),
      output("interruptible", "bool", true),
      output("health", typeHealth, false),
    ],
  },
  machinepool: {
    role: "machinepool",
    inputs: [
      ...commonInputs,
      clusterOutputsInput,
      input("machinepool_name", "string", "The owning MachinePool's name."),
      input("replicas", "number", "The desired member count; with autoscaling on, the observed count clamped into [min, max].", {
        validations: validations.replicas,
      }),
      ...bootstrapInputs,
      input(
        "failure_domains",
        "list(string)",
        "MachinePool.spec.failureDomains: the failure domains to spread over, or [] to let the module choose.",
      ),
      input("cluster_failure_domains", "list(string)", "The failure domain names the cluster module reported."),
      input("kubernetes_version", "string", "The pool's Kubernetes version, verbatim (a +rke2rN suffix included), or null.", {
        nullable: true,
      }),
      input("node_labels", "map(string)", "Labels every member's Node registers with.", { validations: validations.nodeLabels }),
      input("autoscaling", typeAutoscaling, "The MachinePool's autoscaler annotations: {enabled=false, min=0, max=0} when off.", {
        validations: validations.autoscaling,
      }),
    ],
    outputs: [
      output("provider_id", "string", true),
      output("provider_id_list", "list(string)", false),
      output("replicas", "number", true),
      output(
        "instances",
        "list(object({provider_id=string, instance_id=optional(string), " +
          `addresses=optional(list(${typeAddress}), []), failure_domain=optional(string), state=optional(string)}))`,
        false,
      ),
      output("health", typeHealth, false),
    ],
  },
};

/** The names of a role's contract inputs, in tfvars order. */
export function inputNames(role: Role): string[] {
  return roleTables[role].inputs.map((spec) => spec.name);
}

/** The names of a role's contract outputs, in contract order. */
export function outputNames(role: Role): string[] {
  return roleTables[role].outputs.map((spec) => spec.name);
}

/**
 * Module meta-arguments a user variable may not be named after: the generated
 * root passes every user variable as an argument of `module "role"`.
 */
export const moduleMetaArguments = ["source", "version", "providers", "count", "for_each", "depends_on", "lifecycle", "locals"] as const;
