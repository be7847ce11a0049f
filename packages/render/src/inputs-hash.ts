import { createHash } from "node:crypto";
import {
  canonicalJson,
  compareCodePoints,
  contractVersion,
  NonIntegerNumberError,
  type JsonValue,
  type Role,
  type RoleInputs,
} from "@captf/contract";
import type { UserVariables } from "./user-variables.js";

/** The current inputs hash scheme. */
export const hashScheme = "h2";

/** What the inputs hash covers: anything else (metadata, resolved digest, Job details) cannot change it. */
export interface Hashable<R extends Role = Role> {
  role: R;
  /** `spec.source.image` as written (tag or digest), never the resolved digest. */
  image: string;
  inputs: RoleInputs[R];
  /** User variables; absent or empty hashes exactly like an object without any. */
  variables?: UserVariables;
}

/** Inputs that cannot be hashed; the message names the JSON path, never the value. */
export class InputsHashError extends Error {
  readonly path: string | undefined;
  constructor(message: string, path?: string) {
    super(message);
    this.name = "InputsHashError";
    this.path = path;
  }
}

function sha256Hex(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/** What each role's hashes cover of its inputs: the view the inputs hash takes, and the one an approval names. */
type HashViews = { readonly [R in Role]: { inputs(inputs: RoleInputs[R]): RoleInputs[R]; approval(inputs: RoleInputs[R]): RoleInputs[R] } };

const asIs = <T>(inputs: T): T => inputs;

/**
 * Per role, typed by it: a pool whose autoscaling is enabled hashes `replicas` as 0, so the module's own scaling never
 * forces a re-apply; a pool's approval ignores `bootstrap_data`, which rotates every few minutes.
 */
const hashViews: HashViews = {
  cluster: { inputs: asIs, approval: asIs },
  machine: { inputs: asIs, approval: asIs },
  machinepool: {
    inputs: (pool) => (pool.autoscaling?.enabled ? { ...pool, replicas: 0 } : pool),
    approval: (pool) => ({ ...pool, bootstrap_data: "" }),
  },
};

/** The view of the inputs the hash covers (see {@link hashViews}). */
export function hashedInputsView<R extends Role>(role: R, inputs: RoleInputs[R]): RoleInputs[R] {
  return hashViews[role].inputs(inputs);
}

/** `{"sensitive":[names],"values":{...}}`, canonical with numbers as written; "" without variables. */
export function canonicalVariables(variables: UserVariables | undefined): string {
  const names = Object.keys(variables ?? {}).sort(compareCodePoints);
  if (names.length === 0) return "";
  const values: Record<string, JsonValue> = {};
  const sensitive: string[] = [];
  for (const name of names) {
    const variable = variables![name]!;
    Object.defineProperty(values, name, { value: variable.value, enumerable: true });
    if (variable.sensitive) sensitive.push(name);
  }
  try {
    return canonicalJson({ sensitive, values }, "any");
  } catch (error) {
    const path = (error as { path?: string }).path ?? "";
    const name = path.split("/")[2] ?? "?";
    throw new InputsHashError(`variable ${name} cannot be hashed: ${(error as Error).message.replace(/ at .*$/, "")}`, path);
  }
}

/**
 * The inputs hash, `h2:` + 64 lowercase hex: sha256 of the canonical JSON of
 * `{scheme, contract, role, image, inputs, variables?}`. Equal to the public
 * reference's hash for the same inputs, so state and durable Secrets move between the two.
 */
export function inputsHash<R extends Role>(hashable: Hashable<R>): string {
  const document: Record<string, unknown> = {
    scheme: hashScheme,
    contract: contractVersion,
    role: hashable.role,
    image: hashable.image,
    inputs: hashedInputsView(hashable.role, hashable.inputs),
  };
  const variables = canonicalVariables(hashable.variables);
  if (variables !== "") document.variables = variables;
  let canonical: string;
  try {
    canonical = canonicalJson(document, "integer");
  } catch (error) {
    if (error instanceof NonIntegerNumberError) {
      const exportsPrefix = "/inputs/captf_cluster_outputs";
      if (error.path === exportsPrefix || error.path.startsWith(exportsPrefix + "/")) {
        const inner = error.path.slice(exportsPrefix.length) || "/";
        throw new InputsHashError(
          `exports contains a fractional or exponent number at ${inner} (captf_cluster_outputs${inner === "/" ? "" : inner}): ` +
            "the cluster module must export integers or strings",
          error.path,
        );
      }
      throw new InputsHashError(`inputs contain a fractional or exponent number at ${error.path.replace(/^\/inputs/, "")}`, error.path);
    }
    throw new InputsHashError(`inputs cannot be hashed: ${(error as Error).message}`, (error as { path?: string }).path);
  }
  return `${hashScheme}:${sha256Hex(canonical)}`;
}

/**
 * The hash a destructive-plan approval must name. A pool's approval ignores
 * `bootstrap_data`, which rotates every few minutes; for other roles it is the inputs hash.
 */
export function approvalHash<R extends Role>(hashable: Hashable<R>): string {
  return inputsHash({ ...hashable, inputs: hashViews[hashable.role].approval(hashable.inputs) });
}

/** The hash of a cluster's `exports` as machines and pools receive it; null or absent hashes as `{}`. */
export function exportsHash(exports: JsonValue | undefined): string {
  const value = exports === null || exports === undefined ? {} : exports;
  return `${hashScheme}:${sha256Hex(canonicalJson(value, "any"))}`;
}
