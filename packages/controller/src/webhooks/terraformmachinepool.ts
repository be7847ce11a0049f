/** Validating webhook of TerraformMachinePool (CREATE, UPDATE; deletes are always admitted). Every spec field is mutable. */
import type { TerraformMachinePool, TerraformMachinePoolSpec } from "../api/terraformmachinepool.js";
import { isDeleting, verdict, type AdmissionContext, type Verdict } from "./verdict.js";
import { workspaceProblems } from "./workspace.js";

/** Rules on a TerraformMachinePool spec at `path` that hold for the kind and its template alike. */
export function poolSpecProblems(
  path: string,
  oldSpec: TerraformMachinePoolSpec | undefined,
  newSpec: TerraformMachinePoolSpec,
  deleting: boolean,
): string[] {
  return workspaceProblems({ role: "machinepool", path, oldSpec, newSpec, deleting });
}

export function validateTerraformMachinePool(
  oldObject: TerraformMachinePool | undefined,
  newObject: TerraformMachinePool,
  _context: AdmissionContext,
): Verdict {
  return verdict(poolSpecProblems("spec", oldObject?.spec, newObject.spec, isDeleting(newObject)));
}
