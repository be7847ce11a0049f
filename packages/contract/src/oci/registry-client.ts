// A small OCI distribution client on Node's fetch: anonymous, basic and bearer-token auth with the
// credentials its caller found (docker/podman auth files, image pull Secrets), plain HTTP only for
// loopback or when insecure.
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { isLoopback, type RegistryReference } from "./reference.js";
import {
  documentMediaType,
  ImageReadError,
  mediaTypes,
  sha256,
  verifiedStream,
  verifyDigest,
  type Descriptor,
  type Fetched,
  type ImageSource,
} from "./source.js";

const manifestAccept = [mediaTypes.ociIndex, mediaTypes.ociManifest, mediaTypes.dockerList, mediaTypes.dockerManifest].join(", ");

export interface RegistryOptions {
  readonly insecure: boolean;
  /** For the registry's basic auth or token service; anonymous without. */
  readonly credentials: Credentials | undefined;
  /** Where the credentials came from, for the messages of a refused request, e.g. "the docker or podman auth files". */
  readonly credentialsOrigin: string;
  /** Manifest and token requests time out after this long. */
  readonly timeoutMs?: number;
}

export interface Credentials {
  readonly username: string;
  readonly password: string;
}

/** A docker config's `auths` map (auth files, `kubernetes.io/dockerconfigjson` Secrets). */
export type DockerAuths = Readonly<Record<string, { auth?: string; username?: string; password?: string }>>;

/** The `auths` of a docker config document (config.json, .dockerconfigjson), or undefined when it is not one. */
export function dockerConfigAuths(text: string): DockerAuths | undefined {
  try {
    const auths = (JSON.parse(text) as { auths?: unknown }).auths;
    return auths !== null && typeof auths === "object" && !Array.isArray(auths) ? (auths as DockerAuths) : undefined;
  } catch {
    return undefined;
  }
}

/** The entry of `auths` for `registry`, by the keys docker writes for it. */
export function credentialsFromAuths(auths: DockerAuths, registry: string): Credentials | undefined {
  const keys =
    registry === "docker.io"
      ? ["docker.io", "index.docker.io", "https://index.docker.io/v1/", "registry-1.docker.io"]
      : [registry, `https://${registry}`, `http://${registry}`];
  for (const key of keys) {
    const entry = auths[key];
    if (!entry) continue;
    if (entry.username !== undefined && entry.password !== undefined) return { username: entry.username, password: entry.password };
    if (entry.auth) {
      const decoded = Buffer.from(entry.auth, "base64").toString("utf8");
      const colon = decoded.indexOf(":");
      if (colon > 0) return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
    }
  }
  return undefined;
}

/** The first auth file that has an entry for `registry`: podman's, then docker's. */
export function findCredentials(registry: string, env: Readonly<Record<string, string | undefined>>): Credentials | undefined {
  const files = [
    env.REGISTRY_AUTH_FILE,
    env.XDG_RUNTIME_DIR ? join(env.XDG_RUNTIME_DIR, "containers", "auth.json") : undefined,
    join(env.DOCKER_CONFIG ?? join(env.HOME ?? homedir(), ".docker"), "config.json"),
  ];
  for (const file of files) {
    if (!file || !existsSync(file)) continue;
    const auths = dockerConfigAuths(readFileSync(file, "utf8"));
    const found = auths && credentialsFromAuths(auths, registry);
    if (found) return found;
  }
  return undefined;
}

/** Parses `Bearer realm="…",service="…"` into its scheme and parameters. */
export function parseChallenge(header: string): { scheme: string; params: Record<string, string> } {
  const space = header.indexOf(" ");
  const scheme = (space < 0 ? header : header.slice(0, space)).toLowerCase();
  const params: Record<string, string> = {};
  for (const m of header.slice(space + 1).matchAll(/([A-Za-z_]+)="([^"]*)"|([A-Za-z_]+)=([^,\s]+)/g)) {
    params[(m[1] ?? m[3])!.toLowerCase()] = m[2] ?? m[4]!;
  }
  return { scheme, params };
}

/** Why a registry's 401 challenge could not be answered; each client words it for its users. */
export type ChallengeRefusal =
  | { readonly kind: "needs-credentials" }
  | { readonly kind: "unsupported"; readonly scheme: string }
  | { readonly kind: "plain-http-token-service"; readonly host: string }
  | { readonly kind: "token-service-unreachable"; readonly host: string; readonly cause: string }
  | { readonly kind: "token-service-refused"; readonly host: string; readonly status: number }
  | { readonly kind: "no-token"; readonly host: string };

