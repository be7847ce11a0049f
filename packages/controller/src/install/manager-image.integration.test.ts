// The captf-controller image as scripts/build-manager-image.mjs builds it: an OCI index of
// linux/amd64 and linux/arm64, each config read back with skopeo and each root unpacked with umoci:
// this machine's runs under chroot (the entrypoint answers --version as the image's user on the
// pinned Node LTS, the runner bundle answers too, and the init container's copy command puts a
// bundle into /captf/bin that runs in a root holding nothing else, as in a module image), the arm64
// one's node runs under qemu-aarch64-static. One node in each, the SBOM beside it, and a second
// build of the same commit gives the same index (both platforms). Then the shipped Deployment runs the image from a
// loopback registry on the chroot kubelet: in-cluster configuration, the serving certificate
// Secret mounted, a read-only root as a non-root user, SIGTERM on deletion.
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  copyFileSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import {
  describeWithTools,
  requireTool,
  freeLoopbackPort,
  pushImage,
  sharedControlPlane,
  startChrootKubelet,
  startLocalRegistry,
  waitFor,
  runtimeVersion,
  moduleImageScript,
  escapeRegExp,
  defaultProviderMirror,
  providerMirrorVariable,
  runtimeProviderHosts,
  type ChrootKubelet,
  type LocalRegistry,
  type RuntimeName,
  type ToolName,
} from "@captf/testkit";
import { contractVersion } from "@captf/contract";
import { apiGroup, apiVersion, finalizers } from "@captf/contract/api";
import { minimalMachine } from "../api/examples.test-support.js";
import { defaultJobEnvironment, runnerRunCommand } from "../jobs/build-job.js";
import { managerVersion } from "../manager-main.js";
import { preparePlane, type PlaneClients, mergePatchOptions } from "../reconcile/plane.test-support.js";
import { generateServingCertificate } from "../webhooks/certificates.test-support.js";
import { deploymentObject, installNames, managerUser } from "./manifests.js";
import { cycloneDxViolations } from "./sbom.test-support.js";
import type { TerraformMachine } from "../api/terraformmachine.js";
import type { ReadBack } from "../reconcile/read-back.test-support.js";

const imageScript = fileURLToPath(new URL("../../scripts/build-manager-image.mjs", import.meta.url));
const repoDir = fileURLToPath(new URL("../../../../", import.meta.url));
const releaseScript = join(repoDir, "scripts/release.mjs");
const lintCommand = join(repoDir, "packages/lint/bin/tfcapi-lint.js");
const nodeRelease = JSON.parse(readFileSync(fileURLToPath(new URL("../../../runner/node-release.json", import.meta.url)), "utf8")) as {
  version: string;
  lts: string;
};
const controllerManifest = JSON.parse(readFileSync(fileURLToPath(new URL("../../package.json", import.meta.url)), "utf8")) as {
  version: string;
  dependencies: Record<string, string>;
};
const hostArch = ({ x64: "amd64", arm64: "arm64" } as Record<string, string>)[process.arch]!;
const otherArch = hostArch === "amd64" ? "arm64" : "amd64";
const chroot = ["/usr/sbin/chroot", "/sbin/chroot", "/usr/bin/chroot"].find((path) => existsSync(path)) ?? "chroot";

const pinnedNode = `v${nodeRelease.version}`;
// The mirror the provider suites use (the variable, else the default one when it is there): the dry run gets it named.
const releaseMirror = process.env[providerMirrorVariable] || (existsSync(defaultProviderMirror()) ? defaultProviderMirror() : undefined);
const runnerVersionLine = new RegExp(`^runner \\S+ \\(contract ${contractVersion}, node ${pinnedNode.replaceAll(".", "\\.")}\\)\n$`);

/** scripts/release.mjs's release.json. */
interface ReleaseManifest {
  version: string;
  images: ReleaseImage[];
  npm: { name: string; version: string; tarball: string }[];
  packages: { name: string; dir: string; version: string; private: boolean }[];
  clusterctl: string;
  notes: string;
}

/** An image of release.json: a module image's also has its runtime and the provider packages (or why none) per platform. */
interface ReleaseImage {
  name: string;
  tag: string;
  archive: string;
  runtime?: RuntimeName;
  providers?: Record<string, string[]>;
  missingProviders?: Record<string, string>;
}

/** The release's module images this suite checks: their module, role and the providers it requires. */
/** The module images the release's dry run builds here, and the providers each must carry: the test's expectation, not the script's. */
const expectedProviders: Record<string, string[]> = {
  "noop-machine": [],
  "gcp-machinepool": ["hashicorp/google"],
  "azure-machinepool": ["hashicorp/azurerm"],
};
const { releaseModules: scriptModules } = (await import(pathToFileURL(join(repoDir, "scripts/lib/release-modules.mjs")).href)) as {
  releaseModules: { name: string; dir: string; role: string }[];
};
const releaseModules = Object.fromEntries(
  Object.entries(expectedProviders).map(([name, providers]) => {
    const { dir, role } = scriptModules.find((module) => module.name === name)!;
    return [name, { dir, role, providers }];
  }),
);

interface SbomComponent {
  type: string;
  name: string;
  hashes?: { alg: string; content: string }[];
}

