/**
 * Reading the errors of @kubernetes/client-node for condition messages: the HTTP status and the
 * server's own message (a metav1.Status names objects and fields, never a Secret's data).
 */
import { ApiException } from "@kubernetes/client-node";
import { KubeApiError } from "./kube-client.js";

/** The HTTP status of an error of either client (client-node's ApiException, the runtime's KubeApiError). */
export function httpStatusOf(error: unknown): number | undefined {
  if (error instanceof ApiException) return error.code;
  if (error instanceof KubeApiError) return error.statusCode;
  return (error as { code?: number } | undefined)?.code;
}

export function isNotFound(error: unknown): boolean {
  return httpStatusOf(error) === 404;
}

/** AlreadyExists on create, or a stale resourceVersion on replace. */
export function isConflict(error: unknown): boolean {
  return httpStatusOf(error) === 409;
}

/** `HTTP <code>: <server message>`, at most 500 characters. */
export function apiErrorMessage(error: unknown): string {
  if (error instanceof ApiException) {
    const body = typeof error.body === "string" ? error.body : JSON.stringify(error.body);
    let message = body;
    try {
      message = String((JSON.parse(body) as { message?: unknown }).message ?? body);
    } catch {
      // not JSON: the body as is
    }
    return `HTTP ${error.code}: ${message}`.slice(0, 500);
  }
  return (error instanceof Error ? error.message : String(error)).slice(0, 500);
}

/** A `.catch` handler: NotFound becomes undefined, anything else is thrown again. */
export function ignoreNotFound(error: unknown): undefined {
  if (isNotFound(error)) return undefined;
  throw error;
}

/** The value, or undefined when the API says the object does not exist; other errors propagate. */
export function undefinedIfNotFound<T>(request: Promise<T>): Promise<T | undefined> {
  return request.catch(ignoreNotFound);
}
