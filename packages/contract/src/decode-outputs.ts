import { canonicalJson, compareCodePoints, NonIntegerNumberError } from "./json-encoding.js";
import type { Endpoint, JsonValue, RoleInputs } from "./inputs.js";
import { roleTables } from "./role-table.js";
import { validateDocument } from "./validate.js";
import type { Role } from "./version.js";

/** How one contract output decoded. Reasons never quote the output's value. */
export type OutputState<T> =
  | { state: "ok"; value: T; note?: string }
  | { state: "pending" }
  | { state: "missing" }
  | { state: "invalid"; reason: string; conditionReason: "OutputsInvalid" | "FailureDomainMismatch" };

export type HealthState = "pending" | "running" | "degraded" | "stopped" | "terminated" | "unknown";
export const healthStates: readonly HealthState[] = ["pending", "running", "degraded", "stopped", "terminated", "unknown"];

export interface Health {
  state: HealthState;
  healthy: boolean;
  message: string | null;
  reasons: string[];
}

export interface FailureDomain {
  name: string;
  control_plane: boolean;
  attributes: Record<string, string>;
}

export type AddressType = "InternalIP" | "InternalDNS" | "ExternalIP" | "ExternalDNS" | "Hostname";
/** The canonical order of machine addresses: by type in this order, then by address. */
export const addressTypeOrder: readonly AddressType[] = ["InternalIP", "InternalDNS", "ExternalIP", "ExternalDNS", "Hostname"];

export interface MachineAddress {
  type: AddressType;
  address: string;
}

export interface PoolInstance {
  provider_id: string;
  instance_id: string | null;
  addresses: MachineAddress[];
  failure_domain: string | null;
  state: HealthState | null;
}

export interface DecodedOutputs {
  cluster: {
    control_plane_endpoint: OutputState<Endpoint | null>;
    failure_domains: OutputState<FailureDomain[]>;
    exports: OutputState<JsonValue>;
    health: OutputState<Health>;
  };
  machine: {
    provider_id: OutputState<string>;
    addresses: OutputState<MachineAddress[]>;
    failure_domain: OutputState<string | null>;
    interruptible: OutputState<boolean>;
    health: OutputState<Health>;
  };
  machinepool: {
    provider_id: OutputState<string | null>;
    provider_id_list: OutputState<string[]>;
    replicas: OutputState<number>;
    instances: OutputState<PoolInstance[]>;
    health: OutputState<Health>;
  };
}

export type OutputsReason =
  | "OutputsMissing"
  | "OutputsInvalid"
  | "FailureDomainMismatch"
  | "OutputsPending"
  | "InstancesTruncated"
  | "OutputsValid";

/** The result of decoding a role's outputs: one state per output and the OutputsValid condition they add up to. */
export interface OutputsDecoding<R extends Role> {
  role: R;
  outputs: DecodedOutputs[R];
  /** The OutputsValid reason, by precedence Missing > Invalid > FailureDomainMismatch > Pending > Truncated > Valid. */
  reason: OutputsReason;
  status: "True" | "False" | "Unknown";
  /** Every problem, one line each, naming the output, never its value. */
  problems: string[];
  /** For pools: `instances` held more than {@link maxInstances} entries and was cut. */
  instancesTruncated: boolean;
}

/** A pool's `instances` is cut to this many entries. */
export const maxInstances = 1000;
/** A machine's `addresses` may hold at most this many entries after de-duplication. */
export const maxAddresses = 256;

const reasonPrecedence: readonly OutputsReason[] = [
  "OutputsMissing",
  "OutputsInvalid",
  "FailureDomainMismatch",
  "OutputsPending",
  "InstancesTruncated",
  "OutputsValid",
];

/** Outputs whose null means "use this value" rather than "not known yet". */
const nullDefaults: Partial<Record<Role, Record<string, JsonValue>>> = {
  cluster: { failure_domains: [], exports: {} },
  machine: { addresses: [], interruptible: false },
};

