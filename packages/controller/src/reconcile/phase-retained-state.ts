/**
 * The retained-state phase: state another (deleted) object retained is in the way. A deleting object leaves it as it is; one that
 * asks adopts it; any other holds (nothing runs) until it is adopted or deleted by someone.
 */
import { groupVersion } from "@captf/contract/api";
import { previousReason } from "../conditions/conditions.js";
import { leaveRetainedState } from "./reconcile-delete.js";
import { adoptRetainedState } from "./retained-state.js";
import { next, type Phase } from "./types.js";

export const reconcileRetainedState: Phase = async (pass) => {
  const { deps, adapter, object, namespace, name, suffix, events, subject, scope, facts } = pass;
  if (facts.retainedBy.length === 0) return next;
  const retainer = facts.retainedBy.join(", ");
  if (scope.deleting) return leaveRetainedState(pass, retainer);
  if (object.spec.adoptRetainedState) {
    const ownerReference = { apiVersion: groupVersion, kind: adapter.kind, name, uid: object.metadata.uid, controller: true };
    await adoptRetainedState(deps.client, { role: adapter.role, namespace, name, uid: object.metadata.uid, suffix, ownerReference });
    void events.record(subject, "RetainedStateAdopted", `adopted the state and inputs retained by deleted object ${retainer}`);
    // The state is this object's now: the next pass (at once, not on the next relist) reads it as its own.
    return { kind: "end", result: { action: "adopted retained state", requeueAfterMs: 0 } };
  }
  scope.retainedBy = facts.retainedBy;
  if (previousReason(scope.previous, "StateReadable") !== "RetainedStateFound")
    void events.record(
      subject,
      "RetainedStateFound",
      `state retained by deleted object ${retainer} found; nothing runs until it is adopted or deleted`,
    );
  return next;
};
