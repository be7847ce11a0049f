import type { Role } from "@captf/contract";
import { apiGroup, apiVersion } from "@captf/contract/api";
import { builtinTypes } from "../runtime/builtin-types.js";
import { watchControllerOwner, watchSelf, type Controller } from "../runtime/controller.js";
import type { ResourceType } from "../runtime/kube-client.js";
import { reconcileWorkspace, type KindAdapter, type ReconcilerDeps } from "./workspace-reconciler.js";

/** The resource type of a kind adapter's objects, for the manager's informers. */
export function workspaceResourceType<R extends Role>(adapter: KindAdapter<R>): ResourceType {
  return { group: apiGroup, version: apiVersion, plural: adapter.plural, kind: adapter.kind, namespaced: true };
}

/**
 * A kind as a manager controller: a pass runs on every change of the object and of its Jobs
 * (a finished Job is bookkept at once), and again at the time the decision asks for.
 */
export function workspaceController<R extends Role>(adapter: KindAdapter<R>, deps: ReconcilerDeps, concurrency = 10): Controller {
  return {
    name: adapter.kind.toLowerCase(),
    kind: adapter.kind,
    concurrency,
    watches: [watchSelf(workspaceResourceType(adapter)), watchControllerOwner(builtinTypes.job, adapter.kind)],
    async reconcile(_key, context) {
      const result = await reconcileWorkspace(deps, adapter, context.namespace!, context.name);
      context.logger.info({ action: result.action }, "reconciled");
      return result.requeueAfterMs !== undefined ? { requeueAfterMillis: result.requeueAfterMs } : {};
    },
  };
}
