import { managerEventReasons, negativePolarityConditions, type ConditionType, type ManagerEventReason } from "@captf/contract/api";
import type { Changes } from "@captf/contract/run-result";
import type { Condition } from "../conditions/conditions.js";
import type { Decision } from "./decide-operation.js";

/**
 * The events a pass owes for what changed between the status it read and the status it wrote
 * (reference §4.1): once per transition, never per pass; a condition that appears emits only if it
 * starts bad; notes name conditions, reasons and failure-domain names, never messages (they may quote
 * outputs or a runner's summary), credentials, variables or output values. Pure.
 */

export type EventType = "Normal" | "Warning";

export interface TransitionEvent {
  reason: ManagerEventReason;
  type: EventType;
  note: string;
  /** The condition reason the event reports (OutputsInvalid: the `reason` label of captf_outputs_invalid_total). */
  cause?: string;
}

/** What a pass read of a status, or wrote as its merge patch (a field left out is unchanged, null removes it). */
export interface StatusView {
  conditions?: readonly Pick<Condition, "type" | "status" | "reason">[] | null;
  failureDomains?: readonly { name?: string; controlPlane?: boolean; attributes?: Record<string, string> }[] | null;
  exports?: unknown;
  observedStateSerial?: number | null;
  /** Whether provisioning had latched: a Ready that returns after it is regained, the first one is Provisioned's news. */
  initialization?: { provisioned?: boolean } | null;
}

export interface TransitionFacts {
  /** The kind of the object, for notes. */
  kind: string;
  /** The module's exports were not published: their compact JSON has this many bytes, over the limit. */
  exportsNotPublished?: { bytes: number; limit: number };
}

/** InfrastructureHealthy reasons of an instance that is there but not well: InstanceUnhealthy events. */
const unhealthyReasons: readonly string[] = ["InstanceUnhealthy", "InstanceDegraded", "InstanceStopped", "InstanceTerminated"];

/** StateReadable reasons of a state that is there but cannot be read: event StateUnreadable. */
const unreadableStateReasons: readonly string[] = ["StateCorrupt", "StateEncrypted", "StateInconsistent", "StateTooLarge"];

/**
 * The conditions the generic ConditionChanged covers, each with the bad reasons whose transition already has
 * an event of its own (JobFailed, StateLocked, ...) and whether its recovery has one (JobSucceeded).
 * Left out: Ready (a summary of the others), and conditions whose every transition has its own event
 * (Paused, Deleting, IdentityAllowed, DriftDetected, RestoreJobSucceeded, InfrastructureHealthy) or that say
 * what is due rather than what is wrong (InputsApplied).
 */
const generic: { [T in ConditionType]?: { ownEvents?: readonly string[]; ownRecovery?: boolean; notBad?: readonly string[] } } = {
  DependenciesReady: {},
  CredentialsMirrored: {},
  RunnerRBACReady: {},
  ApplyJobSucceeded: {
    ownEvents: [
      "ApplyFailed",
      "DestroyFailed",
      "JobDeadlineExceeded",
      "ImagePullFailed",
      "ImageInvalid",
      "DestructivePlanBlocked",
      "StateNotSaved",
      "IdentityNotAllowed",
    ],
    ownRecovery: true,
  },
  StateReadable: { ownEvents: ["StateLost", "StateLocked", "RetainedStateFound", "StateLineageChanged", ...unreadableStateReasons] },
  // Its bad transitions are OutputsInvalid events; its recovery is generic.
  OutputsValid: { ownEvents: ["OutputsMissing", "OutputsInvalid", "FailureDomainMismatch", "ProviderIDChanged"] },
  DriftJobSucceeded: { ownEvents: ["DriftJobFailed", "DriftJobDeadlineExceeded"], ownRecovery: true },
  DeletionBlocked: {},
  EndpointAvailable: {},
  AutoscalingActive: { ownEvents: ["ReplicasManagedExternally"], notBad: ["AutoscalingDisabled"] },
};

