// Printing a report in the chosen format and turning it into the exit code.
import { allowWarnings, fails, sortFindings, summarize, type Finding } from "../findings.js";
import { formatJson } from "../format/json.js";
import { formatText } from "../format/text.js";
import type { Report } from "../format/report.js";
import { exitCodes, type CliIo } from "./io.js";
import { toolVersion } from "./version.js";

export type OutputFormat = "text" | "json" | "sarif";

export interface ReportOptions {
  readonly format: OutputFormat;
  readonly strict: boolean;
  readonly allowWarning: readonly string[];
  readonly moduleRoot?: string;
}

/** Applies --allow-warning, prints, and returns 0 or 1 (or `unreadableCode` when the target could not be read). */
export async function emitReport(
  io: CliIo,
  head: Omit<Report, "findings" | "summary">,
  raw: readonly Finding[],
  options: ReportOptions,
  unreadable = false,
): Promise<number> {
  const findings = sortFindings(allowWarnings(raw, options.allowWarning));
  const report: Report = { ...head, findings, summary: summarize(findings) };
  const colour = Boolean(io.stdout.isTTY) && !io.env?.NO_COLOR;
  const text =
    options.format === "json"
      ? formatJson(report)
      : options.format === "sarif"
        ? (await import("../format/sarif.js")).formatSarif(report, {
            toolVersion,
            ...(options.moduleRoot ? { moduleRoot: options.moduleRoot } : {}),
          })
        : formatText(report, colour);
  io.stdout.write(text);
  if (unreadable) return exitCodes.unreadable;
  return fails(report.summary, options.strict) ? exitCodes.findings : exitCodes.ok;
}
