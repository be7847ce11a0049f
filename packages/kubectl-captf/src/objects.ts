/**
 * What the plugin reads of captf's objects: the `<kind>/<name>` references it accepts and the
 * part of each object's status it shows. The manager's schemas (packages/controller/src/api) are
 * the source of these fields; the integration tests write them through the real CRDs, which
 * prune any field this view misnames.
 */
import { apiGroup, apiVersion, kinds } from "@captf/contract/api";

/** The kinds that run Jobs: the only ones with plans, state and logs. */
export const jobKinds = [kinds.cluster, kinds.machine, kinds.machinePool] as const;
export type JobKind = (typeof jobKinds)[number];

/** A usage error: the CLI prints it with a pointer to --help. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

/** A request the plugin refuses, or an object it cannot find: printed, exit 1. */
export class Refusal extends Error {
  override readonly name = "Refusal";
}

export interface ObjectReference {
  kind: JobKind;
  name: string;
}

/** The plural resource name of a kind, as the CRDs name it. */
export function pluralOf(kind: string): string {
  return `${kind.toLowerCase().replace(/y$/, "ie")}s`;
}

/** Coordinates of a kind for the CustomObjectsApi. */
export function resourceOf(kind: string): { group: string; version: string; plural: string } {
  return { group: apiGroup, version: apiVersion, plural: pluralOf(kind) };
}

/** `TerraformCluster/x`, `terraformcluster/x`, `terraformclusters/x` or `terraformclusters.<group>/x`. */
export function parseObjectReference(text: string): ObjectReference {
  const slash = text.indexOf("/");
  const spelled = slash < 0 ? "" : text.slice(0, slash).toLowerCase();
  const name = slash < 0 ? "" : text.slice(slash + 1);
  const kind = jobKinds.find((candidate) => {
    const lower = candidate.toLowerCase();
    return [lower, pluralOf(candidate), `${lower}.${apiGroup}`, `${pluralOf(candidate)}.${apiGroup}`].includes(spelled);
  });
  if (!kind || name === "" || name.includes("/")) {
    throw new UsageError(
      `${JSON.stringify(text)} is not <kind>/<name>: the kind is one of ${jobKinds.join(", ")} (any case, singular or plural), ` +
        `e.g. terraformcluster/demo`,
    );
  }
  return { kind, name };
}

export interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}

export interface ActiveJob {
  name: string;
  operation: string;
  attempt: number;
  startTime?: string;
}

export interface LastRun {
  job: string;
  operation: string;
  steps?: { name: string; exitCode: number; durationMilliseconds?: number }[];
  error?: { kind: string; step?: string; summary?: string };
}

export interface PlanPreview {
  inputsHash: string;
  job: string;
  planHash: string;
  add?: number;
  change?: number;
  destroy?: number;
  import?: number;
  move?: number;
  outputChanges?: number;
  resources?: string[];
  truncated?: boolean;
  createdAt?: string;
}

export interface StateBackup {
  serial: number;
  takenAt: string;
  bytes: number;
}

export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  creationTimestamp?: string | Date;
  deletionTimestamp?: string | Date;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/** A TerraformCluster, TerraformMachine, TerraformMachinePool or TerraformClusterIdentity as the plugin reads it. */
export interface CaptfObject {
  apiVersion?: string;
  kind: string;
  metadata: ObjectMeta;
  spec?: { identityRef?: { name?: string }; applyPolicy?: string };
  status?: {
    conditions?: Condition[];
    activeJob?: ActiveJob;
    lastRun?: LastRun;
    plan?: PlanPreview;
    stateBackups?: StateBackup[];
    lastRestoredSerial?: number;
  };
}

/** `Kind namespace/name`, how messages name an object. */
export function describeObject(object: { kind: string; metadata: { name: string; namespace?: string } }): string {
  return `${object.kind} ${object.metadata.namespace ? `${object.metadata.namespace}/` : ""}${object.metadata.name}`;
}
