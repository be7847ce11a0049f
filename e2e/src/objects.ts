// The fields of Cluster API's and captf's custom objects that the e2e reads. The custom objects API
// returns every object untyped; these interfaces say what the plane, the demo and the scenarios expect
// of each kind, and only what they read.
import type * as k8s from "@kubernetes/client-node";

/** A condition as Cluster API v1beta2 and captf write it in status.conditions. */
export interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  observedGeneration?: number;
}

/** Metadata of an object read back from the API server: it always has a name, a uid and (these kinds) a namespace. */
export type ObjectMeta = k8s.V1ObjectMeta & { name: string; namespace: string; uid: string };

/** What every status read here may carry. */
export interface Status {
  phase?: string;
  conditions?: Condition[];
}

/** A custom object read back from the API server: its spec and status as `Spec` and `Status` say. */
export interface CustomObject<Spec = Record<string, unknown>, S extends Status = Status> {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  spec: Spec;
  status?: S;
}

/** A list answer of the custom objects API. */
export interface CustomObjectList<T = CustomObject> {
  items: T[];
}

/** A reference to another object (a Cluster's controlPlaneRef, a Machine's infrastructureRef). */
export interface ObjectRef {
  apiGroup?: string;
  kind: string;
  name: string;
}

export type Cluster = CustomObject<
  { controlPlaneRef?: ObjectRef; controlPlaneEndpoint?: { host: string; port: number } },
  Status & { initialization?: { infrastructureProvisioned?: boolean; controlPlaneInitialized?: boolean } }
>;

export type Machine = CustomObject<
  { providerID?: string; version?: string; infrastructureRef: ObjectRef },
  Status & { nodeRef?: { name: string } }
>;

export type MachineDeployment = CustomObject<{ replicas?: number }, Status & { replicas?: number; availableReplicas?: number }>;

export type MachinePool = CustomObject<
  { replicas?: number; providerIDList?: string[] },
  Status & { replicas?: number; readyReplicas?: number; nodeRefs?: k8s.V1ObjectReference[] }
>;

/** A control plane the stand-in reports initialized (StandInControlPlane, KubeadmControlPlane). */
export type ControlPlane = CustomObject<{ version?: string }, Status & { initialization?: { controlPlaneInitialized?: boolean } }>;

/** A KubeadmConfig the stand-in bootstrap provider gives data. */
export type BootstrapConfig = CustomObject<Record<string, unknown>, Status & { initialization?: { dataSecretCreated?: boolean } }>;

/** The last run a captf object records in status.lastRun (the fields read here; the rest as the manager wrote it). */
export interface LastRun {
  steps?: { durationMilliseconds?: number }[];
  [field: string]: unknown;
}

/** What captf's TerraformCluster, TerraformMachine and TerraformMachinePool report. */
export interface TerraformStatus extends Status {
  /** The Job running for the object, if any. */
  activeJob?: { operation: string; name: string };
  /** A plan awaiting approval (applyPolicy Manual). */
  plan?: { planHash: string; [field: string]: unknown };
  lastRun?: LastRun;
}

/** A TerraformCluster, TerraformMachine or TerraformMachinePool. */
export type TerraformObject = CustomObject<{ source?: { image: string }; [field: string]: unknown }, TerraformStatus>;
