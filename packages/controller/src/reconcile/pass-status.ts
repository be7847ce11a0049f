/**
 * The status step of a pass, deferred to every exit that leaves the object in place (Cluster API's deferred patch): the status
 * computed from the scope and the outcome (pure), patched only when it changes, then the events of the conditions it changed.
 */
import { mergePatchChanges, type Role } from "@captf/contract";
import type { ManagerEventReason } from "@captf/contract/api";
import { maxPublishedExportsBytes } from "../api/terraformcluster.js";
import { workspaceResourceType } from "../api/resource-types.js";
import { previousReason } from "../conditions/conditions.js";
import { computeStatus, startWaits, type PassOutcome } from "./compute-status.js";
import type { ObservedJob } from "./observe-jobs.js";
import { transitionEvents, type StatusView } from "./transition-events.js";
import type { KindAdapter, Pass, ReconcilePass, ReconcilerDeps, WorkspaceObject } from "./types.js";

/** The running Job as the status reports it; it started when captf created it, a time that never changes while it runs. */
export function activeJobOf(job: Pick<ObservedJob, "name" | "op" | "attempt" | "remediation" | "job">): NonNullable<PassOutcome["active"]> {
  const started = job.job.metadata?.creationTimestamp ?? job.job.status?.startTime;
  return {
    name: job.name,
    op: job.op,
    attempt: job.attempt,
    remediation: job.remediation,
    ...(started ? { startTime: new Date(started).toISOString() } : {}),
  };
}

/** A wait for a lease, the cluster operation gate, a Job slot or a quota is an event once per wait, not once per pass. */
export function recordWaitEvent(pass: Pick<Pass, "events" | "subject" | "scope">, wait: NonNullable<PassOutcome["wait"]>): void {
  const { type, value } = wait;
  if (startWaits.includes(value.reason) && previousReason(pass.scope.previous, type) !== value.reason)
    void pass.events.record(pass.subject, value.reason as ManagerEventReason, value.message ?? value.reason);
}

/** Patches the status, only when that changes it (the object as read this pass). */
async function patchStatus(
  deps: ReconcilerDeps,
  adapter: Pick<KindAdapter<Role>, "kind" | "plural">,
  object: WorkspaceObject,
  status: Record<string, unknown>,
): Promise<void> {
  const clean = Object.fromEntries(Object.entries(status).filter(([, value]) => value !== undefined));
  if (!mergePatchChanges(object.status ?? {}, clean)) return;
  const { namespace, name } = object.metadata;
  await deps.client.patchStatus(workspaceResourceType(adapter), namespace, name, { status: clean }, "merge");
}

/** Computes and patches the status; then the events of its condition transitions, after the status they describe is written. */
export async function recordStatus(pass: ReconcilePass): Promise<void> {
  const { deps, adapter, object, events, subject, facts } = pass;
  facts.written = computeStatus(pass.scope, pass.outcome);
  await patchStatus(deps, adapter, object, facts.written);
  const exportsNotPublished = facts.exportsNotPublished;
  const transitionFacts = {
    kind: adapter.kind,
    ...(exportsNotPublished ? { exportsNotPublished: { ...exportsNotPublished, limit: maxPublishedExportsBytes } } : {}),
  };
  for (const event of transitionEvents((object.status ?? {}) as StatusView, facts.written as StatusView, transitionFacts)) {
    void events.record(subject, event.reason, event.note, undefined, event.type);
    if (event.reason === "OutputsInvalid" && event.cause) deps.metrics?.outputsInvalid.inc({ kind: adapter.kind, reason: event.cause });
  }
}