/** Outputs for which null is itself a valid, final value. */
const nullAllowed: Partial<Record<Role, readonly string[]>> = {
  cluster: ["control_plane_endpoint"],
  machine: ["failure_domain"],
  machinepool: ["provider_id"],
};

/** Identifier outputs normalized from "" to null before any check. */
const idOutputs: Partial<Record<Role, readonly string[]>> = {
  machine: ["provider_id"],
  machinepool: ["provider_id"],
};

export interface DecodeOptions {
  /**
   * The values come from a state document, which never holds a null output: an absent
   * output whose null is meaningful is read as null, the others stay missing.
   */
  fromState?: boolean;
}

/**
 * Reads the plain output values (`{name: value}`) out of a Terraform/OpenTofu state document.
 * Note that Terraform does not persist null outputs: a null output reads as absent here.
 */
export function outputValuesFromState(state: unknown): Record<string, unknown> {
  const outputs = (state as { outputs?: unknown } | null)?.outputs;
  if (!outputs || typeof outputs !== "object" || Array.isArray(outputs)) return {};
  const values: Record<string, unknown> = {};
  for (const [name, entry] of Object.entries(outputs as Record<string, unknown>)) {
    if (entry && typeof entry === "object" && "value" in entry) values[name] = (entry as { value: unknown }).value;
  }
  return values;
}

/**
 * Decodes a role's contract outputs from plain values (`{name: value}`): absent is
 * missing, null is pending (or the documented default), a value that breaks the
 * contract is invalid with a reason. Checks the schemas cannot express: unique
 * failure-domain names, integer-only `exports`, the canonical address order, a
 * machine's `failure_domain` equal to the requested one, `provider_id_list` sorted
 * and distinct, and `instances` truncated past 1000. Never throws.
 */
