import { fileURLToPath } from "node:url";
import { expect, it } from "@jest/globals";
import { main } from "tfcapi-lint";
import { describeWithTools, lintPublishedModuleImages } from "@captf/testkit";

// The GCP machinepool module as a real image per runtime (tags -opentofu and -terraform) in a
// loopback registry, passing tfcapi-lint's image checks under --strict (the provider mirror is
// absent: an info finding, not a failure).
describeWithTools(["tofu", "terraform", "umoci", "skopeo", "docker-registry"], "the GCP machinepool module image", () => {
  it("passes tfcapi-lint image --strict from a registry", async () => {
    const results = await lintPublishedModuleImages(main, [{ name: "gcp-machinepool", dir: fileURLToPath(new URL("..", import.meta.url)), role: "machinepool" }]);
    expect(results.map((result) => result.reference.replace(/^.*:/, ""))).toEqual(["v0.1.0-opentofu", "v0.1.0-terraform"]);
    for (const result of results) {
      expect({ exitCode: result.exitCode, stderr: result.stderr, errors: result.report.findings?.filter((f) => f.severity !== "info") }).toEqual({ exitCode: 0, stderr: "", errors: [] });
      expect(result.report.findings?.map((f) => f.id)).toContain("image/providers-absent");
    }
  }, 120_000);
});
