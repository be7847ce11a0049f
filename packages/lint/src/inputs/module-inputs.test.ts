import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "@jest/globals";
import { roles, roleTables, type Role } from "@captf/contract/roles";
import { testdataDir } from "../cli.test-support.js";
import { generatedHeader, renderContractInputs, runtimes, type Runtime } from "./contract-inputs.js";

const packages = join(testdataDir, "../..");

/** Every module this repository ships, with its role. */
const modules: readonly { dir: string; role: Role }[] = [
  ...roles.map((role) => ({ dir: `module-noop/${role}`, role })),
  { dir: "module-gcp-machinepool", role: "machinepool" },
  { dir: "module-azure-machinepool", role: "machinepool" },
];

function topLevelFiles(dir: string): string[] {
  return readdirSync(join(packages, dir)).filter((name) => /\.(tf|tofu)$/.test(name));
}

// A module's contract inputs come from `tfcapi-lint inputs` and nowhere else: regenerate with
// `node packages/lint/bin/tfcapi-lint.js inputs --role <role> > <module>/inputs.tf`.
describe.each(modules)("the contract inputs of $dir", ({ dir, role }) => {
  it("are inputs.tf exactly as `tfcapi-lint inputs` prints it", () => {
    const text = readFileSync(join(packages, dir, "inputs.tf"), "utf8");
    const runtime = runtimes.find((candidate) => text.startsWith(generatedHeader(role, candidate)));
    expect(runtime).toBeDefined();
    expect(text).toBe(renderContractInputs(role, runtime as Runtime));
  });

  it("are declared in no other file", () => {
    const names = new Set(roleTables[role].inputs.map((spec) => spec.name));
    const elsewhere = topLevelFiles(dir)
      .filter((file) => file !== "inputs.tf")
      .flatMap((file) =>
        [...readFileSync(join(packages, dir, file), "utf8").matchAll(/^variable\s+"([^"]+)"/gm)].map((match) => `${file}: ${match[1]}`),
      )
      .filter((entry) => names.has(entry.split(": ")[1]!));
    expect(elsewhere).toEqual([]);
  });
});
