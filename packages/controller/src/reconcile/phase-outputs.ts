/**
 * The outputs phase, the last before the status: the module's outputs onto the Cluster API contract fields (status, and the spec
 * fields it latches), OutputsValid and InfrastructureHealthy, the kind's write-back to its owner, and the object's own patch.
 */
import type { OutputsDecoding, Role } from "@captf/contract";
import { annotations } from "@captf/contract/api";
import { previousReason, type ConditionValue } from "../conditions/conditions.js";
import { infrastructureHealthy, isProvisioned, providerIDConditions } from "../kinds/map-outputs.js";
import type { Operation } from "./decide-operation.js";
import { recordWaitEvent } from "./pass-status.js";
import { approverNote } from "./plan-approval.js";
import {
  next,
  type ContractSpecFields,
  type OwnerWriteBackContext,
  type Phase,
  type ReconcilePass,
  type WorkspaceObject,
} from "./types.js";
import { patchObject } from "./pass-writes.js";

/** What the pass writes to the object itself, as one patch: the contract fields and its own annotations. */
interface ObjectPatch {
  spec?: ContractSpecFields;
  annotations: Record<string, string | null>;
}

/** OutputsValid (undefined: keep) and InfrastructureHealthy from the decoded outputs; a provisioned machine's providerID is latched. */
function outputConditions(pass: ReconcilePass, decoding: OutputsDecoding<Role>, provisioned: boolean) {
  const { adapter, object, scope, facts } = pass;
  const health = decoding.outputs.health.state === "ok" ? decoding.outputs.health.value : undefined;
  let outputsValid: ConditionValue | undefined = {
    status: decoding.status,
    reason: decoding.reason,
    ...(decoding.problems.length ? { message: decoding.problems.join("; ").slice(0, 1024) } : {}),
  };
  let healthValue = infrastructureHealthy(health, { applyStarted: true, provisioned });
  const latchedProviderID = object.spec.providerID;
  if (adapter.role === "machine" && facts.wasProvisioned && latchedProviderID) {
    const sampledOps: Operation[] = ["refresh", "drift", "apply"];
    const sampled = facts.toMark.some((job) => job.outcome === "succeeded" && sampledOps.includes(job.op));
    const providerID = providerIDConditions((decoding as OutputsDecoding<"machine">).outputs.provider_id, {
      latched: latchedProviderID,
      sampled,
      previousHealthReason: previousReason(scope.previous, "InfrastructureHealthy"),
      outputsReason: decoding.reason,
    });
    if (providerID.keepOutputsValid) outputsValid = undefined;
    if (providerID.outputsValid) outputsValid = providerID.outputsValid;
    if (providerID.health) healthValue = providerID.health;
  }
  return { ...(outputsValid ? { outputsValid } : {}), health: healthValue };
}

/** The outputs onto the contract fields and conditions, when the state held them; whether the object is provisioned after this pass. */
function recordOutputs(pass: ReconcilePass, objectPatch: ObjectPatch): boolean {
  const { adapter, object, scope, facts } = pass;
  const { state, decoding } = facts;
  let provisioned = facts.wasProvisioned;
  if (state.kind !== "ok" || !decoding) return provisioned;
  provisioned ||= isProvisioned(adapter.role, Boolean(state.state.inputsHash), decoding);
  const fields = adapter.contractFields(object, decoding);
  Object.assign(scope.fields, fields.status);
  facts.exportsNotPublished = fields.exportsNotPublished;
  if (fields.spec && Object.keys(fields.spec).length > 0) {
    objectPatch.spec = fields.spec;
    Object.assign(objectPatch.annotations, fields.annotations);
  }
  if (state.state.serial >= 1) scope.fields.observedStateSerial = state.state.serial;
  scope.outputs = outputConditions(pass, decoding, provisioned);
  const endpoint = fields.spec?.controlPlaneEndpoint ?? object.spec.controlPlaneEndpoint ?? facts.capiCluster?.spec?.controlPlaneEndpoint;
  if (endpoint?.host) scope.endpointHost = endpoint.host;
  return provisioned;
}

