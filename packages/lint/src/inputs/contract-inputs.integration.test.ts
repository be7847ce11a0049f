import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "@jest/globals";
import { roles } from "@captf/contract/roles";
import { describeWithTools, requireTool } from "@captf/testkit";
import { run, testdataDir } from "../cli.test-support.js";
import { runtimes } from "./contract-inputs.js";

const repo = join(testdataDir, "../../..");
const cases = roles.flatMap((role) => runtimes.map((runtime) => [role, runtime] as const));

describe("tfcapi-lint inputs", () => {
  it.each(cases)("prints the %s role's declarations for %s (golden)", async (role, runtime) => {
    const result = await run(["inputs", "--role", role, "--runtime", runtime]);
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: "" });
    const golden = join(testdataDir, "inputs", `${role}.${runtime}.tf`);
    if (process.env.UPDATE_GOLDEN === "1" || !existsSync(golden)) writeFileSync(golden, result.stdout);
    expect(result.stdout).toBe(readFileSync(golden, "utf8"));
  });

  it("defaults to OpenTofu and refuses an unknown role or runtime", async () => {
    expect((await run(["inputs", "--role", "machine"])).stdout).toBe(
      (await run(["inputs", "--role", "machine", "--runtime", "tofu"])).stdout,
    );
    expect((await run(["inputs", "--role", "machine", "--runtime", "pulumi"])).code).toBe(3);
    expect((await run(["inputs", "--role", "node"])).code).toBe(3);
  });
});

// The declarations under the real runtimes: formatted as `fmt` wants, and accepting the contract's
// valid example inputs (schemas/v1alpha1/examples) while refusing a value the contract forbids.
for (const runtime of runtimes) {
  describeWithTools([runtime], `tfcapi-lint inputs under ${runtime}`, () => {
    it.each(roles)(
      "%s: fmt-clean, the contract's example inputs plan, a wrong contract version does not",
      async (role) => {
        const binary = requireTool(runtime);
        const dir = await mkdtemp(join(tmpdir(), `inputs-${runtime}-${role}-`));
        try {
          await writeFile(join(dir, "inputs.tf"), (await run(["inputs", "--role", role, "--runtime", runtime])).stdout);
          const example = JSON.parse(readFileSync(join(repo, "schemas/v1alpha1/examples", `${role}-inputs.valid.json`), "utf8")) as Record<
            string,
            unknown
          >;
          await writeFile(join(dir, "terraform.tfvars.json"), JSON.stringify(example));
          const env = { PATH: process.env.PATH ?? "", HOME: dir, TF_IN_AUTOMATION: "1", CHECKPOINT_DISABLE: "1" };
          const exec = (args: string[]) => execFileSync(binary, args, { cwd: dir, env, encoding: "utf8", stdio: "pipe" });
          exec(["fmt", "-check", "-diff", "inputs.tf"]);
          exec(["init", "-input=false", "-no-color"]);
          expect(exec(["plan", "-input=false", "-no-color"])).toMatch(/No changes/);
          await writeFile(join(dir, "terraform.tfvars.json"), JSON.stringify({ ...example, captf_contract: "v0" }));
          expect(() => exec(["plan", "-input=false", "-no-color"])).toThrow(/captf_contract must be "v1alpha1"/);
        } finally {
          await rm(dir, { recursive: true, force: true });
        }
      },
      60_000,
    );
  });
}
