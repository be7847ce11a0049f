import type { CustomObjectsApi } from "@kubernetes/client-node";
import { apiGroup, apiVersion } from "@captf/contract/api";
import type { ObjectMeta } from "../kinds/render-inputs.js";
import { undefinedIfNotFound } from "../runtime/client-node-errors.js";

/**
 * Reads of the objects around a Terraform* object, memoised for one reconcile pass: the owner's
 * Cluster and the cluster's TerraformCluster are needed by inputs, pause, identity and job policy,
 * and are read once.
 */

export const capiGroup = "cluster.x-k8s.io";
export const capiVersion = "v1beta2";

export interface CapiCluster {
  metadata: ObjectMeta & { uid?: string };
  spec?: {
    paused?: boolean;
    infrastructureRef?: { apiGroup?: string; kind?: string; name?: string };
    controlPlaneEndpoint?: { host?: string; port?: number };
    topology?: { version?: string };
    clusterNetwork?: { pods?: { cidrBlocks?: string[] }; services?: { cidrBlocks?: string[] }; serviceDomain?: string; apiServerPort?: number };
  };
  status?: { initialization?: { controlPlaneInitialized?: boolean } };
}

export interface TerraformClusterObject {
  metadata: ObjectMeta & { uid?: string };
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
  };
  status?: { failureDomains?: { name?: string }[] };
}

export interface PassReads {
  capiCluster(name: string): Promise<CapiCluster | undefined>;
  /** The TerraformCluster named by the Cluster's infrastructureRef, when it is one. */
  terraformCluster(clusterName: string): Promise<TerraformClusterObject | undefined>;
}

function orUndefined<T>(promise: Promise<unknown>): Promise<T | undefined> {
  return undefinedIfNotFound(promise) as Promise<T | undefined>;
}

export function passReads(custom: CustomObjectsApi, namespace: string): PassReads {
  const clusters = new Map<string, Promise<CapiCluster | undefined>>();
  const terraformClusters = new Map<string, Promise<TerraformClusterObject | undefined>>();
  const capiCluster = (name: string) => {
    if (!name) return Promise.resolve(undefined);
    let read = clusters.get(name);
    if (!read) clusters.set(name, (read = orUndefined<CapiCluster>(custom.getNamespacedCustomObject({ group: capiGroup, version: capiVersion, namespace, plural: "clusters", name }))));
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
          return orUndefined<TerraformClusterObject>(custom.getNamespacedCustomObject({ group: apiGroup, version: apiVersion, namespace, plural: "terraformclusters", name: ref.name }));
        });
        terraformClusters.set(clusterName, read);
      }
      return read;
    },
  };
}
