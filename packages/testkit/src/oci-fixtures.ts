// Builds small OCI images for tests with umoci (an image per call, with its labels and
// architecture, and indexes of them), and serves a layout from an in-process registry that demands
// a bearer token behind basic auth. Debian's docker-registry (./oci.ts) serves the anonymous case.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmodSync,
  createReadStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

export interface FileSpec {
  readonly content: string;
  readonly mode?: number;
}

export interface ImageSpec {
  /** Absolute image paths; each top-level directory becomes one layer. */
  readonly files: Readonly<Record<string, string | FileSpec>>;
  readonly symlinks?: Readonly<Record<string, string>>;
  /** Paths a further layer whites out. */
  readonly whiteouts?: readonly string[];
  readonly user?: string;
  readonly labels?: Readonly<Record<string, string>>;
  readonly entrypoint?: string;
  readonly architecture?: string;
}

function umoci(...args: string[]): void {
  execFileSync("umoci", args, { stdio: ["ignore", "ignore", "pipe"] });
}

/** Adds `tag` to the OCI layout at `layout` (created if needed). */
export function buildImage(layout: string, tag: string, spec: ImageSpec): void {
  if (!existsSync(join(layout, "index.json"))) umoci("init", "--layout", layout);
  const image = `${layout}:${tag}`;
  umoci("new", "--image", image);
  const rootfs = mkdtempSync(join(tmpdir(), "captf-image-rootfs-"));
  for (const [path, file] of Object.entries(spec.files)) {
    const target = join(rootfs, path);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, typeof file === "string" ? file : file.content);
    chmodSync(target, typeof file === "string" ? 0o644 : (file.mode ?? 0o644));
  }
  for (const [path, target] of Object.entries(spec.symlinks ?? {})) {
    mkdirSync(dirname(join(rootfs, path)), { recursive: true });
    symlinkSync(target, join(rootfs, path));
  }
  const tops = new Set([...Object.keys(spec.files), ...Object.keys(spec.symlinks ?? {})].map((p) => p.split("/")[1]!));
  for (const top of [...tops].sort()) umoci("insert", "--image", image, join(rootfs, top), `/${top}`);
  for (const path of spec.whiteouts ?? []) umoci("insert", "--image", image, "--whiteout", path);
  const config = [
    "config",
    "--image",
    image,
    "--config.user",
    spec.user ?? "",
    "--architecture",
    spec.architecture ?? "amd64",
    "--os",
    "linux",
  ];
  for (const [k, v] of Object.entries(spec.labels ?? {})) config.push("--config.label", `${k}=${v}`);
  if (spec.entrypoint) config.push("--config.entrypoint", spec.entrypoint);
  umoci(...config);
}

function writeBlob(layout: string, bytes: Buffer): { digest: string; size: number } {
  const hex = createHash("sha256").update(bytes).digest("hex");
  writeFileSync(join(layout, "blobs", "sha256", hex), bytes);
  return { digest: `sha256:${hex}`, size: bytes.length };
}

/** Adds a tag naming an index of the given tags' manifests, each with its platform. */
export function addIndex(layout: string, tag: string, members: readonly { tag: string; architecture: string }[]): void {
  const indexPath = join(layout, "index.json");
  const index = JSON.parse(readFileSync(indexPath, "utf8")) as {
    manifests: { digest: string; size: number; mediaType: string; annotations?: Record<string, string> }[];
  };
  const manifests = members.map((m) => {
    const d = index.manifests.find((x) => x.annotations?.["org.opencontainers.image.ref.name"] === m.tag)!;
    return { mediaType: d.mediaType, digest: d.digest, size: d.size, platform: { os: "linux", architecture: m.architecture } };
  });
  const bytes = Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: "application/vnd.oci.image.index.v1+json", manifests }));
  const blob = writeBlob(layout, bytes);
  index.manifests.push({
    mediaType: "application/vnd.oci.image.index.v1+json",
    ...blob,
    annotations: { "org.opencontainers.image.ref.name": tag },
  });
  writeFileSync(indexPath, JSON.stringify(index));
}

/** An in-process registry serving one OCI layout that demands a bearer token, itself behind basic auth. */
export async function startTokenRegistry(
  layout: string,
  username: string,
  password: string,
): Promise<{ host: string; requests: string[]; stop: () => Promise<void> }> {
  const requests: string[] = [];
  const token = "test-token";
  const index = JSON.parse(readFileSync(join(layout, "index.json"), "utf8")) as {
    manifests: { digest: string; mediaType: string; annotations?: Record<string, string> }[];
  };
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    requests.push(`${req.method} ${url.pathname}`);
    const host = req.headers.host;
    if (url.pathname === "/token") {
      if (req.headers.authorization !== `Basic ${Buffer.from(`${username}:${password}`).toString("base64")}`)
        return void res.writeHead(401).end();
      return void res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ token }));
    }
    if (req.headers.authorization !== `Bearer ${token}`) {
      return void res
        .writeHead(401, { "www-authenticate": `Bearer realm="http://${host}/token",service="test",scope="repository:noop/machine:pull"` })
        .end();
    }
    const manifest = /^\/v2\/noop\/machine\/manifests\/(.+)$/.exec(url.pathname);
    const blob = /^\/v2\/noop\/machine\/blobs\/sha256:([a-f0-9]+)$/.exec(url.pathname);
    if (manifest) {
      const ref = manifest[1]!;
      const d = ref.startsWith("sha256:")
        ? { digest: ref, mediaType: "" }
        : index.manifests.find((m) => m.annotations?.["org.opencontainers.image.ref.name"] === ref);
      if (!d) return void res.writeHead(404).end();
      const bytes = readFileSync(join(layout, "blobs", "sha256", d.digest.slice(7)));
      const mediaType = (JSON.parse(bytes.toString()) as { mediaType?: string }).mediaType ?? d.mediaType;
      return void res.writeHead(200, { "content-type": mediaType, "docker-content-digest": d.digest }).end(bytes);
    }
    if (blob) {
      const file = join(layout, "blobs", "sha256", blob[1]!);
      if (!existsSync(file)) return void res.writeHead(404).end();
      res.writeHead(200, { "content-length": statSync(file).size });
      return void createReadStream(file).pipe(res);
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return { host: `127.0.0.1:${port}`, requests, stop: () => new Promise((resolve) => server.close(() => resolve())) };
}
