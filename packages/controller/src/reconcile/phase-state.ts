// The state phase: the state (lineage checked), its backups, a requested restore and the state lock; then the durable inputs' notes.
import { stateOwner } from "./phase-jobs.js";
import { annotations, groupVersion } from "@captf/contract/api";
import { previousReason } from "../conditions/conditions.js";
import { ignoreNotFound } from "../runtime/api-errors.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import { newestResourceVersion } from "../runtime/read-cache.js";
import type { StateReading } from "../state/decode-state.js";
import type { V1Secret } from "@kubernetes/client-node";
import { observeState, type StateObservation } from "../state/read-state.js";
import {
  backupPlacement,
  backupSecretName,
  backupSets,
  backupsToPrune,
  listBackupSecrets,
  stateDigest,
  takeStateBackup,
  type BackupSet,
} from "../state/state-backups.js";
import { observeStateLock, stateLockedMessage, type StateLockFinding } from "../state/state-lock.js";
import { repairStateOwnership } from "../state/state-ownership.js";
import { newStateReadError } from "../state/state-read-errors.js";
import { readStateEncryption, withStateEncryption } from "./encrypted-state.js";
import type { ObservedJob } from "./observe-jobs.js";
import { type Pass, next, type Phase } from "./types.js";
import { writeDurableNotes } from "./pass-writes.js";

const defaultStateBackups = 5;

/** The state as the decision sees it, and what the pass does about retained state and a requested restore. */
export interface StatePhase {
  state: StateReading;
  stateLost: boolean;
  retainedBy: string[];
  restoreSet: BackupSet | undefined;
  lock: StateLockFinding;
}

/** The state as this object may use it (lineage checked, decrypted), recording its lineage on the durable inputs the first time. */
async function readObjectState(pass: Pass, jobs: readonly ObservedJob[]): Promise<{ observed: StateObservation; state: StateReading }> {
  const { deps, object, namespace, suffix, durable, scope } = pass;
  const { deleting } = scope;
  const encryption = await readStateEncryption(deps.client, namespace, object.spec.stateEncryption);
  const observed = await observeState(
    deps.client,
    namespace,
    suffix,
    undefined,
    { cache: deps.cache, freshAsOf: newestResourceVersion(jobs.map((job) => job.job.metadata?.resourceVersion)) },
    encryption.kind === "ready" ? encryption.decryption : undefined,
  );
  // A state of another lineage is another state (pushed or restored over this object's): nothing runs on it.
  const state = withStateEncryption(lineageCheck(observed.reading, durable?.stateLineage), encryption, deleting);
  scope.state = state;
  if (observed.reading.kind === "ok" && observed.reading.state.lineage && durable && !durable.stateLineage && !deleting) {
    pass.durableNotes.annotations[annotations.stateLineage] = observed.reading.state.lineage;
    durable.stateLineage = observed.reading.state.lineage;
  }
  return { observed, state };
}

/** An adopted state's chunks stay owned: a chunk written later or stripped is re-owned while no Job writes them. */
async function repairOwnership(pass: Pass, observed: StateObservation, state: StateReading, active: ObservedJob | undefined) {
  const { deps, adapter, namespace, suffix, events, subject, scope } = pass;
  if (active || scope.paused || scope.deleting || observed.retainedFromUids.length > 0 || state.kind !== "ok" || !state.state.inputsHash)
    return;
  const repaired = await repairStateOwnership(deps.client, namespace, suffix, observed.secrets, stateOwner(pass));
  if (repaired.length > 0)
    void events.record(subject, "OwnerReferencesRepaired", `state Secret(s) ${repaired.join(", ")} owned by this ${adapter.kind} again`);
}

/** The serial `captf.io/restore-state` asks for (undefined when it names none), and its complete backup set when one is kept. */
function requestedRestore(pass: Pass, backups: readonly BackupSet[]): { restoreSerial?: number; restoreSet?: BackupSet } {
  const { deps, adapter, object, scope } = pass;
  const restoreAnnotation = object.metadata.annotations?.[annotations.restoreState];
  const restoreSerial =
    restoreAnnotation !== undefined && /^[1-9][0-9]{0,15}$/.test(restoreAnnotation) ? Number(restoreAnnotation) : undefined;
  const lastRestoredSerial = (scope.fields.lastRestoredSerial as number | undefined) ?? object.status?.lastRestoredSerial;
  if (restoreAnnotation === undefined || (restoreSerial !== undefined && restoreSerial === lastRestoredSerial)) return { restoreSerial };
  const restoreSet = backups.find((set) => set.serial === restoreSerial && set.complete);
  if (!restoreSet) {
    scope.restoreBackupNotFound = restoreAnnotation;
    deps.metrics?.stateRestores.inc({ kind: adapter.kind, result: "not_found" });
  }
  return { restoreSerial, ...(restoreSet ? { restoreSet } : {}) };
}

