// A counting reverse proxy for bench/controller.mjs: HTTPS in front of a kube-apiserver, so the
// manager speaks to it exactly as to the real server (TLS, bearer token), while every request is
// counted by verb and resource (watches apart), with its status code and its time to the last
// byte, and every TLS handshake is counted (a client that opens a connection per request shows).
import { readFileSync } from "node:fs";
import { Agent as HttpsAgent, createServer, request as httpsRequest } from "node:https";

/**
 * `verb resource[/subresource]` of one API request, as the API server's audit log names them:
 * get, list, watch, create, update, patch, delete, deletecollection; non-resource paths
 * (discovery, /version, /openapi) as `GET /path`.
 */
export function classify(method, rawUrl) {
  const url = new URL(rawUrl, "https://proxy.invalid");
  const match = /^\/(?:api\/[^/]+|apis\/[^/]+\/[^/]+)(\/.*)?$/.exec(url.pathname);
  const rest = match?.[1]?.split("/").filter(Boolean);
  if (!rest || rest.length === 0) return { verb: method, resource: url.pathname, watch: false, nonResource: true };
  let parts = rest;
  if (parts[0] === "namespaces" && parts.length >= 3) parts = parts.slice(2);
  const [resource, name, subresource] = parts;
  const watch = method === "GET" && (url.searchParams.get("watch") === "true" || url.searchParams.get("watch") === "1");
  const verb =
    method === "GET"
      ? watch
        ? "watch"
        : name
          ? "get"
          : "list"
      : method === "POST"
        ? "create"
        : method === "PUT"
          ? "update"
          : method === "PATCH"
            ? "patch"
            : method === "DELETE"
              ? name
                ? "delete"
                : "deletecollection"
              : method.toLowerCase();
  return { verb, resource: subresource ? `${resource}/${subresource}` : resource, watch, nonResource: false };
}

export class RequestCounts {
  /** key `verb resource` → { count, millis, codes: { code: n } } */
  byKey = new Map();
  tlsHandshakes = 0;

  record(key, code, millis) {
    let entry = this.byKey.get(key);
    if (!entry) this.byKey.set(key, (entry = { count: 0, millis: 0, codes: {} }));
    entry.count++;
    entry.millis += millis;
    entry.codes[code] = (entry.codes[code] ?? 0) + 1;
  }

  /** A frozen copy, for differences between two moments. */
  snapshot() {
    const copy = new Map();
    for (const [key, entry] of this.byKey) copy.set(key, { count: entry.count, millis: entry.millis, codes: { ...entry.codes } });
    return { byKey: copy, tlsHandshakes: this.tlsHandshakes };
  }
}

/** `after - before` of two snapshots. */
export function difference(after, before) {
  const byKey = new Map();
  for (const [key, entry] of after.byKey) {
    const old = before?.byKey.get(key);
    const count = entry.count - (old?.count ?? 0);
    if (count === 0) continue;
    const codes = {};
    for (const [code, n] of Object.entries(entry.codes)) if (n - (old?.codes[code] ?? 0) > 0) codes[code] = n - (old?.codes[code] ?? 0);
    byKey.set(key, { count, millis: entry.millis - (old?.millis ?? 0), codes });
  }
  return { byKey, tlsHandshakes: after.tlsHandshakes - (before?.tlsHandshakes ?? 0) };
}

/**
 * Listens on a loopback port with the API server's own serving certificate (so the plane's CA
 * verifies it) and forwards each request, headers and token included, over kept-alive
 * connections to `upstream`.
 */
export async function startCountingProxy({ upstream, caFile, certFile, keyFile }) {
  const target = new URL(upstream);
  const ca = readFileSync(caFile);
  const agent = new HttpsAgent({ keepAlive: true, ca, maxFreeSockets: 64 });
  const counts = new RequestCounts();
  const open = new Set();
  const server = createServer({ cert: readFileSync(certFile), key: readFileSync(keyFile) }, (req, res) => {
    const started = performance.now();
    const { verb, resource, watch } = classify(req.method ?? "GET", req.url ?? "/");
    const key = `${verb} ${resource}`;
    const headers = { ...req.headers, host: target.host };
    const upstreamRequest = httpsRequest(
      { hostname: target.hostname, port: target.port, path: req.url, method: req.method, headers, agent },
      (upstreamResponse) => {
        res.writeHead(upstreamResponse.statusCode ?? 502, upstreamResponse.headers);
        if (watch) res.flushHeaders();
        upstreamResponse.pipe(res);
        upstreamResponse.on("end", () => {
          if (!watch) counts.record(key, upstreamResponse.statusCode ?? 0, performance.now() - started);
        });
      },
    );
    // A watch is counted when it opens; its duration is its life, not a latency.
    if (watch) counts.record(key, 200, 0);
    upstreamRequest.on("error", (error) => {
      counts.record(key, "proxy-error", performance.now() - started);
      if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" });
      res.end(String(error));
    });
    // The client went away (a watch aborted): close the upstream side too.
    res.on("close", () => {
      if (!res.writableFinished) upstreamRequest.destroy();
    });
    req.pipe(upstreamRequest);
  });
  server.on("secureConnection", (socket) => {
    counts.tlsHandshakes++;
    open.add(socket);
    socket.on("close", () => open.delete(socket));
  });
  server.on("tlsClientError", () => {});
  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const { port } = server.address();
  return {
    url: `https://127.0.0.1:${port}`,
    counts,
    async close() {
      for (const socket of open) socket.destroy();
      await new Promise((resolve) => server.close(() => resolve()));
      agent.destroy();
    },
  };
}
