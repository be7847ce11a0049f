/**
 * The status of a TerraformMachineTemplate, decided from what the controller read: capacity and
 * nodeInfo for the Cluster Autoscaler's scale from zero (spec.capacity, else the image label
 * io.captf.capacity; nodeInfo from io.captf.node-info), CapacityResolved, and VariablesValid (the
 * template's variables against the image label io.captf.variables-schema). Pure: the controller
 * does the reads, the status patch and the events.
 */
import { sameJsonValue, validateAgainstLabelSchema } from "@captf/contract";
import {
  capacityLabel,
  nodeInfoLabel,
  parseCapacityLabel,
  parseNodeInfoLabel,
  variablesSchemaLabel,
  type NodeInfo,
} from "@captf/contract/oci";
import type { UserVariables } from "@captf/render";
import type { TerraformMachineTemplate } from "../api/templates.js";
import type { VariablesReading } from "../kinds/read-variables.js";
import { ConditionSet, type Condition, type ConditionValue } from "../conditions/conditions.js";
import { exponentialBackoffMillis } from "../runtime/backoff.js";
import type { ImageInspection } from "./inspect-image.js";

type Quantities = Record<string, string | number>;

export interface CapacityStatus {
  capacity?: Quantities;
  nodeInfo?: NodeInfo;
  capacitySource?: { source: "Spec" | "Image"; image?: string };
}

/** A failed inspection is retried after 30 s, doubling up to 10 minutes. */
export const inspectRetry = { firstMillis: 30_000, maxMillis: 10 * 60_000 } as const;
/** A variablesFrom source not there yet is looked for again after this long. */
export const variablesSourceRetryMillis = 30_000;

/** The wait before the next inspection after `failures` consecutive failures (>= 1). */
export function inspectRetryDelayMillis(failures: number): number {
  return exponentialBackoffMillis(Math.max(0, failures - 1), inspectRetry.firstMillis, inspectRetry.maxMillis);
}

export function templateImage(template: TerraformMachineTemplate): string {
  return template.spec.template.spec.source.image;
}

function conditionReason(template: TerraformMachineTemplate, type: string): string | undefined {
  return template.status?.conditions?.find((condition) => condition.type === type)?.reason;
}

/**
 * Whether the image must be read (again): never resolved, a new image reference (tags are not
 * polled), spec.capacity differing from status.capacity or just removed, or the last reading
 * failed (with spec.capacity set, capacitySource then names no image) or waited for a variables
 * source. An invalid label is not read again for the same image.
 */
export function resolutionNeeded(template: TerraformMachineTemplate): boolean {
  const status = template.status ?? {};
  const source = status.capacitySource;
  if (!source || source.image !== templateImage(template)) return true;
  const spec = template.spec.capacity;
  if (spec !== undefined ? !sameJsonValue(spec, status.capacity) : source.source === "Spec") return true;
  if (conditionReason(template, "CapacityResolved") === "ImageInspectFailed") return true;
  const variables = conditionReason(template, "VariablesValid");
  return variables === undefined || variables === "VariablesSourcePending";
}

export interface CapacityDecision {
  status: CapacityStatus;
  condition: ConditionValue;
}

/** Capacity, nodeInfo and CapacityResolved: spec.capacity wins over the label as a whole; nodeInfo only ever comes from the image. */
export function decideCapacity(template: TerraformMachineTemplate, inspection: ImageInspection): CapacityDecision {
  const image = templateImage(template);
  const spec = template.spec.capacity;
  const nodeInfoReading =
    inspection.ok && inspection.labels[nodeInfoLabel] !== undefined ? parseNodeInfoLabel(inspection.labels[nodeInfoLabel]) : undefined;
  const nodeInfo = nodeInfoReading?.ok ? { nodeInfo: nodeInfoReading.value } : {};
  if (spec !== undefined) {
    return {
      // Without a reading of the image, capacitySource names none: the next pass reads it again.
      status: { capacity: spec, ...nodeInfo, capacitySource: inspection.ok ? { source: "Spec", image } : { source: "Spec" } },
      condition: { status: "True", reason: "CapacityResolved", message: "capacity from spec.capacity" },
    };
  }
  if (!inspection.ok) {
    // The previous image's values stay until this one is read; the condition says they may be stale.
    const { capacity, nodeInfo: previousNodeInfo, capacitySource } = template.status ?? {};
    return {
      status: {
        ...(capacity ? { capacity } : {}),
        ...(previousNodeInfo ? { nodeInfo: previousNodeInfo as NodeInfo } : {}),
        ...(capacitySource ? { capacitySource: capacitySource as CapacityStatus["capacitySource"] } : {}),
      },
      condition: { status: "False", reason: "ImageInspectFailed", message: `reading the config of ${image} failed: ${inspection.message}` },
    };
  }
  const source = { capacitySource: { source: "Image" as const, image } };
  const label = inspection.labels[capacityLabel];
  const capacityReading = label !== undefined ? parseCapacityLabel(label) : undefined;
  const invalid = [capacityReading, nodeInfoReading].flatMap((reading) => (reading && !reading.ok ? [reading.message] : []));
  if (invalid.length > 0) {
    return { status: source, condition: { status: "False", reason: "CapacityLabelInvalid", message: `${image}: ${invalid.join("; ")}` } };
  }
  if (!capacityReading?.ok) {
    return {
      status: { ...nodeInfo, ...source },
      condition: {
        status: "True",
        reason: "CapacityNotDeclared",
        message: `${image} has no ${capacityLabel} label and spec.capacity is not set`,
      },
    };
  }
  return {
    status: { capacity: capacityReading.value, ...nodeInfo, ...source },
    condition: { status: "True", reason: "CapacityResolved", message: `capacity from the ${capacityLabel} label of ${image}` },
  };
}

