/**
 * When a request that failed on a kept-alive connection is sent again. A server (or a proxy) may
 * close an idle connection just as the client reuses it: the request then fails with ECONNRESET or
 * EPIPE although the server never answered it. Go's net/http transport sends such a request once
 * more when it is safe to, and so does the manager's client (kube-client.ts), by the same rules.
 */

/** How long an unused kept-alive connection stays open: below the API server's idle timeout (90 s) and common proxies' (60 s and up). */
export const idleConnectionMillis = 30_000;

/** The errors of a connection the other side closed, as Node reports them on a request. */
const closedConnectionCodes = new Set(["ECONNRESET", "EPIPE", "ECONNABORTED"]);

/**
 * Whether a failure means "the server closed this kept-alive connection before it read the
 * request": the connection was reused, it failed with a closed-connection error, and not one byte
 * of an answer came back. A fresh connection failing, a timeout or an abort are real failures.
 */
export function failedOnClosedIdleConnection(error: unknown, reusedConnection: boolean, answerBytes: number): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return reusedConnection && answerBytes === 0 && typeof code === "string" && closedConnectionCodes.has(code);
}

/**
 * Whether sending a request twice cannot change more than sending it once. GET and HEAD (Go's
 * rule). A PUT carrying `metadata.resourceVersion` and a DELETE with preconditions are conditional:
 * if the first one landed, the API server refuses the second (409 Conflict, 404 Not Found) instead
 * of applying it again. A POST, a PATCH and unconditional writes are never sent twice.
 */
export function isReplayable(method: string, body: unknown): boolean {
  if (method === "GET" || method === "HEAD") return true;
  if (method === "PUT") return isSet((body as { metadata?: { resourceVersion?: unknown } } | undefined)?.metadata?.resourceVersion);
  if (method === "DELETE") {
    const preconditions = (body as { preconditions?: { uid?: unknown; resourceVersion?: unknown } } | undefined)?.preconditions;
    return isSet(preconditions?.uid) || isSet(preconditions?.resourceVersion);
  }
  return false;
}

// An empty resourceVersion or uid is no condition: the API server writes unconditionally.
function isSet(value: unknown): boolean {
  return typeof value === "string" && value !== "";
}
