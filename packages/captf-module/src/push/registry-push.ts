// Copies one image of an OCI layout (an index with every platform, or a single manifest) to a registry over the
// OCI distribution API: blobs first (each skipped when the registry has it), then each platform's manifest by
// digest, then the root under the tag. Node's http and https only: no skopeo, no Docker daemon.
import { createReadStream, existsSync, readFileSync, statSync } from "node:fs";
import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { join } from "node:path";
import { answerChallenge, type Credentials, type RegistryReference } from "@captf/contract/oci";
import { CommandError } from "../io.js";
import { refNameAnnotation, sha256 } from "../build/layout.js";

const indexMediaTypes = ["application/vnd.oci.image.index.v1+json", "application/vnd.docker.distribution.manifest.list.v2+json"];

interface LayoutDescriptor {
  mediaType: string;
  digest: string;
  size: number;
  platform?: { os: string; architecture: string; variant?: string };
  annotations?: Record<string, string>;
}

export interface PushOptions {
  readonly layout: string;
  readonly tag: string;
  readonly destination: RegistryReference & { readonly tag: string };
  readonly credentials: Credentials | undefined;
  /** Where the credentials came from (or where none were found), for the message of a refused push. */
  readonly credentialsOrigin: string;
  /** Speak plain HTTP to the registry; without it only HTTPS. */
  readonly plainHttp: boolean;
  /** Each request times out after this long without an answer (default 60 s). */
  readonly timeoutMs?: number;
}

export interface PushedPlatform {
  readonly platform: string;
  readonly digest: string;
}

export interface PushReport {
  readonly source: string;
  readonly destination: string;
  /** The digest the tag now names: the layout's own, byte for byte. */
  readonly digest: string;
  readonly mediaType: string;
  readonly platforms: readonly PushedPlatform[];
  readonly blobs: { readonly pushed: number; readonly present: number; readonly bytes: number };
  readonly credentials: string;
}

function incomplete(layout: string, digest: string): CommandError {
  return new CommandError(`${layout} lacks blob ${digest}: the layout is incomplete; build it again`, "layout");
}

/** A blob or manifest of the layout, read from `blobs/<algorithm>/<hex>`. */
function blobPath(layout: string, digest: string): string {
  const [algorithm, hex] = digest.split(":");
  return join(layout, "blobs", algorithm!, hex!);
}

function readDocument(layout: string, descriptor: LayoutDescriptor): { bytes: Buffer; json: Record<string, unknown> } {
  const path = blobPath(layout, descriptor.digest);
  if (!existsSync(path)) throw incomplete(layout, descriptor.digest);
  const bytes = readFileSync(path);
  if (`sha256:${sha256(bytes)}` !== descriptor.digest)
    throw new CommandError(`${layout}: blob ${descriptor.digest} does not match its digest; build the layout again`, "layout");
  return { bytes, json: JSON.parse(bytes.toString("utf8")) as Record<string, unknown> };
}

/** The descriptor `tag` names in the layout's index.json. */
export function layoutRoot(layout: string, tag: string): LayoutDescriptor {
  const indexFile = join(layout, "index.json");
  if (!existsSync(indexFile))
    throw new CommandError(`${layout} is not an OCI layout (no index.json); build into it with captf-module build --out`, "layout");
  const index = JSON.parse(readFileSync(indexFile, "utf8")) as { manifests?: LayoutDescriptor[] };
  const entry = (index.manifests ?? []).find((m) => m.annotations?.[refNameAnnotation] === tag);
  if (!entry) {
    const tags = (index.manifests ?? []).map((m) => m.annotations?.[refNameAnnotation]).filter((t) => t !== undefined);
    throw new CommandError(`${layout} has no image tagged ${tag} (it has: ${tags.join(", ") || "none"})`, "layout");
  }
  return entry;
}

interface Answer {
  readonly status: number;
  readonly headers: IncomingMessage["headers"];
  readonly body: Buffer;
}

/** A registry session for one repository: the scheme, the authorization it earned. */
class Registry {
  private authorization: string | undefined;
  constructor(private readonly options: PushOptions) {}

