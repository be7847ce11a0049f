import { maxResultBytes, resultVersion, type RunResult } from "@captf/contract/run-result";
import { truncateUtf8 } from "./text.js";

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
    const { resources: _dropped, ...counts } = plan;
    minimal.plan = counts;
  }
  return JSON.stringify(minimal);
}
