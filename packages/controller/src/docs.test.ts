import { readFileSync } from "node:fs";
import { describe, expect, it } from "@jest/globals";
import {
  conditionReasons,
  conditionsNeverInReady,
  managerEventReasons,
  negativePolarityConditions,
  runnerEventReasons,
} from "@captf/contract/api";

// docs/conditions.md and docs/events.md list every condition reason and event reason of the
// constants in @captf/contract/api; these tests fail when one is missing, stale or mistyped.

const docsDir = new URL("../../../docs/", import.meta.url);
const read = (file: string) => readFileSync(new URL(file, docsDir), "utf8");

/** `## \`Name\`` sections of a markdown document, by name. */
function sections(markdown: string, level: string): Map<string, string> {
  const result = new Map<string, string>();
  const parts = markdown.split(new RegExp(`^${level} `, "m")).slice(1);
  for (const part of parts) {
    const heading = part.slice(0, part.indexOf("\n"));
    result.set(heading.replace(/`/g, "").trim(), part.slice(heading.length));
  }
  return result;
}

/** The cells of every table row of a section, header and separator rows dropped. */
function rows(section: string): string[][] {
  return section
    .split("\n")
    .filter((line) => line.startsWith("|") && !/^\|\s*-/.test(line))
    .map((line) =>
      line
        .slice(1, -1)
        .split("|")
        .map((cell) => cell.trim()),
    )
    .filter((cells) => cells[0] !== "Status" && cells[0] !== "Reason");
}

describe("docs/conditions.md", () => {
  const doc = read("conditions.md");
  const byType = sections(doc, "##");

  it("has one section per condition type, and none other", () => {
    expect([...byType.keys()]).toEqual(Object.keys(conditionReasons));
  });

  it("lists every reason of every condition type under its status, and no other", () => {
    for (const [type, byStatus] of Object.entries(conditionReasons)) {
      const documented = rows(byType.get(type) ?? "")
        .filter((cells) => cells[1] !== "—")
        .map((cells) => `${cells[0]} ${cells[1]}`);
      const expected = (["True", "False", "Unknown"] as const).flatMap((status) =>
        byStatus[status].map((reason) => `${status} \`${reason}\``),
      );
      expect([type, documented.sort()]).toEqual([type, expected.sort()]);
    }
  });

  it("names the negative-polarity conditions and those never in the Ready summary", () => {
    for (const type of negativePolarityConditions)
      expect([type, byType.get(type)]).toEqual([type, expect.stringContaining("Negative polarity")]);
    for (const type of conditionsNeverInReady)
      expect([type, byType.get(type)]).toEqual([type, expect.stringContaining("not in the Ready summary")]);
    for (const type of Object.keys(conditionReasons) as (keyof typeof conditionReasons)[]) {
      if (!negativePolarityConditions.includes(type))
        expect([type, byType.get(type)]).toEqual([type, expect.stringContaining("Normal polarity")]);
      if (!conditionsNeverInReady.includes(type))
        expect([type, byType.get(type)]).toEqual([type, expect.not.stringContaining("not in the Ready summary")]);
    }
  });
});

describe("docs/events.md", () => {
  const doc = read("events.md");
  const parts = sections(doc, "##");

  it("lists every manager event reason with its type, and no other", () => {
    const documented = Object.fromEntries(rows(parts.get("Manager events") ?? "").map((cells) => [cells[0]!.replace(/`/g, ""), cells[1]]));
    expect(documented).toEqual({ ...managerEventReasons });
  });

  it("lists every runner event reason, and no other", () => {
    const documented = rows(parts.get("Runner events") ?? "").map((cells) => cells[0]!.replace(/`/g, ""));
    expect(documented).toEqual([...runnerEventReasons]);
  });
});