  private get base(): string {
    return `${this.options.plainHttp ? "http" : "https"}://${this.options.destination.apiHost}`;
  }

  url(path: string): string {
    return path.startsWith("http://") || path.startsWith("https://") ? path : `${this.base}${path}`;
  }

  private send(method: string, url: string, headers: Record<string, string>, body?: Buffer | string): Promise<Answer> {
    const target = new URL(url);
    const request = target.protocol === "http:" ? httpRequest : httpsRequest;
    const all: Record<string, string | number> = { ...headers };
    if (this.authorization && target.host === this.options.destination.apiHost) all.authorization = this.authorization;
    if (typeof body === "string") all["content-length"] = statSync(body).size;
    else if (body) all["content-length"] = body.length;
    else if (method === "PUT" || method === "POST") all["content-length"] = 0;
    return new Promise((resolve, reject) => {
      const req = request(target, { method, headers: all, timeout: this.options.timeoutMs ?? 60_000 }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on("error", reject);
      });
      req.on("timeout", () => req.destroy(new Error(`no answer within ${(this.options.timeoutMs ?? 60_000) / 1000} s`)));
      req.on("error", (error) => reject(this.unreachable(target, error)));
      if (typeof body === "string") createReadStream(body).on("error", reject).pipe(req);
      else req.end(body);
    });
  }

  private unreachable(target: URL, error: Error): CommandError {
    const code = (error as { code?: string }).code ?? error.message;
    const hint =
      target.protocol === "https:"
        ? /EPROTO|ECONNRESET|wrong version number|packet length/i.test(`${code} ${error.message}`)
          ? `: it does not speak HTTPS; if it is a plain-HTTP registry you trust (a local one), pass --plain-http`
          : ""
        : "";
    return new CommandError(`cannot reach ${target.protocol}//${target.host}: ${code}${hint}`, "unreachable");
  }

  /** One request, with the auth dance on a 401 (basic, or a bearer token for pull and push). */
  async call(method: string, path: string, headers: Record<string, string> = {}, body?: Buffer | string): Promise<Answer> {
    let answer = await this.send(method, this.url(path), headers, body);
    if (answer.status === 401 && !this.authorization) {
      const challenge = answer.headers["www-authenticate"];
      if (!challenge) throw this.refused(answer.status, "without saying how to authenticate");
      this.authorization = await this.authorize(challenge);
      answer = await this.send(method, this.url(path), headers, body);
    }
    if (answer.status === 401 || answer.status === 403) throw this.refused(answer.status);
    return answer;
  }

  private refused(status: number, why = ""): CommandError {
    const { registry, repository } = this.options.destination;
    const credentials = this.options.credentials
      ? `the credentials from ${this.options.credentialsOrigin} were refused`
      : `no credentials were found (${this.options.credentialsOrigin})`;
    const detail = `${status}${why ? `, ${why}` : ""}`;
    return new CommandError(`${registry} refused a push to ${repository} (${detail}): ${credentials}`, "unauthorized");
  }

  private authorize(header: string): Promise<string> {
    const { registry, repository } = this.options.destination;
    const options = {
      credentials: this.options.credentials,
      scope: `repository:${repository}:pull,push`,
      overrideScope: true,
      allowPlainHttp: () => this.options.plainHttp,
      timeoutMs: this.options.timeoutMs ?? 60_000,
    };
    return answerChallenge(header, options, (refusal) => {
      switch (refusal.kind) {
        case "needs-credentials":
          return this.refused(401, "it asks for a username and password");
        case "unsupported":
          return this.refused(401, `it asks for unsupported authentication ${refusal.scheme}`);
        case "plain-http-token-service":
          return new CommandError(
            `the token service ${refusal.host} of ${registry} is plain HTTP; pass --plain-http to allow it`,
            "plain-http",
          );
        case "token-service-unreachable":
          return new CommandError(`cannot reach the token service ${refusal.host} of ${registry}: ${refusal.cause}`, "unreachable");
        case "token-service-refused":
          return this.refused(refusal.status, `the token service ${refusal.host} answered ${refusal.status}`);
        case "no-token":
          return this.refused(401, `the token service ${refusal.host} returned no token`);
      }
    });
  }
}

