// SARIF 2.1.0, for code-scanning uploads: one run, the full rule catalog, one result per finding.
import { pathToFileURL } from "node:url";
import { ruleCatalog } from "../checks/catalog.js";
import type { Severity } from "../findings.js";
import type { Report } from "./report.js";

const levels: Record<Severity, "error" | "warning" | "note"> = { error: "error", warning: "warning", info: "note" };

export interface SarifOptions {
  readonly toolVersion: string;
  /** The module directory's absolute path, so viewers can resolve relative file names. */
  readonly moduleRoot?: string;
}

export function formatSarif(report: Report, options: SarifOptions): string {
  const baseId = "module" in report.target ? "MODULEROOT" : "IMAGEROOT";
  const ruleIndex = new Map(ruleCatalog.map((rule, i) => [rule.id as string, i]));
  const results = report.findings.map((f) => {
    const uri = f.file === "" ? "." : f.file.replace(/^\//, "");
    return {
      ruleId: f.id,
      ...(ruleIndex.has(f.id) ? { ruleIndex: ruleIndex.get(f.id) } : {}),
      level: levels[f.severity],
      message: { text: `${f.message}. Fix: ${f.fix}` },
      locations: [
        {
          physicalLocation: {
            artifactLocation: { uri, uriBaseId: baseId },
            ...(f.line > 0 ? { region: { startLine: f.line, startColumn: Math.max(f.column, 1) } } : {}),
          },
        },
      ],
      properties: { fix: f.fix },
    };
  });
  const originalUriBaseIds =
    baseId === "MODULEROOT" && options.moduleRoot
      ? { MODULEROOT: { uri: `${pathToFileURL(options.moduleRoot).href.replace(/\/?$/, "/")}` } }
      : {};
  const document = {
    $schema: "https://json.schemastore.org/sarif-2.1.0.json",
    version: "2.1.0",
    runs: [
      {
        tool: {
          driver: {
            name: "tfcapi-lint",
            version: options.toolVersion,
            informationUri: "https://captf.io/",
            rules: ruleCatalog.map((rule) => ({
              id: rule.id,
              name: rule.id.replace(/[/-](.)/g, (_, c: string) => c.toUpperCase()),
              shortDescription: { text: rule.description },
              defaultConfiguration: { level: levels[rule.severity] },
            })),
          },
        },
        ...(Object.keys(originalUriBaseIds).length > 0 ? { originalUriBaseIds } : {}),
        properties: { contract: report.contract, role: report.role },
        results,
      },
    ],
  };
  return `${JSON.stringify(document, null, 2)}\n`;
}
