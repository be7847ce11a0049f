// The inputs phase: the kind adapter's observed inputs, with the user's variables, rendered into the root a Job runs, and its hash.
import type { JsonValue, Role, RoleInputs } from "@captf/contract";
import { conditionReasons } from "@captf/contract/api";
import {
  approvalHash,
  exportsHash,
  inputsHash,
  InputsHashError,
  InputsTooLargeError,
  renderGeneratedRoot,
  type UserVariables,
} from "@captf/render";
import { readUserVariables } from "../kinds/read-variables.js";
import { next, type InputsOutcome, type Phase } from "./types.js";

/** The rendered root and its hashes, or why it cannot be rendered (too large, or the cluster's exports unhashable). */
export function renderInputs<R extends Role>(role: R, image: string, inputs: RoleInputs[R], variables: UserVariables): InputsOutcome {
  try {
    const root = renderGeneratedRoot(role, inputs, variables);
    const hashable = { role, image, inputs, variables };
    const hash = inputsHash(hashable);
    if (role !== "machinepool") return { kind: "ready", rendered: { root, hash, approvalHash: hash } };
    const exports = (inputs as RoleInputs["machinepool"]).captf_cluster_outputs as JsonValue | undefined;
    return { kind: "ready", rendered: { root, hash, approvalHash: approvalHash(hashable), exportsHash: exportsHash(exports) } };
  } catch (error) {
    if (error instanceof InputsTooLargeError)
      return { kind: "pending", reason: "InputsTooLarge", message: error.message, condition: "ApplyJobSucceeded", status: "False" };
    // The cluster's exports are unhashable (a fraction or exponent): its machines and pools wait for a fixed export.
    if (error instanceof InputsHashError && error.path?.startsWith("/inputs/captf_cluster_outputs")) {
      return {
        kind: "pending",
        reason: "WaitingForClusterExports",
        message: error.message,
        condition: "DependenciesReady",
        status: "Unknown",
      };
    }
    throw error;
  }
}

/** Renders the inputs (none while pinned or without an owner); a provisioned machine's hash is the one it applied. */
export const reconcileInputs: Phase = async (pass) => {
  const { deps, adapter, object, namespace, scope, facts } = pass;
  const observed = scope.pinned ? undefined : facts.observedInputs?.inputs;
  if (observed?.pending) {
    // A mismatch or a missing owner needs someone to fix the objects (False, as declared); the other waits end on their own.
    const status = (conditionReasons.DependenciesReady.False as readonly string[]).includes(observed.reason) ? "False" : "Unknown";
    facts.inputs = { kind: "pending", reason: observed.reason, message: observed.message, condition: "DependenciesReady", status };
  } else if (observed) {
    const variables = await readUserVariables(deps.client, adapter.role, namespace, object.spec);
    const image = object.spec.source.image;
    facts.inputs = variables.ok
      ? renderInputs(adapter.role, image, observed.inputs, variables.variables)
      : { kind: "pending", reason: variables.reason, message: variables.message, condition: "DependenciesReady", status: "False" };
    if (variables.ok)
      facts.renderHeld = (exports) =>
        renderInputs(adapter.role, image, { ...observed.inputs, captf_cluster_outputs: exports } as RoleInputs[Role], variables.variables);
  }
  scope.inputs = facts.inputs;
  facts.currentHash = facts.inputs.kind === "ready" ? facts.inputs.rendered.hash : undefined;
  // A provisioned machine's inputs are fixed: the hash it applied.
  const targetHash = facts.currentHash ?? (scope.pinned ? pass.durable?.inputsHash : undefined);
  if (targetHash) scope.currentHash = targetHash;
  return next;
};