function failed(what: string, answer: Answer): CommandError {
  const detail = answer.body.toString("utf8").slice(0, 300).trim();
  return new CommandError(`${what}: the registry answered ${answer.status}${detail ? ` ${detail}` : ""}`, "push-failed");
}

/** Pushes `layout:tag` to the destination and returns what the tag now names. */
export async function pushLayout(options: PushOptions): Promise<PushReport> {
  const { layout, tag, destination } = options;
  const registry = new Registry(options);
  const repo = `/v2/${destination.repository}`;
  const root = layoutRoot(layout, tag);
  const rootDocument = readDocument(layout, root);
  const isIndex = indexMediaTypes.includes(root.mediaType);
  const children = isIndex ? ((rootDocument.json.manifests as LayoutDescriptor[] | undefined) ?? []) : [];
  const manifests = isIndex ? children : [root];
  const blobs = { pushed: 0, present: 0, bytes: 0 };
  const seen = new Set<string>();

  // The registry's /v2/ first: it tells a wrong scheme or refused credentials before any upload.
  const probe = await registry.call("GET", "/v2/");
  if (probe.status !== 200 && probe.status !== 404) throw failed(`GET ${registry.url("/v2/")}`, probe);

  const documents = new Map<string, Buffer>([[root.digest, rootDocument.bytes]]);
  for (const manifest of manifests) {
    const document = manifest === root ? rootDocument : readDocument(layout, manifest);
    documents.set(manifest.digest, document.bytes);
    const config = document.json.config as LayoutDescriptor | undefined;
    const layers = (document.json.layers as LayoutDescriptor[] | undefined) ?? [];
    for (const blob of [...(config ? [config] : []), ...layers]) {
      if (seen.has(blob.digest)) continue;
      seen.add(blob.digest);
      const head = await registry.call("HEAD", `${repo}/blobs/${blob.digest}`);
      if (head.status === 200) {
        blobs.present++;
        continue;
      }
      const file = blobPath(layout, blob.digest);
      if (!existsSync(file)) throw incomplete(layout, blob.digest);
      const start = await registry.call("POST", `${repo}/blobs/uploads/`);
      const location = start.headers.location;
      if (start.status !== 202 || !location) throw failed(`starting the upload of ${blob.digest}`, start);
      const upload = new URL(location, registry.url("/"));
      upload.searchParams.set("digest", blob.digest);
      const put = await registry.call("PUT", upload.toString(), { "content-type": "application/octet-stream" }, file);
      if (put.status !== 201) throw failed(`uploading ${blob.digest}`, put);
      blobs.pushed++;
      blobs.bytes += blob.size;
    }
  }
  const putManifest = async (reference: string, mediaType: string, bytes: Buffer): Promise<string> => {
    const answer = await registry.call("PUT", `${repo}/manifests/${reference}`, { "content-type": mediaType }, bytes);
    if (answer.status !== 201) throw failed(`putting manifest ${reference}`, answer);
    const digest = `sha256:${sha256(bytes)}`;
    const reported = answer.headers["docker-content-digest"];
    if (typeof reported === "string" && reported !== digest)
      throw new CommandError(`the registry stored ${reference} as ${reported}, not ${digest}: it rewrote the manifest`, "digest-mismatch");
    return digest;
  };
  if (isIndex) for (const child of children) await putManifest(child.digest, child.mediaType, documents.get(child.digest)!);
  const digest = await putManifest(destination.tag, root.mediaType, rootDocument.bytes);
  const platforms = manifests.map((m) => ({
    platform: m.platform ? [m.platform.os, m.platform.architecture, m.platform.variant].filter(Boolean).join("/") : "",
    digest: m.digest,
  }));
  return {
    source: `${layout}:${tag}`,
    destination: `${destination.registry}/${destination.repository}:${destination.tag}`,
    digest,
    mediaType: root.mediaType,
    platforms,
    blobs,
    credentials: options.credentials ? options.credentialsOrigin : "none (anonymous)",
  };
}
