// The objects the reconcile suites read back from the API server, typed: the kinds' own types, and the
// fields of Cluster API's objects that captf reads or writes.
import type { KubernetesObject, V1ObjectMeta } from "@kubernetes/client-node";

/** A captf object as a test reads it back: its kind's type, with the metadata and the status a pass has written by then. */
export type ReadBack<T extends { status?: unknown }> = T & { metadata: V1ObjectMeta; status: NonNullable<T["status"]> };

/** A Cluster API object (Machine, MachinePool, Cluster) as a test reads it back. */
export type CapiObject = KubernetesObject & { metadata: V1ObjectMeta; spec: Record<string, unknown>; status?: Record<string, unknown> };
