// The start of a pass: get the object (and the filters that skip it), then captf's finalizer, before any scope is gathered.
import type { Role } from "@captf/contract";
import { annotations, finalizers } from "@captf/contract/api";
import { workspaceResourceType } from "../api/resource-types.js";
import { passClient } from "../runtime/pass-client.js";
import { finalizerConflict, writeFinalizers } from "./finalizer.js";
import { passEvents } from "./pass-scope.js";
import { releaseExternallyManaged } from "./reconcile-delete.js";
import type { KindAdapter, PassResult, ReconcilerDeps, WorkspaceObject } from "./types.js";

/**
 * The object, from the cache, as a copy the pass may change; undefined when it does not exist. The finalizer write carries its
 * resourceVersion, so a stale copy conflicts rather than loses a write.
 */
export async function readPassObject(
  deps: ReconcilerDeps,
  adapter: Pick<KindAdapter<Role>, "kind" | "plural">,
  namespace: string,
  name: string,
): Promise<WorkspaceObject | undefined> {
  return structuredClone(await passClient(deps).get<WorkspaceObject>(workspaceResourceType(adapter), namespace, name));
}

/**
 * captf's finalizer before anything else: another controller's object is let go; a deleting object without the finalizer is
 * done with; the finalizer goes on first, in its own write, so a destroy can never be skipped. Undefined: the pass goes on.
 */
export async function reconcileFinalizer<R extends Role>(
  deps: ReconcilerDeps,
  adapter: KindAdapter<R>,
  object: WorkspaceObject,
): Promise<PassResult | undefined> {
  const target = { deps, adapter: adapter as KindAdapter<Role>, object };
  if (object.metadata.annotations?.[annotations.managedBy] !== undefined)
    return releaseExternallyManaged({ ...target, ...passEvents(deps, adapter, object) });
  const finalizer = finalizers[adapter.kind];
  const held = object.metadata.finalizers?.includes(finalizer) === true;
  // Deleting without captf's finalizer: its cleanup is done (or nothing ever ran), and nothing may be made for it again.
  if (object.metadata.deletionTimestamp && !held) return { action: "gone" };
  if (held) return undefined;
  if (!(await writeFinalizers(target, [...(object.metadata.finalizers ?? []), finalizer]))) return finalizerConflict;
  // No requeue: the watch event of this write starts the next pass, with the cache already showing it.
  return { action: "added finalizer" };
}
