import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildModuleImage, pushImage, startLocalRegistry } from "./oci.js";
import { requireTool } from "./tools.js";

/** The in-process linter entry point (tfcapi-lint's `main`), passed in: testkit does not depend on the linter. */
export type LintMain = (argv: readonly string[], io: { stdout: { write(text: string): unknown }; stderr: { write(text: string): unknown } }) => Promise<number>;

export interface PublishedImageLint {
  reference: string;
  exitCode: number;
  report: { findings?: { id: string; severity: string; message: string }[] };
  stderr: string;
}

/**
 * Builds each module into an image (umoci), pushes it to a fresh loopback registry (skopeo,
 * docker-registry) and runs `tfcapi-lint image <ref> --role <role> --strict --format json` on it.
 */
export async function lintPublishedModuleImages(lint: LintMain, modules: readonly { name: string; dir: string; role: string }[]): Promise<PublishedImageLint[]> {
  const tofu = requireTool("tofu");
  const layout = mkdtempSync(join(tmpdir(), "captf-layout-"));
  const registry = await startLocalRegistry();
  try {
    const results: PublishedImageLint[] = [];
    for (const module of modules) {
      const tag = "v0.1.0";
      buildModuleImage(join(layout, module.name), tag, { moduleDir: module.dir, runtime: tofu, runtimeVersion: "1.12.6", role: module.role });
      const reference = `${registry.host}/captf/${module.name}:${tag}`;
      pushImage(join(layout, module.name), tag, reference);
      let stdout = "";
      let stderr = "";
      const exitCode = await lint(["image", reference, "--role", module.role, "--strict", "--format", "json"], {
        stdout: { write: (text: string) => (stdout += text) },
        stderr: { write: (text: string) => (stderr += text) },
      });
      results.push({ reference, exitCode, report: stdout ? JSON.parse(stdout) : {}, stderr });
    }
    return results;
  } finally {
    await registry.stop();
    rmSync(layout, { recursive: true, force: true });
  }
}
