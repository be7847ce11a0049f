import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "@jest/globals";
import { declaresProviders, moduleProviders, parseLockFile } from "./lockfile.js";

// As `tofu providers lock -platform=linux_amd64 -platform=linux_arm64` writes it.
const lock = `# This file is maintained automatically by "tofu init".
# Manual edits may be lost in future updates.

provider "registry.opentofu.org/hashicorp/random" {
  version     = "3.6.3"
  constraints = "~> 3.6"
  hashes = [
    "h1:f6jXn4MCv6uLl1ZC0IOPaK2K0W2fpfaKRZ3ekxzDIeo=",
    "zh:1bfd2e54b4eee8c761a40b6d99d45880b3a71abc18a9a7a5319204da9c8363b2",
  ]
}

provider "registry.opentofu.org/example/fake" {
  version = "1.0.0"
  hashes = [
    "h1:zTYhOL7eZqAc2+aHZ6wRGaFRHmYVvVrnIEWGIwKzVWc=",
  ]
}
`;

describe("the lock file", () => {
  it("pins each provider's address, version and hashes, sorted by address", () => {
    expect(parseLockFile(lock)).toEqual([
      {
        address: "registry.opentofu.org/example/fake",
        host: "registry.opentofu.org",
        namespace: "example",
        type: "fake",
        version: "1.0.0",
        hashes: ["h1:zTYhOL7eZqAc2+aHZ6wRGaFRHmYVvVrnIEWGIwKzVWc="],
      },
      {
        address: "registry.opentofu.org/hashicorp/random",
        host: "registry.opentofu.org",
        namespace: "hashicorp",
        type: "random",
        version: "3.6.3",
        hashes: ["h1:f6jXn4MCv6uLl1ZC0IOPaK2K0W2fpfaKRZ3ekxzDIeo=", "zh:1bfd2e54b4eee8c761a40b6d99d45880b3a71abc18a9a7a5319204da9c8363b2"],
      },
    ]);
  });

  it("refuses a provider block without a full address or a version", () => {
    expect(() => parseLockFile('provider "hashicorp/random" {\n  version = "1.0.0"\n}\n')).toThrow(/without an address/);
    expect(() => parseLockFile('provider "registry.opentofu.org/hashicorp/random" {\n}\n')).toThrow(/or a version/);
  });

  it("is required of a module that declares providers, and not of one that only mentions them in a comment", () => {
    const dir = mkdtempSync(join(tmpdir(), "captf-module-lock-"));
    try {
      writeFileSync(join(dir, "versions.tf"), "terraform {\n  # required_providers {\n  #   google = {}\n  # }\n}\n");
      expect(declaresProviders(dir)).toBe(false);
      expect(moduleProviders(dir)).toEqual([]);
      writeFileSync(join(dir, "versions.tf"), 'terraform {\n  required_providers {\n    fake = { source = "example/fake" }\n  }\n}\n');
      expect(() => moduleProviders(dir)).toThrow(/has no \.terraform\.lock\.hcl: run `tofu init`/);
      writeFileSync(join(dir, ".terraform.lock.hcl"), lock);
      expect(moduleProviders(dir).map((provider) => provider.address)).toEqual([
        "registry.opentofu.org/example/fake",
        "registry.opentofu.org/hashicorp/random",
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
