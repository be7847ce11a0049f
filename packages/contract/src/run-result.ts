/**
 * The runner's result document: what a Job's runner writes as its termination message and
 * the manager reads back. Both sides take its shape and limits from here.
 */

/** The operations a Job runs. */
export const operations = ["apply", "destroy", "plan", "drift", "refresh", "restore"] as const;
export type Operation = (typeof operations)[number];

export function isOperation(value: unknown): value is Operation {
  return typeof value === "string" && (operations as readonly string[]).includes(value);
}

/** Names of the runtime steps, as the result document and events carry them. */
export const stepNames = [
  "init",
  "force-unlock",
  "validate",
  "plan",
  "show-json",
  "apply",
  "destroy",
  "apply-refresh-only",
  "state-push",
  "state-list",
] as const;
export type StepName = (typeof stepNames)[number];

/** Pseudo-steps a failure can name when no runtime step ran. */
export type FailurePoint = StepName | "flags" | "prepare";

export const resultVersion = 1;
/** The kubelet truncates a longer termination message. */
export const maxResultBytes = 4096;
/** The failure summary's byte cap (status.lastRun.error.summary). */
export const maxSummaryBytes = 512;
/** At most this many "<address> (<action>)" entries in a plan summary (status.plan.resources). */
export const maxPlanResources = 50;
/** At most this many addresses in a drift summary. */
export const maxDriftResources = 20;

/** Versions the plan hash the way h2: versions the inputs hash: a new encoding never matches an old approval. */
export const planHashPrefix = "p1:";
/** The hash of a plan that changes nothing: sha256 of zero lines. */
export const emptyPlanHash = `${planHashPrefix}e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855`;

/**
 * The values of status.lastRun.error.kind. `state-save`: an apply or destroy ran but its new state
 * could be neither saved nor pushed afterwards (a state past the 1 MiB a Secret holds): the state
 * Secret still holds the state from before it, so a retry would apply blindly.
 */
export const errorKinds = ["image-layout", "step", "interrupted", "blocked", "plan-changed", "state-save"] as const;
export type ErrorKind = (typeof errorKinds)[number];

/**
 * A plan's counts: adds, changes and destroys as the CLI's "Plan:" line counts them, and apart from
 * them the imports, moves and output changes, each of which is a change that needs approval too.
 */
export interface PlanCounts {
  add: number;
  change: number;
  destroy: number;
  /** Resources the plan imports (an `import` block); omitted when none. */
  import?: number;
  /** Resources the plan moves from a previous address (a `moved` block); omitted when none. */
  move?: number;
  /** Root outputs the plan changes; omitted when none. */
  outputs?: number;
}

/** "N to add, N to change, N to destroy[, N to import][, N to move][, N output(s) to change]" */
export function planCounts(counts: PlanCounts): string {
  const parts = [`${counts.add} to add`, `${counts.change} to change`, `${counts.destroy} to destroy`];
  if (counts.import) parts.push(`${counts.import} to import`);
  if (counts.move) parts.push(`${counts.move} to move`);
  if (counts.outputs) parts.push(`${counts.outputs} output(s) to change`);
  return parts.join(", ");
}

/** What a plan Job reports and an approval names: counts, entries, never values. */
export interface PlanSummary extends PlanCounts {
  hash: string;
  /** Sorted "<address> (<action>)" entries, at most {@link maxPlanResources}. */
  resources: string[];
  truncated: boolean;
}

export interface DriftSummary {
  detected: boolean;
  add: number;
  change: number;
  destroy: number;
  resources: string[];
}

/** What an apply or destroy step reported having changed. */
export interface Changes {
  add: number;
  change: number;
  destroy: number;
  import?: number;
}

export interface StepRecord {
  name: string;
  exit: number;
  seconds: number;
}

export interface RunError {
  kind: ErrorKind;
  /** The failing step (for state-save the apply or destroy whose state was lost); null for image-layout, blocked and plan-changed. */
  step: FailurePoint | null;
  /** At most 512 bytes, redacted. */
  summary: string;
}

/** The document the runner writes as the container's termination message. */
export interface RunResult {
  version: typeof resultVersion;
  op: string;
  image: { ref: string; providersMirror: boolean };
  runtime: { command: string[]; version: string };
  steps: StepRecord[];
  drift: DriftSummary | null;
  error: RunError | null;
  /** From the apply or destroy step's closing line; zeros for a checked apply with an empty plan. */
  changes?: Changes;
  /** A plan run's plan, or the plan a blocked or plan-changed apply stopped before. */
  plan?: PlanSummary;
}

/** The shrunk form the runner falls back to when nothing else fits in {@link maxResultBytes}. */
export type MinimalRunResult = Pick<RunResult, "version" | "op"> & {
  error: { kind: ErrorKind } | null;
  plan?: Omit<PlanSummary, "resources">;
};

