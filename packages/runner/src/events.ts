import { readFileSync } from "node:fs";
import { join } from "node:path";
import { eventReporters, type RunnerEventReason } from "@captf/contract/api";
import { truncateUtf8 } from "./text.js";

/** The object an event is about, or related to. */
export interface ObjectReference {
  apiVersion: string;
  kind: string;
  namespace: string;
  name: string;
  uid?: string;
}

/** Parses `--event-object`: `<apiVersion>/<kind>/<namespace>/<name>/<uid>`, the apiVersion possibly holding a slash. */
export function parseObjectReference(text: string): ObjectReference {
  const parts = text.split("/");
  const fields =
    parts.length >= 5
      ? { apiVersion: parts.slice(0, -4).join("/"), kind: parts.at(-4)!, namespace: parts.at(-3)!, name: parts.at(-2)!, uid: parts.at(-1)! }
      : undefined;
  if (!fields || Object.values(fields).some((field) => field === "")) {
    throw new Error(`--event-object "${text}" must be <apiVersion>/<kind>/<namespace>/<name>/<uid> with every field set`);
  }
  return fields;
}

/** Where events go: the API server's base URL and the pod's ServiceAccount credentials. */
export interface ApiEndpoint {
  server: string;
  /** Read on every POST: the kubelet rotates the projected token. */
  tokenFile?: string | undefined;
  ca?: Buffer | undefined;
}

export const defaultServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";

function readOptional(path: string): Buffer | undefined {
  try {
    return readFileSync(path);
  } catch {
    return undefined;
  }
}

/**
 * The API server as a pod sees it: `server` when given (tests, debugging), else
 * `https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT`; token and CA from the
 * ServiceAccount directory. A string explains why events cannot be sent.
 */
export function resolveInClusterEndpoint(options: {
  server?: string | undefined;
  serviceAccountDir: string;
  env: Readonly<Record<string, string | undefined>>;
}): ApiEndpoint | string {
  let server = options.server;
  if (!server) {
    const host = options.env.KUBERNETES_SERVICE_HOST;
    const port = options.env.KUBERNETES_SERVICE_PORT;
    if (!host || !port) return "not running in a cluster (KUBERNETES_SERVICE_HOST/PORT unset)";
    server = `https://${host.includes(":") ? `[${host}]` : host}:${port}`;
  }
  const ca = readOptional(join(options.serviceAccountDir, "ca.crt"));
  if (server.startsWith("https:") && !ca && !options.server) return `no cluster CA at ${join(options.serviceAccountDir, "ca.crt")}`;
  return { server, tokenFile: join(options.serviceAccountDir, "token"), ca };
}

export type EventType = "Normal" | "Warning";

export interface EventRecorder {
  /** Queues one event; a note given as a promise is awaited in turn, so events keep their order. */
  emit(type: EventType, reason: RunnerEventReason, action: string, note: string | Promise<string>): void;
  /** Waits for every queued event (each bounded by the POST timeout) and releases connections. */
  close(): Promise<void>;
}

export const noEvents: EventRecorder = {
  emit() {},
  async close() {},
};

/** Limits of events.k8s.io/v1 validation. */
const maxNoteBytes = 1024;
const maxActionBytes = 128;
const maxInstanceBytes = 128;
const maxNamePrefix = 200;

export interface EventRecorderOptions {
  /** A promise while the state broker starts: events wait in their queue for it. */
  endpoint: ApiEndpoint | Promise<ApiEndpoint>;
  regarding: ObjectReference;
  jobName?: string | undefined;
  /** The reporting instance: the pod name. */
  instance: string;
  timeoutMs?: number;
  maxConsecutiveFailures?: number;
  /** How long an unused kept-alive connection stays open. Default {@link idleConnectionMillis}. */
  idleConnectionMillis?: number;
  /** Called once on the first failure and once when the recorder gives up; never with a response body. */
  log: (message: string) => void;
}

/**
 * How long an unused kept-alive connection to the API server stays open: the client closes it
 * before the API server (90 s) or a common proxy (60 s and up) does, so an event is not written
 * into a connection the other side is closing at that moment (ECONNRESET, EPIPE).
 */
export const idleConnectionMillis = 30_000;

/** MicroTime's wire form: RFC 3339 with six fractional digits. */
function microTime(date: Date): string {
  return date.toISOString().replace(/Z$/, "000Z");
}

