import type { Role } from "@captf/contract";
import { annotations, labels } from "@captf/contract/api";
import { finishedCondition, type JobConditions } from "../runtime/job-conditions.js";
import { jobLeftRunning } from "./job-slots.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import { isNotFoundOf } from "../runtime/api-errors.js";
import {
  changedOrResync,
  generationOrMetadataChanged,
  type WatchEventType,
  watchControllerOwner,
  watchFilterSelector,
  watchSelf,
  type Controller,
  type WatchSpec,
} from "../runtime/controller.js";
import { labelIndex, objectKey } from "../runtime/informer.js";
import type { KubeObject, ResourceType } from "../runtime/kube-client.js";
import type { Manager } from "../runtime/manager.js";
import { capiTypes } from "../api/cluster-api.js";
import { terraformClusterType, workspaceResourceType } from "../api/resource-types.js";
import { variablesSourceWatches } from "./variables-source-watches.js";
import type { ManagerTracing } from "../tracing/manager-tracing.js";

export { capiTypes, workspaceResourceType };
import { reconcileWorkspace } from "./workspace-reconciler.js";
import type { KindAdapter, PassResult, ReconcilerDeps } from "./types.js";

/** The Cluster API object whose `infrastructureRef` points at objects of each kind. */
const ownerTypes: Record<
  Role,
  { type: ResourceType; infrastructureRef: (object: KubeObject) => { kind?: string; name?: string } | undefined; statusMatters: boolean }
> = {
  // A Cluster's status carries controlPlaneInitialized, an input of its TerraformCluster.
  cluster: {
    type: capiTypes.cluster,
    infrastructureRef: (o) => (o as { spec?: { infrastructureRef?: { kind?: string; name?: string } } }).spec?.infrastructureRef,
    statusMatters: true,
  },
  machine: {
    type: capiTypes.machine,
    infrastructureRef: (o) => (o as { spec?: { infrastructureRef?: { kind?: string; name?: string } } }).spec?.infrastructureRef,
    statusMatters: false,
  },
  machinepool: {
    type: capiTypes.machinePool,
    infrastructureRef: (o) =>
      (o as { spec?: { template?: { spec?: { infrastructureRef?: { kind?: string; name?: string } } } } }).spec?.template?.spec
        ?.infrastructureRef,
    statusMatters: false,
  },
};

/** The spec fields only the pass itself writes (from the module's outputs; the webhook keeps them immutable once set). */
const ownSpecFields = ["providerID", "providerIDList"];

/** The spec without the fields the pass writes, as JSON. */
function specBeyondOwnFields(object: KubeObject): string {
  const spec = { ...((object as { spec?: Record<string, unknown> }).spec ?? {}) };
  for (const field of ownSpecFields) delete spec[field];
  return JSON.stringify(spec);
}

/** The owner references differ: Cluster API sets its Machine (MachinePool, Cluster) as owner after the object exists. */
function ownerReferencesChanged(object: KubeObject, oldObject: KubeObject | undefined): boolean {
  return (
    oldObject !== undefined &&
    JSON.stringify(oldObject.metadata?.ownerReferences ?? []) !== JSON.stringify(object.metadata?.ownerReferences ?? [])
  );
}

/**
 * A change of the object beyond what the pass itself writes (its status, its block-move annotation, the
 * provider IDs and the generation they bump), a new owner (it ends an owner wait at once), or a periodic resync.
 */
export function changedBeyondOwnMarks(object: KubeObject, event: WatchEventType, oldObject?: KubeObject): boolean {
  const ownSpecChangeOnly =
    oldObject !== undefined &&
    oldObject.metadata?.generation !== object.metadata?.generation &&
    specBeyondOwnFields(oldObject) === specBeyondOwnFields(object);
  const withoutMarks = (o: KubeObject): KubeObject => {
    const { [annotations.blockMove]: _mark, ...rest } = o.metadata?.annotations ?? {};
    return {
      ...o,
      metadata: { ...o.metadata, annotations: rest, ...(ownSpecChangeOnly ? { generation: object.metadata?.generation } : {}) },
    };
  };
  return changedOrResync(withoutMarks(object), event, oldObject && withoutMarks(oldObject)) || ownerReferencesChanged(object, oldObject);
}

/**
 * A Job matters to its owner's pass when it finishes or goes, when it appears finished (a relist, a
 * restart), and on a resync. Not when it appears running: the pass that created it (or the owner's own
 * first pass after a restart) has seen it, and a running Job's progress is for its pass's requeue.
 */
export function jobFinishedOrGone(job: KubeObject, event: WatchEventType, oldJob?: KubeObject): boolean {
  if (event === "add") return finishedCondition(job as JobConditions) !== undefined;
  if (event !== "update" || !oldJob || oldJob.metadata?.resourceVersion === job.metadata?.resourceVersion) return true;
  return (finishedCondition(oldJob as JobConditions) === undefined) !== (finishedCondition(job as JobConditions) === undefined);
}

/**
 * What the queue does after a pass: a requeue after 0 ms (retained state adopted, a stuck Job deleted) runs the pass again at once; only no
 * requeue at all is done.
 */
export function queueResult(result: PassResult): { requeueAfterMillis?: number } {
  return result.requeueAfterMs !== undefined ? { requeueAfterMillis: Math.max(0, result.requeueAfterMs) } : {};
}

/** Index of a kind's objects by the cluster they belong to. */
export const clusterNameIndex = "cluster-name";

/**
 * A pass that ran on the cache's last copy of an object the API server has just removed (its
 * finalizer was the last thing holding it) meets NotFound on its own object: it is gone, not failed.
 */
