import { describe, expect, it } from "@jest/globals";
import { UsageError } from "../io.js";
import { parseLabels, parseRuntimeFlag, tagPattern } from "./build-command.js";
import { checkRuntimeBinaries, imageComponents, imageLabels, isWorkingFile, roleOfModule } from "./image.js";

describe("building an image", () => {
  it("reads the role from the contract input only that role declares", () => {
    expect(roleOfModule(['variable "machinepool_name" {\n  type = string\n}\n', 'variable "replicas" {}'])).toBe("machinepool");
    expect(roleOfModule(['variable "machine_name" {}'])).toBe("machine");
    expect(roleOfModule(['  variable "control_plane_initialized" {}'])).toBe("cluster");
    expect(roleOfModule(['variable "region" {}'])).toBeUndefined();
    expect(roleOfModule(['variable "machine_name" {}\nvariable "machinepool_name" {}'])).toBeUndefined();
  });

  it("leaves the author's working files out of /captf/module", () => {
    for (const path of [
      ".terraform",
      ".terraform/providers/x",
      ".git",
      "terraform.tfstate",
      "terraform.tfstate.backup",
      "terraform.tfstate.d/ws",
      "sub/.terraform",
      ".terraform.tfstate.lock.info",
    ])
      expect(isWorkingFile(path)).toBe(true);
    for (const path of ["main.tf", ".terraform.lock.hcl", "tests/machine.tftest.hcl", "modules/net/main.tf", "README.md"])
      expect(isWorkingFile(path)).toBe(false);
  });

  it("labels the image with the contract's labels, the OCI ones, and the caller's over them", () => {
    const labels = imageLabels({
      role: "machine",
      runtime: "tofu",
      runtimeVersion: "1.12.6",
      title: "aws-machine",
      version: "v1.0.0",
      created: "1970-01-01T00:00:00.000Z",
      revision: "abc",
      extra: { "org.opencontainers.image.title": "mine", "io.captf.capacity": '{"cpu":"4"}' },
    });
    expect(labels).toMatchObject({
      "io.captf.contract": "v1alpha1",
      "io.captf.role": "machine",
      "io.captf.runtime": "tofu",
      "io.captf.runtime.version": "1.12.6",
      "org.opencontainers.image.version": "v1.0.0",
      "org.opencontainers.image.revision": "abc",
      "org.opencontainers.image.title": "mine",
      "io.captf.capacity": '{"cpu":"4"}',
    });
    expect(labels).not.toHaveProperty("org.opencontainers.image.source");
  });

  it("lists the runtime, each provider file and each module file in the SBOM", () => {
    const components = imageComponents(
      { name: "terraform", version: "1.5.7", arch: "arm64", sha256: "aa" },
      [
        {
          path: "registry.terraform.io/hashicorp/random/3.6.3/linux_arm64/terraform-provider-random_v3.6.3_x5",
          address: "registry.opentofu.org/hashicorp/random",
          version: "3.6.3",
          sha256: "bb",
        },
      ],
      [{ path: "main.tf", sha256: "cc" }],
    );
    expect(components).toEqual([
      {
        type: "application",
        bomRef: "pkg:golang/github.com/hashicorp/terraform@v1.5.7?arch=arm64",
        name: "terraform",
        version: "1.5.7",
        purl: "pkg:golang/github.com/hashicorp/terraform@v1.5.7",
        hashes: { "SHA-256": "aa" },
      },
      {
        type: "application",
        bomRef: "provider:registry.terraform.io/hashicorp/random/3.6.3/linux_arm64/terraform-provider-random_v3.6.3_x5",
        name: "registry.opentofu.org/hashicorp/random",
        version: "3.6.3",
        purl: "pkg:terraform/hashicorp/random@3.6.3",
        hashes: { "SHA-256": "bb" },
      },
      { type: "file", bomRef: "file:/captf/module/main.tf", name: "/captf/module/main.tf", hashes: { "SHA-256": "cc" } },
    ]);
  });

  it("takes one runtime binary per platform, at least one", () => {
    expect(() => checkRuntimeBinaries([])).toThrow(/pass --runtime/);
    expect(() =>
      checkRuntimeBinaries([
        { arch: "amd64", path: "/a" },
        { arch: "amd64", path: "/b" },
      ]),
    ).toThrow(/two runtime binaries for linux\/amd64/);
  });

  it("reads --runtime with or without its platform, and --label key=value", () => {
    expect(parseRuntimeFlag("/usr/bin/tofu")).toEqual({ path: "/usr/bin/tofu" });
    expect(parseRuntimeFlag("linux/arm64=./tofu-arm64")).toEqual({ arch: "arm64", path: "./tofu-arm64" });
    expect(() => parseRuntimeFlag("linux/s390x=./tofu")).toThrow(UsageError);
    expect(() => parseRuntimeFlag("darwin/arm64=./tofu")).toThrow(/linux\/amd64 or linux\/arm64/);
    expect(parseLabels(["a=b", "c=d=e", "empty="])).toEqual({ a: "b", c: "d=e", empty: "" });
    expect(() => parseLabels(["novalue"])).toThrow(/key=value/);
  });

  it("takes tags registries accept", () => {
    for (const tag of ["v1.0.0", "v1.0.0-opentofu", "latest", "_x"]) expect(tagPattern.test(tag)).toBe(true);
    for (const tag of ["", ".v1", "-v1", "v1/x", "a".repeat(129)]) expect(tagPattern.test(tag)).toBe(false);
  });
});
