import type { NamespacedMeta } from "../kinds/render-inputs.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import type { KubeApi, ResourceType } from "../runtime/kube-client.js";
import type { ReadCache } from "../runtime/read-cache.js";

/**
 * Reads of the objects around a Terraform* object, memoised for one reconcile pass: the owner's
 * Cluster and the cluster's TerraformCluster are needed by inputs, pause, identity and job policy,
 * and are read once.
 */

import { capiTypes } from "../api/cluster-api.js";
import { terraformClusterType } from "../api/resource-types.js";
import { passClient } from "../runtime/pass-client.js";

/** A namespaced object from the cache when there is one, else live; undefined when it does not exist. */
export function readObject<T>(
  cache: ReadCache | undefined,
  client: KubeApi,
  type: ResourceType,
  namespace: string,
  name: string,
): Promise<T | undefined> {
  return passClient({ client, cache }).get<T>(type, namespace, name);
}

/** The manager's cache of the Secrets labelled with a Cluster API cluster (bootstrap data), by its name. */
export const capiSecrets = "capi";

/**
 * A Machine's or MachinePool's bootstrap data Secret: from the cache of Secrets labelled with a
 * cluster (as Cluster API's bootstrap providers label them), live when that cache lacks it.
 */
export async function readBootstrapSecret(
  deps: { client: KubeApi; cache?: ReadCache | undefined },
  namespace: string,
  name: string,
): Promise<{ data?: Record<string, string> } | undefined> {
  return passClient(deps).get(builtinTypes.secret, namespace, name, { cache: capiSecrets });
}

export interface CapiCluster {
  metadata: NamespacedMeta & { uid?: string };
  spec?: {
    paused?: boolean;
    infrastructureRef?: { apiGroup?: string; kind?: string; name?: string };
    controlPlaneEndpoint?: { host?: string; port?: number };
    topology?: { version?: string };
    clusterNetwork?: {
      pods?: { cidrBlocks?: string[] };
      services?: { cidrBlocks?: string[] };
      serviceDomain?: string;
      apiServerPort?: number;
    };
  };
  status?: { initialization?: { controlPlaneInitialized?: boolean } };
}

export interface TerraformClusterObject {
  metadata: NamespacedMeta & { uid?: string };
  spec?: {
    identityRef?: { name?: string };
    deletionPolicy?: "Destroy" | "Retain";
    defaults?: {
      identityRef?: { name?: string };
      jobs?: Record<string, unknown>;
      membershipRefreshIntervalSeconds?: number;
      drift?: { intervalSeconds?: number; action?: "Report" | "Remediate" };
      deletionPolicy?: "Destroy" | "Retain";
      remediation?: { annotateMachine?: boolean; unhealthyThreshold?: number; healthCheckIntervalSeconds?: number };
    };
    controlPlaneEndpoint?: { host?: string; port?: number };
    maxActiveJobs?: number;
  };
  status?: { failureDomains?: { name?: string }[] };
}

export interface PassReads {
  capiCluster(name: string): Promise<CapiCluster | undefined>;
  /** The TerraformCluster named by the Cluster's infrastructureRef, when it is one. */
  terraformCluster(clusterName: string): Promise<TerraformClusterObject | undefined>;
}

export function passReads(client: KubeApi, namespace: string, cache?: ReadCache): PassReads {
  const clusters = new Map<string, Promise<CapiCluster | undefined>>();
  const terraformClusters = new Map<string, Promise<TerraformClusterObject | undefined>>();
  const capiCluster = (name: string) => {
    if (!name) return Promise.resolve(undefined);
    let read = clusters.get(name);
    if (!read) clusters.set(name, (read = readObject<CapiCluster>(cache, client, capiTypes.cluster, namespace, name)));
    return read;
  };
  return {
    capiCluster,
    terraformCluster(clusterName) {
      let read = terraformClusters.get(clusterName);
      if (!read) {
        read = capiCluster(clusterName).then((cluster) => {
          const ref = cluster?.spec?.infrastructureRef;
          if (!ref?.name || (ref.kind && ref.kind !== "TerraformCluster")) return undefined;
          return readObject<TerraformClusterObject>(cache, client, terraformClusterType, namespace, ref.name);
        });
        terraformClusters.set(clusterName, read);
      }
      return read;
    },
  };
}
