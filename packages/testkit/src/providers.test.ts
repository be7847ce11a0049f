import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "@jest/globals";
import { findProviders, providerCliConfig } from "./provider-sources.js";

describe("findProviders with a filesystem mirror", () => {
  const mirror = mkdtempSync(join(tmpdir(), "captf-mirror-"));
  mkdirSync(join(mirror, "registry.opentofu.org", "hashicorp", "google", "8.5.0"), { recursive: true });
  mkdirSync(join(mirror, "registry.terraform.io", "hashicorp", "google", "8.5.0"), { recursive: true });
  mkdirSync(join(mirror, "registry.opentofu.org", "hashicorp", "random"), { recursive: true });
  afterAll(() => rmSync(mirror, { recursive: true, force: true }));

  it("installs from the mirror named by CAPTF_PROVIDER_MIRROR when it holds every provider under the host of each runtime", () => {
    const found = findProviders(["hashicorp/google", "hashicorp/random"], { CAPTF_PROVIDER_MIRROR: mirror });
    expect(found).toEqual({ kind: "mirror", dir: mirror });
    expect(findProviders(["hashicorp/google"], { CAPTF_PROVIDER_MIRROR: mirror }, ["tofu", "terraform"])).toEqual({ kind: "mirror", dir: mirror });
    expect(providerCliConfig(found as { kind: "mirror"; dir: string })).toBe(`provider_installation {\n  filesystem_mirror {\n    path = ${JSON.stringify(mirror)}\n  }\n}\n`);
  });

  it("says which providers the mirror lacks under which host, without trying the registry", () => {
    expect(findProviders(["hashicorp/google", "hashicorp/azurerm"], { CAPTF_PROVIDER_MIRROR: mirror })).toEqual({ kind: "none", reason: `CAPTF_PROVIDER_MIRROR=${mirror} lacks registry.opentofu.org/hashicorp/azurerm` });
    expect(findProviders(["hashicorp/random"], { CAPTF_PROVIDER_MIRROR: mirror }, ["tofu", "terraform"])).toEqual({ kind: "none", reason: `CAPTF_PROVIDER_MIRROR=${mirror} lacks registry.terraform.io/hashicorp/random` });
  });

  it("does not count a provider under the other runtime's host: OpenTofu's init would not find it", () => {
    const terraformOnly = mkdtempSync(join(tmpdir(), "captf-mirror-"));
    try {
      mkdirSync(join(terraformOnly, "registry.terraform.io", "hashicorp", "google", "8.5.0"), { recursive: true });
      expect(findProviders(["hashicorp/google"], { CAPTF_PROVIDER_MIRROR: terraformOnly })).toEqual({ kind: "none", reason: `CAPTF_PROVIDER_MIRROR=${terraformOnly} lacks registry.opentofu.org/hashicorp/google` });
      expect(findProviders(["hashicorp/google"], { CAPTF_PROVIDER_MIRROR: terraformOnly }, ["terraform"])).toEqual({ kind: "mirror", dir: terraformOnly });
    } finally {
      rmSync(terraformOnly, { recursive: true, force: true });
    }
  });

  it("uses the default mirror beside the tools cache when CAPTF_PROVIDER_MIRROR is unset", () => {
    const cache = mkdtempSync(join(tmpdir(), "captf-cache-"));
    try {
      const fallback = join(cache, "captf", "provider-mirror");
      mkdirSync(join(fallback, "registry.opentofu.org", "hashicorp", "google", "8.0.0"), { recursive: true });
      expect(findProviders(["hashicorp/google"], { XDG_CACHE_HOME: cache })).toEqual({ kind: "mirror", dir: fallback });
      expect(findProviders(["hashicorp/google", "hashicorp/azurerm"], { XDG_CACHE_HOME: cache })).toEqual({ kind: "none", reason: `the provider mirror ${fallback} lacks registry.opentofu.org/hashicorp/azurerm` });
    } finally {
      rmSync(cache, { recursive: true, force: true });
    }
  });

  it("leaves the registry's installation as it is without a mirror", () => {
    expect(providerCliConfig({ kind: "registry" })).toBe("");
  });
});

describe("the skipped-suites list", () => {
  it("names a suite the providers kept from running, with the reason, for the summary", async () => {
    const root = mkdtempSync(join(tmpdir(), "captf-skips-"));
    const previous = process.env.CAPTF_REPO_ROOT;
    process.env.CAPTF_REPO_ROOT = root;
    try {
      const { recordSkippedSuite, skippedSuitesFile } = await import("./integration.js");
      recordSkippedSuite("the pool's root suites", "providers: CAPTF_PROVIDER_MIRROR=/m lacks hashicorp/google");
      expect(readFileSync(join(root, skippedSuitesFile), "utf8")).toBe("the pool's root suites (providers: CAPTF_PROVIDER_MIRROR=/m lacks hashicorp/google)\n");
    } finally {
      if (previous === undefined) delete process.env.CAPTF_REPO_ROOT;
      else process.env.CAPTF_REPO_ROOT = previous;
      rmSync(root, { recursive: true, force: true });
    }
  });
});
