import {
  maxPlanDiffBytes,
  planDiffVersion,
  sensitiveChangedMark,
  sensitiveMark,
  unknownMark,
  type DiffValue,
  type PlanDiff,
  type PlanDiffOutput,
  type PlanDiffResource,
} from "@captf/contract/plan-diff";
import type { PlanChange, PlanDocument, ResourceChange } from "./plan.js";

/**
 * A plan's change set as captf keeps it (contract/plan-diff.ts): built from `show -json`, with every
 * value the plan marks sensitive, every value known only after apply and every string the run knows
 * as a secret (`isSecret`: its redactor would change it) masked. Pure.
 */

/** True for a text the run's redactor would change: it holds a secret the run knows. */
export type SecretTest = (text: string) => boolean;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function maskAt(mask: unknown, key: string | number): unknown {
  if (Array.isArray(mask) && typeof key === "number") return mask[key];
  return isRecord(mask) ? mask[key] : undefined;
}

/** An after value's before, when the change has one: a hidden after value says whether it changed. */
type Prior = { value: unknown } | undefined;

function priorAt(prior: Prior, key: string | number): Prior {
  return prior && { value: maskAt(prior.value, key) };
}

function hidden(value: unknown, prior: Prior): DiffValue {
  return prior && JSON.stringify(prior.value ?? null) !== JSON.stringify(value ?? null) ? sensitiveChangedMark : sensitiveMark;
}

/**
 * `value` with what `sensitive` marks (true at a path) hidden as sensitive and what `unknown` marks as
 * known after apply. A value unknown as a whole is absent from the plan's `after`: the mask adds it back.
 * A map a key of which is a secret is hidden whole. Given the `prior` (before) value, a hidden value that
 * differs from it is marked changed, and nothing else of it shows.
 */
export function maskValue(value: unknown, sensitive: unknown, unknown: unknown, isSecret: SecretTest, prior?: Prior): DiffValue {
  if (sensitive === true) return hidden(value, prior);
  if (unknown === true) return unknownMark;
  if (typeof value === "string") return isSecret(value) ? hidden(value, prior) : value;
  if (typeof value === "number") return isSecret(String(value)) ? hidden(value, prior) : value;
  if (typeof value === "boolean" || value === null || value === undefined) return value ?? null;
  if (Array.isArray(value) || Array.isArray(unknown)) {
    const values = Array.isArray(value) ? value : [];
    const length = Math.max(values.length, Array.isArray(unknown) ? unknown.length : 0);
    return Array.from({ length }, (_, index) =>
      maskValue(values[index], maskAt(sensitive, index), maskAt(unknown, index), isSecret, priorAt(prior, index)),
    );
  }
  if (!isRecord(value)) return null;
  const keys = new Set(Object.keys(value));
  if (isRecord(unknown)) for (const [key, mark] of Object.entries(unknown)) if (mark === true) keys.add(key);
  if ([...keys].some(isSecret)) return hidden(value, prior);
  const masked: Record<string, DiffValue> = {};
  for (const key of [...keys].sort())
    masked[key] = maskValue(value[key], maskAt(sensitive, key), maskAt(unknown, key), isSecret, priorAt(prior, key));
  return masked;
}

function isNoOp(actions: readonly string[]): boolean {
  return actions.every((action) => action === "no-op");
}

/** The replace_paths a diff keeps: paths with a secret key are left out. */
function replacePaths(change: PlanChange, isSecret: SecretTest): (string | number)[][] {
  if (!Array.isArray(change.replace_paths)) return [];
  return change.replace_paths.filter(
    (path): path is (string | number)[] =>
      Array.isArray(path) && path.every((step) => typeof step === "number" || (typeof step === "string" && !isSecret(step))),
  );
}

function priorOf(change: PlanChange, creates: boolean): Prior {
  return creates ? undefined : { value: change.before };
}

function diffResource(resource: ResourceChange, isSecret: SecretTest): PlanDiffResource {
  const { change } = resource;
  const deletes = change.actions.includes("delete") && !change.actions.includes("create");
  const creates = change.actions.includes("create") && !change.actions.includes("delete");
  const entry: PlanDiffResource = {
    address: resource.address,
    mode: resource.mode === "data" ? "data" : "managed",
    type: resource.type ?? "",
    name: resource.name ?? "",
    actions: [...change.actions],
    before: creates ? null : maskValue(change.before, change.before_sensitive, undefined, isSecret),
    after: deletes ? null : maskValue(change.after, change.after_sensitive, change.after_unknown, isSecret, priorOf(change, creates)),
  };
  if (resource.previous_address) entry.previousAddress = resource.previous_address;
  if (resource.action_reason) entry.actionReason = resource.action_reason;
  if (change.importing !== undefined && change.importing !== null) entry.importing = true;
  const paths = replacePaths(change, isSecret);
  if (paths.length > 0) entry.replacePaths = paths;
  return entry;
}

function diffOutput(name: string, change: PlanChange, isSecret: SecretTest): PlanDiffOutput {
  return {
    name,
    actions: [...change.actions],
    before: change.actions.includes("create") ? null : maskValue(change.before, change.before_sensitive, undefined, isSecret),
    after: change.actions.includes("delete")
      ? null
      : maskValue(change.after, change.after_sensitive, change.after_unknown, isSecret, priorOf(change, change.actions.includes("create"))),
  };
}

/** The diff of a plan: its resource changes (no-ops left out unless imported or moved) and changed root outputs, masked. */
export function planDiffOf(plan: PlanDocument, made: { planHash: string; job: string }, isSecret: SecretTest): PlanDiff {
  const resources = plan.resource_changes
    .filter((resource) => !isNoOp(resource.change.actions) || resource.previous_address || resource.change.importing)
    .map((resource) => diffResource(resource, isSecret));
  const outputs = Object.entries(plan.output_changes)
    .filter(([, change]) => !isNoOp(change.actions))
    .map(([name, change]) => diffOutput(name, change, isSecret))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { version: planDiffVersion, planHash: made.planHash, job: made.job, resources, outputs };
}

/** The gzip of a diff as the Secret keeps it; one over `limit` bytes is kept as its header and why it was omitted. */
export function encodePlanDiff(diff: PlanDiff, limit = maxPlanDiffBytes): { data: Buffer; omitted?: string } {
  // node:zlib only when a plan is kept: a run's start loads none of it.
  const { gzipSync } = process.getBuiltinModule("node:zlib");
  const data = gzipSync(JSON.stringify(diff));
  if (data.length <= limit) return { data };
  const omitted =
    `the plan's diff is ${data.length} bytes compressed, over the ${limit} bytes kept ` +
    `(${diff.resources.length} resources, ${diff.outputs.length} outputs); the Job's log has the plan`;
  return { data: gzipSync(JSON.stringify({ ...diff, resources: [], outputs: [], omitted } satisfies PlanDiff)), omitted };
}
