import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "@jest/globals";
import { describeWithTools } from "./integration.js";
import { findProviders, platformProviderMirrors, providerCliConfig } from "./provider-sources.js";
import { hostArchitecture } from "./runtimes.js";

describe("findProviders with a filesystem mirror", () => {
  const mirror = mkdtempSync(join(tmpdir(), "captf-mirror-"));
  mkdirSync(join(mirror, "registry.opentofu.org", "hashicorp", "google", "8.5.0"), { recursive: true });
  mkdirSync(join(mirror, "registry.terraform.io", "hashicorp", "google", "8.5.0"), { recursive: true });
  mkdirSync(join(mirror, "registry.opentofu.org", "hashicorp", "random"), { recursive: true });
  afterAll(() => rmSync(mirror, { recursive: true, force: true }));

  it("installs from the mirror named by CAPTF_PROVIDER_MIRROR when it holds every provider under the host of each runtime", () => {
    const found = findProviders(["hashicorp/google", "hashicorp/random"], { CAPTF_PROVIDER_MIRROR: mirror });
    expect(found).toEqual({ kind: "mirror", dir: mirror });
    expect(findProviders(["hashicorp/google"], { CAPTF_PROVIDER_MIRROR: mirror }, ["tofu", "terraform"])).toEqual({
      kind: "mirror",
      dir: mirror,
    });
    expect(providerCliConfig(found as { kind: "mirror"; dir: string })).toBe(
      `provider_installation {\n  filesystem_mirror {\n    path = ${JSON.stringify(mirror)}\n  }\n}\n`,
    );
  });

  it("says which providers the mirror lacks under which host, without trying the registry", () => {
    expect(findProviders(["hashicorp/google", "hashicorp/azurerm"], { CAPTF_PROVIDER_MIRROR: mirror })).toEqual({
      kind: "none",
      reason: `CAPTF_PROVIDER_MIRROR=${mirror} lacks registry.opentofu.org/hashicorp/azurerm`,
    });
    expect(findProviders(["hashicorp/random"], { CAPTF_PROVIDER_MIRROR: mirror }, ["tofu", "terraform"])).toEqual({
      kind: "none",
      reason: `CAPTF_PROVIDER_MIRROR=${mirror} lacks registry.terraform.io/hashicorp/random`,
    });
  });

  it("does not count a provider under the other runtime's host: OpenTofu's init would not find it", () => {
    const terraformOnly = mkdtempSync(join(tmpdir(), "captf-mirror-"));
    try {
      mkdirSync(join(terraformOnly, "registry.terraform.io", "hashicorp", "google", "8.5.0"), { recursive: true });
      expect(findProviders(["hashicorp/google"], { CAPTF_PROVIDER_MIRROR: terraformOnly })).toEqual({
        kind: "none",
        reason: `CAPTF_PROVIDER_MIRROR=${terraformOnly} lacks registry.opentofu.org/hashicorp/google`,
      });
      expect(findProviders(["hashicorp/google"], { CAPTF_PROVIDER_MIRROR: terraformOnly }, ["terraform"])).toEqual({
        kind: "mirror",
        dir: terraformOnly,
      });
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
      expect(findProviders(["hashicorp/google", "hashicorp/azurerm"], { XDG_CACHE_HOME: cache })).toEqual({
        kind: "none",
        reason: `the provider mirror ${fallback} lacks registry.opentofu.org/hashicorp/azurerm`,
      });
    } finally {
      rmSync(cache, { recursive: true, force: true });
    }
  });

  it("leaves the registry's installation as it is without a mirror", () => {
    expect(providerCliConfig({ kind: "registry" })).toBe("");
  });
});