interface PublishedManifest {
  version: string;
  exports?: Record<string, unknown>;
  bin?: Record<string, string>;
  dependencies?: Record<string, string>;
}

interface ImageConfig {
  config: { User: string; Env: string[]; Entrypoint?: string[]; Cmd?: string[]; WorkingDir: string; Labels: Record<string, string> };
  architecture: string;
  os: string;
}

describeWithTools(
  ["umoci", "skopeo", "docker-registry", "etcd", "kube-apiserver", "kube-controller-manager"],
  "the captf-controller image",
  () => {
    const work = mkdtempSync(join(tmpdir(), "captf-manager-image-"));
    const layout = join(work, "oci");
    const root = join(work, "root");
    const namespace = `manager-image-${Date.now().toString(36)}`;
    let config: ImageConfig;
    let plane: PlaneClients | undefined;
    let registry: LocalRegistry | undefined;
    let kubelet: ChrootKubelet | undefined;

    /** Runs `command` inside `rootDir` with only the image's environment, as the image's user unless told otherwise. */
    const inRoot = (rootDir: string, command: string[], user = `${managerUser}:${managerUser}`) =>
      execFileSync(chroot, [`--userspec=${user}`, rootDir, ...command], {
        env: Object.fromEntries(config.config.Env.map((line) => line.split("=", 2) as [string, string])),
        encoding: "utf8",
        stdio: ["ignore", "pipe", "pipe"],
      });

    const configOf = (ref: string) =>
      JSON.parse(execFileSync("skopeo", ["inspect", "--config", `oci:${ref}`], { encoding: "utf8" })) as ImageConfig;
    const rawOf = (ref: string) =>
      JSON.parse(execFileSync("skopeo", ["inspect", "--raw", `oci:${ref}`], { encoding: "utf8" })) as {
        manifests: { digest: string; platform: { architecture: string; os: string } }[];
      };

    beforeAll(() => {
      if (process.getuid?.() !== 0) throw new Error("this suite runs the image's root under chroot, which needs root");
      execFileSync(process.execPath, [imageScript, "--out", layout, "--tag", "test", "--commit", "c0ffee"], { stdio: "pipe" });
      config = configOf(`${layout}:test-${hostArch}`);
      execFileSync("umoci", ["raw", "unpack", "--image", `${layout}:test-${hostArch}`, root], { stdio: "pipe" });
    }, 400_000);

    afterAll(async () => {
      await kubelet?.stop();
      await registry?.stop();
      const machines = { group: apiGroup, version: apiVersion, namespace, plural: "terraformmachines" };
      await plane?.custom
        .patchNamespacedCustomObject({ ...machines, name: "m-0", body: { metadata: { finalizers: null } } }, mergePatchOptions())
        .catch(() => undefined);
      await plane?.core.deleteNamespace({ name: namespace }).catch(() => undefined);
      rmSync(work, { recursive: true, force: true });
    }, 60_000);

    it("is an OCI index of linux/amd64 and linux/arm64, each with the same config but its architecture", () => {
      expect(rawOf(`${layout}:test`).manifests.map((manifest) => manifest.platform)).toEqual([
        { architecture: "amd64", os: "linux" },
        { architecture: "arm64", os: "linux" },
      ]);
      const other = configOf(`${layout}:test-${otherArch}`);
      expect(other.architecture).toBe(otherArch);
      expect(config.architecture).toBe(hostArch);
      expect(other.config).toEqual(config.config);
    });

    it("runs node /opt/captf/manager/manager.mjs as 65532, with the OCI labels", () => {
      expect(config.config.User).toBe("65532:65532");
      expect(config.config.Entrypoint).toEqual(["node", "/opt/captf/manager/manager.mjs"]);
      expect(config.config.Cmd).toBeUndefined();
      expect(config.config.Env).toEqual(["PATH=/usr/local/bin:/usr/bin:/bin"]);
      expect(config.os).toBe("linux");
      expect(config.config.Labels).toMatchObject({
        "org.opencontainers.image.title": "captf-controller",
        "org.opencontainers.image.version": managerVersion,
        "org.opencontainers.image.revision": "c0ffee",
        "org.opencontainers.image.source": expect.stringMatching(/^https:\/\//),
        "org.opencontainers.image.created": expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      });
    });

    it("is the same image when its manager's source map is kept outside it (--source-map-out: the e2e under coverage)", () => {
      const kept = join(work, "kept-map");
      const mapped = join(work, "oci-mapped");
      const args = ["--out", mapped, "--tag", "test", "--commit", "c0ffee", "--arch", hostArch, "--source-map-out", kept];
      execFileSync(process.execPath, [imageScript, ...args], { stdio: "pipe" });
      const hostManifest = (dir: string) => rawOf(`${dir}:test`).manifests.find((manifest) => manifest.platform.architecture === hostArch);
      expect(hostManifest(mapped)?.digest).toBe(hostManifest(layout)?.digest);
      expect(readdirSync(join(root, "opt/captf/manager"))).toEqual(["manager.mjs"]);
      expect(JSON.parse(readFileSync(join(kept, "bundle.json"), "utf8"))).toEqual({
        url: "file:///opt/captf/manager/manager.mjs",
        bundle: "manager.mjs",
        map: "manager.mjs.map",
      });
      expect(readFileSync(join(kept, "manager.mjs")).equals(readFileSync(join(root, "opt/captf/manager/manager.mjs")))).toBe(true);
      const map = JSON.parse(readFileSync(join(kept, "manager.mjs.map"), "utf8")) as { sources: string[] };
      const source = fileURLToPath(new URL("../reconcile/workspace-controller.ts", import.meta.url));
      expect(map.sources).toContain(pathToFileURL(source).href);
    }, 300_000);

    it("carries one node, the pinned LTS, linked onto PATH from the runner bundle", () => {
      const nodes: string[] = [];
      const walk = (dir: string) => {
        for (const entry of readdirSync(dir, { withFileTypes: true })) {
          if (entry.isDirectory()) walk(join(dir, entry.name));
          else if (entry.isFile() && entry.name === "node") nodes.push(join(dir, entry.name).slice(root.length));
        }
      };
      walk(root);
      expect(nodes).toEqual(["/opt/captf/runner/node"]);
      expect(lstatSync(join(root, "usr/local/bin/node")).isSymbolicLink()).toBe(true);
      expect(inRoot(root, ["node", "-p", "`${process.version} ${process.release.lts}`"])).toBe(`${pinnedNode} ${nodeRelease.lts}\n`);
    });

    describeWithTools(["qemu-aarch64-static"], "its other platform", () => {
      it("runs the other architecture's node from that image's root under qemu user emulation", () => {
        // qemu-user-static runs the binary itself (no kernel binfmt): copied into the root, it runs under chroot there.
        const otherRoot = join(work, `root-${otherArch}`);
        execFileSync("umoci", ["raw", "unpack", "--image", `${layout}:test-${otherArch}`, otherRoot], { stdio: "pipe" });
        const qemu = otherArch === "arm64" ? requireTool("qemu-aarch64-static") : "/usr/bin/qemu-x86_64-static";
        copyFileSync(qemu, join(otherRoot, "qemu"));
        expect(
          inRoot(otherRoot, ["/qemu", "/usr/local/bin/node", "-p", "`${process.version} ${process.arch} ${process.release.lts}`"]),
        ).toBe(`${pinnedNode} ${otherArch === "amd64" ? "x64" : "arm64"} ${nodeRelease.lts}\n`);
      }, 60_000);
    });

    it("holds a CycloneDX SBOM naming node and every runtime dependency of the manager at its locked version", async () => {
      const sbomText = readFileSync(join(root, "usr/share/doc/captf/sbom.cdx.json"), "utf8");
      expect(await cycloneDxViolations(sbomText)).toBeNull();
      const sbom = JSON.parse(sbomText) as {
        bomFormat: string;
        specVersion: string;
        components: { name: string; version?: string; purl?: string }[];
      };
      expect({ format: sbom.bomFormat, spec: sbom.specVersion }).toEqual({ format: "CycloneDX", spec: "1.5" });
      expect(sbom.components).toContainEqual(expect.objectContaining({ name: "node", version: nodeRelease.version }));
      const named = new Map(sbom.components.map((component) => [component.name, component.version]));
      for (const [name, specifier] of Object.entries(controllerManifest.dependencies)) {
        expect([name, named.get(name)]).toEqual([name, specifier.startsWith("workspace:") ? expect.any(String) : specifier]);
      }
    });

    describeWithTools(["tofu", `tofu-${otherArch}` as ToolName, "terraform", `terraform-${otherArch}` as ToolName], "its release", () => {
      // The dry run reuses this suite's image and builds a no-op and both cloud modules' images per runtime (both platforms, about 40 s).
      let releaseOutput = "";
      it("is one folder from scripts/release.mjs --dry-run: OCI archives, the clusterctl repository, publishable npm tarballs, " +
        "notes", () => {
        const out = join(work, "release");
        const changesetsBefore = readdirSync(join(repoDir, ".changeset")).sort();
        releaseOutput = execFileSync(
          process.execPath,
          [
            releaseScript,
            "--dry-run",
            "--out",
            out,
            "--manager-layout",
            `${layout}:test`,
            "--modules",
            Object.keys(releaseModules).join(","),
            "--runtimes",
            "tofu,terraform",
            "--commit",
            "c0ffee",
          ],
          {
            encoding: "utf8",
            stdio: ["ignore", "pipe", "pipe"],
            env: { ...process.env, ...(releaseMirror ? { [providerMirrorVariable]: releaseMirror } : {}) },
          },
        );
        const release = JSON.parse(readFileSync(join(out, "release.json"), "utf8")) as ReleaseManifest;
        const version = controllerManifest.version;
        expect({ version: release.version, images: release.images.map((image) => `${image.name}:${image.tag}`) }).toEqual({
          version,
          images: [
            `captf-controller:v${version}`,
            ...Object.keys(releaseModules).flatMap((name) => [`${name}:v${version}-opentofu`, `${name}:v${version}-terraform`]),
          ],
        });

        // Every file is summed, and each archive holds the index of both platforms under its tag.
        const sums = readFileSync(join(out, "SHA256SUMS"), "utf8")
          .trim()
          .split("\n")
          .map((line) => line.split("  ") as [string, string]);
        for (const [sum, file] of sums) expect([file, sha256Of(join(out, file))]).toEqual([file, sum]);
        expect(sums.map(([, file]) => file)).toEqual(
          expect.arrayContaining([
            ...release.images.map((image) => image.archive),
            ...release.npm.map((entry) => entry.tarball),
            release.notes,
            `${release.clusterctl}/metadata.yaml`,
          ]),
        );
        for (const image of release.images) {
          const index = JSON.parse(
            execFileSync("skopeo", ["inspect", "--raw", `oci-archive:${join(out, image.archive)}:${image.tag}`], { encoding: "utf8" }),
          ) as { manifests: { platform: { architecture: string } }[] };
          expect([image.name, index.manifests.map((manifest) => manifest.platform.architecture)]).toEqual([image.name, ["amd64", "arm64"]]);
        }
        expect(rawOf(`${layout}:test`).manifests.map((manifest) => manifest.digest)).toEqual(
          (
            JSON.parse(
              execFileSync("skopeo", ["inspect", "--raw", `oci-archive:${join(out, release.images[0]!.archive)}:v${version}`], {
                encoding: "utf8",
              }),
            ) as { manifests: { digest: string }[] }
          ).manifests.map((manifest) => manifest.digest),
        );

        // The clusterctl repository is the generated assets, and its components default to this release's image.
        const assets = join(repoDir, "packages/controller/config/clusterctl");
        expect(release.clusterctl).toBe(`clusterctl/infrastructure-terraform/v${version}`);
        for (const file of readdirSync(assets))
          expect(readFileSync(join(out, release.clusterctl, file), "utf8")).toBe(readFileSync(join(assets, file), "utf8"));
        expect(readFileSync(join(out, release.clusterctl, "infrastructure-components.yaml"), "utf8")).toContain(
          `:=ghcr.io/captf-io/captf-controller:v${version}}`,
        );

        // The public packages, installed from their tarballs beside their registry dependencies, import and run.
        expect(release.npm.map((entry) => entry.name).sort()).toEqual([
          "@captf/contract",
          "@captf/render",
          "captf-module",
          "kubectl-captf",
          "tfcapi-lint",
        ]);
        const installed = join(work, "installed", "node_modules");
        for (const entry of release.npm) {
          mkdirSync(join(installed, entry.name), { recursive: true });
          execFileSync("tar", ["xzf", join(out, entry.tarball), "-C", join(installed, entry.name), "--strip-components=1"]);
        }
        for (const entry of release.npm) {
          const manifest = JSON.parse(readFileSync(join(installed, entry.name, "package.json"), "utf8")) as PublishedManifest;
          expect([entry.name, JSON.stringify(manifest).match(/workspace:|@captf\/source/g)]).toEqual([entry.name, null]);
          expect([entry.name, manifest.version]).toEqual([entry.name, entry.version]);
          for (const [name, specifier] of Object.entries(manifest.dependencies ?? {})) {
            const sibling = release.npm.find((candidate) => candidate.name === name);
            if (sibling) expect([entry.name, name, specifier]).toEqual([entry.name, name, sibling.version]);
            else if (!existsSync(join(installed, name))) {
              // A registry dependency: the exact version the workspace installed for this package.
              const source = join(repoDir, release.packages.find((candidate) => candidate.name === entry.name)!.dir, "node_modules", name);
              expect([
                entry.name,
                name,
                (JSON.parse(readFileSync(join(source, "package.json"), "utf8")) as { version: string }).version,
              ]).toEqual([entry.name, name, specifier]);
              mkdirSync(dirname(join(installed, name)), { recursive: true });
              symlinkSync(realpathSync(source), join(installed, name));
            }
          }
          const files = execFileSync("tar", ["tzf", join(out, entry.tarball)], { encoding: "utf8" });
          expect([entry.name, files.match(/\.map$|\.tsbuildinfo$|\/src\/|testdata/m)]).toEqual([entry.name, null]);
        }
        const imports = release.npm.flatMap((entry) =>
          Object.keys(
            (JSON.parse(readFileSync(join(installed, entry.name, "package.json"), "utf8")) as PublishedManifest).exports ?? { ".": "" },
          ).map((path) => `${entry.name}${path.slice(1)}`),
        );
        const loaded = execFileSync(
          process.execPath,
          [
            "--input-type=module",
            "-e",
            `for (const name of ${JSON.stringify(imports)}) console.log(name, Object.keys(await import(name)).length > 0);`,
          ],
          { cwd: join(work, "installed"), encoding: "utf8" },
        );
        expect(loaded.trim().split("\n")).toEqual(imports.map((name) => `${name} true`));
        for (const entry of release.npm) {
          for (const [bin, target] of Object.entries(
            (JSON.parse(readFileSync(join(installed, entry.name, "package.json"), "utf8")) as PublishedManifest).bin ?? {},
          )) {
            expect([bin, execFileSync(process.execPath, [join(installed, entry.name, target), "--help"], { encoding: "utf8" })]).toEqual([
              bin,
              expect.stringContaining(bin),
            ]);
          }
        }

        // The notes carry every pending changeset's packages, and the checkout keeps its changesets.
        const notes = readFileSync(join(out, release.notes), "utf8");
        const named = new Set(
          changesetsBefore
            .filter((file) => file.endsWith(".md") && file !== "README.md")
            .flatMap((file) =>
              [
                ...readFileSync(join(repoDir, ".changeset", file), "utf8")
                  .split("---")[1]!
                  .matchAll(/^"([^"]+)":/gm),
              ].map((match) => match[1]!),
            ),
        );
        for (const name of named) expect([name, notes]).toEqual([name, expect.stringContaining(`## ${name} `)]);
        expect(readdirSync(join(repoDir, ".changeset")).sort()).toEqual(changesetsBefore);
      }, 240_000);

      // The release's module image, unpacked layer by layer from its archive (scripts/build-module-image.mjs built it).
      it("holds module images that run as 65532 on each platform's own runtime, with labels and an SBOM, from a builder that " +
        "gives one digest per commit", async () => {
        const release = JSON.parse(readFileSync(join(work, "release", "release.json"), "utf8")) as ReleaseManifest;
        const image = release.images.find((candidate) => candidate.name === "noop-machine" && candidate.runtime === "tofu")!;
        const tofuVersion = runtimeVersion("tofu");
        const platforms = await unpackReleaseModuleImage(join(work, "release"), image, "machine", join(work, "module-image"));
        expect(platforms.map((platform) => platform.arch)).toEqual(["amd64", "arm64"]);
        for (const { root, sbom } of platforms) {
          expect(readdirSync(join(root, "captf/module")).sort()).toEqual(
            readdirSync(fileURLToPath(new URL("../../../module-noop/machine", import.meta.url)))
              .filter((name) => !name.startsWith(".terraform"))
              .sort(),
          );
          expect(sbom.components.filter((component) => component.type === "file").map((component) => component.name)).toContain(
            "/captf/module/main.tf",
          );
        }
        // The builder is deterministic: built twice from this commit (a small runtime: the layers' bytes are the builder's, not the
        // binary's), one digest.
        const fakeRuntime = join(work, "fake-runtime");
        writeFileSync(fakeRuntime, "#!/bin/sh\n");
        const digests = ["first", "second"].map((name) => {
          execFileSync(
            process.execPath,
            [
              moduleImageScript,
              "--out",
              join(work, name),
              "--tag",
              "v1",
              "--module",
              join(repoDir, "packages/module-noop/machine"),
              "--role",
              "machine",
              "--runtime",
              "tofu",
              "--runtime-version",
              tofuVersion,
              "--runtime-binary",
              `amd64=${fakeRuntime}`,
              "--runtime-binary",
              `arm64=${fakeRuntime}`,
            ],
            { stdio: "pipe" },
          );
          return (JSON.parse(readFileSync(join(work, name, "index.json"), "utf8")) as { manifests: { digest: string }[] }).manifests.map(
            (entry) => entry.digest,
          );
        });
        expect(digests[1]).toEqual(digests[0]);
      }, 120_000);

      // Every module image of the dry run but the one above: the cloud modules' under both runtimes and the no-op one's under Terraform.
      it("holds cloud module and Terraform images that run as 65532 on each platform, carry the module's files, its providers " +
        "where CAPTF_PROVIDER_MIRROR has the platform's, and pass tfcapi-lint image --strict", async () => {
        const release = JSON.parse(readFileSync(join(work, "release", "release.json"), "utf8")) as ReleaseManifest;
        const images = release.images.filter(
          (image) => image.runtime !== undefined && !(image.name === "noop-machine" && image.runtime === "tofu"),
        );
        expect(images.map((image) => `${image.name}:${image.runtime}`)).toEqual([
          "noop-machine:terraform",
          "gcp-machinepool:tofu",
          "gcp-machinepool:terraform",
          "azure-machinepool:tofu",
          "azure-machinepool:terraform",
        ]);
        for (const image of images) {
          const module = releaseModules[image.name]!;
          const host = runtimeProviderHosts[image.runtime!];
          const platforms = await unpackReleaseModuleImage(
            join(work, "release"),
            image,
            module.role,
            join(work, `image-${image.name}-${image.runtime}`),
          );
          expect([image.name, platforms.map((platform) => platform.arch)]).toEqual([image.name, ["amd64", "arm64"]]);
          for (const { arch, root, sbom } of platforms) {
            const what = `${image.name}:${image.tag} linux/${arch}`;
            // The module's files, its links (the pools' modules/bootstrap) resolved to files; none of the checkout's.
            const moduleDir = join(repoDir, module.dir);
            const shipped = filesBelow(join(root, "captf/module"));
            expect([what, shipped.links]).toEqual([what, []]);
            for (const file of shipped.files)
              expect([what, file, sha256Of(join(root, "captf/module", file))]).toEqual([what, file, sha256Of(join(moduleDir, file))]);
            expect([what, shipped.files]).toEqual([
              what,
              expect.arrayContaining(
                filesBelow(moduleDir, ["node_modules", ".terraform"]).files.filter(
                  (file) => file.endsWith(".tf") || file.startsWith("modules/"),
                ),
              ),
            ]);
            expect([
              what,
              shipped.files.filter((file) => /(^|\/)(package\.json|node_modules|src|dist|\.terraform)(\/|$)/.test(file)),
            ]).toEqual([what, []]);
            if (module.providers.length > 0)
              expect([what, shipped.files]).toEqual([what, expect.arrayContaining(["modules/bootstrap/main.tf"])]);

            // The providers, from the mirror when it has every one of them for this platform: else none, and release.json and the output
            // say why.
            const packaged = (provider: string) =>
              releaseMirror !== undefined &&
              existsSync(join(releaseMirror, host, provider)) &&
              readdirSync(join(releaseMirror, host, provider)).some(
                (entry) => existsSync(join(releaseMirror, host, provider, entry, `linux_${arch}`)) || entry.endsWith(`_linux_${arch}.zip`),
              );
            const carries = module.providers.length > 0 && module.providers.every(packaged);
            const providerComponents = sbom.components.filter((component) => component.name.startsWith(`${host}/`));
            if (carries) {
              expect([what, existsSync(join(root, "captf/providers"))]).toEqual([what, true]);
              const files = filesBelow(join(root, "captf/providers")).files;
              const packages = files.map(mirrorPackage);
              expect([what, [...new Set(packages.map((found) => found.provider))]]).toEqual([
                what,
                module.providers.map((provider) => `${host}/${provider}`),
              ]);
              expect([what, packages.map((found) => found.platform)]).toEqual([what, packages.map(() => `linux_${arch}`)]);
              expect([what, providerComponents.map((component) => [component.name, component.hashes])]).toEqual([
                what,
                files.map((file, index) => [
                  packages[index]!.provider,
                  [{ alg: "SHA-256", content: sha256Of(join(root, "captf/providers", file)) }],
                ]),
              ]);
              expect([what, image.providers?.[arch], image.missingProviders?.[arch]]).toEqual([
                what,
                packages.map((found) => `${found.provider} ${found.version}`),
                undefined,
              ]);
            } else {
              expect([what, existsSync(join(root, "captf/providers")), providerComponents, image.providers?.[arch]]).toEqual([
                what,
                false,
                [],
                [],
              ]);
              if (module.providers.length === 0) expect([what, image.missingProviders?.[arch]]).toEqual([what, undefined]);
              else {
                const missing = image.missingProviders?.[arch];
                expect([what, missing]).toEqual([
                  what,
                  releaseMirror === undefined
                    ? `${providerMirrorVariable} is unset`
                    : expect.stringMatching(
                        new RegExp(
                          `^${providerMirrorVariable}=${escapeRegExp(releaseMirror)} .*${escapeRegExp(`${host}/${module.providers[0]}`)}`,
                        ),
                      ),
                ]);
                expect([what, releaseOutput.split("\n")]).toEqual([
                  what,
                  expect.arrayContaining([
                    `release: ${image.name}:${image.tag} for linux/${arch} has no /captf/providers (its Jobs' init needs ` +
                      `registry access): ${missing}`,
                  ]),
                ]);
              }
            }

            // tfcapi-lint reads this platform of the archive as a runtime would pull it.
            const lint = spawnSync(
              process.execPath,
              [
                lintCommand,
                "image",
                `oci-archive:${join(work, "release", image.archive)}:${image.tag}`,
                "--platform",
                `linux/${arch}`,
                "--role",
                module.role,
                "--strict",
                "--format",
                "json",
              ],
              { encoding: "utf8" },
            );
            const findings = (JSON.parse(lint.stdout || "{}") as { findings?: { id: string; severity: string }[] }).findings ?? [];
            expect({
              what,
              exitCode: lint.status,
              stderr: lint.stderr,
              errors: findings.filter((finding) => finding.severity !== "info"),
            }).toEqual({ what, exitCode: 0, stderr: "", errors: [] });
            expect([what, findings.map((finding) => finding.id).includes("image/providers-absent")]).toEqual([what, !carries]);
          }
          rmSync(join(work, `image-${image.name}-${image.runtime}`), { recursive: true, force: true });
        }
      }, 300_000);
    });

    it("gives the same image when built again from the same commit", () => {
      // Both platforms: the index digest covers each platform's manifest, hence its config and every layer byte for byte.
      const again = join(work, "again");
      execFileSync(process.execPath, [imageScript, "--out", again, "--tag", "test", "--commit", "c0ffee"], { stdio: "pipe" });
      const digestsOf = (dir: string) =>
        Object.fromEntries(
          (
            JSON.parse(readFileSync(join(dir, "index.json"), "utf8")) as {
              manifests: { digest: string; annotations?: Record<string, string> }[];
            }
          ).manifests.map((entry) => [entry.annotations?.["org.opencontainers.image.ref.name"], entry.digest]),
        ) as Record<string, string>;
      expect(Object.keys(digestsOf(again)).sort()).toEqual(["test", "test-amd64", "test-arm64"]);
      expect(digestsOf(again)).toEqual(digestsOf(layout));
    }, 300_000);

    it("answers --version through its entrypoint and runner version from the runner bundle, in its own root", () => {
      expect(inRoot(root, [...config.config.Entrypoint!, "--version"])).toBe(
        `manager ${managerVersion} (commit c0ffee, contract ${contractVersion}, node ${pinnedNode})\n`,
      );
      expect(inRoot(root, ["node", "/opt/captf/runner/runner.mjs", "version"])).toMatch(runnerVersionLine);
    });

    it("gives a Job's init container a runner bundle that runs from /captf/bin in a root without anything else", () => {
      mkdirSync(join(root, "captf/bin"), { recursive: true });
      inRoot(root, defaultJobEnvironment.runnerCopyCommand, "0:0");
      const bare = join(work, "bare");
      cpSync(join(root, "captf/bin"), join(bare, "captf/bin"), { recursive: true });
      // As a Job's main container starts it.
      expect(inRoot(bare, [...runnerRunCommand.slice(0, 2), "version"])).toMatch(runnerVersionLine);
    });

    it("runs as the shipped Deployment on the chroot kubelet: leads, reconciles, and stops on the Pod's deletion", async () => {
      const controlPlane = sharedControlPlane();
      plane = await preparePlane(namespace);
      registry = await startLocalRegistry();
      const image = `${registry.host}/captf/captf-controller:test`;
      pushImage(layout, "test", image);

      const certificate = generateServingCertificate(join(work, "certs"));
      await plane.core.createNamespacedSecret({
        namespace,
        body: {
          metadata: { name: installNames.certificateSecret },
          type: "kubernetes.io/tls",
          data: {
            "tls.crt": readFileSync(certificate.certFile).toString("base64"),
            "tls.key": readFileSync(certificate.keyFile).toString("base64"),
          },
        },
      });
      // The shipped Deployment, but kept to this suite's namespace and, on the host network, to free ports (a repeated flag's last value
      // wins).
      const deployment = deploymentObject({ namespace, image });
      const container = deployment.spec!.template.spec!.containers[0]!;
      const health = await freeLoopbackPort();
      container.args = [
        ...container.args!,
        `--namespace=${namespace}`,
        `--health-addr=127.0.0.1:${health}`,
        `--diagnostics-address=127.0.0.1:${await freeLoopbackPort()}`,
        `--webhook-port=${await freeLoopbackPort()}`,
      ];
      const apps = kubeConfigOf(controlPlane.kubeconfigPath).makeApiClient(k8s.AppsV1Api);
      await apps.createNamespacedDeployment({ namespace, body: deployment });
      const kubeletLog: string[] = [];
      kubelet = await startChrootKubelet({
        kubeconfigPath: controlPlane.kubeconfigPath,
        nodeName: `manager-image-${Date.now().toString(36)}`,
        namespaces: [namespace],
        serviceAccountTokens: { token: controlPlane.token },
        log: (line) => kubeletLog.push(line),
      });

      const pod = await waitFor(
        async () => (await plane!.core.listNamespacedPod({ namespace })).items.find((candidate) => candidate.status?.phase === "Running"),
        120_000,
        "the manager's Pod running",
      );
      const podName = pod.metadata!.name!;
      const logOf = () => kubelet!.containerLog(namespace, podName, "manager");
      const lease = await waitFor(
        async () => {
          const found = await plane!.coordination
            .readNamespacedLease({ namespace, name: "controller-leader-election-captf" })
            .catch(() => undefined);
          return found?.spec?.holderIdentity ? found : undefined;
        },
        60_000,
        `the leader Lease (kubelet:\n${kubeletLog.join("\n")})`,
      );
      expect(lease.spec!.holderIdentity).toContain(podName);
      expect((await fetch(`http://127.0.0.1:${health}/readyz`)).status).toBe(200);

      const machines = { group: apiGroup, version: apiVersion, namespace, plural: "terraformmachines" };
      await plane.custom.createNamespacedCustomObject({ ...machines, body: minimalMachine("m-0") });
      const object = await waitFor(
        async () => {
          const current = (await plane!.custom.getNamespacedCustomObject({ ...machines, name: "m-0" })) as ReadBack<TerraformMachine>;
          return current.status?.conditions?.some((condition: { type: string }) => condition.type === "DependenciesReady")
            ? current
            : undefined;
        },
        30_000,
        `the TerraformMachine reconciled (manager log:\n${logOf()})`,
      );
      expect(object.metadata.finalizers).toContain(finalizers.TerraformMachine);

      await apps.deleteNamespacedDeployment({ namespace, name: deployment.metadata!.name!, propagationPolicy: "Foreground" });
      await waitFor(
        async () =>
          (await plane!.coordination.readNamespacedLease({ namespace, name: "controller-leader-election-captf" })).spec?.holderIdentity
            ? undefined
            : true,
        60_000,
        "the Lease released",
      );
      const messages = logOf()
        .split("\n")
        .filter((line) => line.startsWith("{"))
        .map((line) => (JSON.parse(line) as { msg: string }).msg);
      expect(messages).toEqual(
        expect.arrayContaining([`FLAG: --runner-image="${image}"`, "started leading", "signal received, shutting down", "manager exiting"]),
      );
    }, 240_000);
  },
);