type ConditionView = Pick<Condition, "type" | "status" | "reason">;

function isNegative(type: string): boolean {
  return (negativePolarityConditions as readonly string[]).includes(type);
}

/** A condition in its bad state: False (True for Deleting, DriftDetected, DeletionBlocked), unless the reason is a choice, not a fault. */
export function isBad(condition: ConditionView | undefined): boolean {
  if (!condition) return false;
  if (generic[condition.type as ConditionType]?.notBad?.includes(condition.reason)) return false;
  return condition.status === (isNegative(condition.type) ? "True" : "False");
}

function isGood(condition: ConditionView | undefined): boolean {
  return condition !== undefined && condition.status === (isNegative(condition.type) ? "False" : "True");
}

const describe = (condition: ConditionView | undefined) => (condition ? `${condition.status} (${condition.reason})` : "not reported");

function event(reason: ManagerEventReason, note: string, type: EventType = managerEventReasons[reason], cause?: string): TransitionEvent {
  return { reason, type, note, ...(cause ? { cause } : {}) };
}

/** A field as the status holds it after a merge patch of `written` over `before`. */
function merged<K extends keyof StatusView>(before: StatusView, written: StatusView, key: K): StatusView[K] | undefined {
  const value = key in written && written[key] !== undefined ? written[key] : before[key];
  return value === null ? undefined : value;
}

/** The failure domains as a comparable text, and their names. */
function domains(list: StatusView["failureDomains"]): { key: string; names: string[] } {
  const sorted = [...(list ?? [])].sort((a, b) => String(a.name).localeCompare(String(b.name)));
  const entries = sorted.map((domain) => [domain.name, domain.controlPlane === true, Object.entries(domain.attributes ?? {}).sort()]);
  return { key: JSON.stringify(entries), names: sorted.map((domain) => String(domain.name)) };
}

const nameList = (names: string[]) => (names.length ? names.join(", ") : "none");

/**
 * Ready lost (it was True) and regained (True again once provisioned): what needs a person. Not while the object is deleted,
 * whose Ready goes with it.
 */
function readyEvents(
  after: ConditionView,
  was: ConditionView | undefined,
  change: string,
  before: StatusView,
  conditions: readonly ConditionView[],
): TransitionEvent[] {
  if (was?.status === "True" && after.status !== "True") {
    const deleting = conditions.some((condition) => condition.type === "Deleting" && condition.status === "True");
    return deleting ? [] : [event("ReadyLost", `Ready was lost: ${change}`, undefined, after.reason)];
  }
  if (after.status === "True" && was !== undefined && before.initialization?.provisioned === true)
    return [event("ReadyRegained", `Ready again: ${change}`, undefined, after.reason)];
  return [];
}

