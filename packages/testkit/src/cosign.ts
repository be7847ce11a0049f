// Real cosign signatures for the signature suites: key pairs (cosign's own ECDSA P-256, an Ed25519 key imported
// into cosign), `cosign sign` without a transparency log against the loopback registry, and a registry front that adds the
// OCI 1.1 referrers API distribution 2.8 lacks, so cosign's referrers mode is exercised against a registry that has it.
import { execFile, execFileSync } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { writeFileSync } from "node:fs";
import { createServer, request as httpRequest, type IncomingMessage, type Server } from "node:http";
import { join } from "node:path";
import { requireTool } from "./tools.js";

export interface CosignKeyPair {
  /** cosign's encrypted private key file. */
  readonly privateKey: string;
  /** The PEM public key: what a TerraformModulePolicy or `tfcapi-lint image --key` is given. */
  readonly publicKey: string;
  readonly password: string;
}

const password = "captf-test-password";

function cosign(args: readonly string[], cwd: string, env: Record<string, string> = {}): string {
  return execFileSync(requireTool("cosign"), args, {
    cwd,
    env: { ...process.env, COSIGN_PASSWORD: password, ...env },
    stdio: ["ignore", "pipe", "pipe"],
    timeout: 120_000,
  }).toString();
}

/** A key pair in `dir`: ECDSA P-256 by `cosign generate-key-pair`, or an Ed25519 key made here and `cosign import-key-pair`ed. */
export function cosignKeyPair(dir: string, algorithm: "ecdsa-p256" | "ed25519", prefix: string = algorithm): CosignKeyPair {
  if (algorithm === "ecdsa-p256") {
    cosign(["generate-key-pair", "--output-key-prefix", prefix], dir);
  } else {
    const pkcs8 = join(dir, `${prefix}-pkcs8.pem`);
    writeFileSync(pkcs8, generateKeyPairSync("ed25519").privateKey.export({ format: "pem", type: "pkcs8" }));
    cosign(["import-key-pair", "--key", pkcs8, "--output-key-prefix", prefix], dir);
  }
  return { privateKey: join(dir, `${prefix}.key`), publicKey: join(dir, `${prefix}.pub`), password };
}

/**
 * Signs `image` (`<registry>/<repository>@<digest>`) with `key`, no transparency log: as a `sha256-<hex>.sig` tag, or as
 * an OCI 1.1 referrer (cosign's experimental referrers mode: the referrers API where the registry has one, else the
 * referrers tag schema). Asynchronous: the registry front below answers from this same process.
 */
export function cosignSign(key: CosignKeyPair, image: string, form: "tag" | "referrers", cwd: string): Promise<void> {
  const args = ["sign", "--key", key.privateKey, "--tlog-upload=false", "--yes", "--allow-insecure-registry"];
  if (form === "referrers") args.push("--registry-referrers-mode=oci-1-1");
  const env = { ...process.env, COSIGN_PASSWORD: password, ...(form === "referrers" ? { COSIGN_EXPERIMENTAL: "1" } : {}) };
  return new Promise((resolve, reject) =>
    execFile(requireTool("cosign"), [...args, image], { cwd, env, timeout: 120_000 }, (error, _stdout, stderr) =>
      error ? reject(new Error(`cosign sign ${image}: ${error.message}\n${stderr}`)) : resolve(),
    ),
  );
}

interface Referrer {
  readonly mediaType: string;
  readonly digest: string;
  readonly size: number;
  readonly artifactType?: string;
  readonly annotations?: Record<string, string>;
}

/**
 * A front for a distribution 2.8 registry at `upstream` that adds the referrers API: it passes every request on, keeps
 * each pushed manifest that names a subject (answering with OCI-Subject, so clients use the API and write no tag schema)
 * and answers `GET /v2/<repository>/referrers/<digest>` from what it kept.
 */
export async function startReferrersRegistry(upstream: string): Promise<{ host: string; stop: () => Promise<void> }> {
  const referrers = new Map<string, Referrer[]>();
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://front");
    const listing = /^\/v2\/(.+)\/referrers\/(sha256:[0-9a-f]{64})$/.exec(url.pathname);
    if (listing && req.method === "GET") {
      const wanted = url.searchParams.get("artifactType");
      const manifests = (referrers.get(`${listing[1]}@${listing[2]}`) ?? []).filter((r) => !wanted || r.artifactType === wanted);
      const body = JSON.stringify({ schemaVersion: 2, mediaType: "application/vnd.oci.image.index.v1+json", manifests });
      res.writeHead(200, {
        "content-type": "application/vnd.oci.image.index.v1+json",
        ...(wanted ? { "oci-filters-applied": "artifactType" } : {}),
      });
      res.end(body);
      return;
    }
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const forward = httpRequest(
        { host: upstream.split(":")[0], port: Number(upstream.split(":")[1]), path: req.url, method: req.method, headers: req.headers },
        (upstreamRes: IncomingMessage) => {
          const headers = { ...upstreamRes.headers };
          const pushed = /^\/v2\/(.+)\/manifests\/[^/]+$/.exec(url.pathname);
          if (pushed && req.method === "PUT" && upstreamRes.statusCode === 201) {
            const manifest = JSON.parse(body.toString("utf8")) as {
              mediaType?: string;
              artifactType?: string;
              subject?: { digest: string };
              annotations?: Record<string, string>;
              config?: { mediaType?: string };
            };
            if (manifest.subject) {
              const key = `${pushed[1]}@${manifest.subject.digest}`;
              referrers.set(key, [
                ...(referrers.get(key) ?? []),
                {
                  mediaType: manifest.mediaType ?? String(req.headers["content-type"]),
                  digest: String(upstreamRes.headers["docker-content-digest"]),
                  size: body.length,
                  artifactType: manifest.artifactType ?? manifest.config?.mediaType,
                  ...(manifest.annotations ? { annotations: manifest.annotations } : {}),
                },
              ]);
              headers["oci-subject"] = manifest.subject.digest;
            }
          }
          res.writeHead(upstreamRes.statusCode ?? 502, headers);
          upstreamRes.pipe(res);
        },
      );
      forward.on("error", (error) => res.writeHead(502).end(error.message));
      forward.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return { host: `127.0.0.1:${port}`, stop: () => new Promise((resolve) => server.close(() => resolve())) };
}
