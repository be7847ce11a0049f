import { createHash } from "node:crypto";
import { kindOfRole, type Role } from "@captf/contract";
import { labels } from "@captf/contract/api";
import { nameLabelValue } from "@captf/contract/object-names";

/** The only workspace captf uses; OpenTofu's kubernetes backend puts it in every Secret name. */
export const stateWorkspace = "default";

const suffixTail: Record<Role, string> = { cluster: "c", machine: "m", machinepool: "mp" };

/** The object whose state a backend holds. */
export interface StateOwner {
  role: Role;
  namespace: string;
  name: string;
  /** The owning CAPI Cluster's name, for the `cluster.x-k8s.io/cluster-name` label. */
  clusterName: string;
}

/**
 * The backend's `secret_suffix`: the first 16 hex digits of sha256("<namespace>/<kind>/<name>")
 * and `-c`, `-m` or `-mp`. Deterministic, so a moved or re-created object finds its state.
 */
export function stateSecretSuffix(owner: Pick<StateOwner, "role" | "namespace" | "name">): string {
  const digest = createHash("sha256").update(`${owner.namespace}/${kindOfRole[owner.role]}/${owner.name}`).digest("hex");
  return `${digest.slice(0, 16)}-${suffixTail[owner.role]}`;
}

/** The Secret OpenTofu's kubernetes backend keeps the state in. */
export function stateSecretName(suffix: string): string {
  return `tfstate-${stateWorkspace}-${suffix}`;
}

/** The Lease that holds the backend's state lock. */
export function stateLockLeaseName(suffix: string): string {
  return `lock-tfstate-${stateWorkspace}-${suffix}`;
}

/**
 * The labels the backend puts on the state Secret, so captf and clusterctl move find it. The backend
 * also lists state by all of them: names longer than 63 characters are hashed as the reference hashes them.
 */
export function stateSecretLabels(owner: StateOwner): Record<string, string> {
  return {
    [labels.ownerKind]: kindOfRole[owner.role],
    [labels.ownerName]: nameLabelValue(owner.name),
    [labels.managed]: "true",
    [labels.clusterName]: nameLabelValue(owner.clusterName),
    [labels.move]: "",
  };
}

/**
 * The `-backend-config` values of a Job's `init`: the namespace, the suffix, in-cluster
 * credentials and the labels as an HCL map. `connection` replaces `in_cluster_config=true`
 * (tests pass `config_path=<kubeconfig>`).
 */
export function backendConfigValues(owner: StateOwner, connection: readonly string[] = ["in_cluster_config=true"]): string[] {
  const labelMap = Object.entries(stateSecretLabels(owner))
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([key, value]) => `${JSON.stringify(key)}=${JSON.stringify(value)}`)
    .join(",");
  return [`secret_suffix=${stateSecretSuffix(owner)}`, `namespace=${owner.namespace}`, ...connection, `labels={${labelMap}}`];
}