describeWithTools(["tofu"], "platformProviderMirrors", () => {
  // Stand-in packages: init installs a provider from a mirror without running it.
  const work = mkdtempSync(join(tmpdir(), "captf-platform-providers-"));
  const other = hostArchitecture === "amd64" ? "arm64" : "amd64";
  const host = "registry.opentofu.org/hashicorp";
  const module = join(work, "module");
  mkdirSync(module);
  writeFileSync(
    join(module, "main.tf"),
    `terraform {\n  required_providers {\n    google = { source = "hashicorp/google", version = "~> 8.0" }\n    random = { ` +
      `source = "hashicorp/random" }\n  }\n}\n`,
  );
  const noop = join(work, "noop");
  mkdirSync(noop);
  writeFileSync(join(noop, "main.tf"), `resource "terraform_data" "x" {}\n`);
  const stand = (path: string) => {
    mkdirSync(join(path, ".."), { recursive: true });
    writeFileSync(path, "stand-in\n");
  };
  const mirror = join(work, "mirror");
  for (const arch of [hostArchitecture, other])
    stand(join(mirror, host, "google/8.0.0", `linux_${arch}`, "terraform-provider-google_v8.0.0"));
  stand(join(mirror, host, "google/7.0.0", `linux_${hostArchitecture}`, "terraform-provider-google_v7.0.0"));
  stand(join(mirror, host, "random/3.7.2", `linux_${hostArchitecture}`, "terraform-provider-random_v3.7.2"));
  stand(join(mirror, host, "random", `terraform-provider-random_3.7.2_linux_${other}.zip`));
  stand(join(mirror, host, "azurerm/5.2.0", `linux_${hostArchitecture}`, "terraform-provider-azurerm_v5.2.0"));
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it("gives this machine's platform the packages init picks and another platform the same ones from the mirror, unpacked or " +
    "packed", async () => {
    const target = join(work, "both");
    const found = await platformProviderMirrors(module, "tofu", mirror, [hostArchitecture, other], target);
    const packages = [`${host}/google 8.0.0`, `${host}/random 3.7.2`];
    expect(found).toEqual({
      [hostArchitecture]: { dir: join(target, hostArchitecture), packages },
      [other]: { dir: join(target, other), packages },
    });
    expect(readdirSync(join(target, hostArchitecture, host))).toEqual(["google", "random"]);
    expect(readdirSync(join(target, hostArchitecture, host, "google"))).toEqual(["8.0.0"]);
    expect(existsSync(join(target, other, host, "google/8.0.0", `linux_${other}`, "terraform-provider-google_v8.0.0"))).toBe(true);
    expect(readdirSync(join(target, other, host, "random"))).toEqual([`terraform-provider-random_3.7.2_linux_${other}.zip`]);
  }, 60_000);

  it("gives a platform none when the mirror lacks one of its packages, and says which", async () => {
    rmSync(join(mirror, host, "random", `terraform-provider-random_3.7.2_linux_${other}.zip`));
    const found = await platformProviderMirrors(module, "tofu", mirror, [hostArchitecture, other], join(work, "lacking"));
    expect(found[other]).toEqual({
      packages: [],
      missing: `CAPTF_PROVIDER_MIRROR=${mirror} has no linux_${other} package of ${host}/random 3.7.2`,
    });
    expect(found[hostArchitecture]!.packages).toHaveLength(2);
  }, 60_000);

  it("gives every platform none when the runtime's init cannot install them, and nothing to say for a module that requires " +
    "none", async () => {
    const empty = join(work, "empty");
    mkdirSync(empty);
    expect(await platformProviderMirrors(module, "tofu", undefined, ["amd64", "arm64"], join(work, "unset"))).toEqual({
      amd64: { packages: [], missing: "CAPTF_PROVIDER_MIRROR is unset" },
      arm64: { packages: [], missing: "CAPTF_PROVIDER_MIRROR is unset" },
    });
    expect((await platformProviderMirrors(module, "tofu", empty, ["amd64"], join(work, "bare"))).amd64!.missing).toMatch(
      new RegExp(`^CAPTF_PROVIDER_MIRROR=${empty} does not serve tofu init: it lacks registry.opentofu.org/hashicorp/(google|random)`),
    );
    expect(await platformProviderMirrors(noop, "tofu", mirror, ["amd64", "arm64"], join(work, "noop-providers"))).toEqual({
      amd64: { packages: [] },
      arm64: { packages: [] },
    });
  }, 60_000);
});

describe("the skipped-suites list", () => {
  it("names a suite the providers kept from running, with the reason, for the summary", async () => {
    const root = mkdtempSync(join(tmpdir(), "captf-skips-"));
    const previous = process.env.CAPTF_REPO_ROOT;
    process.env.CAPTF_REPO_ROOT = root;
    try {
      const { recordSkippedSuite, skippedSuitesFile } = await import("./integration.js");
      recordSkippedSuite("the pool's root suites", "providers: CAPTF_PROVIDER_MIRROR=/m lacks hashicorp/google");
      expect(readFileSync(join(root, skippedSuitesFile), "utf8")).toBe(
        "the pool's root suites (providers: CAPTF_PROVIDER_MIRROR=/m lacks hashicorp/google)\n",
      );
    } finally {
      if (previous === undefined) delete process.env.CAPTF_REPO_ROOT;
      else process.env.CAPTF_REPO_ROOT = previous;
      rmSync(root, { recursive: true, force: true });
    }
  });
});
