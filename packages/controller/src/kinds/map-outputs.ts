import type { DecodedOutputs, Health, OutputsDecoding, Role } from "@captf/contract";

/**
 * Mapping decoded module outputs onto the Cluster API v1beta2 contract fields and the
 * InfrastructureHealthy condition. Pure; the reconciler writes the result in its one status patch.
 */

export interface ConditionValue {
  status: "True" | "False" | "Unknown";
  reason: string;
  message?: string;
}

/** InfrastructureHealthy from the newest health reading, before and after provisioning. */
export function infrastructureHealthy(health: Health | undefined, phase: { applyStarted: boolean; provisioned: boolean }): ConditionValue {
  if (!phase.applyStarted) return { status: "Unknown", reason: "WaitingForProvisioning" };
  if (!health) return phase.provisioned ? { status: "Unknown", reason: "HealthUnknown" } : { status: "False", reason: "Provisioning" };
  const message = health.message ?? (health.reasons.length > 0 ? health.reasons.join(", ") : undefined);
  const withMessage = (value: ConditionValue): ConditionValue => (message ? { ...value, message } : value);
  switch (health.state) {
    case "pending":
      return withMessage({ status: "False", reason: "InstancePending" });
    case "running":
      return health.healthy ? { status: "True", reason: "Healthy" } : withMessage({ status: "False", reason: "InstanceUnhealthy" });
    case "degraded":
      return withMessage({ status: "False", reason: "InstanceDegraded" });
    case "stopped":
      return withMessage({ status: "False", reason: "InstanceStopped" });
    case "terminated":
      return withMessage({ status: "False", reason: "InstanceTerminated" });
    default:
      return withMessage({ status: "Unknown", reason: "HealthUnknown" });
  }
}

/**
 * Provisioned latches once the state records a successful apply (its inputs hash), the outputs
 * are valid and health is past pending; a machine also needs its provider ID.
 */
export function isProvisioned<R extends Role>(role: R, stateHasInputsHash: boolean, decoding: OutputsDecoding<R>): boolean {
  if (!stateHasInputsHash || decoding.status !== "True") return false;
  const outputs = decoding.outputs as DecodedOutputs[Role];
  const health = outputs.health;
  if (health.state !== "ok" || health.value.state === "pending") return false;
  if (role === "machine") {
    const providerId = (outputs as DecodedOutputs["machine"]).provider_id;
    return providerId.state === "ok" && Boolean(providerId.value);
  }
  return true;
}

/** The v1beta2 contract fields of a TerraformCluster's status from its outputs. */
export function clusterContractFields(outputs: DecodedOutputs["cluster"]): {
  failureDomains?: { name: string; controlPlane: boolean; attributes?: Record<string, string> }[];
  moduleEndpoint?: { host: string; port: number };
} {
  const fields: ReturnType<typeof clusterContractFields> = {};
  if (outputs.failure_domains.state === "ok") {
    fields.failureDomains = outputs.failure_domains.value.map((domain) => ({
      name: domain.name,
      controlPlane: domain.control_plane,
      ...(Object.keys(domain.attributes).length > 0 ? { attributes: domain.attributes } : {}),
    }));
  }
  if (outputs.control_plane_endpoint.state === "ok" && outputs.control_plane_endpoint.value) fields.moduleEndpoint = outputs.control_plane_endpoint.value;
  return fields;
}

/** The v1beta2 contract fields of a TerraformMachine: providerID (latched by the caller), addresses, failure domain. */
export function machineContractFields(outputs: DecodedOutputs["machine"]): {
  providerID?: string;
  addresses?: { type: string; address: string }[];
  failureDomain?: string;
} {
  const fields: ReturnType<typeof machineContractFields> = {};
  if (outputs.provider_id.state === "ok" && outputs.provider_id.value) fields.providerID = outputs.provider_id.value;
  if (outputs.addresses.state === "ok") fields.addresses = outputs.addresses.value.map(({ type, address }) => ({ type, address }));
  if (outputs.failure_domain.state === "ok" && outputs.failure_domain.value) fields.failureDomain = outputs.failure_domain.value;
  return fields;
}

/** The v1beta2 contract fields of a TerraformMachinePool: providerIDList and replicas. */
export function machinePoolContractFields(outputs: DecodedOutputs["machinepool"]): { providerIDList?: string[]; replicas?: number } {
  const fields: ReturnType<typeof machinePoolContractFields> = {};
  if (outputs.provider_id_list.state === "ok") fields.providerIDList = outputs.provider_id_list.value;
  if (outputs.replicas.state === "ok") fields.replicas = outputs.replicas.value;
  return fields;
}
