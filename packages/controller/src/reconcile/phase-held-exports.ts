/**
 * The held-exports phase of a pool: a change of its cluster's exports that waits for approval is held (the pool goes on with the
 * exports it applied last), and a held change the cluster took back is withdrawn.
 */
import type { JsonValue } from "@captf/contract";
import { annotations } from "@captf/contract/api";
import type { DurableInputs } from "./durable-inputs.js";
import { holdsExports, pendingChangeGone } from "./held-exports.js";
import { next, type InputsOutcome, type Phase, type ReconcilePass, type RenderedInputs, type WorkspaceObject } from "./types.js";
import { patchObject } from "./pass-writes.js";

/** The pool's inputs rendered with the exports of its last successful apply while it holds a change of them; else undefined. */
export function heldInputs(
  rendered: RenderedInputs,
  durable: DurableInputs,
  object: WorkspaceObject,
  render: (exports: JsonValue) => InputsOutcome,
): Extract<InputsOutcome, { kind: "ready" }> | undefined {
  const holds = holdsExports({
    pending: durable.pendingClusterOutputs,
    partial: durable.partialClusterOutputs,
    current: { exportsHash: rendered.exportsHash!, approvalHash: rendered.approvalHash },
    applied: { exportsHash: durable.appliedClusterOutputsHash, recorded: durable.appliedClusterOutputs !== undefined },
    approvedHash: object.metadata.annotations?.[annotations.approveDestructivePlan],
  });
  if (!holds || durable.appliedClusterOutputs === undefined) return undefined;
  const outcome = render(durable.appliedClusterOutputs);
  return outcome.kind === "ready" ? { kind: "ready", rendered: { ...outcome.rendered, held: true } } : undefined;
}

/** A pending change no longer wanted: its approval goes, and the blocked Job that was its apply names it withdrawn. */
async function withdrawPending(pass: ReconcilePass, unheld: RenderedInputs, durable: DurableInputs): Promise<void> {
  const { object, scope, facts } = pass;
  const pending = durable.pendingClusterOutputs!;
  const gone = pendingChangeGone(
    pending,
    { exportsHash: unheld.exportsHash! },
    durable.appliedClusterOutputsHash,
    object.metadata.annotations?.[annotations.approveDestructivePlan],
  );
  if (gone?.removeApproval) {
    await patchObject(pass, { metadata: { annotations: { [annotations.approveDestructivePlan]: null } } });
    delete object.metadata.annotations?.[annotations.approveDestructivePlan];
  }
  // The blocked Job stays the newest apply until another runs: until then the condition names the withdrawn change.
  const [newestApply, ...olderApplies] = facts.jobs
    .filter((job) => job.op === "apply" && job.outcome !== undefined)
    .sort((a, b) => b.finishedAt! - a.finishedAt!);
  if (gone?.withdrawn && newestApply?.name === pending.job) {
    const applyBefore = olderApplies.find((job) => job.outcome !== "blocked");
    scope.withdrawnExports = { job: pending.job, ...(applyBefore ? { applyBefore } : {}) };
  }
}

export const reconcileHeldExports: Phase = async (pass) => {
  const { adapter, object, durable, scope, facts } = pass;
  const unheld = adapter.role === "machinepool" && facts.inputs.kind === "ready" ? facts.inputs.rendered : undefined;
  if (!unheld || !durable) return next;
  const held = facts.renderHeld ? heldInputs(unheld, durable, object, facts.renderHeld) : undefined;
  if (held) {
    // The approval names the inputs with the change, not the held ones.
    scope.heldExports = { pending: durable.pendingClusterOutputs!, approvalHash: unheld.approvalHash };
    facts.inputs = held;
    scope.inputs = held;
    facts.currentHash = held.rendered.hash;
    scope.currentHash = facts.currentHash;
  } else if (durable.pendingClusterOutputs) {
    await withdrawPending(pass, unheld, durable);
  }
  return next;
};
