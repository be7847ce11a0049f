import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "@jest/globals";
import { sha256 } from "./layout.js";
import { storedZip } from "./zip.test-support.js";
import type { LockedProvider } from "./lockfile.js";
import { imageProviderHost, packageHashV1, platformMirrorPackages, selectMirrorPackages, stageMirror } from "./mirror.js";

const mirror = mkdtempSync(join(tmpdir(), "captf-module-mirror-"));
afterAll(() => rmSync(mirror, { recursive: true, force: true }));

// An unpacked package per platform: one executable, as `tofu init` installs from a filesystem mirror.
for (const arch of ["amd64", "arm64"]) {
  const dir = join(mirror, "registry.opentofu.org/example/fake/1.0.0", `linux_${arch}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "terraform-provider-fake_v1.0.0"), `#!/bin/sh\necho fake ${arch}\n`);
  chmodSync(join(dir, "terraform-provider-fake_v1.0.0"), 0o755);
}
// A packed one: a zip as the registry serves it.
const zipBytes = storedZip({ "terraform-provider-packed_v2.0.0": "#!/bin/sh\necho packed\n" });
mkdirSync(join(mirror, "registry.terraform.io/example/packed"), { recursive: true });
writeFileSync(join(mirror, "registry.terraform.io/example/packed/terraform-provider-packed_2.0.0_linux_amd64.zip"), zipBytes);

// The h1: hashes `tofu providers lock -fs-mirror=… -platform=linux_amd64 -platform=linux_arm64` wrote for the packages above.
const fake: LockedProvider = {
  address: "registry.opentofu.org/example/fake",
  host: "registry.opentofu.org",
  namespace: "example",
  type: "fake",
  version: "1.0.0",
  hashes: ["h1:rX0Yh9/zlgVIwilj2UvXNo/snQfE1MtHEzEygEV2OuE=", "h1:zTYhOL7eZqAc2+aHZ6wRGaFRHmYVvVrnIEWGIwKzVWc="],
};
const packed: LockedProvider = {
  address: "registry.terraform.io/example/packed",
  host: "registry.terraform.io",
  namespace: "example",
  type: "packed",
  version: "2.0.0",
  hashes: [`zh:${sha256(zipBytes)}`],
};

describe("the image's provider mirror", () => {
  it("hashes an unpacked package as the runtimes' lock files do (h1:)", () => {
    expect(packageHashV1(join(mirror, "registry.opentofu.org/example/fake/1.0.0/linux_amd64"))).toBe(
      "h1:zTYhOL7eZqAc2+aHZ6wRGaFRHmYVvVrnIEWGIwKzVWc=",
    );
    expect(packageHashV1(join(mirror, "registry.opentofu.org/example/fake/1.0.0/linux_arm64"))).toBe(
      "h1:rX0Yh9/zlgVIwilj2UvXNo/snQfE1MtHEzEygEV2OuE=",
    );
  });

  it("ships a default registry's provider under the image runtime's own registry", () => {
    expect(imageProviderHost(fake, "tofu")).toBe("registry.opentofu.org");
    expect(imageProviderHost(fake, "terraform")).toBe("registry.terraform.io");
    expect(imageProviderHost({ ...fake, host: "providers.example.com" }, "terraform")).toBe("providers.example.com");
  });

  it("takes each locked package of the platform, unpacked or packed, matched to the lock file's hashes", () => {
    const found = selectMirrorPackages([fake, packed], mirror, "tofu", "amd64");
    expect(found.map(({ address, layout, target, matchedHash }) => ({ address, layout, target, matchedHash }))).toEqual([
      {
        address: fake.address,
        layout: "unpacked",
        target: "registry.opentofu.org/example/fake/1.0.0/linux_amd64",
        matchedHash: "h1:zTYhOL7eZqAc2+aHZ6wRGaFRHmYVvVrnIEWGIwKzVWc=",
      },
      {
        address: packed.address,
        layout: "packed",
        target: "registry.opentofu.org/example/packed/2.0.0/linux_amd64",
        matchedHash: `zh:${sha256(zipBytes)}`,
      },
    ]);
    const staged = mkdtempSync(join(tmpdir(), "captf-module-staged-"));
    try {
      stageMirror(found, staged);
      expect(readdirSync(join(staged, "registry.opentofu.org/example"), { recursive: true }).sort()).toEqual([
        "fake",
        "fake/1.0.0",
        "fake/1.0.0/linux_amd64",
        "fake/1.0.0/linux_amd64/terraform-provider-fake_v1.0.0",
        "packed",
        "packed/2.0.0",
        "packed/2.0.0/linux_amd64",
        "packed/2.0.0/linux_amd64/terraform-provider-packed_v2.0.0",
      ]);
      // Shipped unpacked (bench/module-init.mjs: a Job's init links it instead of extracting it), the executable runnable.
      const unpacked = join(staged, "registry.opentofu.org/example/packed/2.0.0/linux_amd64/terraform-provider-packed_v2.0.0");
      expect(readFileSync(unpacked, "utf8")).toBe("#!/bin/sh\necho packed\n");
      expect(statSync(unpacked).mode & 0o777).toBe(0o755);
    } finally {
      rmSync(staged, { recursive: true, force: true });
    }
  });

  it("names every package the mirror lacks, with the command that fills it", () => {
    expect(() => selectMirrorPackages([fake, packed], mirror, "tofu", "arm64")).toThrow(
      /lacks registry\.terraform\.io\/example\/packed 2\.0\.0 \(linux_arm64\): fill it with `tofu providers mirror -platform=linux_arm64/,
    );
  });

  it("refuses a packed package whose hash the lock file does not list", () => {
    expect(() => selectMirrorPackages([{ ...packed, hashes: [`zh:${sha256("another build")}`] }], mirror, "terraform", "amd64")).toThrow(
      /which \.terraform\.lock\.hcl does not list/,
    );
  });

  it("takes an unpacked package whose h1: the lock file lacks (it lists only the platforms it was made on), unmatched", () => {
    const [entry] = selectMirrorPackages([{ ...fake, hashes: [] }], mirror, "tofu", "arm64");
    expect(entry?.matchedHash).toBeUndefined();
  });
});

describe("platformMirrorPackages", () => {
  it("lists a platform's packed and unpacked packages, each to ship unpacked, other platforms' left out", () => {
    expect(platformMirrorPackages(mirror, "amd64")).toEqual([
      {
        address: "registry.opentofu.org/example/fake",
        version: "1.0.0",
        platform: "linux_amd64",
        layout: "unpacked",
        source: join(mirror, "registry.opentofu.org/example/fake/1.0.0/linux_amd64"),
        target: "registry.opentofu.org/example/fake/1.0.0/linux_amd64",
      },
      {
        address: "registry.terraform.io/example/packed",
        version: "2.0.0",
        platform: "linux_amd64",
        layout: "packed",
        source: join(mirror, "registry.terraform.io/example/packed/terraform-provider-packed_2.0.0_linux_amd64.zip"),
        target: "registry.terraform.io/example/packed/2.0.0/linux_amd64",
      },
    ]);
    const arm64 = platformMirrorPackages(mirror, "arm64").map((entry) => entry.target);
    expect(arm64).toEqual(["registry.opentofu.org/example/fake/1.0.0/linux_arm64"]);
  });
});
