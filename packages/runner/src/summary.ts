import { maxSummaryBytes } from "@captf/contract/run-result";
import type { Redactor } from "./redact.js";
import { stripAnsi, truncateUtf8 } from "./text.js";

/** `validate -json` error diagnostics as the CLI heads them: "Error: <summary>: <first detail line>". */
function validateErrorLines(stdout: string): string[] {
  let document: unknown;
  try {
    document = JSON.parse(stdout);
  } catch {
    return [];
  }
  const diagnostics = (document as { diagnostics?: unknown } | null)?.diagnostics;
  if (!Array.isArray(diagnostics)) return [];
  const lines: string[] = [];
  for (const diagnostic of diagnostics as { severity?: unknown; summary?: unknown; detail?: unknown }[]) {
    if (diagnostic?.severity !== "error") continue;
    const detail = typeof diagnostic.detail === "string" ? diagnostic.detail.split("\n")[0] : "";
    lines.push(`Error: ${String(diagnostic.summary ?? "")}${detail ? `: ${detail}` : ""}`);
  }
  return lines;
}

/** Lines of stderr that open a diagnostic block ("Error: ..."), in order. */
function stderrErrorLines(stderr: string): string[] {
  return stripAnsi(stderr)
    .split("\n")
    .map((line) => line.replace(/^[│╷╵|]\s?/, "").trimEnd())
    .filter((line) => line.startsWith("Error: "));
}

export interface FailedStepOutput {
  step: string;
  /** Captured stdout (read for validate only). */
  stdout?: string | undefined;
  /** The tail of the step's stderr. */
  stderrTail: string;
  /** Used when the output holds no diagnostic. */
  fallback: string;
}

/**
 * The failure summary of a step, at most 512 bytes: validate's JSON error diagnostics, else the
 * "Error: " lines of stderr, else `fallback`. Redacted before lines are chosen and capped last,
 * because redaction changes lengths and a cut first could leave part of a secret.
 */
export function failureSummary(output: FailedStepOutput, redact: Redactor): string {
  let lines = output.step === "validate" && output.stdout ? validateErrorLines(redact(output.stdout)) : [];
  if (lines.length === 0) lines = stderrErrorLines(redact(output.stderrTail));
  const summary = lines.length > 0 ? lines.join("\n") : redact(output.fallback);
  return truncateUtf8(summary, maxSummaryBytes);
}

/** A state-save failure's summary: what was lost first, then the step's own diagnostics, at most 512 bytes. */
export function stateNotSavedSummary(step: string, stepSummary: string): string {
  return truncateUtf8(
    `the ${step} ran but its new state could not be saved, nor pushed after it; the state Secret keeps the state from before: ` +
      `${stepSummary}`,
    maxSummaryBytes,
  );
}