export function decodeOutputs<R extends Role>(
  role: R,
  rawOutputs: unknown,
  requestedInputs?: Partial<RoleInputs[R]>,
  options: DecodeOptions = {},
): OutputsDecoding<R> {
  const table = roleTables[role];
  const isObject = Boolean(rawOutputs) && typeof rawOutputs === "object" && !Array.isArray(rawOutputs);
  // A copy: normalization below must not write into the caller's object.
  const raw: Record<string, unknown> = isObject ? { ...(rawOutputs as Record<string, unknown>) } : {};
  const states: Record<string, OutputState<unknown>> = {};
  const problems: string[] = [];
  if (!isObject) problems.push("the outputs are not an object");

  // Normalize: absent, null and "" first, so the schema only sees candidate values.
  const candidates: Record<string, unknown> = {};
  for (const spec of table.outputs) {
    const name = spec.name;
    if (!Object.prototype.hasOwnProperty.call(raw, name) || raw[name] === undefined) {
      if (options.fromState && spec.nullable) {
        raw[name] = null; // Terraform drops null outputs from state: absent there is null
      } else {
        states[name] = { state: "missing" };
        problems.push(`output ${name} is not declared by the module`);
        continue;
      }
    }
    let value = raw[name];
    if (idOutputs[role]?.includes(name) && value === "") value = null;
    if (role === "cluster" && name === "control_plane_endpoint" && isEmptyEndpoint(value)) value = null;
    if (value === null) {
      const fallback = nullDefaults[role]?.[name];
      if (fallback !== undefined) value = structuredClone(fallback);
      else if (nullAllowed[role]?.includes(name)) {
        const checked = checkOutput(role, name, null, requestedInputs as Record<string, unknown> | undefined);
        if ("invalid" in checked) setInvalid(name, checked.invalid, checked.conditionReason);
        else states[name] = { state: "ok", value: null };
        continue;
      } else {
        states[name] = { state: "pending" };
        problems.push(`output ${name} is not known yet (null)`);
        continue;
      }
    }
    candidates[name] = withoutDuplicateAddresses(role, name, value);
  }

  // Shapes and limits: the outputs schema, restricted to the candidate outputs.
  const schemaErrors = new Map<string, string[]>();
  const validation = validateDocument(role, "outputs", candidates);
  for (const error of validation.errors) {
    const name = decodePointerHead(error.path);
    if (name === undefined || !(name in candidates)) continue;
    const list = schemaErrors.get(name) ?? [];
    list.push(`${error.path} ${error.message}`);
    schemaErrors.set(name, list);
  }

  let instancesTruncated = false;
  for (const [name, value] of Object.entries(candidates)) {
    const errors = schemaErrors.get(name);
    if (errors) {
      setInvalid(name, `output ${name} is invalid: ${errors.join("; ")}`);
      continue;
    }
    const checked = checkOutput(role, name, value, requestedInputs as Record<string, unknown> | undefined);
    if ("invalid" in checked) {
      setInvalid(name, checked.invalid, checked.conditionReason);
      continue;
    }
    if (checked.truncated) instancesTruncated = true;
    states[name] = checked.note ? { state: "ok", value: checked.value, note: checked.note } : { state: "ok", value: checked.value };
    if (checked.note) problems.push(checked.note);
  }

  const present = new Set<OutputsReason>();
  for (const state of Object.values(states)) {
    if (state.state === "missing") present.add("OutputsMissing");
    else if (state.state === "pending") present.add("OutputsPending");
    else if (state.state === "invalid") present.add(state.conditionReason);
  }
  if (!isObject) present.add("OutputsInvalid");
  if (instancesTruncated) present.add("InstancesTruncated");
  const reason = reasonPrecedence.find((r) => present.has(r)) ?? "OutputsValid";
  const status = reason === "OutputsValid" || reason === "InstancesTruncated" ? "True" : reason === "OutputsPending" ? "Unknown" : "False";
  return { role, outputs: states as unknown as DecodedOutputs[R], reason, status, problems, instancesTruncated };

  function setInvalid(name: string, reason: string, conditionReason: "OutputsInvalid" | "FailureDomainMismatch" = "OutputsInvalid"): void {
    states[name] = { state: "invalid", reason, conditionReason };
    problems.push(reason);
  }
}

type Checked =
  | { value: unknown; note?: string; truncated?: boolean }
  | { invalid: string; conditionReason?: "OutputsInvalid" | "FailureDomainMismatch" };

function checkOutput(role: Role, name: string, value: unknown, requested: Record<string, unknown> | undefined): Checked {
  if (name === "health") return { value: decodeHealth(value as Record<string, unknown>) };
  if (role === "cluster" && name === "failure_domains") return checkFailureDomains(value as Record<string, unknown>[]);
  if (role === "cluster" && name === "exports") {
    try {
      canonicalJson(value, "integer");
    } catch (error) {
      if (error instanceof NonIntegerNumberError) {
        return {
          invalid: `output exports contains a fractional or exponent number at ${error.path || "/"}: export numbers as integers or strings`,
        };
      }
      return { invalid: `output exports is not a JSON value: ${(error as Error).message}` };
    }
    return { value };
  }
  if (role === "machine" && name === "addresses") return { value: canonicalAddresses(value as MachineAddress[]) };
  if (role === "machine" && name === "failure_domain") {
    const wanted = requested?.failure_domain;
    if (typeof wanted === "string" && value !== wanted) {
      return {
        invalid:
          "output failure_domain differs from the failure_domain input: a machine must be placed in the failure domain it was asked for",
        conditionReason: "FailureDomainMismatch",
      };
    }
    return { value };
  }
  if (role === "machinepool" && name === "provider_id_list") {
    const list = value as string[];
    const normalized = [...new Set(list)].sort(compareCodePoints);
    const changed = normalized.length !== list.length || normalized.some((id, i) => id !== list[i]);
    return changed
      ? {
          value: normalized,
          note: "output provider_id_list was not sorted and distinct: wrap it in sort(distinct(...)); captf sorted and de-duplicated it",
        }
      : { value: list };
  }
  if (role === "machinepool" && name === "instances") {
    const raw = value as Record<string, unknown>[];
    const instances: PoolInstance[] = [];
    for (const entry of raw) {
      instances.push({
        provider_id: entry.provider_id as string,
        instance_id: (entry.instance_id as string | undefined) ?? null,
        addresses: canonicalAddresses((entry.addresses as MachineAddress[] | undefined) ?? []),
        failure_domain: (entry.failure_domain as string | undefined) ?? null,
        state: (entry.state as HealthState | undefined) ?? null,
      });
    }
    if (instances.length > maxInstances) {
      return {
        value: instances.slice(0, maxInstances),
        truncated: true,
        note: `output instances has ${instances.length} entries; only the first ${maxInstances} are kept`,
      };
    }
    return { value: instances };
  }
  return { value };
}