export type RunResultReading = { ok: true; result: RunResult | MinimalRunResult } | { ok: false; reason: string };

/**
 * A result as a full document: the shrunk form gets empty steps, no drift, no summaries and a plan without its
 * entries, so a plan's hash (what an approval names) survives the shrinking. Pure.
 */
export function completeRunResult(result: RunResult | MinimalRunResult): RunResult {
  if ("steps" in result && Array.isArray((result as RunResult).steps)) return result as RunResult;
  const minimal = result as MinimalRunResult;
  return {
    version: minimal.version,
    op: minimal.op,
    image: { ref: "", providersMirror: false },
    runtime: { command: [], version: "" },
    steps: [],
    drift: null,
    error: minimal.error ? { kind: minimal.error.kind, step: null, summary: "" } : null,
    ...(minimal.plan ? { plan: { ...minimal.plan, resources: [], truncated: true } } : {}),
  } as RunResult;
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);
const isCount = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;

/**
 * Reads a termination message as a result document. Never throws: a Job that died before
 * writing one, or wrote something else, gets a reason instead. The reason never quotes the text.
 */
export function parseRunResult(text: string | undefined): RunResultReading {
  if (!text || text.trim() === "") return { ok: false, reason: "the runner wrote no result (the container ended before it could)" };
  if (Buffer.byteLength(text) > maxResultBytes) return { ok: false, reason: `the result is larger than ${maxResultBytes} bytes` };
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch {
    return { ok: false, reason: "the termination message is not a JSON result document" };
  }
  if (!isRecord(document)) return { ok: false, reason: "the result document is not an object" };
  if (document.version !== resultVersion)
    return {
      ok: false,
      reason: `the result document has version ${JSON.stringify(document.version)}; this manager reads version ${resultVersion}`,
    };
  if (!isOperation(document.op)) return { ok: false, reason: "the result document names no known operation" };
  const error = document.error;
  if (error !== null && error !== undefined && !(isRecord(error) && (errorKinds as readonly unknown[]).includes(error.kind))) {
    return { ok: false, reason: "the result document's error has no known kind" };
  }
  if (
    document.steps !== undefined &&
    !(
      Array.isArray(document.steps) &&
      document.steps.every((step) => isRecord(step) && typeof step.name === "string" && Number.isInteger(step.exit))
    )
  ) {
    return { ok: false, reason: "the result document's steps are malformed" };
  }
  const plan = document.plan;
  const optionalCount = (value: unknown) => value === undefined || isCount(value);
  if (
    plan !== undefined &&
    !(
      isRecord(plan) &&
      typeof plan.hash === "string" &&
      isCount(plan.add) &&
      isCount(plan.change) &&
      isCount(plan.destroy) &&
      optionalCount(plan.import) &&
      optionalCount(plan.move) &&
      optionalCount(plan.outputs)
    )
  ) {
    return { ok: false, reason: "the result document's plan is malformed" };
  }
  return { ok: true, result: document as unknown as RunResult };
}

/** What a broker refusal was aimed at: this object's state or lock, its events, or anything else. */
export const brokerRequestTargets = ["state", "lock", "event", "other"] as const;
export type BrokerRequestTarget = (typeof brokerRequestTargets)[number];

/** One refused request, as the broker's summary keeps the first few. */
export interface BrokerRefusal {
  method: string;
  path: string;
  target: BrokerRequestTarget;
  why: string;
}

/** The state broker's termination message: what module code asked of the API server in one Job. */
export interface BrokerSummary {
  requests: number;
  allowed: number;
  refused: number;
  refusedByTarget: Partial<Record<BrokerRequestTarget, number>>;
  refusals: BrokerRefusal[];
}

/** The broker's counts from its termination message; undefined when it wrote none or not this shape. Pure. */
export function parseBrokerSummary(
  text: string | undefined,
): Pick<BrokerSummary, "requests" | "allowed" | "refused" | "refusedByTarget"> | undefined {
  if (!text) return undefined;
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (
    !isRecord(document) ||
    !isCount(document.requests) ||
    !isCount(document.allowed) ||
    !isCount(document.refused) ||
    !isRecord(document.refusedByTarget)
  )
    return undefined;
  const refusedByTarget: Partial<Record<BrokerRequestTarget, number>> = {};
  for (const target of brokerRequestTargets) {
    const count = document.refusedByTarget[target];
    if (count !== undefined && !isCount(count)) return undefined;
    if (count) refusedByTarget[target] = count;
  }
  return { requests: document.requests, allowed: document.allowed, refused: document.refused, refusedByTarget };
}
