/** Validating webhook of TerraformMachine (CREATE, UPDATE, DELETE). Metadata changes are never refused. */
import { annotations } from "@captf/contract/api";
import type { TerraformMachine, TerraformMachineSpec } from "../api/terraformmachine.js";
import { isDeleting, verdict, type AdmissionContext, type Verdict } from "./verdict.js";
import { sameJsonValue } from "@captf/contract";
import { workspaceProblems } from "./workspace.js";

/** Fields that define the machine: a change means a new machine, which Cluster API rolls out. */
const definingFields = ["source", "identityRef", "variables", "variablesFrom"] as const;

/** Rules on a TerraformMachine spec at `path` that hold for the kind and its template alike. */
export function machineSpecProblems(
  path: string,
  oldSpec: TerraformMachineSpec | undefined,
  newSpec: TerraformMachineSpec,
  deleting: boolean,
): string[] {
  return workspaceProblems({ role: "machine", path, oldSpec, newSpec, deleting });
}

export function validateTerraformMachine(
  oldObject: TerraformMachine | undefined,
  newObject: TerraformMachine,
  context: AdmissionContext,
): Verdict {
  const problems = machineSpecProblems("spec", oldObject?.spec, newObject.spec, isDeleting(newObject));
  if (oldObject) {
    for (const field of definingFields) {
      if (!sameJsonValue(oldObject.spec[field], newObject.spec[field])) {
        problems.push(
          `spec.${field} is immutable: a TerraformMachine is replaced, never changed; roll out a new machine (for example ` +
            `through a new TerraformMachineTemplate)`,
        );
      }
    }
    problems.push(...providerIdProblems(oldObject.spec.providerID, newObject.spec.providerID, context));
  }
  return verdict(problems);
}

/** Only the manager writes a providerID, once; create accepts any value, so clusterctl move can recreate a machine. */
function providerIdProblems(oldId: string | undefined, newId: string | undefined, context: AdmissionContext): string[] {
  if ((oldId ?? "") === (newId ?? "")) return [];
  if (oldId)
    return [
      `spec.providerID is set once and then immutable (${oldId}): it must keep matching the Node's spec.providerID; delete the ` +
        `machine to get a new instance`,
    ];
  if (context.requester.username !== context.managerUsername) {
    return [
      `spec.providerID may only be set by the captf manager (${context.managerUsername}), from the module's provider_id output; ` +
        `leave it empty`,
    ];
  }
  return [];
}

/** What the admission server looks up before a TerraformMachine is deleted. */
export interface MachineDeletionFacts {
  /** Machines whose spec.infrastructureRef names this TerraformMachine. */
  referencingMachines: readonly { name: string; deleting: boolean }[];
  /** Whether the owning Cluster is paused (clusterctl move pauses it first). */
  clusterPaused: boolean;
}

/** A TerraformMachine goes with its Machine: deleting it under a live Machine is refused, except for clusterctl move. */
export function validateTerraformMachineDeletion(object: TerraformMachine, facts: MachineDeletionFacts): Verdict {
  const live = facts.referencingMachines.find((machine) => !machine.deleting);
  if (!live) return verdict([]);
  const movedAway = object.metadata?.annotations?.[annotations.deleteForMove] !== undefined && facts.clusterPaused;
  if (movedAway) return verdict([]);
  return verdict([
    `TerraformMachine ${object.metadata?.name ?? ""} is the infrastructure of Machine ${live.name}, which is not being deleted; ` +
      `delete the Machine instead and Cluster API deletes this object`,
  ]);
}
