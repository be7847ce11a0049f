/**
 * Label selectors, parsed once and matched in memory: the informer's cache answers
 * `list({ labelSelector })` without asking the server. Grammar of `kubectl -l`: `a=b`, `a==b`,
 * `a!=b`, `a in (x,y)`, `a notin (x,y)`, `a`, `!a`, comma-separated (all must hold).
 */

export type LabelRequirement =
  | { key: string; operator: "In"; values: readonly string[] }
  | { key: string; operator: "NotIn"; values: readonly string[] }
  | { key: string; operator: "Exists" }
  | { key: string; operator: "DoesNotExist" };

/** The API's structured selector (`metav1.LabelSelector`). */
export interface StructuredLabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

export class LabelSelectorError extends Error {
  override readonly name = "LabelSelectorError";
}

/** Parses a selector string; "" selects everything. Throws {@link LabelSelectorError} on bad syntax. */
export function parseLabelSelector(selector: string): LabelRequirement[] {
  const requirements: LabelRequirement[] = [];
  for (const term of splitTerms(selector)) {
    const text = term.trim();
    if (text === "") throw new LabelSelectorError(`empty requirement in selector "${selector}"`);
    let match: RegExpMatchArray | null;
    if ((match = /^([^\s=!(),]+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(text))) {
      const values = match[3]!.split(",").map((v) => v.trim());
      requirements.push({ key: checkKey(match[1]!), operator: match[2] === "in" ? "In" : "NotIn", values: values.map(checkValue) });
    } else if ((match = /^([^\s=!(),]+)\s*(==|=|!=)\s*([^\s=!(),]*)$/.exec(text))) {
      const requirement = match[2] === "!=" ? ("NotIn" as const) : ("In" as const);
      requirements.push({ key: checkKey(match[1]!), operator: requirement, values: [checkValue(match[3]!)] });
    } else if ((match = /^!\s*([^\s=!(),]+)$/.exec(text))) {
      requirements.push({ key: checkKey(match[1]!), operator: "DoesNotExist" });
    } else if ((match = /^([^\s=!(),]+)$/.exec(text))) {
      requirements.push({ key: checkKey(match[1]!), operator: "Exists" });
    } else {
      throw new LabelSelectorError(`cannot parse requirement "${text}" in selector "${selector}"`);
    }
  }
  return requirements;
}

/** Converts the API's structured selector; an empty one selects everything. */
export function structuredSelectorRequirements(selector: StructuredLabelSelector): LabelRequirement[] {
  const requirements: LabelRequirement[] = Object.entries(selector.matchLabels ?? {}).map(([key, value]) => ({
    key,
    operator: "In",
    values: [value],
  }));
  for (const expression of selector.matchExpressions ?? []) {
    const values = expression.values ?? [];
    switch (expression.operator) {
      case "In":
      case "NotIn":
        if (values.length === 0) throw new LabelSelectorError(`operator ${expression.operator} on "${expression.key}" needs values`);
        requirements.push({ key: expression.key, operator: expression.operator, values });
        break;
      case "Exists":
      case "DoesNotExist":
        requirements.push({ key: expression.key, operator: expression.operator });
        break;
      default:
        throw new LabelSelectorError(`unknown operator "${expression.operator}" on "${expression.key}"`);
    }
  }
  return requirements;
}

export function matchesLabels(requirements: readonly LabelRequirement[], labels: Readonly<Record<string, string>> | undefined): boolean {
  return requirements.every((requirement) => {
    const value = labels?.[requirement.key];
    switch (requirement.operator) {
      case "In":
        return value !== undefined && requirement.values.includes(value);
      case "NotIn":
        return value === undefined || !requirement.values.includes(value);
      case "Exists":
        return value !== undefined;
      case "DoesNotExist":
        return value === undefined;
    }
  });
}

/** Renders requirements in the server's syntax (for a list or watch request). */
export function formatLabelSelector(requirements: readonly LabelRequirement[]): string {
  return requirements
    .map((r) => {
      switch (r.operator) {
        case "In":
          return r.values.length === 1 ? `${r.key}=${r.values[0]}` : `${r.key} in (${r.values.join(",")})`;
        case "NotIn":
          return r.values.length === 1 ? `${r.key}!=${r.values[0]}` : `${r.key} notin (${r.values.join(",")})`;
        case "Exists":
          return r.key;
        case "DoesNotExist":
          return `!${r.key}`;
      }
    })
    .join(",");
}

/** Splits on commas outside parentheses. */
function splitTerms(selector: string): string[] {
  if (selector.trim() === "") return [];
  const terms: string[] = [];
  let depth = 0;
  let current = "";
  for (const char of selector) {
    if (char === "(") depth++;
    if (char === ")") depth--;
    if (char === "," && depth === 0) {
      terms.push(current);
      current = "";
    } else current += char;
  }
  terms.push(current);
  return terms;
}

const qualifiedName = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const labelValue = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;

function checkKey(key: string): string {
  if (!qualifiedName.test(key) || key.length > 317) throw new LabelSelectorError(`invalid label key "${key}"`);
  return key;
}

function checkValue(value: string): string {
  if (!labelValue.test(value) || value.length > 63) throw new LabelSelectorError(`invalid label value "${value}"`);
  return value;
}
