// The text output: findings grouped by file, colour only on a terminal, a summary line last.
import type { Finding, Severity } from "../findings.js";
import type { Report } from "./report.js";

const colours: Record<Severity | "file" | "dim", string> = {
  error: "\u001b[31m",
  warning: "\u001b[33m",
  info: "\u001b[36m",
  file: "\u001b[1m",
  dim: "\u001b[2m",
};
const reset = "\u001b[0m";

export function formatText(report: Report, colour: boolean): string {
  const paint = (kind: keyof typeof colours, text: string): string => (colour ? `${colours[kind]}${text}${reset}` : text);
  const lines: string[] = [];
  if ("image" in report.target) {
    const image = report.target.image;
    lines.push(`image ${image.ref} (${image.digest || "no digest"}) platforms ${image.platforms.join(", ") || "none"}`);
  }
  const groups = new Map<string, Finding[]>();
  for (const f of report.findings) groups.set(f.file, [...(groups.get(f.file) ?? []), f]);
  for (const [file, findings] of groups) {
    lines.push(paint("file", file === "" ? ("image" in report.target ? "(whole image)" : "(whole module)") : file));
    for (const f of findings) {
      const where = f.line > 0 ? `${f.line}:${f.column}` : "-";
      lines.push(`  ${where.padEnd(7)} ${paint(f.severity, f.severity.padEnd(7))} ${f.id}  ${f.message}`);
      lines.push(`  ${"".padEnd(7)} ${"".padEnd(7)} ${paint("dim", `fix: ${f.fix}`)}`);
    }
  }
  const s = report.summary;
  const read = report.fileSet === "" ? "no module" : report.fileSet;
  lines.push(`${s.error} error(s), ${s.warning} warning(s), ${s.info} info (read ${read} files)`);
  return `${lines.join("\n")}\n`;
}