/** The events owed for the change from `before` (the status read) to `written` (the status this pass wrote). Pure. */
export function transitionEvents(before: StatusView, written: StatusView, facts: TransitionFacts): TransitionEvent[] {
  const events: TransitionEvent[] = [];
  const previous = new Map((before.conditions ?? []).map((condition) => [condition.type, condition]));
  for (const after of merged(before, written, "conditions") ?? []) {
    const was = previous.get(after.type);
    if (was && was.status === after.status && was.reason === after.reason) continue;
    const change = `${after.type} is ${describe(after)}, was ${describe(was)}`;
    if (after.type === "Ready") {
      events.push(...readyEvents(after, was, change, before, merged(before, written, "conditions") ?? []));
      continue;
    }
    if (after.type === "InfrastructureHealthy") {
      if (unhealthyReasons.includes(after.reason))
        events.push(event("InstanceUnhealthy", `the ${facts.kind}'s instance is not healthy: ${change}`));
      else if (after.reason === "Healthy" && was && unhealthyReasons.includes(was.reason))
        events.push(event("InstanceHealthy", `the ${facts.kind}'s instance is healthy again: ${change}`));
      continue;
    }
    if (after.type === "OutputsValid" && after.status === "False") {
      events.push(
        event(
          "OutputsInvalid",
          `the module's outputs are not valid (${after.reason}); the condition OutputsValid lists the problems`,
          undefined,
          after.reason,
        ),
      );
      continue;
    }
    if (after.type === "StateReadable" && after.status === "False" && unreadableStateReasons.includes(after.reason)) {
      events.push(
        event(
          "StateUnreadable",
          `the state cannot be read (${after.reason}); nothing runs on it until it is repaired or restored: ${change}`,
        ),
      );
      continue;
    }
    const rule = generic[after.type as ConditionType];
    if (!rule) continue;
    if (isBad(after) && !(isBad(was) && was!.reason === after.reason)) {
      if (!rule.ownEvents?.includes(after.reason)) events.push(event("ConditionChanged", change, "Warning", after.reason));
    } else if (isGood(after) && isBad(was) && !rule.ownRecovery) {
      events.push(event("ConditionChanged", change, "Normal", after.reason));
    }
  }

  // A first publication is part of Provisioned; a change after it, or the domains going away, is news.
  const domainsBefore = domains(before.failureDomains);
  const domainsAfter = domains(merged(before, written, "failureDomains"));
  if (domainsBefore.names.length > 0 && domainsAfter.key !== domainsBefore.key) {
    events.push(
      event("FailureDomainsChanged", `failure domains now ${nameList(domainsAfter.names)} (were ${nameList(domainsBefore.names)})`),
    );
  }

  // Once per transition to too large: the pass that clears published exports, or the first state read (nothing was published yet).
  const limit = facts.exportsNotPublished;
  if (
    limit &&
    ((before.exports !== undefined && before.exports !== null) ||
      before.observedStateSerial === undefined ||
      before.observedStateSerial === null)
  ) {
    events.push(
      event(
        "ExportsNotPublished",
        `the module's exports are ${limit.bytes} bytes as compact JSON, over the ${limit.limit} bytes status.exports holds: ` +
          `status.exports is cleared (machines and pools still read them from the state)`,
      ),
    );
  }
  return events;
}

/** What the start of a Job owes: InputsChanged once per new inputs hash applied, DriftRemediationStarted. Pure. */
export function jobStartEvents(start: {
  op: string;
  job: string;
  decision: Pick<Decision, "reason" | "remediation">;
  inputsHash: string;
  /** The inputs hash of the last apply started (the durable inputs'), successful or not. */
  startedApplyHash: string | undefined;
  /** The inputs hash the state records: the last successful apply's. */
  appliedHash: string | undefined;
}): { events: TransitionEvent[]; inputsHashChanged: boolean } {
  const events: TransitionEvent[] = [];
  // A retry of the same inputs wrote their hash to the durable inputs when it started: no second event.
  const inputsHashChanged =
    start.op === "apply" && start.decision.reason === "InputsChanged" && start.inputsHash !== start.startedApplyHash;
  if (inputsHashChanged)
    events.push(
      event(
        "InputsChanged",
        `the inputs changed since the last successful apply (${start.appliedHash ?? "none"} -> ${start.inputsHash}): Job ` +
          `${start.job} applies them`,
      ),
    );
  if (start.op === "apply" && start.decision.remediation)
    events.push(event("DriftRemediationStarted", `Job ${start.job} applies the current inputs over the drift found`));
  return { events, inputsHashChanged };
}

/** The counts of captf_resources_changed_total a finished Job's result reports (its apply or destroy step's closing line). Pure. */
export function resourceChanges(changes: Changes | undefined): { action: "add" | "change" | "destroy" | "import"; count: number }[] {
  if (!changes) return [];
  return (["add", "change", "destroy", "import"] as const).map((action) => ({ action, count: changes[action] ?? 0 }));
}
