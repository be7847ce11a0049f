import { afterAll, beforeAll, expect, it, jest } from "@jest/globals";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describeWithTools } from "@captf/testkit";
import { emptyPlanHash } from "@captf/contract/run-result";
import { RunnerFixture, stepNamesOf } from "./runner-fixture.test-support.js";

jest.setTimeout(60_000);

// Version 2 of testdata/moves-module: the same instance under a new address, and one more to adopt.
const movedModule = `variable "name" {
  type = string
}

resource "terraform_data" "new_name" {
  input = var.name
}

moved {
  from = terraform_data.old_name
  to   = terraform_data.new_name
}

resource "terraform_data" "adopted" {}

output "provider_id" {
  value = "noop:///\${terraform_data.new_name.output}"
}
`;

// Import blocks are allowed only in the root module, so the import sits next to the generated root.
const importBlock = { import: [{ to: "module.role.terraform_data.adopted", id: "adopted-1" }] };

// A plan that only moves and imports is a change: counted apart, hashed, never drift, never destructive.
describeWithTools(["tofu"], "runner plans that only import or move (real OpenTofu)", () => {
  let fixture: RunnerFixture;
  let planHash = "";
  beforeAll(async () => {
    fixture = await RunnerFixture.create("moves-module", { variables: { name: { type: "string" } }, outputs: ["provider_id"] });
    await fixture.setInputs({ name: "alpha" });
    const first = await fixture.run("apply");
    expect(first.exitCode).toBe(0);
    await writeFile(join(fixture.moduleDir, "main.tf"), movedModule);
    await fixture.writeConfig("imports.tf.json", importBlock);
  });
  afterAll(async () => {
    await fixture?.remove();
  });

  it("counts the import and the move apart from adds, changes and destroys, with a hash that is not the empty plan's", async () => {
    const run = await fixture.run("plan");
    expect(run.exitCode).toBe(0);
    expect(run.result.plan).toMatchObject({
      add: 0,
      change: 0,
      destroy: 0,
      import: 1,
      move: 1,
      resources: ["module.role.terraform_data.adopted (import)", "module.role.terraform_data.new_name (move)"],
      truncated: false,
    });
    planHash = run.result.plan!.hash;
    expect(planHash).toMatch(/^p1:[0-9a-f]{64}$/);
    expect(planHash).not.toBe(emptyPlanHash);
  });

  it("reports no drift for them", async () => {
    const run = await fixture.run("drift");
    expect(run.exitCode).toBe(0);
    expect(run.result.drift).toMatchObject({ detected: false, add: 0, change: 0, destroy: 0 });
  });

  it("does not trip the destructive-plan guard: a guarded apply imports and moves", async () => {
    const run = await fixture.run("apply", { args: ["--guard-deletes", "--inputs-hash=h2:moves"] });
    expect(run.exitCode).toBe(0);
    expect(run.result.error).toBeNull();
    expect(stepNamesOf(run)).toEqual(["init", "validate", "plan", "show-json", "apply"]);
    expect(run.result.changes).toEqual({ add: 0, change: 0, destroy: 0, import: 1 });
    const names = (await fixture.state()).resources.map((resource) => resource.name).sort();
    expect(names).toEqual(["adopted", "new_name"]);
  });

  it("plans nothing once they are applied", async () => {
    const run = await fixture.run("plan");
    expect(run.exitCode).toBe(0);
    expect(run.result.plan?.hash).toBe(emptyPlanHash);
  });
});
