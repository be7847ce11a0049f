// Inline suppressions: `# tfcapi-lint:ignore <check-id> <reason>` on the line(s) just above a finding.
import { checkIds } from "../checks/ids.js";
import { at, type Finding } from "../findings.js";
import type { ParsedFile } from "./model.js";

export interface Suppression {
  readonly file: string;
  readonly line: number;
  readonly column: number;
  readonly checkId: string;
  readonly reason: string;
}

const marker = /^(?:#|\/\/|\/\*)\s*tfcapi-lint:ignore\b(.*?)(?:\*\/)?\s*$/s;
const knownIds = new Set<string>(Object.values(checkIds));

/** Reads the suppression comments of the files; malformed ones become suppression/invalid findings. */
export function readSuppressions(files: readonly ParsedFile[]): { suppressions: Suppression[]; problems: Finding[] } {
  const suppressions: Suppression[] = [];
  const problems: Finding[] = [];
  for (const file of files) {
    for (const comment of file.comments) {
      const match = marker.exec(comment.text.trim());
      if (!match) continue;
      const where = { file: file.name, line: comment.line, column: comment.column };
      const [checkId = "", ...rest] = match[1]!.trim().split(/\s+/).filter(Boolean);
      const reason = rest.join(" ");
      if (checkId === "" || reason === "") {
        problems.push(
          at(
            where,
            checkIds.suppressionInvalid,
            "warning",
            "tfcapi-lint:ignore needs a check ID and a reason; this one suppresses nothing",
            "write # tfcapi-lint:ignore <check-id> <why this is fine>",
          ),
        );
      } else if (!knownIds.has(checkId)) {
        problems.push(
          at(
            where,
            checkIds.suppressionInvalid,
            "warning",
            `tfcapi-lint:ignore names unknown check ${checkId}; it suppresses nothing`,
            "use a check ID from tfcapi-lint's documentation",
          ),
        );
      } else {
        suppressions.push({ ...where, checkId, reason });
      }
    }
  }
  return { suppressions, problems };
}

/**
 * Drops each finding a suppression on the line(s) directly above names (a run of stacked
 * suppression comments counts as directly above), and reports suppressions that matched nothing.
 */
export function applySuppressions(findings: readonly Finding[], suppressions: readonly Suppression[]): Finding[] {
  const byLine = new Map<string, Suppression[]>();
  for (const s of suppressions) {
    const key = `${s.file}\u0000${s.line}`;
    byLine.set(key, [...(byLine.get(key) ?? []), s]);
  }
  const used = new Set<Suppression>();
  const kept: Finding[] = [];
  for (const finding of findings) {
    let suppressed = false;
    for (let line = finding.line - 1; finding.line > 0 && line > 0; line--) {
      const here = byLine.get(`${finding.file}\u0000${line}`);
      if (!here) break;
      for (const s of here) {
        if (s.checkId === finding.id) {
          suppressed = true;
          used.add(s);
        }
      }
    }
    if (!suppressed) kept.push(finding);
  }
  for (const s of suppressions) {
    if (used.has(s)) continue;
    kept.push(
      at(
        s,
        checkIds.suppressionUnused,
        "warning",
        `tfcapi-lint:ignore ${s.checkId} suppresses nothing on the line below`,
        "delete the stale suppression comment",
      ),
    );
  }
  return kept;
}
