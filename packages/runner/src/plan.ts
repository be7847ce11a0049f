import { truncateUtf8 } from "./text.js";

import {
  emptyPlanHash,
  maxDriftResources,
  maxPlanResources,
  maxSummaryBytes,
  planCounts,
  planHashPrefix,
  type DriftSummary,
  type PlanSummary,
} from "@captf/contract/run-result";

/** The part of one `show -json` change the runner reads. Values only feed redaction, never a report. */
export interface PlanChange {
  actions: string[];
  before?: unknown;
  after?: unknown;
  before_sensitive?: unknown;
  after_sensitive?: unknown;
  after_unknown?: unknown;
  replace_paths?: unknown;
  importing?: unknown;
}

export interface ResourceChange {
  address: string;
  previous_address?: string | undefined;
  /** managed or data, the resource type and name: what a diff's heading shows. */
  mode?: string | undefined;
  type?: string | undefined;
  name?: string | undefined;
  action_reason?: string | undefined;
  change: PlanChange;
}

interface StateModule {
  resources?: { mode?: string; values?: unknown; sensitive_values?: unknown }[];
  child_modules?: StateModule[];
}

/** The part of a `show -json` plan document the runner reads. */
export interface PlanDocument {
  resource_changes: ResourceChange[];
  output_changes: Record<string, PlanChange>;
  prior_state?: { values?: { root_module?: StateModule } };
}

