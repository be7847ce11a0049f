/**
 * The manager's plain endpoints: health probes (`/healthz`, `/readyz`) and metrics (`/metrics`),
 * each on its own bind address. Metrics can be served over HTTPS with Kubernetes authentication
 * and authorization (TokenReview + SubjectAccessReview on `get /metrics`), as the reference's
 * diagnostics endpoint does; plain HTTP otherwise (`--insecure-diagnostics`).
 */
import { readFileSync } from "node:fs";
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import type { Logger } from "pino";
import type { Registry } from "prom-client";
import { builtinTypes } from "./builtin-types.js";
import type { KubeClient, KubeObject } from "./kube-client.js";

/** A named check: resolves undefined when healthy, or a short reason when not. */
export interface Check {
  name: string;
  check(): string | undefined | Promise<string | undefined>;
}

/** Parses a Go-style bind address: `:9440`, `127.0.0.1:8080`, `[::1]:80`. `""` and `"0"` mean disabled. */
export function parseBindAddress(address: string): { host: string | undefined; port: number } | undefined {
  if (address === "" || address === "0") return undefined;
  const match = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(address);
  const port = Number(match?.[3]);
  if (!match || port > 65535) throw new Error(`invalid bind address "${address}": want host:port, e.g. ":9440"`);
  const host = match[1] ?? match[2];
  return { host: host === "" ? undefined : host, port };
}

/** Runs every check; a throwing check fails with its message. */
export async function runChecks(checks: readonly Check[]): Promise<{ ok: boolean; lines: string[] }> {
  const lines: string[] = [];
  let ok = true;
  for (const check of checks) {
    let failure: string | undefined;
    try {
      failure = await check.check();
    } catch (error) {
      failure = error instanceof Error ? error.message : String(error);
    }
    if (failure !== undefined) ok = false;
    lines.push(failure === undefined ? `[+]${check.name} ok` : `[-]${check.name} failed: ${failure}`);
  }
  return { ok, lines };
}

export interface BoundServer {
  server: Server;
  /** The actual port (useful with port 0 in tests). */
  port: number;
  close(): Promise<void>;
}

