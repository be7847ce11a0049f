import type { Role } from "@captf/contract";
import type { MetricKind } from "../metrics/captf-metrics.js";
import { watchFilterLabel } from "../runtime/controller.js";
import { afterStatus } from "./after-status.js";
import { readPassObject, reconcileFinalizer } from "./pass-entry.js";
import { gatherScope } from "./pass-scope.js";
import { recordStatus } from "./pass-status.js";
import { passPhases } from "./phases.js";
import type { KindAdapter, PassResult, ReconcilePass, ReconcilerDeps } from "./types.js";
// The pass's entry keeps naming its shared types for the callers that import them with it.
export type {
  ContractSpecFields,
  CredentialsResolver,
  InputsContext,
  InputsOutcome,
  JobCredentials,
  KindAdapter,
  OwnerWriteBackContext,
  PassResult,
  ReconcilerDeps,
  RenderedInputs,
  WorkspaceObject,
} from "./types.js";

/**
 * One reconcile pass of a Terraform* object, shared by every kind, cut as Cluster API cuts its controllers:
 * 1. get the object (and the filters that skip it), then captf's finalizer (added in its own write, then the pass ends);
 * 2. the scope (pass-scope.ts): the object, its durable inputs, its owners, read once from the caches;
 * 3. the phases (phases.ts), each `(pass) => Promise<PhaseResult>`: observe (inputs, credentials, Jobs, held exports, state, a stuck
 *    Job, retained state, plans, drift, health, deletion facts), decide (pure), delete (Retain, the finalizer after a destroy) or act
 *    (start-operation.ts), then the outputs;
 * 4. the status: `computeStatus(scope, outcome)` (pure) as one patch on every exit that leaves the object in place, sent only when
 *    it changes the status;
 * 5. after the status: the events of its transitions, the metrics, the finished Jobs marked bookkept, the Job history pruned.
 * Every write is idempotent, so a pass cut short anywhere converges on the next: Job names are deterministic, an existing Job is
 * adopted and a lease already held by that Job is ours.
 */
export async function reconcileWorkspace<R extends Role>(
  deps: ReconcilerDeps,
  adapter: KindAdapter<R>,
  namespace: string,
  name: string,
): Promise<PassResult> {
  const now = (deps.now ?? Date.now)();
  const object = await readPassObject(deps, adapter, namespace, name);
  if (!object) {
    deps.metrics?.forgetObject(adapter.kind as MetricKind, namespace, name);
    return { action: "gone" };
  }
  if (deps.watchFilter && object.metadata.labels?.[watchFilterLabel] !== deps.watchFilter)
    return { action: "not in this manager's watch filter" };
  const held = await reconcileFinalizer(deps, adapter, object);
  if (held) return held;

  // The phases serve every kind: they take the pass of any role (a KindAdapter<R> is not a KindAdapter<Role> to TypeScript).
  const pass = (await gatherScope(deps, adapter, object, now)) as unknown as ReconcilePass;
  for (const { phase } of passPhases) {
    const step = await phase(pass);
    // The object let go (its finalizer removed): no status is written for it.
    if (step.kind === "leave") return step.result;
    if (step.kind === "end") {
      await recordStatus(pass);
      return step.result;
    }
  }
  await recordStatus(pass);
  return afterStatus(pass);
}