const sha256Of = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex");

/**
 * The provider, version and platform of a file of a mirror: unpacked (`<host>/<ns>/<type>/<version>/<os_arch>/...`) or packed
 * (`<host>/<ns>/<type>/<name>_<version>_<os_arch>.zip`).
 */
function mirrorPackage(file: string): { provider: string; version: string; platform: string } {
  const parts = file.split("/");
  const packed = /_([^_]+)_([a-z0-9]+_[a-z0-9]+)\.zip$/.exec(parts[3]!);
  return {
    provider: parts.slice(0, 3).join("/"),
    version: packed && parts.length === 4 ? packed[1]! : parts[3]!,
    platform: packed && parts.length === 4 ? packed[2]! : parts[4]!,
  };
}

/** The files below `dir` (relative paths, sorted), links followed, and the links met; `skipped` names are not entered. */
function filesBelow(dir: string, skipped: readonly string[] = [], prefix = ""): { files: string[]; links: string[] } {
  const found = { files: [] as string[], links: [] as string[] };
  for (const entry of readdirSync(join(dir, prefix), { withFileTypes: true })) {
    const path = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (skipped.includes(entry.name)) continue;
    if (entry.isSymbolicLink()) found.links.push(path);
    if (!statSync(join(dir, path)).isDirectory()) {
      found.files.push(path);
      continue;
    }
    const below = filesBelow(dir, skipped, path);
    found.files.push(...below.files);
    found.links.push(...below.links);
  }
  return { files: found.files.sort(), links: found.links.sort() };
}

