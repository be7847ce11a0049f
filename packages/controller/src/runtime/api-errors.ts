/**
 * The API server's errors as the client throws them ({@link KubeApiError}): one set of predicates,
 * and a message for conditions (the HTTP status and the server's own message: a metav1.Status
 * names objects and fields, never a Secret's data).
 */

/** A `metav1.Status` as the server returns it with an error. */
export interface KubeStatus {
  kind?: "Status";
  status?: string;
  message?: string;
  reason?: string;
  code?: number;
  details?: unknown;
}

/** The server answered with a non-2xx status (or a watch ERROR event). */
export class KubeApiError extends Error {
  override readonly name = "KubeApiError";
  constructor(
    readonly statusCode: number,
    readonly status: KubeStatus | undefined,
    message: string,
  ) {
    super(message);
  }

  /** The server's reason (`NotFound`, `AlreadyExists`, `Conflict`, `Expired`, …). */
  get reason(): string | undefined {
    return this.status?.reason;
  }
}

/** The HTTP status of an API error; undefined for anything else (a cut connection, a timeout). */
export function httpStatusOf(error: unknown): number | undefined {
  return error instanceof KubeApiError ? error.statusCode : undefined;
}

/** The server's reason of an API error. */
export function reasonOf(error: unknown): string | undefined {
  return error instanceof KubeApiError ? error.reason : undefined;
}

export function isNotFound(error: unknown): boolean {
  return httpStatusOf(error) === 404;
}

/** NotFound for one object: the Status names it (`details.kind` is the resource's plural, as the server writes it). */
export function isNotFoundOf(error: unknown, plural: string, name: string): boolean {
  const details = (error instanceof KubeApiError ? error.status?.details : undefined) as { name?: string; kind?: string } | undefined;
  return isNotFound(error) && details?.name === name && details.kind === plural;
}

/** AlreadyExists on create, or a stale resourceVersion on replace. */
export function isConflict(error: unknown): boolean {
  return httpStatusOf(error) === 409;
}

export function isAlreadyExists(error: unknown): boolean {
  return isConflict(error) && reasonOf(error) === "AlreadyExists";
}

/** 410 Gone: the resourceVersion a watch or list asked for was compacted away. */
export function isGone(error: unknown): boolean {
  return httpStatusOf(error) === 410;
}

/** `HTTP <code>: <server message>` for an API error, else the error's message; at most 500 characters. */
export function apiErrorMessage(error: unknown): string {
  if (error instanceof KubeApiError) return `HTTP ${error.statusCode}: ${error.status?.message ?? error.message}`.slice(0, 500);
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