export function goneDuringPass(error: unknown, plural: string, name: string): PassResult | undefined {
  return isNotFoundOf(error, plural, name) ? { action: "gone" } : undefined;
}

/** The queue priority of an object a freed Job slot wakes. */
export const slotWakePriority = 10;

/**
 * The Cluster API cluster an object belongs to: its owner Cluster, else its cluster-name label, else its own name (a TerraformCluster
 * without either).
 */
export function clusterNameOf(object: KubeObject): string {
  return (
    object.metadata?.ownerReferences?.find((ref) => ref.kind === "Cluster")?.name ??
    object.metadata?.labels?.[labels.clusterName] ??
    object.metadata?.name ??
    ""
  );
}

export interface WorkspaceControllerOptions {
  /** Workers (the `--<kind>-concurrency` flag). Default 10. */
  concurrency?: number;
  /** The manager whose informer cache finds a cluster's machines and pools when the cluster changes. */
  manager?: Pick<Manager, "informer">;
  /** `--watch-filter`: watch only objects carrying `cluster.x-k8s.io/watch-filter=<value>`. */
  watchFilter?: string;
  /** With tracing on: each pass runs inside its span, in the trace of the object's uid (docs/tracing.md). */
  tracing?: ManagerTracing;
}

/**
 * A kind as a manager controller: a pass runs on every change of the object, of its Jobs (a
 * finished Job is bookkept at once), of the Cluster API object that owns it, and, for machines
 * and pools, of their cluster's TerraformCluster (its exports and failure domains are their
 * inputs), of the labelled ConfigMaps and Secrets their variablesFrom names; and again at the time
 * the decision asks for.
 */
export function workspaceController<R extends Role>(
  adapter: KindAdapter<R>,
  deps: ReconcilerDeps,
  options: WorkspaceControllerOptions = {},
): Controller {
  const owner = ownerTypes[adapter.role];
  const watches: WatchSpec[] = [
    // Its own status patches and block-move annotation start no pass: each pass asks for the next one it needs.
    {
      ...watchSelf(workspaceResourceType(adapter), changedBeyondOwnMarks),
      ...(options.watchFilter ? { labelSelector: watchFilterSelector(options.watchFilter)! } : {}),
    },
    watchControllerOwner(builtinTypes.job, adapter.kind, jobFinishedOrGone),
    {
      type: owner.type,
      map: (object) => {
        const ref = owner.infrastructureRef(object);
        return ref?.name && ref.kind === adapter.kind ? [`${object.metadata!.namespace}/${ref.name}`] : [];
      },
      ...(owner.statusMatters ? {} : { predicate: generationOrMetadataChanged }),
    },
  ];
  // A Job whose Pod ends, or that finishes or goes, frees a slot: the objects that waited longest and can start now look again.
  const slots = deps.jobSlots;
  if (slots?.wake) {
    // Ahead of other queued work: the slot is kept for the woken for only a few seconds.
    const wake = { map: () => slots.wake!(adapter.kind), priority: slotWakePriority };
    watches.push({ type: builtinTypes.job, ...wake, predicate: slots.jobFreesSlot ?? jobLeftRunning });
    const pods = slots.podFreesSlot;
    if (pods) watches.push({ type: builtinTypes.pod, labelSelector: pods.labelSelector, ...wake, predicate: pods.predicate });
  }
  if (adapter.role !== "cluster" && options.manager) {
    const selector = options.watchFilter ? watchFilterSelector(options.watchFilter) : undefined;
    const members = options.manager.informer(workspaceResourceType(adapter), {
      ...(selector ? { labelSelector: selector } : {}),
      indexes: { [clusterNameIndex]: labelIndex(labels.clusterName) },
    });
    watches.push({
      type: terraformClusterType,
      map: (object) => {
        const namespace = object.metadata?.namespace;
        return members
          .byIndex(clusterNameIndex, clusterNameOf(object))
          .filter((member) => member.metadata?.namespace === namespace)
          .map((member) => objectKey(member));
      },
    });
  }
  // A changed, added or removed variablesFrom source starts a pass of each object naming it.
  if (options.manager)
    watches.push(
      ...variablesSourceWatches(
        workspaceResourceType(adapter),
        options.manager,
        options.watchFilter ? watchFilterSelector(options.watchFilter) : undefined,
      ),
    );
  // The object's cached copy: a pass's span is in the trace of its uid.
  const own =
    options.tracing && options.manager
      ? options.manager.informer(
          workspaceResourceType(adapter),
          watches[0]!.labelSelector ? { labelSelector: watches[0]!.labelSelector } : {},
        )
      : undefined;
  return {
    name: adapter.kind.toLowerCase(),
    kind: adapter.kind,
    concurrency: options.concurrency ?? 10,
    watches,
    async reconcile(_key, context) {
      const pass = () =>
        reconcileWorkspace({ ...deps, logger: deps.logger ?? context.logger }, adapter, context.namespace!, context.name).catch(
          (error: unknown) => {
            const outcome = goneDuringPass(error, adapter.plural, context.name);
            if (outcome) return outcome;
            throw error;
          },
        );
      const { tracing } = options;
      const uid = () => own?.get(context.namespace, context.name)?.metadata?.uid;
      const subject = () => ({ kind: adapter.kind, namespace: context.namespace!, name: context.name, uid: uid() });
      const result = tracing ? await tracing.pass(subject(), pass) : await pass();
      if (result.action === "gone") deps.jobSlots?.forget?.(`${context.namespace}/${adapter.kind}/${context.name}`);
      context.logger.info({ action: result.action }, "reconciled");
      return queueResult(result);
    },
  };
}
