/**
 * The deletion of a Terraform* object, as Cluster API's `reconcileDelete`: whatever lets the object go without a destroy
 * (another controller's object, deletionPolicy Retain) and the finalizer's removal once the destroy is done.
 */
import type { Role } from "@captf/contract";
import type { V1Secret } from "@kubernetes/client-node";
import { annotations, finalizers, labels } from "@captf/contract/api";
import { stateLockLeaseName, stateSecretSuffix } from "@captf/render";
import type { EventRecorder, EventSubject } from "../events/event-recorder.js";
import type { MetricKind } from "../metrics/captf-metrics.js";
import { ignoreNotFound } from "../runtime/api-errors.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import { deleteFreeStateLock } from "../state/state-lock.js";
import { leaveWithoutFinalizer, removeFinalizer, finalizerConflict, type FinalizerTarget } from "./finalizer.js";
import { recordDecision } from "./phase-decision.js";
import { retainState } from "./retained-state.js";
import { runLeaseName } from "./run-lease.js";
import { next, type KindAdapter, type PassResult, type Phase, type PhaseResult, type ReconcilePass, type ReconcilerDeps } from "./types.js";

/**
 * Another controller owns this infrastructure (Cluster API's managed-by contract): hands off. Deleted while it holds captf's finalizer
 * (the annotation came later), it loses only that finalizer: the infrastructure and its state stay for that manager.
 */
export async function releaseExternallyManaged(
  target: FinalizerTarget & { deps: ReconcilerDeps; adapter: KindAdapter<Role>; events: EventRecorder; subject: EventSubject },
): Promise<PassResult> {
  const { deps, adapter, object, events, subject } = target;
  const finalizer = finalizers[adapter.kind];
  if (!object.metadata.deletionTimestamp || !object.metadata.finalizers?.includes(finalizer)) return { action: "externally managed" };
  const { namespace, name, uid } = object.metadata;
  const kept = await retainState(deps.client, {
    role: adapter.role,
    namespace,
    name,
    uid,
    suffix: stateSecretSuffix({ role: adapter.role, namespace, name }),
  });
  if (!(await removeFinalizer(target))) return finalizerConflict;
  const manager = object.metadata.annotations?.[annotations.managedBy] || "another controller";
  void events.record(
    subject,
    "ExternallyManagedReleased",
    `removed finalizer ${finalizer}: the object is managed by ${manager}, so its infrastructure is left to it; ${kept} ` +
      `Secret(s) of its state and inputs kept, labelled ${labels.retainedFromUid}=${uid}`,
  );
  return { action: "externally managed: released, removed finalizer" };
}

/** A deleting object whose state another deleted object retained: its finalizer goes, that state is left as it is. */
export function leaveRetainedState(pass: ReconcilePass, retainer: string): Promise<PhaseResult> {
  return leaveWithoutFinalizer(pass, () => {
    void pass.events.record(
      pass.subject,
      "FinalizerRemoved",
      `removed finalizer ${finalizers[pass.adapter.kind]}; the state retained by deleted object ${retainer} is left as it is`,
    );
    return { action: "removed finalizer" };
  });
}

/** Retain applies now: deleting, nothing runs or waits (a Job, a pause, the cluster's machines and pools, a retained state). Pure. */
export function retainsNow(pass: Pick<ReconcilePass, "scope" | "facts">): boolean {
  const { deleting, paused } = pass.scope;
  const { deletionPolicy, active, dependents, retainedBy } = pass.facts;
  return deleting && deletionPolicy === "Retain" && !active && !paused && dependents === 0 && retainedBy.length === 0;
}

/** deletionPolicy Retain: the infrastructure stays, its state and inputs are kept (labelled with the object's uid), the finalizer goes. */
async function retainInfrastructure(pass: ReconcilePass): Promise<PhaseResult> {
  const { deps, adapter, object, namespace, name, suffix, events, subject } = pass;
  const { uid } = object.metadata;
  const kept = await retainState(deps.client, { role: adapter.role, namespace, name, uid, suffix });
  await deps.client.delete(builtinTypes.lease, namespace, runLeaseName(suffix)).catch(() => undefined);
  return leaveWithoutFinalizer(pass, () => {
    void events.record(
      subject,
      "InfrastructureRetained",
      `deletionPolicy Retain: the infrastructure stays; ${kept} Secret(s) of its state and inputs kept, labelled ` +
        `${labels.retainedFromUid}=${uid}`,
    );
    deps.metrics?.forgetObject(adapter.kind as MetricKind, namespace, name);
    return { action: "retained infrastructure, removed finalizer" };
  });
}

/** The destroy is done (or there was nothing to destroy): the state, the run lease and a free state lock go, then the finalizer. */
async function dropFinalizer(pass: ReconcilePass): Promise<PhaseResult> {
  const { deps, adapter, namespace, name, suffix, events, subject } = pass;
  const { client } = deps;
  const decision = pass.facts.decision!;
  if (decision.cleanupState) {
    const secrets = await pass.reads.live.list<V1Secret>(builtinTypes.secret, namespace, `tfstateSecretSuffix=${suffix}`);
    for (const secret of secrets) await client.delete(builtinTypes.secret, namespace, secret.metadata!.name!).catch(ignoreNotFound);
    void events.record(
      subject,
      "Destroyed",
      decision.reason === "Destroyed"
        ? `the ${adapter.role} module destroyed its infrastructure; state deleted`
        : "the state held no resources, so there was nothing to destroy; state deleted",
    );
  }
  await client.delete(builtinTypes.lease, namespace, runLeaseName(suffix)).catch(() => undefined);
  // No state is left (destroyed or never written): its lock Lease goes too, unless someone but our own dead runner holds it.
  const { lock } = pass.facts;
  const lockRemoval = await deleteFreeStateLock(client, namespace, suffix, lock.kind === "stale" ? lock.unlockId : undefined);
  if (!lockRemoval.removed)
    deps.logger?.warn({ lease: stateLockLeaseName(suffix), holder: lockRemoval.holder }, "the state lock Lease stays: someone holds it");
  return leaveWithoutFinalizer(pass, () => {
    void events.record(subject, "FinalizerRemoved", `removed finalizer ${finalizers[adapter.kind]}`);
    deps.metrics?.forgetObject(adapter.kind as MetricKind, namespace, name);
    return { action: "removed finalizer" };
  });
}

/**
 * The deletion branches after the decision: Retain leaves the infrastructure (the decision is not counted: nothing acts on it);
 * a decision to drop the finalizer (the destroy done) removes what the object leaves behind and then the finalizer.
 */
export const reconcileDelete: Phase = async (pass) => {
  if (retainsNow(pass)) return retainInfrastructure(pass);
  if (!pass.facts.decision?.dropFinalizer) return next;
  recordDecision(pass);
  return dropFinalizer(pass);
};