/** An approved plan's apply started: PlanApproved (an empty plan's apply runs with --expect-plan too, but nobody approved it). */
function recordPlanApproved(pass: ReconcilePass): void {
  const { deps, adapter, object, events, subject, facts } = pass;
  const decision = facts.decision!;
  const approved = object.metadata.annotations?.[annotations.approvePlan];
  if (decision.op !== "apply" || !decision.expectPlan || decision.expectPlan !== approved || !facts.action.startsWith("started")) return;
  const approver = approverNote(object.metadata.annotations?.[annotations.planApprovedBy]);
  void events.record(subject, "PlanApproved", `plan ${decision.expectPlan}${approver}: applying it`);
  deps.metrics?.planApprovals.inc({ kind: adapter.kind, result: "approved" });
}

/** The kind's writes to its owner (pool replicas, machine remediation), not while paused or deleting; their conditions onto the status. */
async function ownerWriteBack(pass: ReconcilePass, provisioned: boolean): Promise<void> {
  const { deps, adapter, object, events, subject, scope, facts } = pass;
  if (!adapter.ownerWriteBack || scope.paused || scope.deleting) return;
  const sampled = facts.toMark.some(
    (job) => job.outcome === "succeeded" && (job.op === "refresh" || job.op === "drift" || job.op === "apply"),
  );
  const context: OwnerWriteBackContext = {
    status: scope.fields,
    events,
    subject,
    health: scope.outputs?.health,
    sampled,
    provisioned,
    terraformCluster: facts.terraformCluster,
  };
  scope.ownerConditions = await adapter.ownerWriteBack(deps, object, context);
}

/** The object's own patch; the status this pass writes observes the generation it made (no second status write for it). */
async function writeObjectPatch(pass: ReconcilePass, objectPatch: ObjectPatch): Promise<void> {
  const { events, subject, scope } = pass;
  const { spec } = objectPatch;
  const annotated = Object.keys(objectPatch.annotations).length > 0;
  if (!spec && !annotated) return;
  const patched = (await patchObject(pass, {
    ...(spec ? { spec } : {}),
    ...(annotated ? { metadata: { annotations: objectPatch.annotations } } : {}),
  })) as WorkspaceObject;
  if (patched?.metadata?.generation !== undefined) scope.generation = patched.metadata.generation;
  if (spec && "providerID" in spec) void events.record(subject, "ProviderIDSet", `providerID set to ${String(spec.providerID)}`);
  if (spec && "controlPlaneEndpoint" in spec)
    void events.record(subject, "ControlPlaneEndpointSet", `control-plane endpoint set from the module's output`);
}

export const reconcileOutputs: Phase = async (pass) => {
  const { adapter, object, scope, facts, outcome } = pass;
  const objectPatch: ObjectPatch = { annotations: {} };
  // No Job runs: clusterctl move may proceed.
  if (!facts.active && object.metadata.annotations?.[annotations.blockMove] !== undefined)
    objectPatch.annotations[annotations.blockMove] = null;
  const provisioned = recordOutputs(pass, objectPatch);
  scope.provisioned = provisioned;
  // The newest Job finished this pass: a run result, or a Job that ended without one (an image it could not
  // pull, its deadline, a Pod removed from outside).
  const newest = facts.jobs.filter((job) => job.result || (!job.bookkept && job.outcome)).sort((a, b) => b.finishedAt! - a.finishedAt!)[0];
  if (newest) scope.newestJob = newest;
  recordPlanApproved(pass);
  if (outcome.wait) recordWaitEvent(pass, outcome.wait);
  await ownerWriteBack(pass, provisioned);
  await writeObjectPatch(pass, objectPatch);
  if (adapter.publishesReady) scope.fields.ready = provisioned;
  return next;
};
