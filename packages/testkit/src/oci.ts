import { execFileSync, spawn } from "node:child_process";
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freeLoopbackPort } from "./control-plane.js";

/**
 * Real OCI images without a Docker engine: `umoci` builds them into an OCI layout, `skopeo`
 * copies them, and Debian's `docker-registry` (distribution 2.8) serves them on loopback.
 */

export interface ModuleImage {
  /** The module directory, copied to /captf/module. */
  moduleDir: string;
  /** The OpenTofu or Terraform binary, copied to /captf/runtime. */
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

function umoci(...args: string[]): void {
  execFileSync("umoci", args, { stdio: ["ignore", "ignore", "pipe"] });
}

/**
 * Builds a module image into the OCI layout `layout` under `tag`: /captf/module and
 * /captf/runtime, the io.captf.* labels, user 65532. The image has no shell and no libc.
 */
export function buildModuleImage(layout: string, tag: string, image: ModuleImage): void {
  if (!existsSync(join(layout, "index.json"))) umoci("init", "--layout", layout);
  const ref = `${layout}:${tag}`;
  umoci("new", "--image", ref);
  const staging = mkdtempSync(join(tmpdir(), "captf-image-"));
  try {
    const root = join(staging, "captf");
    cpSync(image.moduleDir, join(root, "module"), {
      recursive: true,
      // A sub-module shared between modules is a link in the checkout (modules/bootstrap of the pools): the image holds its files.
      dereference: true,
      filter: (path) => !/(^|\/)(\.terraform|\.terraform\.lock\.hcl|node_modules|src|package\.json|tsconfig[^/]*\.json|jest\.config\.js)$/.test(path.slice(image.moduleDir.length)),
    });
    cpSync(image.runtime, join(root, "runtime"));
    chmodSync(join(root, "runtime"), 0o755);
    umoci("insert", "--image", ref, root, "/captf");
    if (image.providersDir) umoci("insert", "--image", ref, image.providersDir, "/captf/providers");
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  const labels: Record<string, string> = {
    "io.captf.contract": "v1alpha1",
    "io.captf.role": image.role,
    "io.captf.runtime": image.runtimeName ?? "tofu",
    "io.captf.runtime.version": image.runtimeVersion,
    "org.opencontainers.image.version": tag,
    ...image.labels,
  };
  const config = ["config", "--image", ref, "--config.user", moduleImageUser, "--architecture", "amd64", "--os", "linux"];
  for (const [key, value] of Object.entries(labels)) config.push("--config.label", `${key}=${value}`);
  umoci(...config);
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
  writeFileSync(config, `version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: ${join(dir, "data")}\nhttp:\n  addr: 127.0.0.1:${port}\n`);
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
      if (child.exitCode === null) {
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
  execFileSync("skopeo", ["copy", "--all", "--quiet", "--dest-tls-verify=false", `oci:${layout}:${tag}`, `docker://${destination}`], { stdio: ["ignore", "ignore", "pipe"] });
}
