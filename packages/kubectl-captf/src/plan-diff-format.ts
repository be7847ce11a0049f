/**
 * A kept plan diff (contract/plan-diff.ts) printed the way `tofu show <planfile>` prints a plan: one
 * block per resource, attribute by attribute, `+` create, `-` destroy, `~` update, `-/+` and `+/-`
 * replace, `<=` read; hidden values as "(sensitive value)" and "(known after apply)". Pure.
 */
import { maskReason, type DiffValue, type PlanDiff, type PlanDiffOutput, type PlanDiffResource } from "@captf/contract/plan-diff";

type Symbol = "+" | "-" | "~" | " ";

/** One printed line: `indent` spaces, then the symbol column, then the text. */
interface Line {
  indent: number;
  symbol: Symbol | "";
  text: string;
}

type Complex = DiffValue[] | { [key: string]: DiffValue };

function isComplex(value: DiffValue | undefined): value is Complex {
  return typeof value === "object" && value !== null && maskReason(value) === undefined;
}

function isList(value: DiffValue | undefined): value is DiffValue[] {
  return Array.isArray(value);
}

/** A value printed on one line: a scalar, a masked value, or an empty list or map. */
function inline(value: DiffValue | undefined): string {
  const reason = maskReason(value);
  if (reason === "unknown") return "(known after apply)";
  if (reason) return "(sensitive value)";
  if (value === undefined || value === null) return "null";
  if (isList(value)) return value.length === 0 ? "[]" : "[…]";
  if (typeof value === "object") return Object.keys(value).length === 0 ? "{}" : "{…}";
  return typeof value === "string" ? JSON.stringify(value) : String(value);
}

function isInline(value: DiffValue | undefined): boolean {
  return !isComplex(value) || (isList(value) ? value.length === 0 : Object.keys(value).length === 0);
}

function same(a: DiffValue | undefined, b: DiffValue | undefined): boolean {
  // A sensitive value the plan changes is marked so on its after side; equal marks are equal values.
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
}

const identifier = /^[A-Za-z_][A-Za-z0-9_-]*$/;

function keyText(key: string): string {
  return identifier.test(key) ? key : JSON.stringify(key);
}

/** `label` is "key = " (padded by the caller) or "" for a list element; `close` ends a block ("", ",", " -> null"). */
function valueLines(symbol: Symbol, label: string, value: DiffValue | undefined, indent: number, suffix = ""): Line[] {
  if (isInline(value)) return [{ indent, symbol, text: `${label}${inline(value)}${suffix}` }];
  const list = isList(value);
  const entries = list ? value.map((item) => ["", item] as const) : Object.entries(value as Record<string, DiffValue>);
  const shown = entries.filter(([, item]) => item !== null || list);
  const width = Math.max(0, ...shown.map(([key]) => keyText(key).length));
  const inner = shown.flatMap(([key, item]) =>
    valueLines(symbol, list ? "" : `${keyText(key).padEnd(width)} = `, item, indent + 4, list ? "," : ""),
  );
  return [
    { indent, symbol, text: `${label}${list ? "[" : "{"}` },
    ...inner,
    { indent: indent + 2, symbol: "", text: `${list ? "]" : "}"}${suffix}` },
  ];
}

function hiddenLine(count: number, what: string, indent: number): Line[] {
  return count === 0 ? [] : [{ indent: indent + 2, symbol: "", text: `# (${count} unchanged ${what}${count === 1 ? "" : "s"} hidden)` }];
}

/** A list's elements in order: kept, removed and added, by their longest common subsequence. */
function listLines(before: DiffValue[], after: DiffValue[], indent: number): Line[] {
  const table = Array.from({ length: before.length + 1 }, () => new Array<number>(after.length + 1).fill(0));
  for (let i = before.length - 1; i >= 0; i--)
    for (let j = after.length - 1; j >= 0; j--)
      table[i]![j] = same(before[i], after[j]) ? table[i + 1]![j + 1]! + 1 : Math.max(table[i + 1]![j]!, table[i]![j + 1]!);
  const lines: Line[] = [];
  let i = 0;
  let j = 0;
  while (i < before.length || j < after.length) {
    if (i < before.length && j < after.length && same(before[i], after[j])) {
      lines.push(...valueLines(" ", "", after[j], indent, ","));
      i++;
      j++;
    } else if (j >= after.length || (i < before.length && table[i + 1]![j]! >= table[i]![j + 1]!)) {
      lines.push(...valueLines("-", "", before[i++], indent, ","));
    } else lines.push(...valueLines("+", "", after[j++], indent, ","));
  }
  return lines;
}