export interface ChallengeOptions {
  readonly credentials: Credentials | undefined;
  /** The token's scope when the challenge names none, e.g. `repository:<name>:pull`. */
  readonly scope: string;
  /** Ask for `scope` even when the challenge names another (a push needs push, whatever a read was challenged for). */
  readonly overrideScope?: boolean;
  /** Whether a token service on plain HTTP may be asked. */
  readonly allowPlainHttp: (realm: URL) => boolean;
  readonly timeoutMs?: number;
}

/**
 * The Authorization header that answers a registry's `WWW-Authenticate` challenge: basic with the credentials, or a
 * bearer token from the challenge's token service (asked with the credentials, if any); `refuse` makes the error.
 */
export async function answerChallenge(
  header: string,
  options: ChallengeOptions,
  refuse: (refusal: ChallengeRefusal) => Error,
): Promise<string> {
  const { scheme, params } = parseChallenge(header);
  const { credentials } = options;
  const basic = credentials ? `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString("base64")}` : undefined;
  if (scheme === "basic") {
    if (!basic) throw refuse({ kind: "needs-credentials" });
    return basic;
  }
  if (scheme !== "bearer" || !params.realm) throw refuse({ kind: "unsupported", scheme });
  const url = new URL(params.realm);
  if (params.service) url.searchParams.set("service", params.service);
  url.searchParams.set("scope", options.overrideScope ? options.scope : (params.scope ?? options.scope));
  if (url.protocol === "http:" && !options.allowPlainHttp(url)) throw refuse({ kind: "plain-http-token-service", host: url.host });
  let response: Response;
  try {
    response = await fetch(url, {
      headers: basic ? { authorization: basic } : {},
      signal: AbortSignal.timeout(options.timeoutMs ?? 30_000),
    });
  } catch (error) {
    throw refuse({ kind: "token-service-unreachable", host: url.host, cause: describeFetchError(error) });
  }
  if (!response.ok) {
    await response.body?.cancel();
    throw refuse({ kind: "token-service-refused", host: url.host, status: response.status });
  }
  const body = (await response.json()) as { token?: string; access_token?: string };
  const token = body.token ?? body.access_token;
  if (!token) throw refuse({ kind: "no-token", host: url.host });
  return `Bearer ${token}`;
}

export class RegistrySource implements ImageSource {
  private authorization: string | undefined;
  private scheme: "https" | "http";
  private readonly credentials: Credentials | undefined;

  constructor(
    private readonly ref: RegistryReference,
    private readonly options: RegistryOptions,
  ) {
    this.scheme = isLoopback(ref.apiHost) ? "http" : "https";
    this.credentials = options.credentials;
  }

  private url(path: string): string {
    return `${this.scheme}://${this.ref.apiHost}/v2/${this.ref.repository}/${path}`;
  }

  /** One request, with the auth dance on a 401 and the http fallback `insecure` allows. */
  private async request(path: string, accept: string | undefined, timeout: boolean): Promise<Response> {
    const send = async (): Promise<Response> => {
      const headers: Record<string, string> = {};
      if (accept) headers.accept = accept;
      if (this.authorization) headers.authorization = this.authorization;
      const signal = timeout ? AbortSignal.timeout(this.options.timeoutMs ?? 30_000) : undefined;
      try {
        return await fetch(this.url(path), { headers, ...(signal ? { signal } : {}) });
      } catch (error) {
        if (this.options.insecure && this.scheme === "https") {
          this.scheme = "http";
          return fetch(this.url(path), { headers, ...(signal ? { signal } : {}) });
        }
        throw new ImageReadError(`cannot reach ${this.ref.apiHost}: ${describeFetchError(error)}`, "unreachable");
      }
    };
    let response = await send();
    if (response.status === 401 && !this.authorization) {
      const challenge = response.headers.get("www-authenticate");
      await response.body?.cancel();
      if (!challenge)
        throw new ImageReadError(`${this.ref.registry} refused access (401) without saying how to authenticate`, "unauthorized");
      this.authorization = await this.authorize(challenge);
      response = await send();
    }
    if (response.status === 401 || response.status === 403) {
      await response.body?.cancel();
      throw new ImageReadError(
        `${this.ref.registry} refused access to ${this.ref.repository} (${response.status})` +
          (this.credentials ? "" : `: no credentials for it in ${this.options.credentialsOrigin}`),
        "unauthorized",
      );
    }
    if (!response.ok) {
      await response.body?.cancel();
      throw new ImageReadError(
        `${this.ref.registry}: GET ${path} answered ${response.status}`,
        response.status === 404 ? "not_found" : "unreachable",
      );
    }
    return response;
  }