/**
 * Unpacks each platform of a release's module image (an OCI archive of an index) into `dir` as a
 * runtime would, and checks what every module image is: its platform's config, 65532:65532 and no
 * entrypoint, the io.captf.* and OCI labels, `/captf/runtime version -json` answering the platform as
 * 65532 (this machine's under chroot, the other's under qemu-user-static copied into the root: no
 * binfmt), and a valid CycloneDX SBOM whose first component is the runtime, with the binary's hash.
 */
async function unpackReleaseModuleImage(
  release: string,
  image: ReleaseImage,
  role: string,
  dir: string,
): Promise<{ arch: string; root: string; sbom: { components: SbomComponent[] } }[]> {
  mkdirSync(dir, { recursive: true });
  execFileSync("tar", ["xf", join(release, image.archive), "-C", dir]);
  const blob = (digest: string) => join(dir, "blobs", digest.replace(":", "/"));
  const index = JSON.parse(
    readFileSync(
      blob((JSON.parse(readFileSync(join(dir, "index.json"), "utf8")) as { manifests: { digest: string }[] }).manifests[0]!.digest),
      "utf8",
    ),
  ) as { manifests: { digest: string; platform: { architecture: string } }[] };
  const platforms = [];
  for (const { digest, platform } of index.manifests) {
    const arch = platform.architecture;
    const manifest = JSON.parse(readFileSync(blob(digest), "utf8")) as { config: { digest: string } };
    const imageConfig = JSON.parse(readFileSync(blob(manifest.config.digest), "utf8")) as ImageConfig;
    expect({
      image: image.archive,
      arch: imageConfig.architecture,
      user: imageConfig.config.User,
      entrypoint: imageConfig.config.Entrypoint,
      cmd: imageConfig.config.Cmd,
    }).toEqual({ image: image.archive, arch, user: "65532:65532", entrypoint: undefined, cmd: undefined });
    expect(imageConfig.config.Labels).toMatchObject({
      "io.captf.contract": contractVersion,
      "io.captf.role": role,
      "io.captf.runtime": image.runtime,
      "io.captf.runtime.version": runtimeVersion(image.runtime!),
      "org.opencontainers.image.title": image.name,
      "org.opencontainers.image.version": image.tag,
      "org.opencontainers.image.revision": "c0ffee",
    });
    // The archive is an OCI layout: name the platform's manifest in it, and unpack that as a runtime would.
    const top = JSON.parse(readFileSync(join(dir, "index.json"), "utf8")) as { manifests: object[] };
    top.manifests.push({
      mediaType: "application/vnd.oci.image.manifest.v1+json",
      digest,
      size: readFileSync(blob(digest)).length,
      annotations: { "org.opencontainers.image.ref.name": arch },
    });
    writeFileSync(join(dir, "index.json"), JSON.stringify(top));
    const root = join(dir, `root-${arch}`);
    execFileSync("umoci", ["raw", "unpack", "--image", `${dir}:${arch}`, root], { stdio: "pipe" });
    // Each platform's runtime answers as the image's user: this machine's under chroot, the other's under qemu.
    const qemu = arch === hostArch ? [] : ["/qemu"];
    if (qemu.length > 0)
      copyFileSync(otherArch === "arm64" ? requireTool("qemu-aarch64-static") : "/usr/bin/qemu-x86_64-static", join(root, "qemu"));
    const reported = JSON.parse(
      execFileSync(chroot, ["--userspec=65532:65532", root, ...qemu, "/captf/runtime", "version", "-json"], {
        env: { CHECKPOINT_DISABLE: "1" },
        encoding: "utf8",
      }),
    ) as { platform: string };
    expect([image.archive, reported.platform]).toEqual([image.archive, `linux_${arch}`]);
    const sbomText = readFileSync(join(root, "usr/share/doc/captf/sbom.cdx.json"), "utf8");
    expect([image.archive, arch, await cycloneDxViolations(sbomText)]).toEqual([image.archive, arch, null]);
    const sbom = JSON.parse(sbomText) as { components: SbomComponent[] };
    expect([image.archive, sbom.components[0]]).toEqual([
      image.archive,
      expect.objectContaining({
        type: "application",
        name: image.runtime,
        hashes: [{ alg: "SHA-256", content: sha256Of(join(root, "captf/runtime")) }],
      }),
    ]);
    platforms.push({ arch, root, sbom });
  }
  return platforms;
}

function kubeConfigOf(path: string): k8s.KubeConfig {
  const kubeConfig = new k8s.KubeConfig();
  kubeConfig.loadFromFile(path);
  return kubeConfig;
}