/**
 * POSTs events.k8s.io/v1 Events about the owning object, best effort: each POST gets a timeout
 * (2 s), and after 3 consecutive failures no more are tried. Nothing here can fail the run.
 */
export function createEventRecorder(options: EventRecorderOptions): EventRecorder {
  const timeoutMs = options.timeoutMs ?? 2000;
  const maxFailures = options.maxConsecutiveFailures ?? 3;
  const openTransport = (endpoint: ApiEndpoint) => {
    // Appended, not resolved: the broker's server URL has a path of its own.
    const url = new URL(
      `${endpoint.server.replace(/\/+$/, "")}/apis/events.k8s.io/v1/namespaces/${encodeURIComponent(options.regarding.namespace)}/events`,
    );
    const secure = url.protocol === "https:";
    const http = secure ? process.getBuiltinModule("node:https") : process.getBuiltinModule("node:http");
    const kept = { keepAlive: true, timeout: options.idleConnectionMillis ?? idleConnectionMillis };
    const agent = secure ? new http.Agent({ ...kept, ca: endpoint.ca }) : new http.Agent(kept);
    return { url, http, agent, tokenFile: endpoint.tokenFile };
  };
  // Loaded at the first POST (in a run, once its first step has started and the runtime's version
  // is known), not at start: TLS takes milliseconds to load that the first step would wait for.
  let transport: ReturnType<typeof openTransport> | undefined;
  const prefix = options.regarding.name.slice(0, maxNamePrefix).replace(/[-.]+$/, "");
  const related = options.jobName
    ? { apiVersion: "batch/v1", kind: "Job", namespace: options.regarding.namespace, name: options.jobName }
    : undefined;
  let queue: Promise<void> = Promise.resolve();
  let failures = 0;
  let warned = false;
  let disabled = false;
  let lastNanos = 0n;

  const post = async (body: string): Promise<void> => {
    const { url, http, agent, tokenFile } = (transport ??= openTransport(await options.endpoint));
    return new Promise((resolve, reject) => {
      const headers: Record<string, string> = { "Content-Type": "application/json", Accept: "application/json" };
      const token = tokenFile ? readOptional(tokenFile)?.toString("utf8").trim() : undefined;
      if (token) headers.Authorization = `Bearer ${token}`;
      const request = http.request(url, { method: "POST", headers, agent }, (response) => {
        response.resume();
        response.on("end", () => {
          const status = response.statusCode ?? 0;
          // The status only: the body could echo the request.
          if (status >= 200 && status < 300) resolve();
          else reject(new Error(`the API server answered ${status} ${response.statusMessage ?? ""}`.trim()));
        });
        response.on("error", reject);
      });
      const timer = setTimeout(() => request.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      request.on("close", () => clearTimeout(timer));
      request.on("error", reject);
      request.end(body);
    });
  };

  const send = async (type: EventType, reason: RunnerEventReason, action: string, note: string | Promise<string>) => {
    if (disabled) return;
    const now = new Date();
    let nanos = BigInt(now.getTime()) * 1_000_000n;
    if (nanos <= lastNanos) nanos = lastNanos + 1n;
    lastNanos = nanos;
    const event = {
      apiVersion: "events.k8s.io/v1",
      kind: "Event",
      metadata: { name: `${prefix}.${nanos.toString(16)}`, namespace: options.regarding.namespace },
      eventTime: microTime(now),
      reportingController: eventReporters.runner,
      reportingInstance: truncateUtf8(options.instance, maxInstanceBytes),
      action: truncateUtf8(action, maxActionBytes),
      reason,
      regarding: options.regarding,
      ...(related ? { related } : {}),
      note: truncateUtf8(await note, maxNoteBytes),
      type,
    };
    try {
      await post(JSON.stringify(event));
      failures = 0;
    } catch (error) {
      failures++;
      if (!warned) {
        warned = true;
        options.log(`sending event ${reason} failed; the run continues: ${(error as Error).message}`);
      }
      if (failures >= maxFailures) {
        disabled = true;
        options.log(`events failed ${failures} times in a row; no more events are sent this run`);
      }
    }
  };

  return {
    emit(type, reason, action, note) {
      queue = queue.then(() => send(type, reason, action, note)).catch(() => {});
    },
    async close() {
      await queue;
      transport?.agent.destroy();
    },
  };
}
