/**
 * Validating webhook of TerraformClusterIdentity (CREATE, UPDATE, DELETE). An identity exposes
 * a Secret to every allowed namespace, so whoever points it at a Secret, or widens where it is
 * copied, must be able to read that Secret themselves (a SubjectAccessReview the admission
 * server runs when {@link identityNeedsAccessReview} says so).
 */
import type { TerraformClusterIdentity } from "../api/terraformclusteridentity.js";
import { isDnsLabel, isDnsSubdomain, labelSelectorProblems } from "./kubernetes-names.js";
import { verdict, type AdmissionContext, type Verdict } from "./verdict.js";
import { sameJsonValue } from "@captf/contract";

/** The answer of a SubjectAccessReview for `get` on the referenced Secret, as the requester. */
export interface SecretAccess {
  allowed: boolean;
}

export interface IdentityAdmissionContext extends AdmissionContext {
  /** Required when {@link identityNeedsAccessReview} is true; a missing answer is a denial. */
  secretAccess?: SecretAccess;
}

/** On create, and on update when secretRef or allowedNamespaces changed: the first picks a Secret, the second where it is copied. */
export function identityNeedsAccessReview(oldObject: TerraformClusterIdentity | undefined, newObject: TerraformClusterIdentity): boolean {
  return (
    oldObject === undefined ||
    !sameJsonValue(oldObject.spec.secretRef, newObject.spec.secretRef) ||
    !sameJsonValue(oldObject.spec.allowedNamespaces, newObject.spec.allowedNamespaces)
  );
}

export function validateTerraformClusterIdentity(
  oldObject: TerraformClusterIdentity | undefined,
  newObject: TerraformClusterIdentity,
  context: IdentityAdmissionContext,
): Verdict {
  const problems: string[] = [];
  const { secretRef, allowedNamespaces } = newObject.spec;
  if (!secretRef?.name) problems.push("spec.secretRef.name is required: name the Secret holding the credentials");
  else if (!isDnsSubdomain(secretRef.name))
    problems.push(`spec.secretRef.name: ${JSON.stringify(secretRef.name)} is not a valid Secret name (a lowercase DNS subdomain)`);
  if (!secretRef?.namespace) problems.push("spec.secretRef.namespace is required: it is never defaulted; name the Secret's namespace");
  else if (!isDnsLabel(secretRef.namespace))
    problems.push(`spec.secretRef.namespace: ${JSON.stringify(secretRef.namespace)} is not a valid namespace name (a DNS label)`);
  if (allowedNamespaces) {
    if (allowedNamespaces.list === undefined && allowedNamespaces.selector === undefined) {
      problems.push(
        "spec.allowedNamespaces {} is ambiguous and rejected: set list, or write selector: {} to allow every namespace (omit " +
          "allowedNamespaces to allow none)",
      );
    }
    for (const [index, namespace] of (allowedNamespaces.list ?? []).entries()) {
      if (!isDnsLabel(namespace))
        problems.push(`spec.allowedNamespaces.list[${index}]: ${JSON.stringify(namespace)} is not a valid namespace name (a DNS label)`);
    }
    if (allowedNamespaces.selector) problems.push(...labelSelectorProblems("spec.allowedNamespaces.selector", allowedNamespaces.selector));
  }
  if (problems.length === 0 && identityNeedsAccessReview(oldObject, newObject) && context.secretAccess?.allowed !== true) {
    const target = `${secretRef.namespace}/${secretRef.name}`;
    problems.push(
      context.secretAccess
        ? `user ${JSON.stringify(context.requester.username)} may not get Secret ${target}: an identity may only expose a ` +
            `Secret its author can read; get that permission or reference another Secret`
        : `whether user ${JSON.stringify(context.requester.username)} may get Secret ${target} could not be checked; retry`,
    );
  }
  return verdict(problems);
}

/** An object (or a fallback of one) that resolves to the identity. */
export interface IdentityUser {
  kind: string;
  namespace: string;
  name: string;
}

/** Deleting an identity in use, or still mirrored somewhere, would strand its users' Jobs and mirrors. */
export function validateTerraformClusterIdentityDeletion(object: TerraformClusterIdentity, users: readonly IdentityUser[]): Verdict {
  const problems: string[] = [];
  const user = users[0];
  if (user) {
    const more = users.length > 1 ? ` and ${users.length - 1} more` : "";
    problems.push(
      `TerraformClusterIdentity ${object.metadata?.name ?? ""} is used by ${user.kind} ${user.namespace}/${user.name}${more}; ` +
        `point them at another identity or delete them first`,
    );
  }
  const mirrored = object.status?.namespaces ?? [];
  if (mirrored.length > 0) {
    problems.push(
      `TerraformClusterIdentity ${object.metadata?.name ?? ""} is still mirrored into ${mirrored.join(", ")}; wait for the ` +
        `manager to remove the mirrors once nothing there uses it`,
    );
  }
  return verdict(problems);
}