/** What one attribute (or map key) changes from and to; nothing when it is unchanged. */
function changeLines(label: string, before: DiffValue | undefined, after: DiffValue | undefined, indent: number): Line[] {
  const absentBefore = before === undefined || before === null;
  const absentAfter = after === undefined || after === null;
  if (same(before, after) && maskReason(after) !== "sensitive-changed") return [];
  if (absentBefore) return valueLines("+", label, after, indent);
  if (absentAfter) return valueLines("-", label, before, indent, " -> null");
  if (isList(before) && isList(after)) {
    return [
      { indent, symbol: "~", text: `${label}[` },
      ...listLines(before, after, indent + 4),
      { indent: indent + 2, symbol: "", text: "]" },
    ];
  }
  if (isComplex(before) && isComplex(after) && !isList(before) && !isList(after)) {
    return [
      { indent, symbol: "~", text: `${label}{` },
      ...attributeLines(before, after, indent + 4),
      { indent: indent + 2, symbol: "", text: "}" },
    ];
  }
  if (isInline(before) && isInline(after)) {
    if (maskReason(before) && maskReason(after) && maskReason(after) !== "unknown")
      return [{ indent, symbol: "~", text: `${label}(sensitive value)` }];
    return [{ indent, symbol: "~", text: `${label}${inline(before)} -> ${inline(after)}` }];
  }
  if (isInline(after)) return valueLines("~", label, before, indent, ` -> ${inline(after)}`).map(markRemoved);
  return [...valueLines("-", label, before, indent), ...valueLines("+", label, after, indent)];
}

/** Inside a block that goes away whole, its lines are removals: `~ k = {` stays, the rest is `-`. */
function markRemoved(line: Line, index: number): Line {
  return index === 0 || line.symbol === "" ? line : { ...line, symbol: "-" };
}

/** Unchanged attributes of a resource the CLI still shows, as they name what is changed. */
const identifyingAttributes = new Set(["id", "name", "tags"]);

/**
 * The attributes of two objects in key order, the unchanged ones counted (a resource's identifying ones shown),
 * keys aligned as the CLI aligns them.
 */
function attributeLines(
  before: { [key: string]: DiffValue },
  after: { [key: string]: DiffValue },
  indent: number,
  resourceLevel = false,
): Line[] {
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
  const changed = (key: string) => !same(before[key], after[key]) || maskReason(after[key]) === "sensitive-changed";
  const present = (key: string) => before[key] !== null && before[key] !== undefined;
  const shownAsIs = (key: string) =>
    resourceLevel && !changed(key) && present(key) && identifyingAttributes.has(key) && isInline(after[key]);
  const shown = keys.filter((key) => changed(key) || shownAsIs(key));
  const width = Math.max(0, ...shown.map((key) => keyText(key).length));
  const unchanged = keys.filter((key) => !shown.includes(key) && present(key)).length;
  return [
    ...shown.flatMap((key) => {
      const label = `${keyText(key).padEnd(width)} = `;
      return shownAsIs(key) ? valueLines(" ", label, after[key], indent) : changeLines(label, before[key], after[key], indent);
    }),
    ...hiddenLine(unchanged, "attribute", indent),
  ];
}

function asObject(value: DiffValue): { [key: string]: DiffValue } {
  return isComplex(value) && !isList(value) ? value : {};
}

const resourceSymbols: Record<string, string> = {
  create: "  +",
  delete: "  -",
  update: "  ~",
  "delete,create": "-/+",
  "create,delete": "+/-",
  read: " <=",
  "no-op": "   ",
};

/** The CLI's note on why a resource is replaced, deleted or read; a replacement an update cannot make goes without. */
const reasonNotes: Record<string, string> = {
  replace_because_tainted: "tainted, so must be replaced",
  replace_by_request: "will be replaced, as requested",
  replace_by_triggers: "will be replaced due to changes in replace_triggered_by",
  delete_because_no_resource_config: "because <address> is not in configuration",
  delete_because_no_module: "because its module is not in configuration",
  delete_because_wrong_repetition: "because the resource no longer uses count or for_each as it did",
  delete_because_count_index: "because index <key> is out of range for count",
  delete_because_each_key: "because key <key> is not in for_each map",
  read_because_config_unknown: "config refers to values not yet known",
  read_because_dependency_pending: "depends on a resource or a module with changes pending",
};