  private authorize(header: string): Promise<string> {
    const { registry, repository } = this.ref;
    const options = {
      credentials: this.credentials,
      scope: `repository:${repository}:pull`,
      allowPlainHttp: (realm: URL) => isLoopback(realm.host) || this.options.insecure,
      timeoutMs: this.options.timeoutMs,
    };
    return answerChallenge(header, options, (refusal) => {
      switch (refusal.kind) {
        case "needs-credentials":
          return new ImageReadError(
            `${registry} needs a username and password: none for it in ${this.options.credentialsOrigin}`,
            "unauthorized",
          );
        case "unsupported":
          return new ImageReadError(`${registry} asks for unsupported authentication ${refusal.scheme}`, "unauthorized");
        case "plain-http-token-service":
          return new ImageReadError(`the token service ${refusal.host} is plain HTTP; pass --insecure to allow it`);
        case "token-service-unreachable":
          return new ImageReadError(`cannot reach the token service ${refusal.host}: ${refusal.cause}`, "unreachable");
        case "token-service-refused":
          return new ImageReadError(`the token service ${refusal.host} answered ${refusal.status}`, "unauthorized");
        case "no-token":
          return new ImageReadError(`the token service ${refusal.host} returned no token`, "unauthorized");
      }
    });
  }

  /** The manifest or index at a tag or digest; its digest is the one asked for, else the one the registry says. */
  private async manifestAt(reference: string, digest: string | undefined): Promise<Fetched> {
    const response = await this.request(`manifests/${reference}`, manifestAccept, true);
    const bytes = Buffer.from(await response.arrayBuffer());
    const actual = digest ?? response.headers.get("docker-content-digest") ?? sha256(bytes);
    verifyDigest(bytes, actual, `manifest ${reference}`);
    return { mediaType: documentMediaType(bytes, response.headers.get("content-type") ?? ""), digest: actual, bytes };
  }

  root(): Promise<Fetched> {
    return this.manifestAt(this.ref.digest ?? this.ref.tag!, this.ref.digest);
  }

  /** The manifest or index `tag` names in this repository, or undefined when there is no such tag. */
  tagged(tag: string): Promise<Fetched | undefined> {
    return unlessNotFound(this.manifestAt(tag, undefined));
  }

  /**
   * The OCI 1.1 referrers API's index of the manifests whose subject is `digest`, filtered to `artifactType`,
   * or undefined when the registry has no referrers API (distribution 2.8 answers 404).
   */
  async referrers(digest: string, artifactType: string): Promise<Fetched | undefined> {
    const path = `referrers/${digest}?artifactType=${encodeURIComponent(artifactType)}`;
    const response = await unlessNotFound(this.request(path, mediaTypes.ociIndex, true));
    if (!response) return undefined;
    const bytes = Buffer.from(await response.arrayBuffer());
    if (!(response.headers.get("content-type") ?? "").startsWith(mediaTypes.ociIndex)) return undefined;
    return { mediaType: mediaTypes.ociIndex, digest: sha256(bytes), bytes };
  }

  async manifest(descriptor: Descriptor): Promise<Fetched> {
    const response = await this.request(`manifests/${descriptor.digest}`, manifestAccept, true);
    const bytes = Buffer.from(await response.arrayBuffer());
    verifyDigest(bytes, descriptor.digest, `manifest ${descriptor.digest}`);
    return { mediaType: documentMediaType(bytes, descriptor.mediaType), digest: descriptor.digest, bytes };
  }

  async blob(descriptor: Descriptor): Promise<AsyncIterable<Uint8Array>> {
    const response = await this.request(`blobs/${descriptor.digest}`, undefined, false);
    if (!response.body) throw new ImageReadError(`blob ${descriptor.digest} has no body`);
    return verifiedStream(
      Readable.fromWeb(response.body as import("node:stream/web").ReadableStream<Uint8Array>),
      descriptor.digest,
      `blob ${descriptor.digest}`,
    );
  }
}

/** The promise's value, or undefined when the registry answered 404. */
async function unlessNotFound<T>(promise: Promise<T>): Promise<T | undefined> {
  try {
    return await promise;
  } catch (error) {
    if (error instanceof ImageReadError && error.failure === "not_found") return undefined;
    throw error;
  }
}

function describeFetchError(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (error as Error).message;
}
