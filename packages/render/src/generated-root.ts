import { encodeJson, roleTables, type Role, type RoleInputs } from "@captf/contract";
import type { UserVariables } from "./user-variables.js";

/** The two files of the generated root module, as written to `/captf/work/root`. */
export interface GeneratedRoot {
  "main.tf.json": string;
  "terraform.tfvars.json": string;
}

/** `main.tf.json` plus `terraform.tfvars.json` may not exceed this many bytes. */
export const maxGeneratedRootBytes = 1_000_000;

/** Where the generated root finds the module image's module, relative to `/captf/work/root`. */
export const moduleSource = "../../module";

/** The rendered root is over {@link maxGeneratedRootBytes}; no Job may run with it. */
export class InputsTooLargeError extends Error {
  readonly bytes: number;
  constructor(bytes: number) {
    super(
      `the rendered inputs are ${bytes} bytes (main.tf.json + terraform.tfvars.json); at most ${maxGeneratedRootBytes} are allowed: ` +
        "shrink the cluster's exports or the user variables",
    );
    this.name = "InputsTooLargeError";
    this.bytes = bytes;
  }
}

function encodeFile(value: unknown, escapeHtml = false): string {
  return encodeJson(value, { numbers: "any", sortKeys: false, indent: 2, escapeHtml }) + "\n";
}

function sortedRecord<T>(entries: [string, T][]): Record<string, T> {
  const record: Record<string, T> = {};
  for (const [key, value] of entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    Object.defineProperty(record, key, { value, enumerable: true });
  }
  return record;
}

/** Keys of objects captf renders whose order is a fixed struct order, not sorted (as Go writes them). */
function orderedInputValue(name: string, value: unknown): unknown {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return value;
  const pick = (keys: string[]) =>
    Object.fromEntries(keys.filter((k) => k in value).map((k) => [k, (value as Record<string, unknown>)[k]]));
  switch (name) {
    case "captf_cluster":
      return pick(["name", "namespace"]);
    case "captf_object":
      return pick(["kind", "name", "namespace"]);
    case "control_plane_endpoint":
      return pick(["host", "port"]);
    case "cluster_network":
      return pick(["pods", "services", "service_domain", "api_server_port"]);
    case "autoscaling":
      return pick(["enabled", "min", "max"]);
    case "captf_tags":
    case "node_labels":
      return sortedRecord(Object.entries(value as Record<string, unknown>));
    default:
      return value;
  }
}

/**
 * Renders the generated root module: `main.tf.json` (kubernetes backend, one variable per
 * contract input and user variable, `module "role"` with `source = "../../module"`, every
 * contract output re-exported as sensitive) and `terraform.tfvars.json`, in the public
 * reference's formats. Throws {@link InputsTooLargeError} past 1,000,000 bytes.
 */
export function renderGeneratedRoot<R extends Role>(role: R, inputs: RoleInputs[R], userVariables: UserVariables = {}): GeneratedRoot {
  const table = roleTables[role];
  const userNames = Object.keys(userVariables);

  const variables: [string, Record<string, unknown>][] = table.inputs.map((spec) => {
    const declaration: Record<string, unknown> = { type: spec.rootType };
    if (spec.nullable) declaration.default = null;
    if (spec.sensitive) declaration.sensitive = true;
    return [spec.name, declaration];
  });
  for (const name of userNames) variables.push([name, userVariables[name]!.sensitive ? { sensitive: true } : {}]);

  const moduleArguments: [string, string][] = [...table.inputs.map((spec) => spec.name), ...userNames].map((name) => [
    name,
    `\${var.${name}}`,
  ]);
  moduleArguments.push(["source", moduleSource]);

  const main = {
    terraform: { backend: { kubernetes: {} } },
    variable: sortedRecord(variables),
    module: { role: sortedRecord(moduleArguments) },
    output: sortedRecord(table.outputs.map((spec) => [spec.name, { value: `\${module.role.${spec.name}}`, sensitive: true }])),
  };

  const contractValues: [string, unknown][] = table.inputs.map((spec) => [
    spec.name,
    orderedInputValue(spec.name, (inputs as unknown as Record<string, unknown>)[spec.name] ?? null),
  ]);
  let tfvars: string;
  if (userNames.length === 0) {
    // The pool's tfvars escape <, > and & as the reference writes them; tofu reads both forms alike.
    tfvars = encodeFile(Object.fromEntries(contractValues), role === "machinepool");
  } else {
    const all = [...contractValues, ...userNames.map((name): [string, unknown] => [name, userVariables[name]!.value])];
    tfvars = encodeFile(sortedRecord(all));
  }

  const root: GeneratedRoot = { "main.tf.json": encodeFile(main), "terraform.tfvars.json": tfvars };
  const bytes = generatedRootBytes(root);
  if (bytes > maxGeneratedRootBytes) throw new InputsTooLargeError(bytes);
  return root;
}

/** The size of a rendered root, the two files as stored: what {@link maxGeneratedRootBytes} bounds. */
export function generatedRootBytes(root: GeneratedRoot): number {
  return Buffer.byteLength(root["main.tf.json"]) + Buffer.byteLength(root["terraform.tfvars.json"]);
}

/** The root a restore runs in: the kubernetes backend and nothing else, with empty tfvars. */
export function renderBackendRoot(): GeneratedRoot {
  return { "main.tf.json": encodeFile({ terraform: { backend: { kubernetes: {} } } }), "terraform.tfvars.json": "{}\n" };
}
