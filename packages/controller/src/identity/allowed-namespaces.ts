/**
 * Whether an identity's spec.allowedNamespaces lets a namespace use it: unset allows none; a
 * namespace is allowed when spec.allowedNamespaces.list names it OR selector matches its labels;
 * `selector: {}` allows every namespace, existing or not. A selector that is invalid, or a
 * namespace that cannot be found, matches nothing.
 */
import type { AllowedNamespaces } from "../api/terraformclusteridentity.js";
import { matchesLabels, structuredSelectorRequirements } from "../runtime/label-selector.js";
import { labelSelectorProblems } from "../webhooks/kubernetes-names.js";

/** The live namespace's labels; undefined when the namespace does not exist. */
export interface NamespaceLabels {
  labels?: Record<string, string> | undefined;
}

export type NamespaceAllowance = { allowed: true; by: "list" | "selector" } | { allowed: false; why: string };

/** Whether the namespace's labels are needed to decide, i.e. whether a caller must read the namespace. */
export function allowanceNeedsLabels(allowed: AllowedNamespaces | undefined, namespaceName: string): boolean {
  const selector = allowed?.selector;
  return selector !== undefined && !isEmptySelector(selector) && !(allowed?.list ?? []).includes(namespaceName);
}

export function namespaceAllowance(
  allowed: AllowedNamespaces | undefined,
  namespaceName: string,
  namespace: NamespaceLabels | undefined,
): NamespaceAllowance {
  if (!allowed) return { allowed: false, why: "spec.allowedNamespaces is unset, so no namespace may use it" };
  if ((allowed.list ?? []).includes(namespaceName)) return { allowed: true, by: "list" };
  const selector = allowed.selector;
  if (selector === undefined) return { allowed: false, why: `spec.allowedNamespaces.list does not name ${namespaceName}` };
  if (isEmptySelector(selector)) return { allowed: true, by: "selector" };
  const notListed = allowed.list ? `spec.allowedNamespaces.list does not name ${namespaceName} and ` : "";
  const problems = labelSelectorProblems("spec.allowedNamespaces.selector", selector);
  if (problems.length > 0)
    return { allowed: false, why: `${notListed}spec.allowedNamespaces.selector is invalid and matches nothing: ${problems.join("; ")}` };
  if (!namespace)
    return {
      allowed: false,
      why: `${notListed}namespace ${namespaceName} does not exist, so spec.allowedNamespaces.selector cannot match it`,
    };
  // labelSelectorProblems rejected every selector structuredSelectorRequirements would throw on.
  if (matchesLabels(structuredSelectorRequirements(selector), namespace.labels)) return { allowed: true, by: "selector" };
  return { allowed: false, why: `${notListed}the labels of namespace ${namespaceName} do not match spec.allowedNamespaces.selector` };
}

function isEmptySelector(selector: NonNullable<AllowedNamespaces["selector"]>): boolean {
  return Object.keys(selector.matchLabels ?? {}).length === 0 && (selector.matchExpressions ?? []).length === 0;
}
