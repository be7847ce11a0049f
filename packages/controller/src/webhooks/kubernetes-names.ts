/** Kubernetes name rules the webhooks check: DNS names, label and annotation keys, label values, selectors. */
import type { LabelSelector } from "../api/kubernetes-types.js";

const dnsLabel = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const dnsSubdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const qualifiedNamePart = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
/** Annotations of one object may hold at most this many bytes, keys and values together. */
const maxAnnotationsBytes = 256 * 1024;

export function isDnsLabel(value: string): boolean {
  return value.length <= 63 && dnsLabel.test(value);
}

export function isDnsSubdomain(value: string): boolean {
  return value.length <= 253 && dnsSubdomain.test(value);
}

/** Why `key` is not a valid label or annotation key (`[prefix/]name`), or undefined. */
export function qualifiedNameProblem(key: string): string | undefined {
  const parts = key.split("/");
  if (parts.length > 2) return "it has more than one /";
  const name = parts.length === 2 ? parts[1]! : parts[0]!;
  if (parts.length === 2 && !isDnsSubdomain(parts[0]!)) return "its prefix must be a DNS subdomain (lowercase, at most 253 characters)";
  if (name.length === 0 || name.length > 63) return "its name part must be 1 to 63 characters";
  if (!qualifiedNamePart.test(name)) return "its name part must be alphanumerics, -, _ or ., starting and ending with an alphanumeric";
  return undefined;
}

/** Why `value` is not a valid label value, or undefined. */
export function labelValueProblem(value: string): string | undefined {
  if (value.length === 0) return undefined;
  if (value.length > 63) return "it is longer than 63 characters";
  if (!qualifiedNamePart.test(value)) return "it must be alphanumerics, -, _ or ., starting and ending with an alphanumeric";
  return undefined;
}

/** Problems with the labels and annotations a template copies onto the objects it creates. */
export function templateMetadataProblems(
  path: string,
  metadata: { labels?: Record<string, string>; annotations?: Record<string, string> } | undefined,
): string[] {
  const problems: string[] = [];
  for (const [key, value] of Object.entries(metadata?.labels ?? {})) {
    const keyProblem = qualifiedNameProblem(key);
    if (keyProblem) problems.push(`${path}.labels: key ${JSON.stringify(key)} is not a valid label key: ${keyProblem}`);
    const valueProblem = labelValueProblem(value);
    if (valueProblem) problems.push(`${path}.labels[${JSON.stringify(key)}]: the value is not a valid label value: ${valueProblem}`);
  }
  let bytes = 0;
  for (const [key, value] of Object.entries(metadata?.annotations ?? {})) {
    const keyProblem = qualifiedNameProblem(key);
    if (keyProblem) problems.push(`${path}.annotations: key ${JSON.stringify(key)} is not a valid annotation key: ${keyProblem}`);
    bytes += Buffer.byteLength(key) + Buffer.byteLength(value);
  }
  if (bytes > maxAnnotationsBytes)
    problems.push(
      `${path}.annotations: ${bytes} bytes in all, more than the ${maxAnnotationsBytes} Kubernetes allows; shorten or drop some`,
    );
  return problems;
}

const operatorsWithValues = new Set(["In", "NotIn"]);
const operatorsWithoutValues = new Set(["Exists", "DoesNotExist"]);

/** Problems that keep a label selector from parsing. */
export function labelSelectorProblems(path: string, selector: LabelSelector): string[] {
  const problems: string[] = [];
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    const keyProblem = qualifiedNameProblem(key);
    if (keyProblem) problems.push(`${path}.matchLabels: key ${JSON.stringify(key)} is not a valid label key: ${keyProblem}`);
    const valueProblem = labelValueProblem(value);
    if (valueProblem) problems.push(`${path}.matchLabels[${JSON.stringify(key)}]: not a valid label value: ${valueProblem}`);
  }
  for (const [index, requirement] of (selector.matchExpressions ?? []).entries()) {
    const where = `${path}.matchExpressions[${index}]`;
    const keyProblem = qualifiedNameProblem(requirement.key);
    if (keyProblem) problems.push(`${where}.key: ${JSON.stringify(requirement.key)} is not a valid label key: ${keyProblem}`);
    const values = requirement.values ?? [];
    if (operatorsWithValues.has(requirement.operator)) {
      if (values.length === 0) problems.push(`${where}.values: operator ${requirement.operator} needs at least one value`);
    } else if (operatorsWithoutValues.has(requirement.operator)) {
      if (values.length > 0) problems.push(`${where}.values: operator ${requirement.operator} takes no values; remove them`);
    } else {
      problems.push(`${where}.operator: ${JSON.stringify(requirement.operator)} is not In, NotIn, Exists or DoesNotExist`);
    }
    for (const value of values) {
      const valueProblem = labelValueProblem(value);
      if (valueProblem) problems.push(`${where}.values: ${JSON.stringify(value)} is not a valid label value: ${valueProblem}`);
    }
  }
  return problems;
}
