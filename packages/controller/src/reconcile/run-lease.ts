import { createHash } from "node:crypto";
import type { V1Job, V1Lease } from "@kubernetes/client-node";
import { annotations, labels } from "@captf/contract/api";
import { nameLabelValue } from "@captf/contract/object-names";
import type { Operation } from "./decide-operation.js";
import { finishedCondition } from "../runtime/job-conditions.js";
import { isConflict, isNotFound, undefinedIfNotFound } from "../runtime/api-errors.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import type { KubeApi } from "../runtime/kube-client.js";
import type { ReadCache } from "../runtime/read-cache.js";
import { passClient } from "../runtime/pass-client.js";

/**
 * Run leases: a `coordination.k8s.io` Lease per object (`captf-run-<suffix>`), held by the name
 * of the Job about to be created, so two managers (or a manager and its own stale cache) never
 * start two Jobs on one state. The cluster write lease (`captf-cluster-<hash>`) is the cluster
 * operation gate: while a TerraformCluster applies, destroys or restores, its machines and pools
 * start none of those, and the cluster waits for theirs to finish (writer preference).
 * A lease about to be taken is read from the manager's Lease cache (a stale read only loses the
 * create or the resourceVersion-checked replace to a conflict); the gate's reads, which must see
 * the other side's lease taken just before, are live.
 */

export type LeaseKind = "run" | "cluster";

/** A holder Job absent this long after the lease was taken never started: the lease is free. */
export const leaseGraceMs = 60_000;
/** Past the holder's deadline plus the kill grace plus slack, a lease is free whatever it says. */
export function leaseBackstopSeconds(activeDeadlineSeconds: number): number {
  return activeDeadlineSeconds + 600 + 300;
}

export function runLeaseName(stateSuffix: string): string {
  return `captf-run-${stateSuffix}`;
}

export function clusterLeaseName(namespace: string, clusterName: string): string {
  return `captf-cluster-${createHash("sha256").update(`${namespace}/${clusterName}`).digest("hex").slice(0, 16)}`;
}

/** Operations that write the state: these take the cluster operation gate. */
export const gatedOperations: readonly Operation[] = ["apply", "destroy", "restore"];

export interface LeaseHolderFacts {
  /** The holder Job as read live: undefined when it does not exist. */
  holderJob: V1Job | undefined;
  now: number;
}

/** Whether a lease held by someone else may be taken over. Pure. */
export function leaseIsFree(lease: V1Lease, facts: LeaseHolderFacts): boolean {
  const holder = lease.spec?.holderIdentity;
  if (!holder) return true;
  const acquiredAt =
    Date.parse(lease.metadata?.annotations?.[annotations.leaseAcquiredAt] ?? "") ||
    Date.parse(String(lease.metadata?.creationTimestamp ?? "")) ||
    0;
  const backstopMs = (lease.spec?.leaseDurationSeconds ?? leaseBackstopSeconds(3600)) * 1000;
  if (facts.now - acquiredAt >= backstopMs) return true;
  if (facts.holderJob) return finishedCondition(facts.holderJob) !== undefined;
  return facts.now - acquiredAt >= leaseGraceMs;
}

export interface LeaseRequest {
  kind: LeaseKind;
  name: string;
  namespace: string;
  /** The Job about to be created. */
  holder: string;
  /** The name an older captf gave that same Job (newline-joined hash): its lease, left without a Job, is ours. */
  formerHolder?: string;
  op: Operation;
  owner: { kind: string; name: string; clusterName: string };
  backstopSeconds: number;
  now: number;
}

export type LeaseOutcome = { acquired: true } | { acquired: false; holder: string; message: string };

function leaseBody(request: LeaseRequest, resourceVersion?: string): V1Lease {
  return {
    metadata: {
      name: request.name,
      namespace: request.namespace,
      ...(resourceVersion ? { resourceVersion } : {}),
      labels: {
        [annotations.lease]: request.kind,
        [labels.managed]: "true",
        [labels.ownerKind]: request.owner.kind,
        [labels.ownerName]: nameLabelValue(request.owner.name),
        [labels.clusterName]: nameLabelValue(request.owner.clusterName),
      },
      annotations: { [annotations.leaseOp]: request.op, [annotations.leaseAcquiredAt]: new Date(request.now).toISOString() },
    },
    spec: { holderIdentity: request.holder, leaseDurationSeconds: request.backstopSeconds },
  };
}

