/**
 * The manager's read cache: the informers a reconcile pass reads from, each scoped where that
 * bounds memory, with managedFields stripped. Secrets: only those labelled `captf.io/managed`
 * (state, durable inputs, backups, per-run Secrets, credential mirrors), the per-run Secrets
 * without their data (only their existence is read), and, named {@link capiSecrets}, those
 * labelled with a Cluster API cluster (bootstrap data); an identity's source Secret from a watch
 * of its own, by name; a variablesFrom Secret is read live. Leases and Pods: only captf's (run and cluster leases, the
 * backend's state locks, which carry the backend's labels; Jobs' Pods, status and metadata only). Jobs:
 * their Pod template cut to the containers' names, images and arguments.
 */
import { labels } from "@captf/contract/api";
import type { Role } from "@captf/contract";
import { identityResourceType } from "../identity/ensure-credentials.js";
import { identitySecretWatches } from "../identity/secret-watches.js";
import { runnerRbacName } from "../identity/runner-rbac.js";
import { runSecretName } from "../jobs/build-job.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import type { KubeObject, ResourceType } from "../runtime/kube-client.js";
import type { Manager } from "../runtime/manager.js";
import { ReadCache } from "../runtime/read-cache.js";
import { capiTypes } from "../api/cluster-api.js";
import { terraformClusterType, workspaceResourceType } from "../api/resource-types.js";
import { capiSecrets } from "./pass-reads.js";
import { jobNameLabel } from "./observe-jobs.js";
import { backendSuffixLabel } from "../state/read-state.js";
import type { KindAdapter } from "./types.js";

/** The Secrets, Leases and Pods the manager caches: captf's. */
export const managedSecretSelector = `${labels.managed}=true`;

/** Drops what no pass reads: managedFields everywhere. */
export function withoutManagedFields<T extends KubeObject>(object: T): T {
  if (!object.metadata?.managedFields) return object;
  const { managedFields: _dropped, ...metadata } = object.metadata;
  return { ...object, metadata };
}

const runSecretPrefix = runSecretName("");

/** A managed Secret as cached: a per-run Secret keeps no data. */
export function cachedSecret<T extends KubeObject & { data?: unknown; stringData?: unknown }>(secret: T): T {
  const stripped = withoutManagedFields(secret);
  if (!stripped.metadata?.name?.startsWith(runSecretPrefix)) return stripped;
  const { data: _data, ...rest } = stripped;
  return rest as T;
}

/** A Job's Pod as cached: what the pass reads (its phase, conditions and container states). */
export function cachedPod<
  T extends KubeObject & {
    spec?: unknown;
    status?: { phase?: string; conditions?: unknown; startTime?: unknown; containerStatuses?: unknown; initContainerStatuses?: unknown };
  },
>(pod: T): T {
  const { spec: _spec, status, ...rest } = withoutManagedFields(pod);
  return {
    ...rest,
    status: {
      phase: status?.phase,
      conditions: status?.conditions,
      startTime: status?.startTime,
      containerStatuses: status?.containerStatuses,
      initContainerStatuses: status?.initContainerStatuses,
    },
  } as T;
}

type CachedJobShape = KubeObject & {
  spec?: {
    template?: {
      metadata?: unknown;
      spec?: { containers?: { name?: string; image?: string; args?: string[] }[]; initContainers?: { name?: string; image?: string }[] };
    };
  };
};

/**
 * A Job as cached: its metadata, status and spec, with the Pod template cut to what the pass reads
 * (each container's name, image and arguments): its environment, volumes and security settings
 * are most of its size, and thousands of Jobs are cached.
 */
export function cachedJob<T extends CachedJobShape>(job: T): T {
  const stripped = withoutManagedFields(job);
  const template = stripped.spec?.template;
  if (!template?.spec) return stripped;
  const { containers, initContainers } = template.spec;
  const podSpec = {
    containers: (containers ?? []).map(({ name, image, args }) => ({ name, image, ...(args ? { args } : {}) })),
    ...(initContainers ? { initContainers: initContainers.map(({ name, image }) => ({ name, image })) } : {}),
  };
  return {
    ...stripped,
    spec: { ...stripped.spec, template: { ...(template.metadata ? { metadata: template.metadata } : {}), spec: podSpec } },
  };
}

/** Requests the informers (before the manager starts) and serves the pass's reads from them. */
export function managerReadCache(
  manager: Pick<Manager, "informer" | "client"> & Partial<Pick<Manager, "objectWatch" | "releaseObjectWatch">>,
  adapters: readonly Pick<KindAdapter<Role>, "kind" | "plural">[],
  options: { watchFilterSelector?: string; sharded?: boolean } = {},
): ReadCache {
  const cache = new ReadCache(manager.client);
  const whole = (type: ResourceType, labelSelector?: string, scoped?: boolean) =>
    cache.add(type, {
      informer: manager.informer(type, { ...(labelSelector ? { labelSelector } : {}), transform: withoutManagedFields }),
      ...(scoped ? { scoped } : {}),
    });
  // The pass ignores objects outside the watch filter, so the filtered cache is the whole of what it reads.
  // Sharded (`--shards` > 1), these caches hold the held shards only: an object absent there is read live.
  for (const adapter of adapters) whole(workspaceResourceType(adapter), options.watchFilterSelector, options.sharded);
  for (const type of [capiTypes.cluster, capiTypes.machine, capiTypes.machinePool, identityResourceType]) whole(type);
  // Each pass lists by these labels: indexed, a list reads one object's entries, not every cached one.
  const jobs = manager.informer(builtinTypes.job, { transform: cachedJob });
  jobs.indexLabel(labels.ownerName);
  cache.add(builtinTypes.job, { informer: jobs });
  // Machines read their cluster's TerraformCluster whether or not it is in the filter.
  if (options.watchFilterSelector) whole(terraformClusterType, undefined, options.sharded);
  const managedSecrets = manager.informer(builtinTypes.secret, { labelSelector: managedSecretSelector, transform: cachedSecret });
  for (const key of [backendSuffixLabel, labels.stateBackupSuffix]) managedSecrets.indexLabel(key);
  cache.add(builtinTypes.secret, { informer: managedSecrets, scoped: true });
  cache.add(
    builtinTypes.secret,
    {
      informer: manager.informer(builtinTypes.secret, { labelSelector: labels.clusterName, transform: withoutManagedFields }),
      scoped: true,
    },
    capiSecrets,
  );
  // An identity's source Secret (any namespace, no label): a watch of its own, by name, while an identity names it.
  const sourceSecretWatches = identitySecretWatches(manager, withoutManagedFields);
  if (sourceSecretWatches) cache.watchByName(builtinTypes.secret, sourceSecretWatches);
  cache.add(builtinTypes.lease, {
    informer: manager.informer(builtinTypes.lease, { labelSelector: managedSecretSelector, transform: withoutManagedFields }),
    scoped: true,
  });
  const pods = manager.informer(builtinTypes.pod, { labelSelector: managedSecretSelector, transform: cachedPod });
  pods.indexLabel(jobNameLabel);
  cache.add(builtinTypes.pod, { informer: pods, scoped: true });
  const runnerObject = `metadata.name=${runnerRbacName}`;
  for (const type of [builtinTypes.serviceAccount, builtinTypes.roleBinding])
    cache.add(type, { informer: manager.informer(type, { fieldSelector: runnerObject, transform: withoutManagedFields }), scoped: true });
  return cache;
}
