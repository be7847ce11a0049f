// A module image as scripts/build-module-image.mjs builds it (the one builder: these tests' images
// through buildModuleImage, and the release's): an OCI index of linux/amd64 and linux/arm64, each
// config read back with skopeo and each root unpacked with umoci. The runtime of this machine's
// answers under chroot as the image's user, the arm64 one under qemu-aarch64-static; an SBOM names
// the runtime and the module's files with their hashes; a second build of the same commit gives the
// same image.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import { describeWithTools } from "./integration.js";
import { buildModuleImage, moduleImageUser } from "./oci.js";
import { hostArchitecture, runtimeBinaries, runtimeVersion } from "./runtimes.js";
import { requireTool, type ToolName } from "./tools.js";

const otherArch = hostArchitecture === "amd64" ? "arm64" : "amd64";
const chroot = ["/usr/sbin/chroot", "/sbin/chroot", "/usr/bin/chroot"].find((path) => existsSync(path)) ?? "chroot";
const runtime = "tofu";

interface ImageConfig {
  config: { User: string; Entrypoint?: string[]; Cmd?: string[]; Labels: Record<string, string> };
  architecture: string;
  os: string;
}
interface Sbom {
  bomFormat: string;
  components: { type: string; name: string; version?: string; hashes?: { alg: string; content: string }[] }[];
}

describeWithTools([runtime, `${runtime}-${otherArch}` as ToolName, "umoci", "skopeo", "qemu-aarch64-static"], "a module image", () => {
  const work = mkdtempSync(join(tmpdir(), "captf-module-image-"));
  const layout = join(work, "oci");
  const moduleDir = join(work, "module");
  const binaries = runtimeBinaries(runtime);
  const version = runtimeVersion(runtime);
  const configOf = (ref: string) => JSON.parse(execFileSync("skopeo", ["inspect", "--config", `oci:${layout}:${ref}`], { encoding: "utf8" })) as ImageConfig;
  const rootOf = (arch: string) => {
    const root = join(work, `root-${arch}`);
    if (!existsSync(root)) execFileSync("umoci", ["raw", "unpack", "--image", `${layout}:v1-${arch}`, root], { stdio: "pipe" });
    return root;
  };
  /** `command` in `root` as the image's user, with nothing of this machine's environment. */
  const inRoot = (root: string, command: string[]) => execFileSync(chroot, [`--userspec=${moduleImageUser}`, root, ...command], { env: { CHECKPOINT_DISABLE: "1" }, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  const build = (into: string, otherRuntimes: Record<string, string>) =>
    buildModuleImage(into, "v1", { moduleDir, runtime: binaries[hostArchitecture]!, runtimeVersion: version, runtimeName: runtime, role: "machine", otherRuntimes, labels: { "org.opencontainers.image.revision": "c0ffee" } });

  beforeAll(() => {
    if (process.getuid?.() !== 0) throw new Error("this suite runs the image's root under chroot, which needs root");
    mkdirSync(join(moduleDir, "tests"), { recursive: true });
    writeFileSync(join(moduleDir, "main.tf"), 'variable "name" {\n  type = string\n}\n');
    writeFileSync(join(moduleDir, "tests/main.tftest.hcl"), "run \"plan\" {\n  command = plan\n}\n");
    writeFileSync(join(moduleDir, "package.json"), "{}\n");
    build(layout, { [otherArch]: binaries[otherArch]! });
  }, 120_000);

  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it("is an OCI index of linux/amd64 and linux/arm64 that run as 65532 with no entrypoint, labelled for captf and OCI", () => {
    const index = JSON.parse(execFileSync("skopeo", ["inspect", "--raw", `oci:${layout}:v1`], { encoding: "utf8" })) as { manifests: { platform: { architecture: string; os: string } }[] };
    expect(index.manifests.map((manifest) => manifest.platform)).toEqual([hostArchitecture, otherArch].map((architecture) => ({ architecture, os: "linux" })));
    for (const arch of [hostArchitecture, otherArch]) {
      const config = configOf(`v1-${arch}`);
      expect({ arch: config.architecture, os: config.os, user: config.config.User, entrypoint: config.config.Entrypoint, cmd: config.config.Cmd }).toEqual({ arch, os: "linux", user: "65532:65532", entrypoint: undefined, cmd: undefined });
      expect(config.config.Labels).toEqual({
        "io.captf.contract": "v1alpha1",
        "io.captf.role": "machine",
        "io.captf.runtime": runtime,
        "io.captf.runtime.version": version,
        "org.opencontainers.image.title": "module",
        "org.opencontainers.image.version": "v1",
        "org.opencontainers.image.revision": "c0ffee",
        "org.opencontainers.image.source": expect.stringMatching(/^https:\/\//),
        "org.opencontainers.image.licenses": "Apache-2.0",
        "org.opencontainers.image.created": expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        "org.opencontainers.image.base.name": "scratch",
      });
    }
  });

  it("runs each platform's runtime from its root as the image's user: this machine's under chroot, the other under qemu", () => {
    const hostRoot = rootOf(hostArchitecture);
    expect(readdirSync(join(hostRoot, "captf/module")).sort()).toEqual(["main.tf", "tests"]);
    const reported = (output: string) => JSON.parse(output) as { terraform_version: string; platform: string };
    expect(reported(inRoot(hostRoot, ["/captf/runtime", "version", "-json"]))).toMatchObject({ terraform_version: version, platform: `linux_${hostArchitecture}` });
    const otherRoot = rootOf(otherArch);
    const qemu = otherArch === "arm64" ? requireTool("qemu-aarch64-static") : "/usr/bin/qemu-x86_64-static";
    copyFileSync(qemu, join(otherRoot, "qemu"));
    expect(reported(inRoot(otherRoot, ["/qemu", "/captf/runtime", "version", "-json"]))).toMatchObject({ terraform_version: version, platform: `linux_${otherArch}` });
  }, 60_000);

  it("holds a CycloneDX SBOM naming the runtime built for its platform and every module file, with their hashes", () => {
    for (const arch of [hostArchitecture, otherArch]) {
      const root = rootOf(arch);
      const sbom = JSON.parse(readFileSync(join(root, "usr/share/doc/captf/sbom.cdx.json"), "utf8")) as Sbom;
      const sha256 = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex");
      expect(sbom.bomFormat).toBe("CycloneDX");
      expect(sbom.components).toEqual([
        expect.objectContaining({ type: "application", name: runtime, version, hashes: [{ alg: "SHA-256", content: sha256(binaries[arch]!) }] }),
        expect.objectContaining({ type: "file", name: "/captf/module/main.tf", hashes: [{ alg: "SHA-256", content: sha256(join(root, "captf/module/main.tf")) }] }),
        expect.objectContaining({ type: "file", name: "/captf/module/tests/main.tftest.hcl" }),
      ]);
    }
  });

  it("gives the same image when built again from the same commit", () => {
    // This machine's platform alone: its manifest digest covers its config and every layer byte for byte.
    const again = join(work, "again");
    build(again, {});
    const digestOf = (dir: string) => (JSON.parse(readFileSync(join(dir, "index.json"), "utf8")) as { manifests: { digest: string; annotations?: Record<string, string> }[] }).manifests.find((entry) => entry.annotations?.["org.opencontainers.image.ref.name"] === `v1-${hostArchitecture}`)!.digest;
    expect(digestOf(again)).toBe(digestOf(layout));
  }, 60_000);
});
