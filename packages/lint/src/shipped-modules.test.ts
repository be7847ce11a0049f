import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "@jest/globals";
import { copyModuleForRun } from "@captf/testkit";
import { run, testdataDir } from "./cli.test-support.js";
import { lintModule } from "./lint-module.js";

const packages = join(testdataDir, "../..");
const scratch = mkdtempSync(join(tmpdir(), "lint-shipped-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

// The cloud pools link their one bootstrap sub-module (packages/module-pool-bootstrap) as
// modules/bootstrap. A link out of the module directory stays a module/source-escape error (the
// linter cannot know a build copies its files); what ships is the copy with the link's files,
// as the image build makes it, and that copy is what must pass.
describe.each(["module-gcp-machinepool", "module-azure-machinepool"])("%s", (dir) => {
  it("links modules/bootstrap to the one bootstrap sub-module, packages/module-pool-bootstrap", () => {
    expect(realpathSync(join(packages, dir, "modules/bootstrap"))).toBe(realpathSync(join(packages, "module-pool-bootstrap")));
  });

  it("in the checkout, reports the bootstrap link as module/source-escape and nothing else", async () => {
    const result = await lintModule(join(packages, dir), "machinepool");
    expect(result.findings.map((finding) => `${finding.id} ${finding.file}: ${finding.message}`)).toEqual([
      'module/source-escape bootstrap.tf: module bootstrap source "./modules/bootstrap" is a symlink to a directory outside the ' +
        "module directory; it is never linted and would not ship with the module",
    ]);
  });

  it("as it ships (the link's files copied in), passes tfcapi-lint module --role machinepool --strict", async () => {
    const shipped = join(scratch, dir);
    copyModuleForRun(join(packages, dir), shipped);
    const lint = await run(["module", shipped, "--role", "machinepool", "--strict"]);
    expect({ code: lint.code, stderr: lint.stderr }).toEqual({ code: 0, stderr: "" });
    expect(lint.stdout).toMatch(/^0 error\(s\), 0 warning\(s\)/m);
  });
});
