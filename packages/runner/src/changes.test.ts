import { describe, expect, it } from "@jest/globals";
import { ChangesScanner, parseChangesLine } from "./changes.js";

describe("parseChangesLine", () => {
  it.each([
    ["Apply complete! Resources: 3 added, 1 changed, 2 destroyed.", { add: 3, change: 1, destroy: 2 }],
    ["Apply complete! Resources: 2 imported, 0 added, 0 changed, 0 destroyed.", { add: 0, change: 0, destroy: 0, import: 2 }],
    ["Apply complete! Resources: 0 added, 0 changed, 0 destroyed, 1 forgotten.", { add: 0, change: 0, destroy: 0 }],
    ["Destroy complete! Resources: 4 destroyed.", { add: 0, change: 0, destroy: 4 }],
    ["\x1b[0m\x1b[1m\x1b[32mApply complete! Resources: 1 added, 0 changed, 0 destroyed.\x1b[0m", { add: 1, change: 0, destroy: 0 }],
  ])("reads %j", (line, changes) => {
    expect(parseChangesLine(line)).toEqual(changes);
  });

  it("ignores every other line", () => {
    expect(parseChangesLine("Plan: 1 to add, 0 to change, 0 to destroy.")).toBeUndefined();
    expect(parseChangesLine("  Apply complete! Resources: 1 added, 0 changed, 0 destroyed.")).toBeUndefined();
  });
});

describe("ChangesScanner", () => {
  it("finds the summary line across writes, including an unterminated last line", () => {
    const scanner = new ChangesScanner();
    scanner.write("thing: Creating...\nApply compl");
    scanner.write("ete! Resources: 1 added, 0 changed, 0 destroyed.");
    expect(scanner.changes()).toEqual({ add: 1, change: 0, destroy: 0 });
  });

  it("reports nothing for a step that printed no summary", () => {
    const scanner = new ChangesScanner();
    scanner.write("Error: boom\n");
    expect(scanner.changes()).toBeUndefined();
  });
});