export class PlanUnreadableError extends Error {
  constructor(reason: string) {
    super(
      `the plan printed by show -json could not be read (${reason}); the runtime may not support show -json <planfile>, which ` +
        `the image contract requires`,
    );
    this.name = "PlanUnreadableError";
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function readChange(value: unknown, where: string): PlanChange {
  if (!isRecord(value) || !Array.isArray(value.actions) || !value.actions.every((action) => typeof action === "string")) {
    throw new PlanUnreadableError(`${where} has no list of actions`);
  }
  return value as unknown as PlanChange;
}

/** Parses `show -json` output; a warning printed before the document is skipped. */
export function parsePlanDocument(text: string): PlanDocument {
  const start = text.startsWith("{") ? 0 : text.indexOf("\n{") + 1;
  let document: unknown;
  try {
    document = JSON.parse(text.slice(start));
  } catch (error) {
    throw new PlanUnreadableError(error instanceof Error ? error.message : String(error));
  }
  if (!isRecord(document)) throw new PlanUnreadableError("not a JSON object");
  const resourceChanges = document.resource_changes ?? [];
  if (!Array.isArray(resourceChanges)) throw new PlanUnreadableError("resource_changes is not a list");
  const resource_changes = resourceChanges.map((entry, index): ResourceChange => {
    if (!isRecord(entry) || typeof entry.address !== "string") throw new PlanUnreadableError(`resource_changes[${index}] has no address`);
    const previous = typeof entry.previous_address === "string" && entry.previous_address !== "" ? entry.previous_address : undefined;
    const text = (field: unknown) => (typeof field === "string" ? field : undefined);
    return {
      address: entry.address,
      previous_address: previous,
      mode: text(entry.mode),
      type: text(entry.type),
      name: text(entry.name),
      action_reason: text(entry.action_reason),
      change: readChange(entry.change, entry.address),
    };
  });
  const outputChanges = document.output_changes ?? {};
  if (!isRecord(outputChanges)) throw new PlanUnreadableError("output_changes is not an object");
  const output_changes: Record<string, PlanChange> = {};
  for (const [name, change] of Object.entries(outputChanges)) output_changes[name] = readChange(change, `output.${name}`);
  const plan: PlanDocument = { resource_changes, output_changes };
  if (isRecord(document.prior_state)) plan.prior_state = document.prior_state as PlanDocument["prior_state"];
  return plan;
}

function isNoOp(actions: readonly string[]): boolean {
  return actions.every((action) => action === "no-op");
}

function imports(change: PlanChange): boolean {
  return change.importing !== undefined && change.importing !== null;
}

/** The action word the CLI would show: create, update, delete, replace (either order), read, forget. */
function actionWord(actions: readonly string[]): string | undefined {
  if (isNoOp(actions)) return undefined;
  if (actions.includes("delete") && actions.includes("create")) return "replace";
  return actions.length === 1 ? actions[0] : actions.join(",");
}

/** What a resource change does, as a summary entry lists it; empty when it does nothing. */
function changeLabels(resource: ResourceChange): string[] {
  const labels: string[] = [];
  const word = actionWord(resource.change.actions);
  if (word) labels.push(word);
  if (imports(resource.change)) labels.push("import");
  if (resource.previous_address) labels.push("move");
  return labels;
}

/** The actions part of a hash line: the plan's actions in plan order, no-op left out, then import and move. */
function hashedActions(change: PlanChange, moved: boolean): string[] {
  const words = change.actions.filter((action) => action !== "no-op");
  if (imports(change)) words.push("import");
  if (moved) words.push("move");
  return words;
}

function byUtf8Bytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

/**
 * The lines a plan hash covers, sorted: `<address>|<actions>` for every resource change that is
 * not a no-op (or that imports or moves), and `output.<name>|<actions>` for every changed output.
 */
export function planHashLines(plan: PlanDocument): string[] {
  const lines: string[] = [];
  for (const resource of plan.resource_changes) {
    const words = hashedActions(resource.change, Boolean(resource.previous_address));
    if (words.length > 0) lines.push(`${resource.address}|${words.join(",")}`);
  }
  for (const [name, change] of Object.entries(plan.output_changes)) {
    const words = hashedActions(change, false);
    if (words.length > 0) lines.push(`output.${name}|${words.join(",")}`);
  }
  return lines.sort(byUtf8Bytes);
}

/** `p1:` + hex sha256 of the sorted hash lines joined by "\n" (no trailing newline). */
export function planHash(plan: PlanDocument): string {
  // node:crypto only when a plan is hashed: it is the largest built-in module a run could load at start.
  return (
    planHashPrefix +
    process.getBuiltinModule("node:crypto").createHash("sha256").update(planHashLines(plan).join("\n"), "utf8").digest("hex")
  );
}

interface Counts {
  add: number;
  change: number;
  destroy: number;
}

/** Counts as the CLI's "Plan:" line does: a replacement is one add and one destroy. */
function countChanges(plan: PlanDocument): Counts & { changed: string[] } {
  const counts = { add: 0, change: 0, destroy: 0, changed: [] as string[] };
  for (const { address, change } of plan.resource_changes) {
    const creates = change.actions.includes("create");
    const deletes = change.actions.includes("delete");
    const updates = change.actions.includes("update");
    counts.add += Number(creates);
    counts.destroy += Number(deletes);
    counts.change += Number(updates);
    if (creates || deletes || updates) counts.changed.push(address);
  }
  return counts;
}

export function summarizePlan(plan: PlanDocument): PlanSummary {
  const { add, change, destroy } = countChanges(plan);
  const imported = plan.resource_changes.filter((resource) => imports(resource.change)).length;
  const moved = plan.resource_changes.filter((resource) => resource.previous_address).length;
  const entries = plan.resource_changes
    .map((resource) => ({ address: resource.address, labels: changeLabels(resource) }))
    .filter((entry) => entry.labels.length > 0)
    .sort((a, b) => byUtf8Bytes(a.address, b.address))
    .map((entry) => `${entry.address} (${entry.labels.join(", ")})`);
  const outputs = Object.values(plan.output_changes).filter((output) => !isNoOp(output.actions)).length;
  const summary: PlanSummary = {
    hash: planHash(plan),
    add,
    change,
    destroy,
    resources: entries.slice(0, maxPlanResources),
    truncated: entries.length > maxPlanResources,
  };
  if (imported > 0) summary.import = imported;
  if (moved > 0) summary.move = moved;
  if (outputs > 0) summary.outputs = outputs;
  return summary;
}

/** The summary of a plan step that exited 0: nothing to do. */
export function emptyPlanSummary(): PlanSummary {
  return { hash: emptyPlanHash, add: 0, change: 0, destroy: 0, resources: [], truncated: false };
}

/** Drift is a resource to create, change or destroy; output changes, imports and moves come from the configuration. */
export function summarizeDrift(plan: PlanDocument): DriftSummary {
  const { add, change, destroy, changed } = countChanges(plan);
  return { detected: add + change + destroy > 0, add, change, destroy, resources: changed.slice(0, maxDriftResources) };
}

export function noDrift(): DriftSummary {
  return { detected: false, add: 0, change: 0, destroy: 0, resources: [] };
}

/** The plan's deletes and replacements, sorted, as "<address> (delete)" or "<address> (replace)". */
export function destructiveChanges(plan: PlanDocument): string[] {
  return plan.resource_changes
    .filter((resource) => resource.change.actions.includes("delete"))
    .map((resource) => `${resource.address} (${resource.change.actions.includes("create") ? "replace" : "delete"})`)
    .sort(byUtf8Bytes);
}

function collectMarked(value: unknown, mask: unknown, into: Set<string>): void {
  if (mask === true) {
    collectStrings(value, into);
    return;
  }
  if (Array.isArray(mask) && Array.isArray(value)) {
    mask.forEach((entry, index) => collectMarked(value[index], entry, into));
  } else if (isRecord(mask) && isRecord(value)) {
    for (const [key, entry] of Object.entries(mask)) collectMarked(value[key], entry, into);
  }
}

/** Every string leaf of a decoded JSON value. */
export function collectStrings(value: unknown, into: Set<string>): void {
  if (typeof value === "string") into.add(value);
  else if (Array.isArray(value)) for (const entry of value) collectStrings(entry, into);
  else if (isRecord(value)) for (const entry of Object.values(value)) collectStrings(entry, into);
}

function collectDataSources(module: StateModule | undefined, into: Set<string>): void {
  if (!module) return;
  for (const resource of module.resources ?? []) {
    if (resource.mode === "data") collectMarked(resource.values, resource.sensitive_values, into);
  }
  for (const child of module.child_modules ?? []) collectDataSources(child, into);
}

/**
 * The string values a plan marks sensitive, in resource changes and in the data sources it read.
 * Output changes are left out: every contract output is sensitive in the generated root, and
 * redacting them would mangle ordinary output without hiding anything secret.
 */
export function planSensitiveValues(plan: PlanDocument): string[] {
  const values = new Set<string>();
  for (const { change } of plan.resource_changes) {
    collectMarked(change.before, change.before_sensitive, values);
    collectMarked(change.after, change.after_sensitive, values);
  }
  collectDataSources(plan.prior_state?.values?.root_module, values);
  return [...values].filter((value) => value !== "");
}

/** The failure summary of an apply stopped by the destructive-plan guard: as many entries as fit in 512 bytes. */
export function blockedSummary(destructive: readonly string[]): string {
  let summary = `the plan deletes or replaces ${destructive.length} resource(s): `;
  for (const [index, entry] of destructive.entries()) {
    const separator = index > 0 ? ", " : "";
    const rest = destructive.length - index - 1;
    const tail = rest > 0 ? ` and ${rest} more` : "";
    if (Buffer.byteLength(summary + separator + entry + tail) > maxSummaryBytes) {
      const more = ` and ${destructive.length - index} more`;
      return truncateUtf8(summary.replace(/[:,] ?$/, ""), maxSummaryBytes - Buffer.byteLength(more)) + more;
    }
    summary += separator + entry;
  }
  return summary;
}

/** The failure summary of an approved apply whose plan is no longer the approved one. */
export function planChangedSummary(approved: string, now: PlanSummary): string {
  return truncateUtf8(
    `the plan changed since it was approved: approved ${approved}, now ${now.hash} (${planCounts(now)}); nothing was applied`,
    maxSummaryBytes,
  );
}
