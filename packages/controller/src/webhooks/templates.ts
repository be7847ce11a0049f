import { annotations } from "@captf/contract/api";
/**
 * Validating webhooks of the three template kinds (CREATE, UPDATE; deletes are always admitted).
 * spec.template.spec is immutable, except in a ClusterClass topology dry-run, which must be able
 * to validate patches; spec.template.metadata stays mutable. The spec follows its kind's rules,
 * so a bad template is refused when written, not when Cluster API clones it.
 */
import type { TerraformClusterTemplate, TerraformMachinePoolTemplate, TerraformMachineTemplate } from "../api/templates.js";
import { templateMetadataProblems } from "./kubernetes-names.js";
import { clusterSpecProblems } from "./terraformcluster.js";
import { machineSpecProblems } from "./terraformmachine.js";
import { poolSpecProblems } from "./terraformmachinepool.js";
import { isDeleting, verdict, type AdmissionContext, type Verdict } from "./verdict.js";
import { sameJsonValue } from "@captf/contract";

/** Cluster API marks the objects of a topology dry-run with this annotation. */
export const topologyDryRunAnnotation = annotations.topologyDryRun;

type Template = { kind?: string; metadata?: { annotations?: Record<string, string> }; spec: { template: { spec: unknown } } };

function isTopologyDryRun(object: Template, context: AdmissionContext): boolean {
  return context.dryRun === true && object.metadata?.annotations?.[topologyDryRunAnnotation] !== undefined;
}

function immutabilityProblems(kind: string, oldObject: Template | undefined, newObject: Template, context: AdmissionContext): string[] {
  if (!oldObject || isTopologyDryRun(newObject, context) || sameJsonValue(oldObject.spec.template.spec, newObject.spec.template.spec))
    return [];
  return [
    `${kind} spec.template.spec is immutable; create a new ${kind} and point its users at it (Cluster API then rolls out the change)`,
  ];
}

export function validateTerraformClusterTemplate(
  oldObject: TerraformClusterTemplate | undefined,
  newObject: TerraformClusterTemplate,
  context: AdmissionContext,
): Verdict {
  const spec = newObject.spec.template.spec;
  const problems = [
    ...templateMetadataProblems("spec.template.metadata", newObject.spec.template.metadata),
    ...clusterSpecProblems("spec.template.spec", oldObject?.spec.template.spec, spec, isDeleting(newObject)),
    ...immutabilityProblems("TerraformClusterTemplate", oldObject, newObject, context),
  ];
  const warnings = spec.identityRef?.name
    ? []
    : [
        "spec.template.spec sets no identityRef; TerraformClusters created from this template are rejected unless a " +
          "ClusterClass patch sets one",
      ];
  return verdict(problems, warnings);
}

export function validateTerraformMachineTemplate(
  oldObject: TerraformMachineTemplate | undefined,
  newObject: TerraformMachineTemplate,
  context: AdmissionContext,
): Verdict {
  const spec = newObject.spec.template.spec;
  const problems = [
    ...templateMetadataProblems("spec.template.metadata", newObject.spec.template.metadata),
    ...machineSpecProblems("spec.template.spec", oldObject?.spec.template.spec, spec, isDeleting(newObject)),
    ...immutabilityProblems("TerraformMachineTemplate", oldObject, newObject, context),
  ];
  if (spec.providerID)
    problems.push("spec.template.spec.providerID must be empty: it would stamp every machine with one instance's identity; remove it");
  return verdict(problems);
}

export function validateTerraformMachinePoolTemplate(
  oldObject: TerraformMachinePoolTemplate | undefined,
  newObject: TerraformMachinePoolTemplate,
  context: AdmissionContext,
): Verdict {
  const spec = newObject.spec.template.spec;
  const problems = [
    ...templateMetadataProblems("spec.template.metadata", newObject.spec.template.metadata),
    ...poolSpecProblems("spec.template.spec", oldObject?.spec.template.spec, spec, isDeleting(newObject)),
    ...immutabilityProblems("TerraformMachinePoolTemplate", oldObject, newObject, context),
  ];
  // Same reason as a machine template's providerID: the manager writes these from the pool's own outputs.
  if (spec.providerID)
    problems.push("spec.template.spec.providerID must be empty: the manager writes it from each pool's outputs; remove it");
  if (spec.providerIDList)
    problems.push("spec.template.spec.providerIDList must be empty: the manager writes it from each pool's outputs; remove it");
  return verdict(problems);
}