/** VariablesValid: the template's user variables (inline and variablesFrom) against the image's variables schema. */
export function decideVariablesValid(inspection: ImageInspection, variables: VariablesReading): ConditionValue {
  if (!variables.ok) {
    return variables.reason === "VariablesSourceNotFound"
      ? { status: "Unknown", reason: "VariablesSourcePending", message: variables.message }
      : { status: "False", reason: "VariablesRejected", message: variables.message };
  }
  if (!inspection.ok)
    return { status: "Unknown", reason: "VariablesSchemaUnavailable", message: `the image could not be read: ${inspection.message}` };
  const schema = inspection.labels[variablesSchemaLabel];
  if (schema === undefined)
    return {
      status: "True",
      reason: "VariablesSchemaNotDeclared",
      message: `the image has no ${variablesSchemaLabel} label: variables are checked when a machine applies`,
    };
  const result = validateAgainstLabelSchema(schema, variablesDocument(variables.variables));
  if (!result.compiled)
    return { status: "Unknown", reason: "VariablesSchemaUnavailable", message: `the ${variablesSchemaLabel} label ${result.message}` };
  if (!result.valid) {
    // Paths and rules only: never a variable's value.
    const problems = result.errors.map((error) => `${error.path.replace(/^\//, "").replace(/\//g, ".") || "variables"} ${error.message}`);
    return {
      status: "False",
      reason: "VariablesRejected",
      message: `the variables do not match the image's schema: ${problems.join("; ")}`,
    };
  }
  return { status: "True", reason: "VariablesValid", message: `the variables match the image's ${variablesSchemaLabel}` };
}

/** The variables as the module sees them: name → value. */
function variablesDocument(variables: UserVariables): Record<string, unknown> {
  return Object.fromEntries(Object.entries(variables).map(([name, variable]) => [name, variable.value]));
}

export interface TemplateStatusFacts {
  template: TerraformMachineTemplate;
  inspection: ImageInspection;
  variables: VariablesReading;
  now: number;
}

export interface TemplateEvent {
  reason: "CapacityResolved" | "ImageInspectFailed";
  note: string;
}

export interface TemplateStatusDecision {
  /** The whole status to write (merge patch; absent fields are removed with null). */
  status: CapacityStatus & { conditions: Condition[] };
  changed: boolean;
  /** CapacityResolved when capacity or its source changed to a resolved value; ImageInspectFailed for an invalid label (once per image). */
  event?: TemplateEvent;
  /** Whether the variables wait for a source: look again in 30 s. */
  variablesPending: boolean;
}

export function decideTemplateStatus(facts: TemplateStatusFacts): TemplateStatusDecision {
  const { template, inspection } = facts;
  const capacity = decideCapacity(template, inspection);
  const variablesValid = decideVariablesValid(inspection, facts.variables);
  const conditions = new ConditionSet();
  conditions.set("CapacityResolved", capacity.condition);
  conditions.set("VariablesValid", variablesValid);
  const status = {
    ...capacity.status,
    conditions: conditions.toStatus(template.status?.conditions as Condition[] | undefined, facts.now, template.metadata?.generation),
  };
  const previous = template.status ?? {};
  const capacityChanged =
    !sameJsonValue(capacity.status.capacity, previous.capacity) || !sameJsonValue(capacity.status.capacitySource, previous.capacitySource);
  const changed =
    capacityChanged ||
    !sameJsonValue(capacity.status.nodeInfo, previous.nodeInfo) ||
    !sameJsonValue(status.conditions, previous.conditions ?? []);
  const event = templateEvent(
    capacity.condition,
    capacityChanged || conditionReason(template, "CapacityResolved") !== capacity.condition.reason,
    capacity.status,
  );
  return { status, changed, ...(event ? { event } : {}), variablesPending: variablesValid.reason === "VariablesSourcePending" };
}

function templateEvent(condition: ConditionValue, transition: boolean, status: CapacityStatus): TemplateEvent | undefined {
  if (!transition) return undefined;
  if (condition.reason === "CapacityResolved") {
    const quantities = Object.entries(status.capacity ?? {})
      .map(([name, value]) => `${name}=${value}`)
      .join(", ");
    const event: TemplateEvent = {
      reason: "CapacityResolved",
      note:
        `${quantities} from ` +
        `${status.capacitySource?.source === "Spec" ? "spec.capacity" : `the image ${status.capacitySource?.image ?? ""}`}`,
    };
    return event;
  }
  // An invalid label is the image failing inspection for good: one event per image.
  if (condition.reason === "CapacityLabelInvalid") return { reason: "ImageInspectFailed", note: condition.message ?? "" };
  return undefined;
}
