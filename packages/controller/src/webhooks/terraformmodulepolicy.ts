/**
 * Validating webhook of TerraformModulePolicy (CREATE, UPDATE): an inline key must be a public key that can verify cosign
 * signatures, so a policy that could never admit an image is refused when written, not when a Job waits on it.
 */
import { readPublicKey } from "@captf/contract/signatures";
import type { TerraformModulePolicy } from "../api/terraformmodulepolicy.js";
import { labelSelectorProblems } from "./kubernetes-names.js";
import { verdict, type Verdict } from "./verdict.js";

export function validateTerraformModulePolicy(_oldObject: TerraformModulePolicy | undefined, newObject: TerraformModulePolicy): Verdict {
  const { authorities = [], namespaceSelector } = newObject.spec;
  const problems = namespaceSelector ? labelSelectorProblems("spec.namespaceSelector", namespaceSelector) : [];
  for (const [index, authority] of authorities.entries()) {
    const data = authority.key?.data;
    if (data === undefined) continue;
    const reading = readPublicKey(data);
    if (reading.problem !== undefined) problems.push(`spec.authorities[${index}].key.data (${authority.name}): ${reading.problem}`);
  }
  const warnings = authorities.some((authority) => authority.key?.secretRef)
    ? ["a key in a Secret is read when an image is verified: an unreadable one holds the objects it governs (PolicyKeyInvalid)"]
    : [];
  return verdict(problems, warnings);
}
