import type { Changes } from "./changes.js";
import type { DriftSummary, PlanSummary } from "./plan.js";
import type { FailurePoint } from "./steps.js";
import { truncateUtf8 } from "./text.js";

export const resultVersion = 1;
/** The kubelet truncates a longer termination message. */
export const maxResultBytes = 4096;

/** The values of status.lastRun.error.kind. */
export const errorKinds = ["image-layout", "step", "interrupted", "blocked", "plan-changed"] as const;
export type ErrorKind = (typeof errorKinds)[number];

export interface StepRecord {
  name: string;
  exit: number;
  seconds: number;
}

export interface RunError {
  kind: ErrorKind;
  /** The failing step; null for image-layout, blocked and plan-changed. */
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

function encode(result: RunResult): string {
  return JSON.stringify(result);
}

function fits(text: string): boolean {
  return Buffer.byteLength(text) <= maxResultBytes;
}

/**
 * The result as JSON of at most 4096 bytes. Shrinks in this order until it fits: drop `changes`;
 * halve `error.summary` (dropped under 16 bytes); halve `plan.resources` (marking it truncated);
 * drop `drift.resources`; drop steps from the middle (first and last stay); and finally keep only
 * version, op, the error kind and the plan's hash and counts, without which an approval is lost.
 */
export function shrinkResult(result: RunResult): string {
  const document: RunResult = structuredClone(result);
  let text = encode(document);
  if (fits(text)) return text;
  if (document.changes) {
    delete document.changes;
    if (fits((text = encode(document)))) return text;
  }
  const error = document.error;
  while (error && error.summary !== "") {
    const half = truncateUtf8(error.summary, Math.floor(Buffer.byteLength(error.summary) / 2));
    error.summary = Buffer.byteLength(half) < 16 ? "" : half;
    if (fits((text = encode(document)))) return text;
  }
  const plan = document.plan;
  while (plan && plan.resources.length > 0) {
    plan.resources = plan.resources.slice(0, Math.floor(plan.resources.length / 2));
    plan.truncated = true;
    if (fits((text = encode(document)))) return text;
  }
  if (document.drift && document.drift.resources.length > 0) {
    document.drift.resources = [];
    if (fits((text = encode(document)))) return text;
  }
  while (document.steps.length > 2) {
    document.steps.splice(1, 1);
    if (fits((text = encode(document)))) return text;
  }
  const minimal: Record<string, unknown> = {
    version: resultVersion,
    op: document.op.slice(0, 64),
    error: document.error ? { kind: document.error.kind } : null,
  };
  if (plan) {
    const { hash, add, change, destroy, outputs, truncated } = plan;
    minimal.plan = { hash, add, change, destroy, ...(outputs ? { outputs } : {}), truncated };
  }
  return JSON.stringify(minimal);
}
