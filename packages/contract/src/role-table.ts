import type { Role } from "./version.js";

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
const typeClusterNetwork =
  "object({pods=list(string), services=list(string), service_domain=string, api_server_port=number})";
const typeAutoscaling = "object({enabled=bool, min=number, max=number})";
const typeAddress = "object({type=string, address=string})";
const typeHealth =
  "object({state=string, healthy=bool, message=optional(string), reasons=optional(list(string), [])})";

function input(
  name: string,
  type: string,
  options: { rootType?: string; nullable?: boolean; sensitive?: boolean } = {},
): InputSpec {
  return {
    name,
    type,
    rootType: options.rootType ?? type,
    nullable: options.nullable ?? false,
    required: true,
    alwaysSet: true,
    sensitive: options.sensitive ?? false,
  };
}

function output(name: string, type: string, nullable: boolean): OutputSpec {
  return { name, type, nullable, required: true };
}

const commonInputs: readonly InputSpec[] = [
  input("captf_contract", "string"),
  input("captf_cluster", "object({name=string, namespace=string})", { rootType: "any" }),
  input("captf_object", "object({kind=string, name=string, namespace=string})", { rootType: "any" }),
  input("captf_tags", "map(string)"),
];

const clusterOutputsInput = input("captf_cluster_outputs", "any");

/** The single table of every role's inputs and outputs; the renderer and the linter both read it. */
export const roleTables: { readonly [R in Role]: RoleTable } = {
  cluster: {
    role: "cluster",
    inputs: [
      ...commonInputs,
      input("control_plane_endpoint", typeEndpoint, { nullable: true }),
      input("kubernetes_version", "string", { nullable: true }),
      input("control_plane_initialized", "bool"),
      input("cluster_network", typeClusterNetwork, { nullable: true }),
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
      input("machine_name", "string"),
      input("bootstrap_data", "string", { sensitive: true }),
      input("bootstrap_format", "string"),
      input("failure_domain", "string", { nullable: true }),
      input("kubernetes_version", "string", { nullable: true }),
      input("control_plane", "bool"),
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
      input("machinepool_name", "string"),
      input("replicas", "number"),
      input("bootstrap_data", "string", { sensitive: true }),
      input("bootstrap_format", "string"),
      input("failure_domains", "list(string)"),
      input("cluster_failure_domains", "list(string)"),
      input("kubernetes_version", "string", { nullable: true }),
      input("node_labels", "map(string)"),
      input("autoscaling", typeAutoscaling),
    ],
    outputs: [
      output("provider_id", "string", true),
      output("provider_id_list", "list(string)", false),
      output("replicas", "number", true),
      output(
        "instances",
        `list(object({provider_id=string, instance_id=optional(string), addresses=optional(list(${typeAddress}), []), failure_domain=optional(string), state=optional(string)}))`,
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
export const moduleMetaArguments = [
  "source",
  "version",
  "providers",
  "count",
  "for_each",
  "depends_on",
  "lifecycle",
  "locals",
] as const;