async function listen(server: Server, bind: { host: string | undefined; port: number }): Promise<BoundServer> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(bind.port, bind.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  return {
    server,
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function send(response: ServerResponse, status: number, body: string, contentType = "text/plain; charset=utf-8"): void {
  response.writeHead(status, { "Content-Type": contentType, "X-Content-Type-Options": "nosniff" });
  response.end(body);
}

/** `/healthz` and `/readyz` (add `?verbose` to list each check), controller-runtime style. */
export async function serveProbes(
  address: string,
  probes: { healthz: () => readonly Check[]; readyz: () => readonly Check[] },
  logger: Logger,
): Promise<BoundServer | undefined> {
  const bind = parseBindAddress(address);
  if (!bind) return undefined;
  const server = createHttpServer((request, response) => {
    const url = new URL(request.url ?? "/", "http://probe");
    const checks = url.pathname === "/healthz" ? probes.healthz() : url.pathname === "/readyz" ? probes.readyz() : undefined;
    if (!checks || request.method !== "GET") return send(response, 404, "404 page not found\n");
    void runChecks(checks).then(({ ok, lines }) => {
      if (!ok) logger.debug({ probe: url.pathname, lines }, "probe failed");
      const verbose = url.searchParams.has("verbose") || !ok;
      const body = verbose
        ? `${lines.join("\n")}\n${ok ? `${url.pathname.slice(1)} check passed` : `${url.pathname.slice(1)} check failed`}\n`
        : "ok";
      send(response, ok ? 200 : 500, body);
    });
  });
  return listen(server, bind);
}

/** Decides whether a bearer token may read `/metrics`. */
export type MetricsAuthorizer = (token: string) => Promise<boolean>;

export interface MetricsServerOptions {
  address: string;
  registry: Registry;
  logger: Logger;
  /** Serve HTTPS with this certificate and require an authorized bearer token; plain HTTP when absent. */
  secure?: SecureServing;
}

export interface SecureServing {
  certFile: string;
  keyFile: string;
  authorize: MetricsAuthorizer;
  /** Default TLSv1.2. */
  minVersion?: "TLSv1.2" | "TLSv1.3";
  /** OpenSSL names of TLS 1.2 suites; TLS 1.3's stay enabled. Default Node's. */
  ciphers?: readonly string[];
  /** OpenSSL curve names. Default Node's. */
  curves?: readonly string[];
}

const tls13Suites = ["TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"];

/** Node's TLS options for {@link SecureServing}: reads the key pair now, so a missing file fails at start. */
export function tlsServerOptions(secure: SecureServing): {
  cert: Buffer;
  key: Buffer;
  minVersion: "TLSv1.2" | "TLSv1.3";
  ciphers?: string;
  ecdhCurve?: string;
} {
  const ciphers = secure.ciphers && secure.ciphers.length > 0 ? [...new Set([...tls13Suites, ...secure.ciphers])].join(":") : undefined;
  const curves = secure.curves && secure.curves.length > 0 ? secure.curves.join(":") : undefined;
  return {
    cert: readFileSync(secure.certFile),
    key: readFileSync(secure.keyFile),
    minVersion: secure.minVersion ?? "TLSv1.2",
    ...(ciphers ? { ciphers } : {}),
    ...(curves ? { ecdhCurve: curves } : {}),
  };
}

export async function serveMetrics(options: MetricsServerOptions): Promise<BoundServer | undefined> {
  const bind = parseBindAddress(options.address);
  if (!bind) return undefined;
  const handler = (request: IncomingMessage, response: ServerResponse) => {
    const url = new URL(request.url ?? "/", "http://metrics");
    if (url.pathname !== "/metrics" || request.method !== "GET") return send(response, 404, "404 page not found\n");
    void (async () => {
      if (options.secure) {
        const token = /^Bearer (.+)$/i.exec(request.headers.authorization ?? "")?.[1];
        if (!token) return send(response, 401, "Unauthorized\n");
        let allowed = false;
        try {
          allowed = await options.secure.authorize(token);
        } catch (error) {
          options.logger.warn({ err: error }, "metrics authorization failed");
          return send(response, 500, "authorization failed\n");
        }
        if (!allowed) return send(response, 403, "Forbidden\n");
      }
      try {
        send(response, 200, await options.registry.metrics(), options.registry.contentType);
      } catch (error) {
        options.logger.error({ err: error }, "collecting metrics failed");
        send(response, 500, "collecting metrics failed\n");
      }
    })();
  };
  const server = options.secure ? createHttpsServer(tlsServerOptions(options.secure), handler) : createHttpServer(handler);
  return listen(server, bind);
}

interface Review extends KubeObject {
  spec?: unknown;
  status?: {
    authenticated?: boolean;
    allowed?: boolean;
    user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
  };
}

/**
 * Authenticates a token with a TokenReview and authorizes `get` on the non-resource URL `/metrics`
 * with a SubjectAccessReview; answers are cached for `cacheMillis` (default 60 s) per token.
 */
export function kubeMetricsAuthorizer(client: KubeClient, cacheMillis = 60_000, now: () => number = Date.now): MetricsAuthorizer {
  const cache = new Map<string, { allowed: boolean; until: number }>();
  return async (token) => {
    const cached = cache.get(token);
    if (cached && cached.until > now()) return cached.allowed;
    const review = await client.create<Review>(builtinTypes.tokenReview, undefined, {
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenReview",
      spec: { token },
    } as Review);
    let allowed = false;
    const user = review.status?.user;
    if (review.status?.authenticated && user) {
      const access = await client.create<Review>(builtinTypes.subjectAccessReview, undefined, {
        apiVersion: "authorization.k8s.io/v1",
        kind: "SubjectAccessReview",
        spec: {
          user: user.username,
          uid: user.uid,
          groups: user.groups,
          extra: user.extra,
          nonResourceAttributes: { path: "/metrics", verb: "get" },
        },
      } as Review);
      allowed = access.status?.allowed === true;
    }
    if (cache.size > 1000) cache.clear();
    cache.set(token, { allowed, until: now() + cacheMillis });
    return allowed;
  };
}
