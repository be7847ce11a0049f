import type { DecodedOutputs, Health, HealthState, OutputsDecoding, PoolInstance, Role } from "@captf/contract";
import type { ConditionValue } from "../conditions/conditions.js";

/**
 * Mapping decoded module outputs onto the Cluster API v1beta2 contract fields and the
 * InfrastructureHealthy condition. Pure; the reconciler writes the result in its one status patch.
 */

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

/** OutputsValid reasons that take precedence over ProviderIDChanged. */
const beforeProviderIDChanged = ["OutputsMissing", "OutputsInvalid", "FailureDomainMismatch"];

/**
 * A provisioned machine's provider_id against the providerID it was given once. Pure.
 * - A different non-null value: `OutputsValid=False/ProviderIDChanged` (the old one is kept), unless a
 *   reason of higher precedence holds.
 * - Null (the two-sample rule, so a transient read never remediates a healthy machine): the first
 *   sample gives `InfrastructureHealthy=Unknown/ProviderIDMissing` and leaves OutputsValid as it was;
 *   a later sample still null is the instance gone (`InstanceTerminated`), and stays so while null.
 *   Reconciling the same outputs again is not a sample.
 * Undefined fields: nothing to override.
 */
export function providerIDConditions(
  reading: DecodedOutputs["machine"]["provider_id"],
  observed: { latched: string; sampled: boolean; previousHealthReason: string | undefined; outputsReason: string },
): { outputsValid?: ConditionValue; keepOutputsValid?: boolean; health?: ConditionValue } {
  if (reading.state === "ok" && reading.value) {
    if (reading.value === observed.latched || beforeProviderIDChanged.includes(observed.outputsReason)) return {};
    return {
      outputsValid: {
        status: "False",
        reason: "ProviderIDChanged",
        message: `provider_id changed from ${observed.latched} to ${reading.value}; providerID keeps ${observed.latched}`,
      },
    };
  }
  if (reading.state !== "pending" && !(reading.state === "ok" && !reading.value)) return {};
  const terminated =
    observed.previousHealthReason === "InstanceTerminated" || (observed.previousHealthReason === "ProviderIDMissing" && observed.sampled);
  if (terminated)
    return {
      keepOutputsValid: true,
      health: {
        status: "False",
        reason: "InstanceTerminated",
        message: `provider_id is null on a second sample: the instance of ${observed.latched} is gone`,
      },
    };
  return {
    keepOutputsValid: true,
    health: {
      status: "Unknown",
      reason: "ProviderIDMissing",
      message: `provider_id is null after provisioning (was ${observed.latched}); a second null sample means the instance is gone`,
    },
  };
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
  if (outputs.control_plane_endpoint.state === "ok" && outputs.control_plane_endpoint.value)
    fields.moduleEndpoint = outputs.control_plane_endpoint.value;
  return fields;
}

/** The v1beta2 contract fields of a TerraformMachine: providerID (latched by the caller), addresses, failure domain, interruptible. */
export function machineContractFields(outputs: DecodedOutputs["machine"]): {
  providerID?: string;
  addresses?: { type: string; address: string }[];
  failureDomain?: string;
  interruptible?: boolean;
} {
  const fields: ReturnType<typeof machineContractFields> = {};
  if (outputs.provider_id.state === "ok" && outputs.provider_id.value) fields.providerID = outputs.provider_id.value;
  if (outputs.addresses.state === "ok") fields.addresses = outputs.addresses.value.map(({ type, address }) => ({ type, address }));
  if (outputs.failure_domain.state === "ok" && outputs.failure_domain.value) fields.failureDomain = outputs.failure_domain.value;
  // Decoding already read null as false; an invalid or missing output leaves the field undefined (the old value stays).
  if (outputs.interruptible.state === "ok") fields.interruptible = outputs.interruptible.value;
  return fields;
}

/** One member of a pool as status.instances holds it. */
export interface MachinePoolInstanceStatus {
  providerID: string;
  instanceID?: string;
  addresses?: { type: string; address: string }[];
  failureDomain?: string;
  state?: HealthState;
}

/** A decoded `instances` entry in status form: nulls and an empty address list left out (the CRD wants at least one address). */
function instanceStatus(instance: PoolInstance): MachinePoolInstanceStatus {
  return {
    providerID: instance.provider_id,
    ...(instance.instance_id !== null ? { instanceID: instance.instance_id } : {}),
    ...(instance.addresses.length > 0 ? { addresses: instance.addresses.map(({ type, address }) => ({ type, address })) } : {}),
    ...(instance.failure_domain !== null ? { failureDomain: instance.failure_domain } : {}),
    ...(instance.state !== null ? { state: instance.state } : {}),
  };
}

/**
 * The v1beta2 contract fields of a TerraformMachinePool: the group's providerID, providerIDList, replicas and
 * instances (already cut at 1000 by decoding, which reports InstancesTruncated).
 */
export function machinePoolContractFields(outputs: DecodedOutputs["machinepool"]): {
  providerID?: string;
  providerIDList?: string[];
  replicas?: number;
  instances?: MachinePoolInstanceStatus[];
} {
  const fields: ReturnType<typeof machinePoolContractFields> = {};
  if (outputs.provider_id.state === "ok" && outputs.provider_id.value) fields.providerID = outputs.provider_id.value;
  if (outputs.provider_id_list.state === "ok") fields.providerIDList = outputs.provider_id_list.value;
  if (outputs.replicas.state === "ok") fields.replicas = outputs.replicas.value;
  if (outputs.instances.state === "ok") fields.instances = outputs.instances.value.map(instanceStatus);
  return fields;
}

/** A pool reading whose members already match its capacity: no membership refresh is needed to settle it (§2.4 rule 1). */
export function poolMembershipConverged(outputs: DecodedOutputs["machinepool"]): boolean {
  const { providerIDList, replicas } = machinePoolContractFields(outputs);
  return providerIDList !== undefined && replicas !== undefined && providerIDList.length === replicas;
}
