import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "@jest/globals";
import { roles } from "@captf/contract";
import { ruleCatalog } from "./catalog.js";
import { checkIds } from "./ids.js";
import { checksFor, moduleChecks } from "./registry.js";

const docs = readFileSync(fileURLToPath(new URL("../../../../docs/tfcapi-lint.md", import.meta.url)), "utf8");

describe("the rule registry", () => {
  it("lists every check ID once, and every ID is a check", () => {
    const listed = ruleCatalog.map((r) => r.id);
    expect(new Set(listed).size).toBe(listed.length);
    expect([...listed].sort()).toEqual(Object.values(checkIds).sort());
  });

  it("documents every check with a heading, a snippet and a fix", () => {
    for (const rule of ruleCatalog) {
      const section = docs.split(`\n### \`${rule.id}\`\n`)[1];
      expect(section).toBeDefined();
      const body = section!.split("\n### ")[0]!;
      expect(body).toContain("```");
      expect(body).toContain("Fix:");
      expect(docs).toContain(`| \`${rule.id}\` |`);
    }
  });

  it("keeps the reference's severities and role scopes", () => {
    const severity = Object.fromEntries(moduleChecks.map((c) => [c.id, c.severity]));
    expect(severity).toMatchObject({
      "input/required": "error",
      "input/user-variable-default": "warning",
      "input/type": "error",
      "input/sensitive": "warning",
      "input/default": "warning",
      "input/reserved": "error",
      "input/tags-declared": "error",
      "input/tags-unused": "warning",
      "output/required": "error",
      "output/reserved": "warning",
      "output/health": "error",
      "output/endpoint-never-set": "warning",
      "module/version": "info",
      "module/backend": "error",
      "module/source-escape": "error",
      "module/cloud": "error",
      "module/provider-config": "warning",
      "module/tofu-shadow": "warning",
      "pool/autoscaling-ignore-changes": "warning",
    });
    const ids = Object.fromEntries(roles.map((role) => [role, checksFor(role).map((c) => c.id)]));
    expect(ids.cluster).toContain("output/endpoint-never-set");
    expect(ids.cluster).not.toContain("input/sensitive");
    expect(ids.machine).not.toContain("output/provider-id-list-shape");
    expect(ids.machinepool).toEqual(
      expect.arrayContaining(["output/provider-id-list-shape", "pool/autoscaling-ignore-changes", "input/sensitive"]),
    );
  });
});
