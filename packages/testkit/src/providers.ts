import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "@jest/globals";
import { describeWithTools, recordSkippedSuite } from "./integration.js";
import { lintPublishedModuleImages, type LintMain } from "./module-image-lint.js";
import { findProviders, providerCliConfig, type ProviderSource } from "./provider-sources.js";
import { runtimeNames } from "./runtimes.js";
import { runTofuTest } from "./tofu.js";

/**
 * `describe` for a suite that needs real providers, an optional extra: it runs when they can be
 * installed (a mirror or the registry), and otherwise is skipped and named with the reason in the
 * summary's "did not run" list, never counted as passed, without failing the run.
 */
export function describeWithProviders(providers: readonly string[], name: string, body: (source: () => ProviderSource) => void): void {
  const found = findProviders(providers);
  if (found.kind !== "none") return describe(name, () => body(() => found));
  recordSkippedSuite(name, `providers: ${found.reason}`);
  describe.skip(name, () => body(() => found as never));
}

/**
 * The suite of a module's root `tofu test` files, which mock the cloud providers but need their
 * schemas: `tofu init`, `tofu validate` and every `run` of `<moduleDir>/tests`, all passing.
 */
export function describeModuleRootSuites(moduleDir: string, providers: readonly string[], name: string): void {
  const testFiles = readdirSync(join(moduleDir, "tests")).filter((file) => file.endsWith(".tftest.hcl"));
  const runs = testFiles.reduce(
    (count, file) => count + (readFileSync(join(moduleDir, "tests", file), "utf8").match(/^run "/gm)?.length ?? 0),
    0,
  );
  describeWithProviders(providers, name, (source) => {
    it(`initializes, validates and passes all ${runs} runs of tests/`, async () => {
      const run = await runTofuTest(moduleDir, { cliConfig: providerCliConfig(source()), validate: true });
      if (run.code !== 0) throw new Error(`tofu init, validate or test exited ${run.code}\n${run.stdout}\n${run.stderr}`);
      expect({ passed: run.passed, failed: run.failed }).toEqual({ passed: runs, failed: 0 });
    }, 900_000);
  });
}

/**
 * A cloud module's images, one per runtime, passing `tfcapi-lint image --strict` from a registry:
 * with its providers in /captf/providers when they can be installed here, else without a mirror
 * (an info finding, and `init` in a Job needs registry egress).
 */
export function describeModuleImages(
  lint: LintMain,
  module: { name: string; dir: string; role: string },
  providers: readonly string[],
  name: string,
): void {
  describeWithTools(["tofu", "terraform", "umoci", "skopeo", "docker-registry"], name, () => {
    // Each runtime's init installs from its own host's directory of the mirror (or its own registry).
    const found = findProviders(providers, process.env, runtimeNames);
    const source = found.kind === "none" ? undefined : found;
    it(source
      ? `passes tfcapi-lint image --strict with ${providers.join(", ")} in /captf/providers`
      : `passes tfcapi-lint image --strict without a provider mirror (${found.kind === "none" ? found.reason : ""})`, async () => {
      const results = await lintPublishedModuleImages(lint, [{ ...module, providers: source }]);
      expect(results.map((result) => result.reference.replace(/^.*:/, ""))).toEqual(["v0.1.0-opentofu", "v0.1.0-terraform"]);
      for (const result of results) {
        expect({
          exitCode: result.exitCode,
          stderr: result.stderr,
          errors: result.report.findings?.filter((f) => f.severity !== "info"),
        }).toEqual({ exitCode: 0, stderr: "", errors: [] });
        const ids = result.report.findings?.map((f) => f.id) ?? [];
        if (source) expect(ids).not.toContain("image/providers-absent");
        else expect(ids).toContain("image/providers-absent");
      }
    }, 600_000);
  });
}
