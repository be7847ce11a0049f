/**
 * A plan's change set as captf keeps it: what `show -json <planfile>` says each resource and root
 * output changes from and to, with every value the plan marks sensitive, every value the run knows
 * as a secret and every value known only after apply replaced by a marker. The runner writes it,
 * gzipped, to the object's plan diff Secret; `kubectl captf plan show --diff` reads it. Never a secret.
 */

export const planDiffVersion = 1;

/** The key of the plan diff Secret's data: the gzip of the JSON {@link PlanDiff}. */
export const planDiffDataKey = "diff.json.gz";

/**
 * The largest compressed diff kept (bytes, before base64): a plan larger than that keeps its header and
 * `omitted` only, and the runner records PlanDiffNotKept. A Secret holds 1 MiB, base64 takes a third more.
 */
export const maxPlanDiffBytes = 512 * 1024;

/**
 * What stands where a value is hidden: {@link maskedKey} names why. `sensitive-changed` is an after value
 * the plan changes from a sensitive before: the one bit `tofu show` prints too, "~ x = (sensitive value)".
 */
export const maskedKey = "captf:masked";
export type MaskReason = "sensitive" | "sensitive-changed" | "unknown";
export type MaskedValue = { [maskedKey]: MaskReason };

export const sensitiveMark: MaskedValue = { [maskedKey]: "sensitive" };
export const sensitiveChangedMark: MaskedValue = { [maskedKey]: "sensitive-changed" };
export const unknownMark: MaskedValue = { [maskedKey]: "unknown" };

/** A JSON value of a diff: plain JSON with {@link MaskedValue}s where values are hidden. */
export type DiffValue = null | boolean | number | string | MaskedValue | DiffValue[] | { [key: string]: DiffValue };

export function maskReason(value: unknown): MaskReason | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const keys = Object.keys(value);
  const reason = (value as Record<string, unknown>)[maskedKey];
  const reasons: unknown[] = ["sensitive", "sensitive-changed", "unknown"];
  return keys.length === 1 && reasons.includes(reason) ? (reason as MaskReason) : undefined;
}

/** One resource instance the plan changes, imports or moves. `before` is null for a create, `after` for a delete. */
export interface PlanDiffResource {
  address: string;
  previousAddress?: string;
  mode: "managed" | "data";
  type: string;
  name: string;
  /** The plan's actions: ["create"], ["update"], ["delete","create"], ["create","delete"], ["delete"], ["read"], ["no-op"]. */
  actions: string[];
  /** The runtime's action_reason (why a replace or a delete), when it gives one. */
  actionReason?: string;
  importing?: boolean;
  /** The attribute paths that force the replacement (replace_paths); map keys in them are masked like values. */
  replacePaths?: (string | number)[][];
  before: DiffValue;
  after: DiffValue;
}

export interface PlanDiffOutput {
  name: string;
  actions: string[];
  before: DiffValue;
  after: DiffValue;
}

export interface PlanDiff {
  version: typeof planDiffVersion;
  /** The plan's hash (p1:…), as status.plan.planHash shows it: which plan this diff is of. */
  planHash: string;
  /** The Job whose runner made the plan. */
  job: string;
  /** When set, the diff was not kept (it was too large): why. resources and outputs are then empty. */
  omitted?: string;
  resources: PlanDiffResource[];
  outputs: PlanDiffOutput[];
}

/** The object a plan diff Secret belongs to. */
export interface PlanDiffOwner {
  namespace: string;
  kind: string;
  name: string;
}

/**
 * `captf-plan-diff-<16 hex digits of sha256("<namespace>/<kind>/<name>")>`: one per object, rewritten by
 * each plan, found by the runner (from its event object) and by kubectl captf alike.
 */
export function planDiffSecretName(owner: PlanDiffOwner): string {
  // node:crypto only when a name is asked for: the runner's start loads none of it.
  const digest = process
    .getBuiltinModule("node:crypto")
    .createHash("sha256")
    .update(`${owner.namespace}/${owner.kind}/${owner.name}`, "utf8")
    .digest("hex");
  return `captf-plan-diff-${digest.slice(0, 16)}`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Reads a decoded plan diff document; a string says why it is not one this version reads. */
export function readPlanDiff(document: unknown): PlanDiff | string {
  if (!isRecord(document)) return "the document is not a JSON object";
  if (document.version !== planDiffVersion) return `version ${String(document.version)} is not ${planDiffVersion}`;
  if (typeof document.planHash !== "string" || typeof document.job !== "string") return "planHash or job is missing";
  if (!Array.isArray(document.resources) || !Array.isArray(document.outputs)) return "resources or outputs is not a list";
  return document as unknown as PlanDiff;
}
