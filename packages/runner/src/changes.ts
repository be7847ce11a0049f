import { stripAnsi } from "./text.js";

import type { Changes } from "@captf/contract/run-result";

// Both runtimes end a successful run with one of these lines; later fields ("N forgotten") are ignored.
const applyComplete = /^Apply complete! Resources: (?:(\d+) imported, )?(\d+) added, (\d+) changed, (\d+) destroyed/;
const destroyComplete = /^Destroy complete! Resources: (\d+) destroyed/;

/** The counts of a runtime's closing summary line, or undefined for any other line. */
export function parseChangesLine(line: string): Changes | undefined {
  const text = stripAnsi(line).trimEnd();
  const apply = applyComplete.exec(text);
  if (apply) {
    const changes: Changes = { add: Number(apply[2]), change: Number(apply[3]), destroy: Number(apply[4]) };
    if (apply[1] && Number(apply[1]) > 0) changes.import = Number(apply[1]);
    return changes;
  }
  const destroy = destroyComplete.exec(text);
  return destroy ? { add: 0, change: 0, destroy: Number(destroy[1]) } : undefined;
}

/** Watches a step's stdout for the summary line, keeping only the current partial line. */
export class ChangesScanner {
  private line = "";
  private found: Changes | undefined;

  write(text: string): void {
    const lines = (this.line + text).split("\n");
    this.line = lines.pop()!.slice(0, 512); // the summary line is short and starts a line
    for (const line of lines) this.found = parseChangesLine(line) ?? this.found;
  }

  changes(): Changes | undefined {
    if (this.line) this.found = parseChangesLine(this.line) ?? this.found;
    this.line = "";
    return this.found;
  }
}
