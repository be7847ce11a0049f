import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { freeLoopbackPort } from "./control-plane.js";
import { hostArchitecture } from "./runtimes.js";

/**
 * Real OCI images without a Docker engine: `umoci` builds them into an OCI layout, `skopeo`
 * copies them, and Debian's `docker-registry` (distribution 2.8) serves them on loopback.
 */

export interface ModuleImage {
  /** The module directory, copied to /captf/module. */
  moduleDir: string;
  /** The OpenTofu or Terraform binary for this machine's architecture, copied to /captf/runtime. */
  runtime: string;
  runtimeVersion: string;
  /** The io.captf.runtime label: which runtime `runtime` is (default tofu). */
  runtimeName?: "tofu" | "terraform";
  role: string;
  /** Extra labels (io.captf.variables-schema, org.opencontainers.image.*). */
  labels?: Record<string, string>;
  /** A provider mirror directory (as `providers mirror` writes it), shipped as /captf/providers. */
  providersDir?: string;
}

/** The user module images run as, and owner of /captf. */
export const moduleImageUser = "65532:65532";
/**
 * scripts/build-module-image.mjs: the repository's caller of captf-module's builder, the one builder of module
 * images (a child process: testkit cannot import captf-module, whose tests import testkit).
 */
export const moduleImageScript = fileURLToPath(new URL("../../../scripts/build-module-image.mjs", import.meta.url));

/**
 * Builds a module image into the OCI layout `layout` under `tag` with scripts/build-module-image.mjs (captf-module's builder):
 * an OCI index of this machine's platform (the release adds arm64), /captf/module and /captf/runtime, the io.captf.*
 * labels, user 65532, an SBOM. The image has no shell and no libc.
 */
export function buildModuleImage(layout: string, tag: string, image: ModuleImage): void {
  const args = [
    moduleImageScript,
    "--out",
    layout,
    "--tag",
    tag,
    "--module",
    image.moduleDir,
    "--role",
    image.role,
    "--runtime",
    image.runtimeName ?? "tofu",
    "--runtime-version",
    image.runtimeVersion,
  ];
  args.push("--runtime-binary", `${hostArchitecture}=${image.runtime}`);
  if (image.providersDir) args.push("--providers", `${hostArchitecture}=${image.providersDir}`);
  for (const [key, value] of Object.entries(image.labels ?? {})) args.push("--label", `${key}=${value}`);
  execFileSync(process.execPath, args, { stdio: ["ignore", "ignore", "pipe"] });
}

export interface LocalRegistry {
  /** `127.0.0.1:<port>`: plain HTTP, as every OCI client allows for loopback. */
  host: string;
  stop(): Promise<void>;
}

/** Starts Debian's docker-registry on a free loopback port, storing in a temp dir. */
export async function startLocalRegistry(): Promise<LocalRegistry> {
  const port = await freeLoopbackPort();
  const dir = mkdtempSync(join(tmpdir(), "captf-registry-"));
  const config = join(dir, "config.yml");
  mkdirSync(join(dir, "data"));
  writeFileSync(
    config,
    `version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: ${join(dir, "data")}\n` +
      `http:\n  addr: 127.0.0.1:${port}\n`,
  );
  const child = spawn("docker-registry", ["serve", config], { stdio: "ignore" });
  const host = `127.0.0.1:${port}`;
  for (let attempt = 0; ; attempt++) {
    try {
      if ((await fetch(`http://${host}/v2/`)).ok) break;
    } catch {
      // Not listening yet.
    }
    if (attempt > 200 || child.exitCode !== null) {
      child.kill("SIGKILL");
      throw new Error(`docker-registry did not answer on ${host} (exit ${child.exitCode ?? "none"})`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    host,
    stop: async () => {
      // A registry a terminal's Ctrl-C already killed has a signalCode and no exit event to come.
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once("exit", resolve));
        child.kill("SIGTERM");
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Copies every platform of `layout:tag` to `docker://<destination>` over plain HTTP. */
export function pushImage(layout: string, tag: string, destination: string): void {
  execFileSync("skopeo", ["copy", "--all", "--quiet", "--dest-tls-verify=false", `oci:${layout}:${tag}`, `docker://${destination}`], {
    stdio: ["ignore", "ignore", "pipe"],
  });
}
