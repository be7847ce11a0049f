import { randomBytes, timingSafeEqual } from "node:crypto";
import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { join } from "node:path";
import type { BrokerRefusal as Refusal, BrokerSummary } from "@captf/contract/run-result";
import { type ApiEndpoint, type EventRecorder, idleConnectionMillis } from "../events.js";
import { brokerKubeconfigFile } from "./connection.js";
import { checkBody, decideRequest, narrowListQuery, narrowSecretList, type BrokerScope } from "./policy.js";
import { decodeProtobufObject, protobufContentType } from "./protobuf.js";

/**
 * The state broker: an HTTP server on loopback, in its own container of the Job's Pod, that holds
 * the Job's ServiceAccount token and forwards to the API server only what {@link decideRequest}
 * allows. The module's container reaches it through a kubeconfig the broker writes into a volume
 * both mount; the per-run token in it keeps out everything else that shares the network. The token
 * is the server URL's first path segment, not a bearer token: client-go sends credentials over TLS
 * only, and a plain loopback port has none.
 */

/** State Secrets are at most 1 MiB, base64 in JSON about 1.4 MiB; anything larger is not a state request. */
const maxBodyBytes = 4 * 1024 * 1024;
/** Refusals logged one by one; past this only counted, so a hostile loop cannot flood the log. */
const maxLoggedRefusals = 100;
const maxRefusalPathLength = 256;
/** Refusals kept for the summary (the termination message holds 4096 bytes). */
const maxSummaryRefusals = 5;
/** The header whose value marks the broker's own warm-up request. */
const warmUpHeader = "x-captf-broker-warm-up";
/** The warm-up's user agent, as the API server (and its audit log) sees it. */
export const brokerWarmUpUserAgent = "captf-state-broker (warm-up)";

export interface BrokerOptions {
  scope: BrokerScope;
  /** Where the kubeconfig goes: a volume the module's container mounts read-only. */
  dir: string;
  upstream: ApiEndpoint;
  /** Events about refusals (the first of the Job's), posted straight to the API server. */
  events: EventRecorder;
  log: (level: "info" | "warn", message: string, fields?: Record<string, unknown>) => void;
  /** Log every request, allowed ones too: how the requests each runtime makes were measured. */
  logRequests?: boolean;
}

export interface RunningBroker {
  port: number;
  /** Stops serving and returns what the broker saw. */
  close(): Promise<BrokerSummary>;
}

function status(response: ServerResponse, code: number, reason: string, message: string): void {
  const body = JSON.stringify({ kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", message, reason, code });
  response.writeHead(code, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body) });
  response.end(body);
}

function readBody(request: IncomingMessage): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBodyBytes) {
        resolve(undefined);
        request.destroy();
        return;
      }
      chunks.push(chunk);
    });
    request.on("end", () => resolve(Buffer.concat(chunks)));
    request.on("error", reject);
  });
}

/** The kubeconfig the backend reads (`config_path`): JSON, which client-go reads as YAML. */
export function brokerKubeconfig(port: number, token: string, namespace: string): string {
  return JSON.stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "captf-broker", cluster: { server: `http://127.0.0.1:${port}/${token}` } }],
    users: [{ name: "captf-run", user: {} }],
    contexts: [{ name: "captf", context: { cluster: "captf-broker", user: "captf-run", namespace } }],
    "current-context": "captf",
  });
}

/** What one broker holds while it serves: its options, the run's token, the upstream client and the summary. */
interface BrokerSession {
  options: BrokerOptions;
  http: typeof import("node:http");
  upstreamUrl: URL;
  /** Made on the first forwarded request (the warm-up's), beside the module's own start: the runner waits for the kubeconfig, not TLS. */
  upstreamClient?: { client: typeof import("node:http"); agent: import("node:http").Agent };
  token: string;
  /** The path prefix every request must carry: `/<token>/`. */
  expected: Buffer;
  /** Marks the broker's own warm-up request, which no summary counts: only the broker knows it. */
  warmUpMark: string;
  summary: BrokerSummary;
}

