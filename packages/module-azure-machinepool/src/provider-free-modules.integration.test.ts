import { readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { expect, it } from "@jest/globals";
import { describeWithTools, runTofuTest } from "@captf/testkit";

// The module's logic that needs no cloud provider (bootstrap, image placeholders, membership and
// health) lives in local sub-modules whose tofu tests run here with the real OpenTofu. The root
// module's mock_provider suites need the Azure provider binary, which this machine cannot obtain.
const modulesDir = fileURLToPath(new URL("../modules/", import.meta.url));
const subModules = readdirSync(modulesDir);

describeWithTools(["tofu"], "the Azure machinepool module's provider-free sub-modules", () => {
  it("has sub-modules to test", () => expect(subModules.length).toBeGreaterThanOrEqual(3));

  it.each(subModules)(
    "%s passes its tofu tests",
    async (name) => {
      const run = await runTofuTest(modulesDir + name);
      if (run.code !== 0) throw new Error(`tofu test in modules/${name} exited ${run.code}\n${run.stdout}\n${run.stderr}`);
      expect(run.failed).toBe(0);
      expect(run.passed).toBeGreaterThan(0);
    },
    120_000,
  );
});
