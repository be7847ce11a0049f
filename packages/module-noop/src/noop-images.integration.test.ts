import { expect, it } from "@jest/globals";
import { main } from "tfcapi-lint";
import { describeWithTools, lintPublishedModuleImages } from "@captf/testkit";
import { noopModuleDirectory } from "./index.js";

// Each no-op module as a real image per runtime (no shell, no libc: /captf/module + /captf/runtime,
// tags -opentofu and -terraform), served by a loopback registry and passing tfcapi-lint's image
// checks under --strict.
describeWithTools(["tofu", "terraform", "umoci", "skopeo", "docker-registry"], "the no-op module images", () => {
  it("pass tfcapi-lint image --strict from a registry", async () => {
    const roles = ["cluster", "machine", "machinepool"] as const;
    const results = await lintPublishedModuleImages(
      main,
      roles.map((role) => ({ name: `noop-${role}`, dir: noopModuleDirectory(role), role })),
    );
    expect(results.map((result) => result.reference.replace(/^[^/]+\//, ""))).toEqual(
      roles.flatMap((role) => [`captf/noop-${role}:v0.1.0-opentofu`, `captf/noop-${role}:v0.1.0-terraform`]),
    );
    for (const result of results) {
      expect({
        reference: result.reference,
        exitCode: result.exitCode,
        stderr: result.stderr,
        errors: result.report.findings?.filter((f) => f.severity !== "info"),
      }).toEqual({
        reference: result.reference,
        exitCode: 0,
        stderr: "",
        errors: [],
      });
    }
  }, 120_000);
});