export async function startBroker(options: BrokerOptions): Promise<RunningBroker> {
  const { scope, upstream, log } = options;
  // Builtins through getBuiltinModule: an import() of them in the CommonJS bundle starts Node's ES module loader, tens of milliseconds.
  const http = process.getBuiltinModule("node:http");
  const token = randomBytes(32).toString("hex");
  const session: BrokerSession = {
    options,
    http,
    upstreamUrl: new URL(upstream.server),
    token,
    expected: Buffer.from(`/${token}/`),
    warmUpMark: randomBytes(16).toString("hex"),
    summary: { requests: 0, allowed: 0, refused: 0, refusedByTarget: {}, refusals: [] },
  };
  const server: Server = http.createServer((request, response) => {
    handleRequest(session, request, response).catch((error: unknown) => {
      log("warn", "request failed", { error: (error as Error).message });
      if (!response.headersSent) status(response, 500, "InternalError", "captf state broker: internal error");
    });
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.once("error", reject);
    // Port 0: Pods may share the node's network, so no fixed port; the kubeconfig says which.
    server.listen(0, "127.0.0.1", () => resolve((server.address() as { port: number }).port));
  });
  writeBrokerKubeconfig(options.dir, brokerKubeconfig(port, token, scope.namespace));
  warmUp(http, port, `/${token}/api/v1/namespaces/${scope.namespace}/secrets/${scope.stateSecret}`, session.warmUpMark);
  log("info", "serving", {
    port,
    namespace: scope.namespace,
    stateSecret: scope.stateSecret,
    lockLease: scope.lockLease,
    object: `${scope.object.kind}/${scope.object.name}`,
  });

  return {
    port,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      session.upstreamClient?.agent.destroy();
      return session.summary;
    },
  };
}

/** Written whole, then renamed: the runner waits for the name and must never read half a file. */
function writeBrokerKubeconfig(dir: string, kubeconfig: string): void {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, brokerKubeconfigFile);
  writeFileSync(`${file}.tmp`, kubeconfig, { mode: 0o440 });
  chmodSync(`${file}.tmp`, 0o440);
  renameSync(`${file}.tmp`, file);
}

/** One request from the module's container: the token, then {@link decideRequest}, then the body, then forwarded. */
async function handleRequest(session: BrokerSession, request: IncomingMessage, response: ServerResponse): Promise<void> {
  const { scope } = session.options;
  const warmingUp = request.headers[warmUpHeader] === session.warmUpMark;
  if (!warmingUp) session.summary.requests++;
  const method = request.method ?? "GET";
  const url = new URL(request.url ?? "/", "http://broker");
  const { expected } = session;
  const presented = Buffer.from(url.pathname.slice(0, expected.length));
  if (presented.length !== expected.length || !timingSafeEqual(presented, expected)) {
    request.resume();
    // The path without its first segment: that may be a guess at the token.
    const path = url.pathname.replace(/^\/[^/]*/, "/…");
    refuse(session, response, { method, path, target: "other", why: "the request does not carry this Job's broker token" }, 401);
    return;
  }
  const path = url.pathname.slice(expected.length - 1);
  const decision = decideRequest(scope, method, path, url.searchParams);
  if (session.options.logRequests) session.options.log("info", "request", { method, path, query: url.search, allowed: decision.allowed });
  if (!decision.allowed) {
    request.resume();
    refuse(session, response, { method, path, target: decision.target, why: decision.why });
    return;
  }
  const body = method === "GET" || method === "DELETE" ? undefined : await readBody(request);
  if (method !== "GET" && method !== "DELETE" && body === undefined) {
    refuse(session, response, { method, path, target: decision.target, why: `the body is larger than ${maxBodyBytes} bytes` });
    return;
  }
  if (decision.bodyCheck) {
    const parsed = parseBody(request.headers["content-type"] ?? "", body!);
    const pathName = decision.bodyCheck === "event-regarding" ? undefined : path.split("/").at(-1);
    const collection = method === "POST";
    const why =
      parsed === undefined
        ? "the body must be a JSON or protobuf object"
        : checkBody(scope, decision.bodyCheck, parsed, collection ? undefined : pathName);
    if (why) {
      // A body naming something else is aimed at another object, not at this one's state or lock.
      refuse(session, response, { method, path, target: decision.bodyCheck === "event-regarding" ? "event" : "other", why });
      return;
    }
  }
  if (!warmingUp) session.summary.allowed++;
  const query = decision.filterList ? narrowListQuery(scope, url.searchParams) : url.searchParams;
  forward(session, request, response, `${path}${query.size > 0 ? `?${query}` : ""}`, body, decision.filterList === true);
}

/** Answers 403 (or 401) and records the refusal: counted, logged up to a bound, the Job's first one as an event. */
function refuse(session: BrokerSession, response: ServerResponse, asked: Refusal, code = 403): void {
  const { summary, options } = session;
  // A path is whatever module code sent: kept short in logs, the event and the summary.
  const refusal = {
    ...asked,
    path: asked.path.length > maxRefusalPathLength ? `${asked.path.slice(0, maxRefusalPathLength)}…` : asked.path,
  };
  summary.refused++;
  summary.refusedByTarget[refusal.target] = (summary.refusedByTarget[refusal.target] ?? 0) + 1;
  if (summary.refusals.length < maxSummaryRefusals) summary.refusals.push(refusal);
  if (summary.refused <= maxLoggedRefusals) options.log("warn", "request refused", { ...refusal });
  if (summary.refused === 1) {
    const note =
      `the state broker refused ${refusal.method} ${refusal.path}: ${refusal.why}. Module code may reach only this ` +
      `object's state, lock and events; this Job's further refusals are counted in the broker's log and termination message`;
    options.events.emit("Warning", "BrokerRefused", "Refuse", note);
  }
  status(response, code, code === 401 ? "Unauthorized" : "Forbidden", `captf state broker: ${refusal.why}`);
}