/** Copies a state serial no backup holds yet; the Secrets of the set written, or undefined (held already, or the copy failed). */
async function backUpState(
  pass: Pass,
  jobs: readonly ObservedJob[],
  observed: StateObservation,
  state: Extract<StateReading, { kind: "ok" }>,
  backups: readonly BackupSet[],
): Promise<V1Secret[] | undefined> {
  const { deps, adapter, object, namespace, name, suffix, events, subject, now } = pass;
  const { serial } = state.state;
  const digest = stateDigest(observed.secrets);
  const placement = backupPlacement(backups, suffix, serial, digest);
  if (placement.kind === "present") {
    // A serial new to this object whose state a backup already holds (a restored one, or a pass that lost its status): counted once.
    if (object.status?.observedStateSerial !== serial) deps.metrics?.stateBackups.inc({ kind: adapter.kind, result: "skipped" });
    return undefined;
  }
  const source = jobs.filter((job) => job.outcome === "succeeded").sort((a, b) => b.finishedAt! - a.finishedAt!)[0];
  const taken = await takeStateBackup(deps.client, {
    namespace,
    suffix,
    setName: placement.name,
    digest,
    owner: { apiVersion: groupVersion, kind: adapter.kind, name, uid: object.metadata.uid },
    stateSecrets: observed.secrets,
    serial,
    lineage: state.state.lineage,
    resources: state.state.managedResources,
    ...(state.state.inputsHash ? { inputsHash: state.state.inputsHash } : {}),
    ...(source ? { sourceJob: source.name } : {}),
    now,
  }).catch((error: unknown) => {
    // A backup never fails the pass: it is counted and logged, and the next pass tries again.
    deps.metrics?.stateBackups.inc({ kind: adapter.kind, result: "skipped" });
    deps.logger?.warn({ error: (error as Error).message, serial }, "could not back up the state");
    return undefined;
  });
  if (!taken) return undefined;
  deps.metrics?.stateBackups.inc({ kind: adapter.kind, result: "taken" });
  const beside = placement.name === backupSecretName(suffix, serial, 0) ? "" : ` as ${placement.name}, beside another state of that serial`;
  void events.record(subject, "StateBackedUp", `state serial ${serial} backed up (${taken.bytes} bytes)${beside}`);
  return taken.created;
}

/** Backups: each serial read for the first time is copied, those beyond the limit pruned, the kept ones on the status. */
async function observeBackups(
  pass: Pass,
  jobs: readonly ObservedJob[],
  observed: StateObservation,
  state: StateReading,
  retained: boolean,
) {
  const { deps, adapter, namespace, suffix, scope } = pass;
  const keepBackups = deps.stateBackups ?? defaultStateBackups;
  const backupSecrets = await listBackupSecrets(deps.client, namespace, suffix, deps.cache);
  let backups = backupSets(backupSecrets);
  const { restoreSerial, restoreSet } = requestedRestore(pass, backups);
  if (state.kind === "ok" && state.state.serial >= 1 && !scope.deleting && keepBackups > 0 && !retained) {
    const created = await backUpState(pass, jobs, observed, state, backups);
    // The sets as listed plus the one just written (no list, which the cache could not answer yet).
    const written = new Set(created?.map((secret) => secret.metadata?.name));
    if (created) backups = backupSets([...backupSecrets.filter((secret) => !written.has(secret.metadata?.name)), ...created]);
  }
  const pruned = new Set(backupsToPrune(backups, keepBackups, restoreSerial));
  for (const secret of pruned) await deps.client.delete(builtinTypes.secret, namespace, secret).catch(ignoreNotFound);
  if (pruned.size > 0) deps.metrics?.stateBackups.inc({ kind: adapter.kind, result: "pruned" });
  const keptBackups = backups.filter((set) => set.complete && !set.names.some((secret) => pruned.has(secret)));
  if (keptBackups.length > 0)
    scope.fields.stateBackups = keptBackups
      .slice(0, 16)
      .map(({ serial, takenAt, bytes }) => ({ serial, takenAt, bytes: Math.max(1, bytes) }));
  return { backups, restoreSet };
}