async function readJob(client: KubeApi, namespace: string, name: string): Promise<V1Job | undefined> {
  return undefinedIfNotFound(client.get<V1Job>(builtinTypes.job, namespace, name));
}

/** Takes the lease for `holder`: created, already ours, or taken over from a finished or vanished holder. */
export async function acquireLease(
  clients: { client: KubeApi; cache?: ReadCache | undefined },
  request: LeaseRequest,
): Promise<LeaseOutcome> {
  const { client } = clients;
  const existing = await passClient(clients).get<V1Lease>(builtinTypes.lease, request.namespace, request.name, { inScope: true });
  if (!existing) {
    return client.create(builtinTypes.lease, request.namespace, leaseBody(request)).then(
      () => ({ acquired: true as const }),
      (error) =>
        isConflict(error) ? { acquired: false as const, holder: "", message: "another manager took it first" } : Promise.reject(error),
    );
  }
  const holder = existing.spec?.holderIdentity ?? "";
  if (holder === request.holder) return { acquired: true };
  // Live: a holder Job missing from a lagging Job cache would free its lease after the grace.
  const holderJob = holder ? await readJob(client, request.namespace, holder) : undefined;
  const ourOwnNeverCreated = holder === request.formerHolder && holderJob === undefined;
  if (!ourOwnNeverCreated && !leaseIsFree(existing, { holderJob, now: request.now })) {
    return {
      acquired: false,
      holder,
      message: `held by Job ${holder} (${existing.metadata?.annotations?.[annotations.leaseOp] ?? "unknown op"})`,
    };
  }
  return client.replace(builtinTypes.lease, request.namespace, request.name, leaseBody(request, existing.metadata?.resourceVersion)).then(
    () => ({ acquired: true as const }),
    (error) => (isConflict(error) ? { acquired: false as const, holder, message: "another manager took it first" } : Promise.reject(error)),
  );
}

/**
 * Gives a lease back if `holder` still holds it (read from the Lease cache when given: the delete's
 * preconditions make a stale read delete nothing); failures are the caller's to log, never fatal.
 */
export async function releaseLease(
  clients: { client: KubeApi; cache?: ReadCache | undefined },
  namespace: string,
  name: string,
  holder: string,
): Promise<void> {
  const { client } = clients;
  const lease = await passClient(clients).get<V1Lease>(builtinTypes.lease, namespace, name, { inScope: true });
  if (!lease || lease.spec?.holderIdentity !== holder) return;
  await client
    .delete(builtinTypes.lease, namespace, name, {
      preconditions: { uid: lease.metadata?.uid, resourceVersion: lease.metadata?.resourceVersion },
    })
    .catch((error) => (isNotFound(error) || isConflict(error) ? undefined : Promise.reject(error)));
}

/** The cluster write lease, when a live cluster operation holds it: the Job name. */
export async function liveClusterOperation(
  client: KubeApi,
  namespace: string,
  clusterName: string,
  now: number,
): Promise<string | undefined> {
  const lease = await undefinedIfNotFound(client.get<V1Lease>(builtinTypes.lease, namespace, clusterLeaseName(namespace, clusterName)));
  if (!lease?.spec?.holderIdentity) return undefined;
  const holderJob = await readJob(client, namespace, lease.spec.holderIdentity);
  return leaseIsFree(lease, { holderJob, now }) ? undefined : lease.spec.holderIdentity;
}

/** Machine and pool Jobs of the cluster holding run leases for state-writing operations, live. */
export async function liveMemberOperations(client: KubeApi, namespace: string, clusterName: string, now: number): Promise<string[]> {
  const leases = await client.list<V1Lease>(builtinTypes.lease, namespace, {
    labelSelector: `${annotations.lease}=run,${labels.clusterName}=${nameLabelValue(clusterName)}`,
  });
  const live: string[] = [];
  for (const lease of leases.items) {
    if (lease.metadata?.labels?.[labels.ownerKind] === "TerraformCluster") continue;
    if (!gatedOperations.includes(lease.metadata?.annotations?.[annotations.leaseOp] as Operation)) continue;
    const holder = lease.spec?.holderIdentity;
    if (!holder) continue;
    if (!leaseIsFree(lease, { holderJob: await readJob(client, namespace, holder), now })) live.push(holder);
  }
  return live.sort();
}
