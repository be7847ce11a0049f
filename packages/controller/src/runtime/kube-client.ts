/**
 * A small JSON client for the Kubernetes API: any resource by group/version/plural, raw objects in
 * and out (no class conversion, so a watched object and a listed one look the same), typed errors,
 * and a watch stream the informer can abort. Authentication and TLS come from client-node's
 * `KubeConfig`; connections are kept alive and reused, closed after 30 s unused, and a request the
 * server dropped as it reused a connection is sent once more when that is safe (stale-connection.ts).
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage, type RequestOptions } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import type { Socket } from "node:net";
import { createInterface } from "node:readline";
import type { KubeConfig } from "@kubernetes/client-node";
import type { ResourceType } from "../api/resource.js";
import { KubeApiError, type KubeStatus } from "./api-errors.js";
import { failedOnClosedIdleConnection, idleConnectionMillis, isReplayable } from "./stale-connection.js";

// Where a kind lives is an API fact; the client names it too for the callers that import it from here.
export type { ResourceType };

/** The metadata every object has; enough for caches, keys and indexes. */
export interface ObjectMeta {
  name?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string; controller?: boolean }[];
  deletionTimestamp?: string;
  [field: string]: unknown;
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
}

export interface KubeList<T = KubeObject> {
  apiVersion?: string;
  kind?: string;
  metadata?: { resourceVersion?: string; continue?: string };
  items: T[];
}

/** One line of a watch stream. */
export interface WatchEvent<T extends KubeObject = KubeObject> {
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";
  object: T;
}

