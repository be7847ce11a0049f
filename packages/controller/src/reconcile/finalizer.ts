/**
 * captf's finalizer on a Terraform* object: added first, in its own write, and removed last. Both writes carry the
 * resourceVersion the pass read, so a finalizer list changed meanwhile is a conflict (a lost race, requeued), not a loss.
 */
import type { Role } from "@captf/contract";
import { finalizers } from "@captf/contract/api";
import { workspaceResourceType } from "../api/resource-types.js";
import { isConflict } from "../runtime/api-errors.js";
import { lagRequeueMs } from "./requeue.js";
import type { KindAdapter, PassResult, PhaseResult, ReconcilerDeps, WorkspaceObject } from "./types.js";

/** The pass's end when a finalizer write conflicted. */
export const finalizerConflict: PassResult = {
  action: "finalizer write conflicted: the object changed meanwhile; requeued",
  requeueAfterMs: lagRequeueMs,
};

/** What a finalizer write needs of the pass. */
export interface FinalizerTarget {
  deps: Pick<ReconcilerDeps, "client" | "sweepNamespace">;
  adapter: Pick<KindAdapter<Role>, "kind" | "plural">;
  object: WorkspaceObject;
}

/** Writes the finalizer list; false on a conflict (Cluster API writes an object it just created: an expected lost race). */
export function writeFinalizers({ deps, adapter, object }: FinalizerTarget, list: string[]): Promise<boolean> {
  const { namespace, name, resourceVersion } = object.metadata;
  return deps.client
    .patch(workspaceResourceType(adapter), namespace, name, { metadata: { finalizers: list, resourceVersion } }, "merge")
    .then(
      () => true,
      (error) => (isConflict(error) ? false : Promise.reject(error)),
    );
}

/** Removes captf's finalizer; once it is gone, what captf made in a namespace left without objects goes too. False on a conflict. */
export async function removeFinalizer(target: FinalizerTarget): Promise<boolean> {
  const finalizer = finalizers[target.adapter.kind];
  if (
    !(await writeFinalizers(
      target,
      (target.object.metadata.finalizers ?? []).filter((f) => f !== finalizer),
    ))
  )
    return false;
  await target.deps.sweepNamespace?.(target.object.metadata.namespace);
  return true;
}

/** Leaves the pass with the finalizer removed (then `released` runs and gives the result), or with the conflict of that write. */
export async function leaveWithoutFinalizer(target: FinalizerTarget, released: () => PassResult): Promise<PhaseResult> {
  if (!(await removeFinalizer(target))) return { kind: "leave", result: finalizerConflict };
  return { kind: "leave", result: released() };
}
