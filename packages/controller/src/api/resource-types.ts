// Where captf's own kinds live in the API, for clients, informers and cached reads.
import type { finalizers } from "@captf/contract/api";
import { resourceTypeOf, type ResourceType } from "./resource.js";
import { terraformClusterDefinition } from "./terraformcluster.js";
import { terraformMachineDefinition } from "./terraformmachine.js";
import { terraformMachinePoolDefinition } from "./terraformmachinepool.js";

export const terraformClusterType = resourceTypeOf(terraformClusterDefinition);
export const terraformMachineType = resourceTypeOf(terraformMachineDefinition);
export const terraformMachinePoolType = resourceTypeOf(terraformMachinePoolDefinition);

/** The resource type of a Terraform* kind the shared pass reconciles (a kind adapter's kind and plural). */
export function workspaceResourceType(kind: { kind: keyof typeof finalizers; plural: string }): ResourceType {
  return resourceTypeOf({ kind: kind.kind, plural: kind.plural, scope: "Namespaced" });
}
