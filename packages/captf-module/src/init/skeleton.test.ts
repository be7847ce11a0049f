import { mkdtempSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "@jest/globals";
import { roles, roleTables } from "@captf/contract/roles";
import { lintModule, renderContractInputs } from "tfcapi-lint";
import { initModule } from "./init-command.js";
import { moduleSkeleton } from "./skeleton.js";

const dirs: string[] = [];
const scratch = () => {
  const dir = mkdtempSync(join(tmpdir(), "captf-module-init-"));
  dirs.push(dir);
  return dir;
};
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe.each(roles)("the %s skeleton", (role) => {
  const files = new Map(moduleSkeleton(role).map((file) => [file.path, file.text]));

  it("keeps tfcapi-lint's contract input declarations verbatim", () => {
    expect(files.get("inputs.tf")).toBe(renderContractInputs(role, "tofu"));
    expect(moduleSkeleton(role, "terraform").find((file) => file.path === "inputs.tf")?.text).toBe(renderContractInputs(role, "terraform"));
  });

  it("declares every contract output of the role, in the role table's order", () => {
    const declared = [...files.get("outputs.tf")!.matchAll(/^output "([^"]+)"/gm)].map((match) => match[1]);
    expect(declared).toEqual(roleTables[role].outputs.map((output) => output.name));
  });

  it("admits Terraform 1.5 and OpenTofu, and declares no backend", () => {
    expect(files.get("versions.tf")).toMatch(/required_version = ">= 1\.5\.0"/);
    expect([...files.values()].join("\n")).not.toMatch(/^\s*(backend|cloud)\s/m);
  });

  it("has a tofu test suite and a README naming the commands", () => {
    expect(files.get(`tests/${role}.tftest.hcl`)).toMatch(/^run "first_apply" \{/m);
    expect(files.get("README.md")).toContain(`tfcapi-lint module . --role ${role} --strict`);
  });

  it("passes tfcapi-lint's module checks with no finding at all, info included", async () => {
    const dir = scratch();
    initModule({ role, dir, runtime: "tofu", force: false });
    const result = await lintModule(dir, role);
    expect(result.findings).toEqual([]);
    expect(result.ok).toBe(true);
  });
});

describe("init's directory", () => {
  it("creates a missing directory, and writes into an empty one", () => {
    const parent = scratch();
    expect(initModule({ role: "machine", dir: join(parent, "new/module"), runtime: "tofu", force: false }).files).toContain("inputs.tf");
    mkdirSync(join(parent, "empty"));
    expect(initModule({ role: "cluster", dir: join(parent, "empty"), runtime: "tofu", force: false }).replaced).toEqual([]);
  });

  it("refuses a directory with entries, naming them and --force", () => {
    const dir = scratch();
    writeFileSync(join(dir, "main.tf"), "# mine\n");
    expect(() => initModule({ role: "machine", dir, runtime: "tofu", force: false })).toThrow(/is not empty \(main\.tf\).*--force/);
    expect(readFileSync(join(dir, "main.tf"), "utf8")).toBe("# mine\n");
  });

  it("with --force replaces the skeleton's files and keeps the others", () => {
    const dir = scratch();
    writeFileSync(join(dir, "main.tf"), "# mine\n");
    writeFileSync(join(dir, "variables.tf"), "# my own inputs\n");
    const result = initModule({ role: "machine", dir, runtime: "tofu", force: true });
    expect(result.replaced).toEqual(["main.tf"]);
    expect(readFileSync(join(dir, "variables.tf"), "utf8")).toBe("# my own inputs\n");
    expect(readdirSync(dir).sort()).toEqual([
      ".gitignore",
      "README.md",
      "inputs.tf",
      "main.tf",
      "outputs.tf",
      "tests",
      "variables.tf",
      "versions.tf",
    ]);
  });

  it("refuses a file where the directory should be", () => {
    const dir = scratch();
    writeFileSync(join(dir, "file"), "");
    expect(() => initModule({ role: "machine", dir: join(dir, "file"), runtime: "tofu", force: true })).toThrow(/not a directory/);
  });
});
