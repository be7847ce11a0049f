import { fileURLToPath } from "node:url";
import { expect, it } from "@jest/globals";
import { main } from "tfcapi-lint";
import { describeWithTools, lintPublishedModuleImages } from "@captf/testkit";

// The Azure machinepool module as a real image in a loopback registry, passing tfcapi-lint's image
// checks under --strict (the provider mirror is absent: an info finding, not a failure).
describeWithTools(["tofu", "umoci", "skopeo", "docker-registry"], "the Azure machinepool module image", () => {
  it("passes tfcapi-lint image --strict from a registry", async () => {
    const [result] = await lintPublishedModuleImages(main, [{ name: "azure-machinepool", dir: fileURLToPath(new URL("..", import.meta.url)), role: "machinepool" }]);
    expect({ exitCode: result!.exitCode, stderr: result!.stderr, errors: result!.report.findings?.filter((f) => f.severity !== "info") }).toEqual({ exitCode: 0, stderr: "", errors: [] });
    expect(result!.report.findings?.map((f) => f.id)).toContain("image/providers-absent");
  }, 120_000);
});