function heading(resource: PlanDiffResource): string[] {
  const key = resource.actions.join(",");
  const said: Record<string, string> = {
    create: "will be created",
    delete: "will be destroyed",
    update: "will be updated in-place",
    "delete,create": "must be replaced",
    "create,delete": "must be replaced",
    read: "will be read during apply",
  };
  const lines: string[] = [];
  if (resource.previousAddress) lines.push(`  # ${resource.previousAddress} has moved to ${resource.address}`);
  if (said[key]) lines.push(`  # ${resource.address} ${said[key]}`);
  if (resource.importing) lines.push(`  # ${resource.address} will be imported`);
  const why = resource.actionReason && reasonNotes[resource.actionReason];
  const index = /\[[^[\]]*\]$/.exec(resource.address)?.[0] ?? "";
  if (why) lines.push(`  # (${why.replace("<address>", resource.address).replace("<key>", index)})`);
  return lines;
}

function print(lines: Line[]): string[] {
  return lines.map((line) => `${" ".repeat(line.indent)}${line.symbol === "" ? "" : `${line.symbol} `}${line.text}`);
}

/** One resource's block, as the CLI prints it. */
export function formatResourceDiff(resource: PlanDiffResource): string[] {
  const before = asObject(resource.before);
  const after = asObject(resource.after);
  const creates = resource.before === null;
  const deletes = resource.after === null;
  let body: Line[];
  if (creates || deletes) {
    const shown = creates ? after : before;
    const keys = Object.keys(shown)
      .filter((key) => shown[key] !== null)
      .sort();
    const width = Math.max(0, ...keys.map((key) => keyText(key).length));
    body = keys.flatMap((key) =>
      valueLines(creates ? "+" : "-", `${keyText(key).padEnd(width)} = `, shown[key], 6, creates ? "" : " -> null"),
    );
  } else body = attributeLines(before, after, 6, true);
  const keyword = resource.mode === "data" ? "data" : "resource";
  const symbol = resourceSymbols[resource.actions.join(",")] ?? "  ~";
  return [
    ...heading(resource),
    `${symbol} ${keyword} ${JSON.stringify(resource.type)} ${JSON.stringify(resource.name)} {`,
    ...print(body),
    "    }",
  ];
}

function outputSymbol(output: PlanDiffOutput): Symbol {
  if (output.actions.includes("create") && !output.actions.includes("delete")) return "+";
  if (output.actions.includes("delete") && !output.actions.includes("create")) return "-";
  return "~";
}

/** The "Plan:" line: a replacement counts as one to add and one to destroy, as the CLI counts. */
export function planTotals(diff: PlanDiff): string {
  const count = (action: string) => diff.resources.filter((resource) => resource.actions.includes(action)).length;
  const imports = diff.resources.filter((resource) => resource.importing).length;
  const parts = [`${count("create")} to add`, `${count("update")} to change`, `${count("delete")} to destroy`];
  return `Plan: ${imports > 0 ? `${imports} to import, ` : ""}${parts.join(", ")}.`;
}

/** The whole diff: the resources in plan order, the totals, then the root outputs that change. */
export function formatPlanDiff(diff: PlanDiff): string {
  const blocks = diff.resources.map((resource) => formatResourceDiff(resource).join("\n"));
  const lines = [...(blocks.length > 0 ? [blocks.join("\n\n"), ""] : []), planTotals(diff)];
  if (diff.outputs.length > 0) {
    const width = Math.max(...diff.outputs.map((output) => keyText(output.name).length));
    lines.push("", "Changes to Outputs:");
    for (const output of diff.outputs) {
      const label = `${keyText(output.name).padEnd(width)} = `;
      const symbol = outputSymbol(output);
      const body =
        symbol === "~"
          ? changeLines(label, output.before, output.after, 2)
          : valueLines(symbol, label, symbol === "+" ? output.after : output.before, 2);
      lines.push(...print(body.length > 0 ? body : [{ indent: 2, symbol: "~", text: `${label}${inline(output.after)}` }]));
    }
  }
  return `${lines.join("\n")}\n`;
}
