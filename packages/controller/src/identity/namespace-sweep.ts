/**
 * The namespace sweep (reference: after a finalizer is removed): once a namespace holds no
 * TerraformCluster, TerraformMachine or TerraformMachinePool any more, the ServiceAccounts,
 * RoleBindings and Leases captf made there (labelled `captf.io/managed=true`) are deleted, so a
 * namespace that no longer uses captf keeps nothing of it. Reads are live: a cache could still
 * show the object whose finalizer was just removed, or miss one created a moment ago.
 */
import type { CoordinationV1Api, CoreV1Api, CustomObjectsApi, RbacAuthorizationV1Api } from "@kubernetes/client-node";
import { apiGroup, apiVersion, labels } from "@captf/contract/api";
import { ignoreNotFound } from "../runtime/client-node-errors.js";

const workspacePlurals = ["terraformclusters", "terraformmachines", "terraformmachinepools"] as const;

export interface NamespaceSweepClients {
  core: CoreV1Api;
  rbac: RbacAuthorizationV1Api;
  custom: CustomObjectsApi;
  coordination: CoordinationV1Api;
}

/** What the sweep removed, by kind and name ("nothing" when objects remain). */
export type NamespaceSweepResult = { swept: false } | { swept: true; removed: string[] };

export async function sweepNamespace(clients: NamespaceSweepClients, namespace: string): Promise<NamespaceSweepResult> {
  for (const plural of workspacePlurals) {
    const remaining = (await clients.custom.listNamespacedCustomObject({ group: apiGroup, version: apiVersion, namespace, plural, limit: 1 })) as { items: unknown[] };
    if (remaining.items.length > 0) return { swept: false };
  }
  const labelSelector = `${labels.managed}=true`;
  const removed: string[] = [];
  for (const account of (await clients.core.listNamespacedServiceAccount({ namespace, labelSelector })).items) {
    await clients.core.deleteNamespacedServiceAccount({ namespace, name: account.metadata!.name! }).catch(ignoreNotFound);
    removed.push(`ServiceAccount/${account.metadata!.name}`);
  }
  for (const binding of (await clients.rbac.listNamespacedRoleBinding({ namespace, labelSelector })).items) {
    await clients.rbac.deleteNamespacedRoleBinding({ namespace, name: binding.metadata!.name! }).catch(ignoreNotFound);
    removed.push(`RoleBinding/${binding.metadata!.name}`);
  }
  for (const lease of (await clients.coordination.listNamespacedLease({ namespace, labelSelector })).items) {
    await clients.coordination.deleteNamespacedLease({ namespace, name: lease.metadata!.name! }).catch(ignoreNotFound);
    removed.push(`Lease/${lease.metadata!.name}`);
  }
  return { swept: true, removed };
}
