import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "@jest/globals";
import { recordSkippedSuite } from "./integration.js";
import { runTofuTest } from "./tofu.js";

/** A filesystem provider mirror (`tofu providers mirror <dir>`) the provider suites install from. */
export const providerMirrorVariable = "CAPTF_PROVIDER_MIRROR";
/** Where the provider suites look for a mirror when CAPTF_PROVIDER_MIRROR is unset, beside the tools cache. */
export function defaultProviderMirror(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.XDG_CACHE_HOME || join(homedir(), ".cache"), "captf", "provider-mirror");
}
/** The registry the provider suites install from when no mirror is named (OpenTofu's default). */
export const providerRegistryHost = "registry.opentofu.org";

/** Where a suite's providers come from: a mirror directory, or the registry (direct installation). */
export type ProviderSource = { kind: "mirror"; dir: string } | { kind: "registry" };

/** Whether the registry answers for `provider` (namespace/type) within a few seconds. */
function registryServes(provider: string): boolean {
  const url = `https://${providerRegistryHost}/v1/providers/${provider}/versions`;
  const probe = spawnSync(process.execPath, ["-e", `fetch(${JSON.stringify(url)}, { signal: AbortSignal.timeout(5000) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))`], { stdio: "ignore", timeout: 10_000 });
  return probe.status === 0;
}

/**
 * Where `providers` (namespace/type, e.g. hashicorp/google) can be installed from: the mirror
 * named by CAPTF_PROVIDER_MIRROR (else the default mirror, when it exists) when it holds every
 * one, else the registry when it answers.
 */
export function findProviders(providers: readonly string[], env: NodeJS.ProcessEnv = process.env): ProviderSource | { kind: "none"; reason: string } {
  const named = env[providerMirrorVariable];
  const mirror = named || (existsSync(defaultProviderMirror(env)) ? defaultProviderMirror(env) : undefined);
  if (mirror) {
    const missing = providers.filter((provider) => !["registry.opentofu.org", "registry.terraform.io"].some((host) => existsSync(join(mirror, host, provider))));
    if (missing.length === 0) return { kind: "mirror", dir: mirror };
    return { kind: "none", reason: `${named ? `${providerMirrorVariable}=${mirror}` : `the provider mirror ${mirror}`} lacks ${missing.join(", ")}` };
  }
  const unserved = providers.filter((provider) => !registryServes(provider));
  if (unserved.length === 0) return { kind: "registry" };
  return { kind: "none", reason: `no provider mirror (${providerMirrorVariable}) and ${providerRegistryHost} cannot be reached or does not serve ${unserved.join(", ")}` };
}

/** The CLI configuration that installs from the source: the mirror only, or the registry as usual. */
export function providerCliConfig(source: ProviderSource): string {
  return source.kind === "mirror" ? `provider_installation {\n  filesystem_mirror {\n    path = ${JSON.stringify(source.dir)}\n  }\n}\n` : "";
}

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
  const runs = testFiles.reduce((count, file) => count + (readFileSync(join(moduleDir, "tests", file), "utf8").match(/^run "/gm)?.length ?? 0), 0);
  describeWithProviders(providers, name, (source) => {
    it(`initializes, validates and passes all ${runs} runs of tests/`, async () => {
      const run = await runTofuTest(moduleDir, { cliConfig: providerCliConfig(source()), validate: true });
      if (run.code !== 0) throw new Error(`tofu init, validate or test exited ${run.code}\n${run.stdout}\n${run.stderr}`);
      expect({ passed: run.passed, failed: run.failed }).toEqual({ passed: runs, failed: 0 });
    }, 900_000);
  });
}
