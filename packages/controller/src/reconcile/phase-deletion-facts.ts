/**
 * The deletion facts the decision reads: the deletion policy (Destroy runs a destroy Job; Retain leaves the infrastructure and keeps
 * its state), and the machines and pools a deleting cluster waits for, since they run on its infrastructure.
 */
import { labels } from "@captf/contract/api";
import { nameLabelValue } from "@captf/contract";
import { terraformMachinePoolType, terraformMachineType } from "../api/resource-types.js";
import { previousReason } from "../conditions/conditions.js";
import type { PassClient } from "../runtime/pass-client.js";
import { resolveDeletionPolicy } from "./retained-state.js";
import { next, type Phase } from "./types.js";

/** The TerraformMachines and TerraformMachinePools of a cluster, read live (a list the cache may not show deleted yet). */
export async function countDependents(reads: PassClient, namespace: string, clusterName: string): Promise<number> {
  let count = 0;
  for (const type of [terraformMachineType, terraformMachinePoolType]) {
    // A name over 63 characters is no label value: selected by its hash, as captf's own labels carry it.
    count += (await reads.live.list(type, namespace, `${labels.clusterName}=${nameLabelValue(clusterName)}`)).length;
  }
  return count;
}

export const reconcileDeletionFacts: Phase = async (pass) => {
  const { adapter, object, namespace, clusterName, events, subject, scope, facts } = pass;
  const { deleting } = scope;
  facts.dependents = deleting && adapter.role === "cluster" && clusterName ? await countDependents(pass.reads, namespace, clusterName) : 0;
  if (deleting && adapter.role === "cluster") scope.dependents = facts.dependents;
  facts.deletionPolicy = resolveDeletionPolicy(
    adapter.role,
    object.spec.deletionPolicy,
    adapter.role === "cluster" ? undefined : facts.terraformCluster,
  );
  if (facts.deletionPolicy) scope.deletionPolicy = facts.deletionPolicy;
  // Once, on the first pass that sees the deletion (the condition read NotDeleting, or nothing yet).
  const deletionSeen = ["Deleting", "DeletionPolicyUnresolved", "DeletionPaused"].includes(
    previousReason(scope.previous, "Deleting") ?? "",
  );
  if (deleting && !deletionSeen)
    void events.record(subject, "DeletionStarted", `deletion started (deletionPolicy ${facts.deletionPolicy ?? "unresolved"})`);
  return next;
};
