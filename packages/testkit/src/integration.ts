import { appendFileSync, mkdirSync } from "node:fs";
import { describe } from "@jest/globals";
import { findTool, MissingToolError, skipMissingToolsVariable, type ToolName } from "./tools.js";

/** Where skipped suites are listed; the test command prints this file in its summary. */
export const skippedSuitesFile = ".test-results/skipped-suites.txt";

/**
 * `describe` for a suite that needs real tools. A missing tool fails the suite loudly,
 * unless CAPTF_ALLOW_MISSING_TOOLS=1, which skips it and records it for the summary.
 */
export function describeWithTools(tools: readonly ToolName[], name: string, body: () => void): void {
  const missing = tools.filter((tool) => !findTool(tool));
  if (missing.length === 0) return describe(name, body);
  if (process.env[skipMissingToolsVariable] === "1") {
    recordSkippedSuite(name, `missing: ${missing.join(", ")}`);
    return describe.skip(name, body);
  }
  throw new MissingToolError(missing[0]!);
}

/** Adds a skipped suite and why to the list the test command prints under "did not run". */
export function recordSkippedSuite(name: string, why: string): void {
  const root = process.env.CAPTF_REPO_ROOT ?? ".";
  mkdirSync(`${root}/.test-results`, { recursive: true });
  appendFileSync(`${root}/${skippedSuitesFile}`, `${name} (${why})\n`);
}