function decodeHealth(value: Record<string, unknown>): Health {
  return {
    state: value.state as HealthState,
    healthy: value.healthy as boolean,
    message: (value.message as string | null | undefined) ?? null,
    reasons: (value.reasons as string[] | null | undefined) ?? [],
  };
}

function checkFailureDomains(list: Record<string, unknown>[]): Checked {
  const seen = new Set<string>();
  const duplicates = new Set<string>();
  const domains: FailureDomain[] = [];
  for (const entry of list) {
    const name = entry.name as string;
    if (seen.has(name)) duplicates.add(name);
    seen.add(name);
    domains.push({
      name,
      control_plane: (entry.control_plane as boolean | null | undefined) ?? true,
      attributes: (entry.attributes as Record<string, string> | null | undefined) ?? {},
    });
  }
  if (duplicates.size > 0) {
    return {
      invalid: `output failure_domains has duplicate names (${[...duplicates]
        .sort()
        .map((n) => JSON.stringify(n))
        .join(", ")}): each failure domain needs a unique name`,
    };
  }
  return { value: domains };
}

/** The contract drops duplicate addresses before the schema counts them (at most 256 after de-duplication). */
function withoutDuplicateAddresses(role: Role, name: string, value: unknown): unknown {
  if (role === "machine" && name === "addresses") return distinctAddresses(value);
  if (role === "machinepool" && name === "instances" && Array.isArray(value)) {
    return value.map((instance: unknown) =>
      instance && typeof instance === "object" && !Array.isArray(instance) && "addresses" in instance
        ? { ...instance, addresses: distinctAddresses((instance as { addresses: unknown }).addresses) }
        : instance,
    );
  }
  return value;
}

/** The first of each (type, address) pair; entries of any other shape stay for the schema to reject. */
function distinctAddresses(list: unknown): unknown {
  if (!Array.isArray(list)) return list;
  const seen = new Set<string>();
  return list.filter((entry: unknown) => {
    const { type, address } = (entry ?? {}) as Record<string, unknown>;
    if (typeof type !== "string" || typeof address !== "string") return true;
    const key = `${type}\u0000${address}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** Addresses arrive distinct and within the schema's 256; only the canonical order and shape remain. */
function canonicalAddresses(list: MachineAddress[]): MachineAddress[] {
  return list
    .map((entry) => ({ type: entry.type, address: entry.address }))
    .sort((a, b) => addressTypeOrder.indexOf(a.type) - addressTypeOrder.indexOf(b.type) || compareCodePoints(a.address, b.address));
}

function isEmptyEndpoint(value: unknown): boolean {
  if (!value || typeof value !== "object") return false;
  const endpoint = value as Record<string, unknown>;
  return endpoint.host === "" && endpoint.port === 0;
}

function decodePointerHead(path: string): string | undefined {
  const head = path.split("/")[1];
  return head === undefined ? undefined : head.replace(/~1/g, "/").replace(/~0/g, "~");
}
