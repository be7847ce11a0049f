/**
 * The scope of a pass (Cluster API's machine scope): the object, its durable inputs, its owners and the facts every phase
 * starts from, gathered once, from the caches.
 */
import type { Role } from "@captf/contract";
import { annotations, groupVersion, labels } from "@captf/contract/api";
import { stateSecretSuffix } from "@captf/render";
import { discardEvents, type EventRecorder, type EventSubject } from "../events/event-recorder.js";
import { mergeJobPolicy, type StoredJobPolicy } from "../jobs/merge-job-policy.js";
import { passClient } from "../runtime/pass-client.js";
import type { StatusScope } from "./compute-status.js";
import { readDurableInputs } from "./durable-inputs.js";
import { passReads, type TerraformClusterObject } from "./pass-reads.js";
import type { KindAdapter, PassFacts, ReconcilePass, ReconcilerDeps, WorkspaceObject } from "./types.js";

/** Where the pass's events go, and the object they are about. */
export function passEvents(
  deps: Pick<ReconcilerDeps, "events">,
  adapter: Pick<KindAdapter<Role>, "kind">,
  object: WorkspaceObject,
): { events: EventRecorder; subject: EventSubject } {
  const { namespace, name, uid } = object.metadata;
  return { events: deps.events ?? discardEvents, subject: { apiVersion: groupVersion, kind: adapter.kind, namespace, name, uid } };
}

/** The facts before any phase ran: what the scope read, and the neutral value of each later phase's fact. */
export function initialFacts<R extends Role>(
  gathered: Pick<PassFacts<R>, "observedInputs" | "capiCluster" | "terraformCluster" | "wasProvisioned" | "jobPolicy">,
): PassFacts<R> {
  return {
    ...gathered,
    inputs: { kind: "none" },
    currentHash: undefined,
    renderHeld: undefined,
    credentials: undefined,
    serviceAccountRefusal: undefined,
    jobs: [],
    toMark: [],
    active: undefined,
    state: { kind: "absent" },
    stateLost: false,
    retainedBy: [],
    restoreSet: undefined,
    lock: { kind: "free" },
    planShown: undefined,
    drift: undefined,
    healthCheckIntervalSeconds: undefined,
    decoding: undefined,
    healthReading: undefined,
    pendingRefreshes: 0,
    deletionPolicy: undefined,
    dependents: 0,
    decision: undefined,
    action: "",
    requeueAfterMs: undefined,
    exportsNotPublished: undefined,
    written: {},
  };
}

/** Gathers the scope of a pass over an object that carries captf's finalizer. */
export async function gatherScope<R extends Role>(
  deps: ReconcilerDeps,
  adapter: KindAdapter<R>,
  object: WorkspaceObject,
  now: number,
): Promise<ReconcilePass<R>> {
  const { namespace, name } = object.metadata;
  const suffix = stateSecretSuffix({ role: adapter.role, namespace, name });
  const reads = passReads(deps.client, namespace, deps.cache);
  const durable = await readDurableInputs(deps.client, adapter.role, namespace, name, deps.cache);
  const wasProvisioned = object.status?.initialization?.provisioned === true;
  // A provisioned machine's inputs are pinned in its durable inputs.
  const pinned = adapter.role === "machine" && wasProvisioned && durable !== undefined;
  const observedInputs = pinned ? undefined : await adapter.observeInputs(deps, object, { reads, durable });
  const clusterName = observedInputs?.clusterName ?? object.metadata.labels?.[labels.clusterName] ?? "";
  const capiCluster = await reads.capiCluster(clusterName);
  const terraformCluster =
    adapter.role === "cluster" ? (object as unknown as TerraformClusterObject) : await reads.terraformCluster(clusterName);
  const paused = capiCluster?.spec?.paused === true || object.metadata.annotations?.[annotations.paused] !== undefined;
  const deleting = Boolean(object.metadata.deletionTimestamp);
  const scope: StatusScope = {
    role: adapter.role,
    kind: adapter.kind,
    now,
    ...(object.metadata.generation !== undefined ? { generation: object.metadata.generation } : {}),
    previous: object.status?.conditions,
    paused,
    ...(paused ? { pausedBy: capiCluster?.spec?.paused === true ? ("Cluster" as const) : ("annotation" as const) } : {}),
    deleting,
    clusterName,
    pinned,
    inputs: { kind: "none" },
    credentials: [],
    restores: [],
    ownerConditions: [],
    provisioned: wasProvisioned,
    fields: { stateSecretSuffix: suffix },
  };
  const jobPolicy = mergeJobPolicy(
    object.spec.jobs,
    adapter.role === "cluster" ? undefined : (terraformCluster?.spec?.defaults?.jobs as StoredJobPolicy | undefined),
  );
  return {
    deps,
    adapter,
    object,
    namespace,
    name,
    suffix,
    clusterName,
    now,
    ...passEvents(deps, adapter, object),
    durable,
    durableNotes: { annotations: {}, data: {} },
    scope,
    reads: passClient(deps),
    facts: initialFacts<R>({ observedInputs, capiCluster, terraformCluster, wasProvisioned, jobPolicy }),
    outcome: {},
  };
}
