import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildModuleImage, pushImage, startLocalRegistry } from "./oci.js";
import { mirrorModuleProviders, type ProviderSource } from "./provider-sources.js";
import { moduleRuntimes, runtimeNames, runtimeVersion, type RuntimeName } from "./runtimes.js";
import { requireTool } from "./tools.js";

/** The in-process linter entry point (tfcapi-lint's `main`), passed in: testkit does not depend on the linter. */
export type LintMain = (
  argv: readonly string[],
  io: { stdout: { write(text: string): unknown }; stderr: { write(text: string): unknown } },
) => Promise<number>;

export interface PublishedImageLint {
  reference: string;
  exitCode: number;
  report: { findings?: { id: string; severity: string; message: string }[] };
  stderr: string;
}

/**
 * Builds each module into an image per runtime (umoci), tagged `v0.1.0-opentofu` and
 * `v0.1.0-terraform`, pushes them to a fresh loopback registry (skopeo, docker-registry) and runs
 * `tfcapi-lint image <ref> --role <role> --strict --format json` on each. A module given
 * `providers` ships them in /captf/providers, mirrored by each image's own runtime.
 */
export async function lintPublishedModuleImages(
  lint: LintMain,
  modules: readonly { name: string; dir: string; role: string; providers?: ProviderSource }[],
  runtimes: readonly RuntimeName[] = runtimeNames,
): Promise<PublishedImageLint[]> {
  const layout = mkdtempSync(join(tmpdir(), "captf-layout-"));
  const registry = await startLocalRegistry();
  try {
    const results: PublishedImageLint[] = [];
    for (const module of modules)
      for (const runtimeName of runtimes) {
        const tag = `v0.1.0-${moduleRuntimes[runtimeName].imageTagSuffix}`;
        const providersDir = module.providers ? join(layout, `${module.name}-${runtimeName}-providers`) : undefined;
        if (module.providers && providersDir)
          await mirrorModuleProviders(module.dir, requireTool(runtimeName), module.providers, providersDir);
        buildModuleImage(join(layout, module.name), tag, {
          moduleDir: module.dir,
          runtime: requireTool(runtimeName),
          runtimeVersion: runtimeVersion(runtimeName),
          runtimeName,
          role: module.role,
          providersDir,
        });
        const reference = `${registry.host}/captf/${module.name}:${tag}`;
        pushImage(join(layout, module.name), tag, reference);
        let stdout = "";
        let stderr = "";
        const exitCode = await lint(["image", reference, "--role", module.role, "--strict", "--format", "json"], {
          stdout: { write: (text: string) => (stdout += text) },
          stderr: { write: (text: string) => (stderr += text) },
        });
        results.push({ reference, exitCode, report: stdout ? (JSON.parse(stdout) as PublishedImageLint["report"]) : {}, stderr });
      }
    return results;
  } finally {
    await registry.stop();
    rmSync(layout, { recursive: true, force: true });
  }
}
