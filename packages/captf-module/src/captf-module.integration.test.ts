// From an empty directory to an image, with the real programs: `captf-module init` for each role,
// the real tfcapi-lint (its bin) in strict mode, `tofu validate` and `tofu test`, `terraform
// validate` (Terraform 1.5.7), then `captf-module build` with the real runtime binaries, read back
// with skopeo and umoci, linted as an image, pushed to a registry with `captf-module push` (and
// read and linted there), and built twice for one digest. A module with a provider (a stand-in
// package in a filesystem mirror, locked by `tofu providers lock`) proves the image's
// /captf/providers installs under the image's own runtime.
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { roles, type Role } from "@captf/contract/roles";
import { describeWithTools, startLocalRegistry } from "@captf/testkit";
import { findTool, hostArchitecture, requireTool } from "@captf/testkit/plane";
import { main } from "./cli.js";
import { storedZip } from "./build/zip.test-support.js";

const lintBin = fileURLToPath(new URL("../node_modules/tfcapi-lint/bin/tfcapi-lint.js", import.meta.url));
const moduleBin = fileURLToPath(new URL("../bin/captf-module.js", import.meta.url));

/** The runtimes' environment: no user CLI configuration, no checkpoint calls. */
function runtimeEnv(cliConfig?: string): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH ?? "",
    HOME: tmpdir(),
    CHECKPOINT_DISABLE: "1",
    TF_IN_AUTOMATION: "1",
    ...(cliConfig ? { TF_CLI_CONFIG_FILE: cliConfig } : {}),
  };
}

function run(command: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv = runtimeEnv()) {
  const result = spawnSync(command, args, { cwd, env, encoding: "utf8", timeout: 300_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr, output: `${result.stdout}${result.stderr}` };
}

/** A CLI configuration that installs providers from the filesystem mirror at `path` and from nowhere else. */
function mirrorOnlyCliConfig(path: string): string {
  const mirror = `  filesystem_mirror {\n    path    = "${path}"\n    include = ["*/*/*"]\n  }\n`;
  return `provider_installation {\n${mirror}  direct {\n    exclude = ["*/*/*"]\n  }\n}\n`;
}

/** Unpacks an image of an OCI layout (`<layout>:<tag>`) into an OCI runtime bundle at `bundle` (its rootfs/ and config). */
function unpackImage(image: string, bundle: string): void {
  execFileSync("umoci", ["unpack", ...(process.getuid?.() !== 0 ? ["--rootless"] : []), "--image", image, bundle]);
}

async function captfModule(argv: string[], cwd: string, env: Record<string, string> = {}) {
  let stdout = "";
  let stderr = "";
  const code = await main(argv, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    cwd,
    env,
  });
  return { code, stdout, stderr };
}

