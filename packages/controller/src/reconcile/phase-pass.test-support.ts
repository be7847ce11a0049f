// A reconcile pass over one object (a TerraformMachine unless told) for unit tests of the phases (workspace-phases.ts) and
// the act step: a client the test gives, a real CaptfMetrics, events recorded in memory.
import type { Role } from "@captf/contract";
import type { ManagerEventReason } from "@captf/contract/api";
import type { EventRecorder } from "../events/event-recorder.js";
import { machineAdapter } from "../kinds/adapters.js";
import type { CaptfMetrics } from "../metrics/captf-metrics.js";
import type { KubeApi } from "../runtime/kube-client.js";
import type { StatusScope } from "./compute-status.js";
import type { KindAdapter, WorkspaceObject } from "./types.js";
import type { Pass } from "./workspace-phases.js";

export const passNamespace = "ns";
/** The machine the pass is over, as observeJobs names a Job's owner. */
export const passOwner = { kind: "TerraformMachine", name: "m", uid: "uid-m" };

export interface PhasePass<R extends Role = "machine"> extends Pass<R> {
  /** The reasons of the events the phases recorded, in order. */
  recorded: ManagerEventReason[];
}

export interface PhasePassOptions<R extends Role> {
  now: number;
  /** The kind of the object (default the machine's); its name, uid and namespace stay {@link passOwner}'s. */
  adapter?: KindAdapter<R>;
  /** The Cluster API cluster it belongs to (default none). */
  clusterName?: string;
  object?: Partial<WorkspaceObject>;
  scope?: Partial<StatusScope>;
  stateBackups?: number;
}

export function phasePass<R extends Role = "machine">(client: KubeApi, metrics: CaptfMetrics, options: PhasePassOptions<R>): PhasePass<R> {
  const adapter = options.adapter ?? (machineAdapter as unknown as KindAdapter<R>);
  const recorded: ManagerEventReason[] = [];
  const events: EventRecorder = {
    record: async (_subject, reason) => {
      recorded.push(reason);
    },
  };
  const object: WorkspaceObject = {
    metadata: { name: passOwner.name, namespace: passNamespace, uid: passOwner.uid },
    spec: { source: { image: "registry.example/m:v1" } },
    status: { conditions: [] },
    ...options.object,
  };
  return {
    deps: { client, metrics, ...(options.stateBackups !== undefined ? { stateBackups: options.stateBackups } : {}) },
    adapter,
    object,
    namespace: passNamespace,
    name: passOwner.name,
    suffix: "m-suffix",
    clusterName: options.clusterName ?? "",
    now: options.now,
    events,
    subject: { apiVersion: "v1", kind: adapter.kind, namespace: passNamespace, name: passOwner.name, uid: passOwner.uid },
    durable: undefined,
    durableNotes: { annotations: {}, data: {} },
    scope: {
      previous: [],
      restores: [],
      fields: {},
      credentials: [],
      ownerConditions: [],
      paused: false,
      deleting: false,
      ...options.scope,
    } as unknown as StatusScope,
    recorded,
  };
}
