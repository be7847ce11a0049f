// The finding model every check returns and every output format reads.

export const severities = ["error", "warning", "info"] as const;
export type Severity = (typeof severities)[number];

/** One problem. `file` is relative to the module root; `""` with line 0 means the module or image as a whole. */
export interface Finding {
  readonly id: string;
  readonly severity: Severity;
  readonly file: string;
  readonly line: number;
  readonly column: number;
  /** Names the variable, output, block or path concerned; never quotes a value. */
  readonly message: string;
  /** One line: what to change. */
  readonly fix: string;
}

export interface Summary {
  error: number;
  warning: number;
  info: number;
}

/** A finding about the module as a whole, which has no position. */
export function moduleWide(id: string, severity: Severity, message: string, fix: string): Finding {
  return { id, severity, file: "", line: 0, column: 0, message, fix };
}

/** A finding at a position. */
export function at(
  position: { file: string; line: number; column: number },
  id: string,
  severity: Severity,
  message: string,
  fix: string,
): Finding {
  return { id, severity, file: position.file, line: position.line, column: position.column, message, fix };
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Stable order: file, line, column, check ID, message. */
export function sortFindings(findings: readonly Finding[]): Finding[] {
  return [...findings].sort(
    (a, b) =>
      compareText(a.file, b.file) || a.line - b.line || a.column - b.column || compareText(a.id, b.id) || compareText(a.message, b.message),
  );
}

export function summarize(findings: readonly Finding[]): Summary {
  const summary: Summary = { error: 0, warning: 0, info: 0 };
  for (const f of findings) summary[f.severity]++;
  return summary;
}

/** `--allow-warning`: the named checks' warnings become info, saying why; errors stay errors. */
export function allowWarnings(findings: readonly Finding[], allowed: readonly string[]): Finding[] {
  if (allowed.length === 0) return [...findings];
  const set = new Set(allowed);
  return findings.map((f) =>
    f.severity === "warning" && set.has(f.id) ? { ...f, severity: "info", message: `${f.message} (allowed by --allow-warning)` } : f,
  );
}

/** Whether a run with these findings fails: any error, or any warning under `--strict`. */
export function fails(summary: Summary, strict: boolean): boolean {
  return summary.error > 0 || (strict && summary.warning > 0);
}