/**
 * The state lock, read while no Job runs: a foreign holder is reported, a stale lock of this object's own dead runner goes to the
 * next Job's force-unlock.
 */
async function observeLock(
  pass: Pass,
  active: ObservedJob | undefined,
  state: StateReading,
  stateLost: boolean,
): Promise<StateLockFinding> {
  const { deps, adapter, namespace, name, suffix, events, subject, scope } = pass;
  const lock: StateLockFinding = active
    ? { kind: "free" }
    : await observeStateLock({ client: deps.client, cache: deps.cache }, namespace, suffix, { role: adapter.role, name });
  scope.lock = lock;
  if (lock.kind === "foreign" && state.kind !== "unreadable" && !stateLost) {
    if (previousReason(scope.previous, "StateReadable") !== "StateLocked")
      void events.record(subject, "StateLocked", stateLockedMessage(lock));
  }
  return lock;
}

/** Counted once per transition into an unreadable state, with the reason StateReadable reports. */
function countReadError(pass: Pass, facts: Omit<StatePhase, "restoreSet">): void {
  const { deps, adapter, scope } = pass;
  const { state, stateLost, retainedBy, lock } = facts;
  const readableReason =
    retainedBy.length > 0 && !scope.deleting
      ? "RetainedStateFound"
      : state.kind === "unreadable"
        ? state.reason
        : stateLost
          ? "StateLost"
          : lock.kind === "foreign"
            ? "StateLocked"
            : undefined;
  const readError = newStateReadError(previousReason(scope.previous, "StateReadable"), readableReason);
  if (readError) deps.metrics?.stateReadErrors.inc({ kind: adapter.kind, reason: readError });
}

/** The state (lineage checked), its backups (taken, pruned), a requested restore's backup, and the state lock while no Job runs. */
export async function observeStateAndBackups(
  pass: Pass,
  jobs: readonly ObservedJob[],
  active: ObservedJob | undefined,
  wasProvisioned: boolean,
): Promise<StatePhase> {
  const { adapter, object, events, subject, durable, scope } = pass;
  const { previous } = scope;
  const { observed, state } = await readObjectState(pass, jobs);
  const retainedBy = observed.retainedFromUids.filter((uid) => uid !== object.metadata.uid);
  await repairOwnership(pass, observed, state, active);
  const { backups, restoreSet } = await observeBackups(pass, jobs, observed, state, retainedBy.length > 0);
  // State that was there and is gone is lost, not new: nothing but a restore (or Retain) runs on it.
  const everApplied = wasProvisioned || durable?.applied === true || durable?.imageDigest !== undefined || backups.length > 0;
  const stateLost = state.kind === "absent" && everApplied;
  scope.stateLost = stateLost;
  if (stateLost && previousReason(previous, "StateReadable") !== "StateLost")
    void events.record(subject, "StateLost", `the state of this ${adapter.kind} is gone; nothing runs on it until a backup is restored`);
  if (state.kind === "unreadable" && state.reason === "StateLineageChanged" && previousReason(previous, "StateReadable") !== state.reason)
    void events.record(subject, "StateLineageChanged", state.message);
  const lock = await observeLock(pass, active, state, stateLost);
  countReadError(pass, { state, stateLost, retainedBy, lock });
  return { state, stateLost, retainedBy, restoreSet, lock };
}

/** The reading as this object may use it: a decoded state of a lineage other than the recorded one is unreadable. Pure. */
export function lineageCheck(reading: StateReading, recordedLineage: string | undefined): StateReading {
  if (reading.kind !== "ok" || !recordedLineage || !reading.state.lineage || reading.state.lineage === recordedLineage) return reading;
  return {
    kind: "unreadable",
    reason: "StateLineageChanged",
    message:
      `the state's lineage is ${reading.state.lineage}, not ${recordedLineage} as recorded (${annotations.stateLineage} on the ` +
      `durable inputs Secret): another state was written over this object's. ` +
      `Nothing runs on it: restore a backup with ${annotations.restoreState}=<serial>, or accept this state by removing that annotation`,
  };
}

export const reconcileState: Phase = async (pass) => {
  const { facts } = pass;
  facts.active = facts.jobs.find((job) => job.outcome === undefined);
  Object.assign(facts, await observeStateAndBackups(pass, facts.jobs, facts.active, facts.wasProvisioned));
  await writeDurableNotes(pass);
  return next;
};
