// The JSON output: a stable, documented schema (docs/tfcapi-lint.md), two-space indented.
import { jsonSchemaVersion, type Report } from "./report.js";

export function formatJson(report: Report): string {
  const document = {
    schemaVersion: jsonSchemaVersion,
    ...("module" in report.target ? { module: report.target.module } : { image: report.target.image }),
    contract: report.contract,
    role: report.role,
    fileSet: report.fileSet,
    findings: report.findings.map((f) => ({
      id: f.id,
      severity: f.severity,
      file: f.file,
      line: f.line,
      column: f.column,
      message: f.message,
      fix: f.fix,
    })),
    summary: report.summary,
  };
  return `${JSON.stringify(document, null, 2)}\n`;
}