describeWithTools(["tofu", "terraform", "umoci", "skopeo", "docker-registry"], "captf-module from an empty directory", () => {
  const tofu = requireTool("tofu");
  const terraform = requireTool("terraform");
  const tofuOther = findTool(hostArchitecture === "amd64" ? "tofu-arm64" : "tofu-amd64");
  let work: string;
  beforeAll(() => {
    work = mkdtempSync(join(tmpdir(), "captf-module-integration-"));
  });
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  describe.each(roles)("a new %s module", (role: Role) => {
    let dir: string;
    beforeAll(async () => {
      dir = join(work, role);
      // The installed command, as a user runs it.
      const init = run(process.execPath, [moduleBin, "init", "--role", role, dir], work);
      expect([init.code, init.stderr]).toEqual([0, ""]);
    });

    it("passes `tfcapi-lint module --strict` with no finding", () => {
      const lint = run(process.execPath, [lintBin, "module", dir, "--role", role, "--strict"], work, process.env);
      expect([lint.code, lint.stdout]).toEqual([0, expect.stringContaining("0 error(s), 0 warning(s), 0 info")]);
    });

    it("is formatted as `tofu fmt` writes it, initializes and validates under OpenTofu, and passes `tofu test`", () => {
      expect(run(tofu, ["fmt", "-check", "-recursive"], dir)).toMatchObject({ code: 0, stdout: "" });
      expect(run(tofu, ["init", "-input=false", "-no-color"], dir)).toMatchObject({ code: 0 });
      expect(run(tofu, ["validate", "-no-color"], dir).stdout).toContain("Success! The configuration is valid.");
      const test = run(tofu, ["test", "-no-color"], dir);
      expect([test.code, test.stdout]).toEqual([0, expect.stringContaining("1 passed, 0 failed")]);
    });

    it("initializes and validates under Terraform 1.5.7", () => {
      const copy = join(work, `${role}-terraform`);
      execFileSync("cp", ["-r", dir, copy]);
      rmSync(join(copy, ".terraform"), { recursive: true, force: true });
      expect(run(terraform, ["init", "-input=false", "-no-color"], copy)).toMatchObject({ code: 0 });
      expect(run(terraform, ["validate", "-no-color"], copy).stdout).toContain("Success! The configuration is valid.");
    });
  });

  describe("its image", () => {
    let layout: string;
    let report: { digest: string; platforms: { platform: string; ref: string }[]; labels: Record<string, string> };
    const machine = () => join(work, "machine");

    beforeAll(async () => {
      layout = join(work, "image");
      const runtimes = ["--runtime", tofu, ...(tofuOther ? ["--runtime", tofuOther] : [])];
      const build = await captfModule(
        ["build", ...runtimes, "--out", layout, "--tag", "v0.1.0", "--revision", "0123456789ab", "-o", "json"],
        machine(),
      );
      expect([build.code, build.stderr]).toEqual([0, ""]);
      report = JSON.parse(build.stdout) as typeof report;
    }, 300_000);

    it("is an index of this machine's platform and, when its runtime is given, the other one", () => {
      expect(report.platforms.map((platform) => platform.platform)).toEqual([
        `linux/${hostArchitecture}`,
        ...(tofuOther ? [`linux/${hostArchitecture === "amd64" ? "arm64" : "amd64"}`] : []),
      ]);
      const index = JSON.parse(execFileSync("skopeo", ["inspect", "--raw", `oci:${layout}:v0.1.0`], { encoding: "utf8" })) as {
        manifests: { digest: string; platform: { os: string } }[];
      };
      expect(index.manifests.map((manifest) => manifest.platform.os)).toEqual(report.platforms.map(() => "linux"));
    });

    it("runs as 65532 with the contract's labels, on every platform alike", () => {
      for (const platform of report.platforms) {
        const config = JSON.parse(
          execFileSync("skopeo", ["inspect", "--config", `oci:${layout}:${platform.ref}`], { encoding: "utf8" }),
        ) as { architecture: string; config: { User: string; Labels: Record<string, string>; Entrypoint?: string[] } };
        expect(`linux/${config.architecture}`).toBe(platform.platform);
        expect(config.config.User).toBe("65532:65532");
        expect(config.config.Entrypoint).toBeUndefined();
        expect(config.config.Labels).toEqual(report.labels);
        expect(config.config.Labels).toMatchObject({
          "io.captf.contract": "v1alpha1",
          "io.captf.role": "machine",
          "io.captf.runtime": "tofu",
          "io.captf.runtime.version": expect.stringMatching(/^\d+\.\d+\.\d+/),
          "org.opencontainers.image.version": "v0.1.0",
          "org.opencontainers.image.revision": "0123456789ab",
        });
      }
    });

    it("holds the module at /captf/module, the runtime at /captf/runtime and the SBOM", () => {
      const bundle = join(work, "bundle");
      unpackImage(`${layout}:v0.1.0-${hostArchitecture}`, bundle);
      const rootfs = join(bundle, "rootfs");
      for (const file of ["inputs.tf", "outputs.tf", "main.tf", "versions.tf", "tests/machine.tftest.hcl"])
        expect(readFileSync(join(rootfs, "captf/module", file), "utf8")).toBe(readFileSync(join(machine(), file), "utf8"));
      expect(existsSync(join(rootfs, "captf/module/.terraform"))).toBe(false);
      expect(statSync(join(rootfs, "captf/runtime")).mode & 0o755).toBe(0o755);
      expect(execFileSync(join(rootfs, "captf/runtime"), ["version"], { encoding: "utf8", env: runtimeEnv() })).toMatch(/^OpenTofu v/);
      const sbom = JSON.parse(readFileSync(join(rootfs, "usr/share/doc/captf/sbom.cdx.json"), "utf8")) as {
        bomFormat: string;
        specVersion: string;
        components: { name: string }[];
      };
      expect([sbom.bomFormat, sbom.specVersion]).toEqual(["CycloneDX", "1.5"]);
      expect(sbom.components.map((component) => component.name)).toEqual(
        expect.arrayContaining(["tofu", "/captf/module/inputs.tf", "/captf/module/tests/machine.tftest.hcl"]),
      );
      for (const path of ["captf/work", "captf/bin", "captf/config", "captf/providers"])
        expect([path, existsSync(join(rootfs, path))]).toEqual([path, false]);
    });

    it("passes `tfcapi-lint image --strict` on every platform", () => {
      const lint = run(
        process.execPath,
        [lintBin, "image", `oci:${layout}:v0.1.0`, "--role", "machine", "--all-platforms", "--strict"],
        work,
        process.env,
      );
      expect([lint.code, lint.stdout]).toEqual([0, expect.stringContaining("0 error(s), 0 warning(s)")]);
    });

    it("is pushed by the installed command to a registry, where skopeo and `tfcapi-lint image` read it with its digest", async () => {
      const registry = await startLocalRegistry();
      try {
        const target = `${registry.host}/modules/my-machine:v0.1.0`;
        const pushArgs = [moduleBin, "push", `${layout}:v0.1.0`, target, "--plain-http", "-o", "json"];
        const push = run(process.execPath, pushArgs, work, process.env);
        expect([push.code, push.stderr]).toEqual([0, ""]);
        expect((JSON.parse(push.stdout) as { digest: string }).digest).toBe(report.digest);
        const raw = execFileSync("skopeo", ["inspect", "--raw", "--tls-verify=false", `docker://${target}`]);
        expect(`sha256:${createHash("sha256").update(raw).digest("hex")}`).toBe(report.digest);
        const lintArgs = [lintBin, "image", target, "--role", "machine", "--all-platforms", "--strict"];
        const lint = run(process.execPath, lintArgs, work, process.env);
        expect([lint.code, lint.stdout]).toEqual([0, expect.stringContaining("0 error(s), 0 warning(s)")]);
      } finally {
        await registry.stop();
      }
    }, 120_000);

    it("is built again, the same digest, with --runtime-from the image (a layout's, a registry's) and --push into a registry", async () => {
      const fromLayout = await captfModule(
        ["build", "--runtime-from", `oci:${layout}:v0.1.0`, "--out", join(work, "image-from-layout"), "--tag", "v0.1.0"].concat([
          "--revision",
          "0123456789ab",
          "-o",
          "json",
        ]),
        machine(),
      );
      expect([fromLayout.code, fromLayout.stderr]).toEqual([0, ""]);
      expect((JSON.parse(fromLayout.stdout) as { digest: string }).digest).toBe(report.digest);
      const registry = await startLocalRegistry();
      try {
        const base = `${registry.host}/modules/base:v0.1.0`;
        expect(run(process.execPath, [moduleBin, "push", `${layout}:v0.1.0`, base, "--plain-http"], work, process.env).code).toBe(0);
        const target = `${registry.host}/modules/from-image:v0.1.0`;
        const buildArgs = ["build", machine(), "--runtime-from", base, "--push", target, "--plain-http", "--revision", "0123456789ab"];
        const build = run(process.execPath, [moduleBin, ...buildArgs, "-o", "json"], work, process.env);
        expect([build.code, build.stderr]).toEqual([0, ""]);
        const built = JSON.parse(build.stdout) as {
          digest: string;
          runtime: { name: string };
          pushed: { digest: string; destination: string };
        };
        expect([built.digest, built.pushed.digest, built.pushed.destination, built.runtime.name]).toEqual([
          report.digest,
          report.digest,
          target,
          "tofu",
        ]);
        const raw = execFileSync("skopeo", ["inspect", "--raw", "--tls-verify=false", `docker://${target}`]);
        expect(`sha256:${createHash("sha256").update(raw).digest("hex")}`).toBe(report.digest);
        const missing = run(
          process.execPath,
          [moduleBin, ...buildArgs.slice(0, 3), `${registry.host}/modules/none:v1`, "--push", target, "--plain-http"],
          work,
          process.env,
        );
        expect([missing.code, missing.stderr]).toEqual([1, expect.stringContaining("modules/none")]);
      } finally {
        await registry.stop();
      }
    }, 300_000);

    it("has the same digest when built again from the same inputs, into another layout or the same one", async () => {
      const runtimes = ["--runtime", tofu, ...(tofuOther ? ["--runtime", tofuOther] : [])];
      const again = await captfModule(
        ["build", ...runtimes, "--out", join(work, "image-again"), "--tag", "v0.1.0", "--revision", "0123456789ab", "-o", "json"],
        machine(),
      );
      expect((JSON.parse(again.stdout) as { digest: string }).digest).toBe(report.digest);
      const same = await captfModule(
        ["build", ...runtimes, "--out", layout, "--tag", "v0.1.0", "--revision", "0123456789ab", "-o", "json"],
        machine(),
      );
      expect((JSON.parse(same.stdout) as { digest: string }).digest).toBe(report.digest);
      const other = await captfModule(
        ["build", "--runtime", tofu, "--out", join(work, "image-later"), "--tag", "v0.1.0", "--revision", "0123456789ab", "-o", "json"],
        machine(),
        { SOURCE_DATE_EPOCH: "1700000000" },
      );
      expect((JSON.parse(other.stdout) as { created: string }).created).toBe("2023-11-14T22:13:20.000Z");
    }, 300_000);
  });

  describe("a module with a provider", () => {
    let dir: string;
    let mirror: string;
    let layout: string;
    beforeAll(async () => {
      dir = join(work, "with-provider");
      expect((await captfModule(["init", "--role", "machine", dir], work)).code).toBe(0);
      // A stand-in provider package per platform: init installs it without running it.
      mirror = join(work, "mirror");
      for (const arch of ["amd64", "arm64"]) {
        const packageDir = join(mirror, "registry.opentofu.org/example/fake/1.0.0", `linux_${arch}`);
        mkdirSync(packageDir, { recursive: true });
        writeFileSync(join(packageDir, "terraform-provider-fake_v1.0.0"), `#!/bin/sh\necho fake ${arch}\n`);
        chmodSync(join(packageDir, "terraform-provider-fake_v1.0.0"), 0o755);
      }
      writeFileSync(
        join(dir, "providers.tf"),
        'terraform {\n  required_providers {\n    fake = {\n      source  = "example/fake"\n      version = "1.0.0"\n    }\n  }\n}\n',
      );
      const lock = run(
        tofu,
        ["providers", "lock", "-no-color", `-fs-mirror=${mirror}`, "-platform=linux_amd64", "-platform=linux_arm64"],
        dir,
      );
      expect([lock.code, lock.stderr]).toEqual([0, ""]);
      layout = join(work, "provider-image");
    });

    it("refuses to build without a mirror when no registry serves the provider, naming --providers", async () => {
      const build = await captfModule(["build", "--runtime", tofu, "--out", layout, "--tag", "v1"], dir);
      expect(build.code).toBe(1);
      expect(build.stderr).toMatch(/providers mirror could not fetch the module's providers .*pass --providers/s);
    }, 120_000);

    it("ships the locked package at /captf/providers, matched to the lock file, " +
      "and the image's runtime installs it from there", async () => {
      const build = await captfModule(
        ["build", "--runtime", tofu, "--providers", mirror, "--out", layout, "--tag", "v1", "-o", "json"],
        dir,
      );
      expect([build.code, build.stderr]).toEqual([0, ""]);
      const report = JSON.parse(build.stdout) as { platforms: { providers: { address: string; path: string; verified: boolean }[] }[] };
      expect(report.platforms[0]!.providers).toEqual([
        {
          address: "registry.opentofu.org/example/fake",
          version: "1.0.0",
          layout: "unpacked",
          path: `/captf/providers/registry.opentofu.org/example/fake/1.0.0/linux_${hostArchitecture}`,
          verified: true,
        },
      ]);

      const bundle = join(work, "provider-bundle");
      unpackImage(`${layout}:v1-${hostArchitecture}`, bundle);
      const rootfs = join(bundle, "rootfs");
      // A root as captf generates it, calling the image's module, installing from the image's mirror only.
      const root = join(work, "provider-root");
      mkdirSync(root);
      writeFileSync(join(root, "main.tf"), `module "role" {\n  source = "${join(rootfs, "captf/module")}"\n}\n`);
      writeFileSync(join(work, "image-mirror.tfrc"), mirrorOnlyCliConfig(join(rootfs, "captf/providers")));
      const init = run(
        join(rootfs, "captf/runtime"),
        ["init", "-backend=false", "-input=false", "-no-color"],
        root,
        runtimeEnv(join(work, "image-mirror.tfrc")),
      );
      expect([init.code, init.output]).toEqual([0, expect.stringContaining("Installed example/fake v1.0.0")]);
    }, 120_000);

    it("ships a packed package (a .zip, as `providers mirror` stores it) unpacked, and the image's runtime installs it", async () => {
      // The same package as registries serve it; the lock file made from these zips lists their zh: and h1: hashes.
      const packedMirror = join(work, "packed-mirror");
      const typeDir = join(packedMirror, "registry.opentofu.org/example/fake");
      mkdirSync(typeDir, { recursive: true });
      for (const arch of ["amd64", "arm64"])
        writeFileSync(
          join(typeDir, `terraform-provider-fake_1.0.0_linux_${arch}.zip`),
          storedZip({ "terraform-provider-fake_v1.0.0": `#!/bin/sh\necho fake ${arch}\n` }),
        );
      const packedDir = join(work, "with-packed-provider");
      execFileSync("cp", ["-r", dir, packedDir]);
      rmSync(join(packedDir, ".terraform.lock.hcl"));
      const lock = run(
        tofu,
        ["providers", "lock", "-no-color", `-fs-mirror=${packedMirror}`, "-platform=linux_amd64", "-platform=linux_arm64"],
        packedDir,
      );
      expect([lock.code, lock.stderr]).toEqual([0, ""]);
      const packedLayout = join(work, "packed-provider-image");
      const build = await captfModule(
        ["build", "--runtime", tofu, "--providers", packedMirror, "--out", packedLayout, "--tag", "v1", "-o", "json"],
        packedDir,
      );
      expect([build.code, build.stderr]).toEqual([0, ""]);
      const report = JSON.parse(build.stdout) as { platforms: { providers: { layout: string; path: string; verified: boolean }[] }[] };
      // A lock made from a mirror lists h1: hashes only; a packed package is matched by the zh: a registry's lock lists.
      const shipped = {
        layout: "packed",
        path: `/captf/providers/registry.opentofu.org/example/fake/1.0.0/linux_${hostArchitecture}`,
        verified: false,
      };
      expect(report.platforms[0]!.providers).toEqual([expect.objectContaining(shipped)]);

      const bundle = join(work, "packed-provider-bundle");
      unpackImage(`${packedLayout}:v1-${hostArchitecture}`, bundle);
      const providers = join(bundle, "rootfs/captf/providers");
      expect(readdirSync(providers, { recursive: true }).map(String).sort()).toEqual([
        "registry.opentofu.org",
        "registry.opentofu.org/example",
        "registry.opentofu.org/example/fake",
        "registry.opentofu.org/example/fake/1.0.0",
        `registry.opentofu.org/example/fake/1.0.0/linux_${hostArchitecture}`,
        `registry.opentofu.org/example/fake/1.0.0/linux_${hostArchitecture}/terraform-provider-fake_v1.0.0`,
      ]);
      const root = join(work, "packed-provider-root");
      mkdirSync(root);
      writeFileSync(join(root, "main.tf"), `module "role" {\n  source = "${join(bundle, "rootfs/captf/module")}"\n}\n`);
      writeFileSync(join(work, "packed-image-mirror.tfrc"), mirrorOnlyCliConfig(providers));
      const init = run(
        join(bundle, "rootfs/captf/runtime"),
        ["init", "-backend=false", "-input=false", "-no-color"],
        root,
        runtimeEnv(join(work, "packed-image-mirror.tfrc")),
      );
      expect([init.code, init.output]).toEqual([0, expect.stringContaining("Installed example/fake v1.0.0")]);
    }, 120_000);
  });

  it("the installed command says what is missing when umoci is not on PATH", () => {
    const build = run(
      process.execPath,
      [moduleBin, "build", "--runtime", tofu, "--out", join(work, "no-umoci"), "--tag", "v1", join(work, "machine")],
      work,
      { PATH: "/nonexistent", HOME: tmpdir() },
    );
    expect(build.code).toBe(1);
    expect(build.stderr).toMatch(/umoci is required to build images and is not on PATH/);
  });
});