/** The upstream client, made on first use: https with the cluster's CA, or http, over one keep-alive agent. */
function upstreamClientOf(session: BrokerSession): NonNullable<BrokerSession["upstreamClient"]> {
  if (session.upstreamClient) return session.upstreamClient;
  const { http, upstreamUrl } = session;
  const { ca } = session.options.upstream;
  const client = upstreamUrl.protocol === "https:" ? (process.getBuiltinModule("node:https") as unknown as typeof http) : http;
  const agent = new client.Agent({ keepAlive: true, timeout: idleConnectionMillis, ...(ca ? { ca } : {}) });
  session.upstreamClient = { client, agent };
  return session.upstreamClient;
}

/** The job's token, read per request: the kubelet rotates the projected token. */
function upstreamToken(tokenFile: string | undefined): string | undefined {
  if (!tokenFile) return undefined;
  try {
    return readFileSync(tokenFile, "utf8").trim();
  } catch {
    return undefined;
  }
}

/** Sends an allowed request on with the Job's token; a narrowed list comes back with only this object's state. */
function forward(
  session: BrokerSession,
  request: IncomingMessage,
  response: ServerResponse,
  path: string,
  body: Buffer | undefined,
  narrow: boolean,
): void {
  const { options, upstreamUrl } = session;
  const { client, agent } = upstreamClientOf(session);
  const headers: Record<string, string | number> = {};
  for (const name of ["accept", "content-type", "user-agent"]) {
    const value = request.headers[name];
    if (typeof value === "string") headers[name] = value;
  }
  // A narrowed list is read as JSON, whatever encoding the client would have taken.
  if (narrow) headers.accept = "application/json";
  if (body) headers["content-length"] = body.length;
  const bearer = upstreamToken(options.upstream.tokenFile);
  if (bearer) headers.authorization = `Bearer ${bearer}`;
  const outgoing = client.request(new URL(path, upstreamUrl), { method: request.method, headers, agent }, (answer) => {
    if (!narrow || (answer.statusCode ?? 0) >= 300) {
      response.writeHead(answer.statusCode ?? 502, filterResponseHeaders(answer.headers));
      answer.pipe(response);
      return;
    }
    const chunks: Buffer[] = [];
    answer.on("data", (chunk: Buffer) => chunks.push(chunk));
    answer.on("end", () => {
      let text: string;
      try {
        text = JSON.stringify(narrowSecretList(options.scope, JSON.parse(Buffer.concat(chunks).toString("utf8"))));
      } catch {
        status(response, 502, "BadGateway", "captf state broker: the API server's list was not JSON");
        return;
      }
      response.writeHead(answer.statusCode ?? 200, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
      response.end(text);
    });
  });
  outgoing.on("error", (error) => {
    options.log("warn", "the API server could not be reached", { method: request.method, path: request.url, error: error.message });
    if (!response.headersSent)
      status(response, 502, "BadGateway", `captf state broker: the API server could not be reached: ${error.message}`);
    else response.destroy();
  });
  outgoing.end(body);
}

/**
 * Sends the broker one request of the kind the backend's first one is (a GET of the state Secret),
 * before that comes: Node compiles its HTTP server, the forwarding and the upstream TLS client on
 * first use, and the TLS connection is then open in the agent's pool. Its answer (found or not) is
 * dropped; an unreachable API server is reported by the real requests.
 */
function warmUp(http: typeof import("node:http"), port: number, path: string, mark: string): void {
  const headers = { [warmUpHeader]: mark, "user-agent": brokerWarmUpUserAgent };
  const request = http.request({ host: "127.0.0.1", port, path, agent: false, headers }, (answer) => answer.resume());
  request.on("error", () => {});
  request.end();
}

/** A request body as the object it encodes, JSON or (built-in kinds from newer client-go) protobuf; undefined when neither. */
function parseBody(contentType: string, body: Buffer): unknown {
  if (contentType.startsWith(protobufContentType)) return decodeProtobufObject(body);
  if (!contentType.startsWith("application/json")) return undefined;
  try {
    return JSON.parse(body.toString("utf8"));
  } catch {
    return undefined;
  }
}

function filterResponseHeaders(headers: IncomingMessage["headers"]): Record<string, string | string[]> {
  const kept: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || name === "connection" || name === "keep-alive" || name === "transfer-encoding") continue;
    kept[name] = value;
  }
  return kept;
}