/** Go's metav1.MicroTime text (a Lease's renewTime, an Event's eventTime): RFC 3339 with exactly six fractional digits. */
export function microTime(millis: number): string {
  return new Date(millis).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

/** `/api/v1/namespaces/ns/configmaps/name`, `/apis/group/version/plural`, … */
export function resourcePath(type: ResourceType, namespace?: string, name?: string, subresource?: string): string {
  const base = type.group === "" ? `/api/${type.version}` : `/apis/${type.group}/${type.version}`;
  const scope = type.namespaced && namespace ? `/namespaces/${encodeURIComponent(namespace)}` : "";
  const object = name ? `/${encodeURIComponent(name)}${subresource ? `/${subresource}` : ""}` : "";
  return `${base}${scope}/${type.plural}${object}`;
}

/** The `apiVersion` of objects of `type`. */
export function apiVersionOf(type: ResourceType): string {
  return type.group === "" ? type.version : `${type.group}/${type.version}`;
}

export type Query = Record<string, string | number | boolean | undefined>;

export interface KubeRequestOptions {
  query?: Query;
  body?: unknown;
  /** Default `application/json`; patches name their kind (`application/merge-patch+json`, …). */
  contentType?: string;
  signal?: AbortSignal;
  /** Whole-request timeout. Default: the client's (30 s). */
  timeoutMillis?: number;
}

/** What the client reports per request; the metrics module counts them (`rest_client_requests_total`). */
export interface KubeClientMetricsSink {
  request(method: string, statusCode: number, seconds: number): void;
}

export interface KubeClientOptions {
  /** Default timeout of a non-watch request. Default 30 s. */
  timeoutMillis?: number;
  metrics?: KubeClientMetricsSink;
  /** Extra headers on every request (e.g. a User-Agent). */
  userAgent?: string;
  /** How long an unused kept-alive connection stays open. Default 30 s. */
  idleConnectionMillis?: number;
}

/** Which patch a body is; strategic merges lists by key (ownerReferences by uid, `$setElementOrder`), merge replaces them. */
export type PatchType = "merge" | "strategic" | "json" | "apply";
const patchContentTypes: Record<PatchType, string> = {
  merge: "application/merge-patch+json",
  strategic: "application/strategic-merge-patch+json",
  json: "application/json-patch+json",
  apply: "application/apply-patch+yaml",
};

/** A delete's `metav1.DeleteOptions`. */
export interface DeleteOptions {
  /** The delete applies only to the object with this uid and resourceVersion: a changed or re-created one stays (409). */
  preconditions?: { uid?: string | undefined; resourceVersion?: string | undefined };
  propagationPolicy?: "Background" | "Foreground" | "Orphan";
  gracePeriodSeconds?: number;
}

/**
 * The one way the manager's code talks to the API server: a {@link KubeClient}, or one with its
 * writes recorded for the read cache (runtime/recorded-writes.ts). Objects are plain JSON: times
 * are RFC 3339 strings, never Dates.
 */
export type KubeApi = Pick<KubeClient, "get" | "list" | "create" | "replace" | "patch" | "patchStatus" | "delete">;

export class KubeClient {
  readonly #kubeConfig: KubeConfig;
  readonly #server: URL;
  readonly #timeoutMillis: number;
  readonly #metrics: KubeClientMetricsSink | undefined;
  readonly #userAgent: string;
  readonly #idleConnectionMillis: number;
  #agent: { key: string; agent: HttpAgent } | undefined;

  constructor(kubeConfig: KubeConfig, options: KubeClientOptions = {}) {
    const cluster = kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error("the kubeconfig has no current cluster");
    this.#kubeConfig = kubeConfig;
    this.#server = new URL(cluster.server);
    this.#timeoutMillis = options.timeoutMillis ?? 30_000;
    this.#metrics = options.metrics;
    this.#userAgent = options.userAgent ?? "captf-manager";
    this.#idleConnectionMillis = options.idleConnectionMillis ?? idleConnectionMillis;
  }

  /** One request; parses the JSON answer, throws {@link KubeApiError} on a non-2xx status. */
  async request<T>(method: string, path: string, options: KubeRequestOptions = {}): Promise<T> {
    const started = performance.now();
    let statusCode = 0;
    try {
      const response = await this.#send(method, path, options, options.timeoutMillis ?? this.#timeoutMillis);
      statusCode = response.statusCode ?? 0;
      const text = await readBody(response);
      if (statusCode < 200 || statusCode > 299) throw apiError(statusCode, text, method, path);
      return (text ? JSON.parse(text) : undefined) as T;
    } finally {
      this.#metrics?.request(method, statusCode, (performance.now() - started) / 1000);
    }
  }

  get<T = KubeObject>(type: ResourceType, namespace: string | undefined, name: string, options?: KubeRequestOptions): Promise<T> {
    return this.request<T>("GET", resourcePath(type, namespace, name), options);
  }

  /** One page, or all objects when the query sets no `limit`; `namespace` undefined lists across all namespaces. */
  list<T = KubeObject>(
    type: ResourceType,
    namespace: string | undefined,
    query?: Query,
    options?: KubeRequestOptions,
  ): Promise<KubeList<T>> {
    return this.request<KubeList<T>>("GET", resourcePath(type, namespace), { ...options, query: { ...options?.query, ...query } });
  }

  create<T = KubeObject>(type: ResourceType, namespace: string | undefined, body: T, options?: KubeRequestOptions): Promise<T> {
    return this.request<T>("POST", resourcePath(type, namespace), { ...options, body });
  }

  replace<T = KubeObject>(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    body: T,
    options?: KubeRequestOptions,
  ): Promise<T> {
    return this.request<T>("PUT", resourcePath(type, namespace, name), { ...options, body });
  }

  patch<T = KubeObject>(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    patch: unknown,
    patchType: PatchType = "merge",
    options?: KubeRequestOptions & { subresource?: string },
  ): Promise<T> {
    return this.request<T>("PATCH", resourcePath(type, namespace, name, options?.subresource), {
      ...options,
      body: patch,
      contentType: patchContentTypes[patchType],
    });
  }

  /** A patch of the `status` subresource (the only way to write a status where the CRD has one). */
  patchStatus<T = KubeObject>(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    patch: unknown,
    patchType: PatchType = "merge",
    options?: KubeRequestOptions,
  ): Promise<T> {
    return this.patch<T>(type, namespace, name, patch, patchType, { ...options, subresource: "status" });
  }

  /** Deletes one object; `body` carries the preconditions and propagation policy. Answers the Status or the object being deleted. */
  delete<T = KubeStatus>(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    body?: DeleteOptions,
    options?: KubeRequestOptions,
  ): Promise<T> {
    return this.request<T>("DELETE", resourcePath(type, namespace, name), { ...options, body });
  }

  /**
   * Streams a watch: calls `onEvent` per line until the server ends the stream (resolves) or the
   * connection fails, the server refuses (rejects with {@link KubeApiError}) or `signal` aborts
   * (rejects with an `AbortError`). Lines that do not parse go to `onUnparsable`.
   */
  async watch<T extends KubeObject>(
    path: string,
    query: Query,
    onEvent: (event: WatchEvent<T>) => void,
    options: { signal?: AbortSignal; onUnparsable?: (line: string) => void } = {},
  ): Promise<void> {
    const started = performance.now();
    const response = await this.#send("GET", path, { query: { ...query, watch: true }, signal: options.signal }, undefined);
    const statusCode = response.statusCode ?? 0;
    this.#metrics?.request("WATCH", statusCode, (performance.now() - started) / 1000);
    if (statusCode !== 200) throw apiError(statusCode, await readBody(response), "WATCH", path);
    await new Promise<void>((resolve, reject) => {
      const lines = createInterface({ input: response, crlfDelay: Infinity });
      let settled = false;
      const settle = (error?: unknown) => {
        if (settled) return;
        settled = true;
        lines.close();
        if (error) {
          response.destroy();
          reject(error);
        } else resolve();
      };
      // A stream that stops before its end is a cut connection unless we aborted it ourselves.
      const cut = () => (options.signal?.aborted ? abortError() : new Error(`watch ${path}: connection closed before the stream ended`));
      lines.on("line", (line) => {
        if (settled || line.trim() === "") return;
        let event: WatchEvent<T>;
        try {
          event = JSON.parse(line) as WatchEvent<T>;
        } catch {
          options.onUnparsable?.(line);
          return;
        }
        try {
          onEvent(event);
        } catch (error) {
          settle(error);
        }
      });
      const onError = (error: unknown) => settle(options.signal?.aborted ? abortError() : error);
      // readline re-emits its input's errors: both need a listener, or a cut connection crashes the process.
      response.on("error", onError);
      lines.on("error", onError);
      lines.on("close", () => settle(response.complete ? undefined : cut()));
    });
  }

  async #send(method: string, path: string, options: KubeRequestOptions, timeoutMillis: number | undefined): Promise<IncomingMessage> {
    const url = new URL(path, this.#server);
    url.pathname = `${this.#server.pathname.replace(/\/$/, "")}${path}`;
    for (const [key, value] of Object.entries(options.query ?? {})) if (value !== undefined) url.searchParams.set(key, String(value));
    const tls: RequestOptions & Record<string, unknown> = {};
    await this.#kubeConfig.applyToHTTPSOptions(tls);
    const headers: Record<string, string> = { Accept: "application/json", "User-Agent": this.#userAgent };
    for (const [key, value] of Object.entries(tls.headers ?? {})) if (value !== undefined) headers[key] = String(value);
    if (tls.auth) headers.Authorization = `Basic ${Buffer.from(String(tls.auth)).toString("base64")}`;
    let payload: string | undefined;
    if (options.body !== undefined) {
      payload = typeof options.body === "string" ? options.body : JSON.stringify(options.body);
      headers["Content-Type"] = options.contentType ?? "application/json";
      headers["Content-Length"] = String(Buffer.byteLength(payload));
    }
    const agent = this.#reusableAgent(tls);
    const send = url.protocol === "http:" ? httpRequest : httpsRequest;
    // A watch has no timeout (0): the agent's idle timeout must not cut a quiet stream.
    const request = { method, headers, agent, signal: options.signal, timeout: timeoutMillis ?? 0 };
    const attempt = () => sendOnce(send, url, request, payload, `${method} ${path}`);
    try {
      return await attempt();
    } catch (error) {
      if (!(error instanceof ClosedIdleConnection)) throw error;
      if (!isReplayable(method, options.body)) throw error.cause;
      // The pool's other idle connections are older than the one the server closed: open a new one.
      dropIdleConnections(agent);
      return attempt().catch((again: unknown) => {
        throw again instanceof ClosedIdleConnection ? again.cause : again;
      });
    }
  }

  /** One keep-alive agent per TLS identity; a proxy's agent (from client-node) is used as it comes. */
  #reusableAgent(tls: RequestOptions & Record<string, unknown>): HttpAgent {
    if (this.#kubeConfig.getCurrentCluster()?.proxyUrl && tls.agent) return tls.agent as HttpAgent;
    const material = { ca: tls.ca, cert: tls.cert, key: tls.key, rejectUnauthorized: tls.rejectUnauthorized, servername: tls.servername };
    const key = JSON.stringify(material, (_k, v: unknown) => (Buffer.isBuffer(v) ? v.toString("base64") : v));
    if (this.#agent?.key !== key) {
      this.#agent?.agent.destroy();
      const agent =
        this.#server.protocol === "http:"
          ? new HttpAgent({ keepAlive: true, timeout: this.#idleConnectionMillis })
          : new HttpsAgent({
              keepAlive: true,
              timeout: this.#idleConnectionMillis,
              ...(material as Record<string, unknown>),
            } as ConstructorParameters<typeof HttpsAgent>[0]);
      this.#agent = { key, agent };
    }
    return this.#agent.agent;
  }

  /** Closes idle kept-alive connections. */
  close(): void {
    this.#agent?.agent.destroy();
    this.#agent = undefined;
  }
}

/** A request that failed on a kept-alive connection the server closed before answering; `cause` is Node's error. */
class ClosedIdleConnection extends Error {}

/** Sends one request; a failure on a reused connection the server closed unanswered rejects with {@link ClosedIdleConnection}. */
function sendOnce(
  send: typeof httpRequest,
  url: URL,
  options: RequestOptions & { method: string; timeout: number },
  payload: string | undefined,
  what: string,
): Promise<IncomingMessage> {
  const { signal, timeout } = options;
  return new Promise<IncomingMessage>((resolve, reject) => {
    if (signal?.aborted) return reject(abortError());
    const request = send(url, options, resolve);
    let socket: Socket | undefined;
    let readBefore = 0;
    request.on("socket", (assigned) => {
      socket = assigned;
      readBefore = assigned.bytesRead;
    });
    request.on("error", (error) => {
      if (signal?.aborted) return reject(abortError());
      const answered = (socket?.bytesRead ?? readBefore) - readBefore;
      reject(
        failedOnClosedIdleConnection(error, request.reusedSocket, answered)
          ? new ClosedIdleConnection(error.message, { cause: error })
          : error,
      );
    });
    request.on("timeout", () => request.destroy(new Error(`${what}: no answer within ${timeout} ms`)));
    if (payload !== undefined) request.write(payload);
    request.end();
  });
}

function dropIdleConnections(agent: HttpAgent): void {
  for (const sockets of Object.values(agent.freeSockets)) for (const socket of sockets ?? []) socket.destroy();
}

function readBody(response: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    response.on("data", (chunk: Buffer) => chunks.push(chunk));
    response.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    response.on("error", reject);
  });
}

function apiError(statusCode: number, text: string, method: string, path: string): KubeApiError {
  let status: KubeStatus | undefined;
  try {
    status = JSON.parse(text) as KubeStatus;
  } catch {
    status = undefined;
  }
  const detail = status?.message ?? (text.slice(0, 200) || `status ${statusCode}`);
  return new KubeApiError(statusCode, status, `${method} ${path}: ${statusCode} ${detail}`);
}

function abortError(): Error {
  return Object.assign(new Error("the request was aborted"), { name: "AbortError" });
}
