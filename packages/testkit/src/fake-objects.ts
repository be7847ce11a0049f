/**
 * An in-memory stand-in for client-node's CustomObjectsApi (namespaced get, list, create and merge patch),
 * so a reconcile phase or a kind adapter gets a fast unit test. A missing object rejects as the API server
 * does (`code` 404), an existing one on create with 409. Behaviour a user depends on stays proven on the
 * real API server (the *.integration.test.ts files).
 */

interface ObjectParams {
  group: string;
  version: string;
  namespace: string;
  plural: string;
  name?: string;
  body?: unknown;
  labelSelector?: string;
}

type Stored = { metadata?: { name?: string; namespace?: string; labels?: Record<string, string>; resourceVersion?: string }; [key: string]: unknown };

export class FakeApiError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** What the API server does with a JSON merge patch (RFC 7386): null removes a field, objects merge, anything else replaces. */
export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== "object" || Array.isArray(patch)) return patch;
  const base: Record<string, unknown> = target !== null && typeof target === "object" && !Array.isArray(target) ? { ...(target as Record<string, unknown>) } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete base[key];
    else base[key] = applyMergePatch(base[key], value);
  }
  return base;
}

/** `key=value` terms and bare `key` (exists) terms, comma-joined: what the pass's label selectors use. */
function matches(labels: Record<string, string> | undefined, selector: string | undefined): boolean {
  if (!selector) return true;
  return selector.split(",").every((term) => {
    const [key, value] = term.split("=");
    return value === undefined ? labels?.[key!] !== undefined : labels?.[key!] === value;
  });
}

export class FakeCustomObjects {
  readonly #objects = new Map<string, Stored>();
  #revision = 0;
  /** Every write, in order, as `verb plural/name`. */
  readonly writes: string[] = [];

  #key(params: ObjectParams, name = params.name): string {
    return `${params.group}/${params.plural}/${params.namespace}/${name}`;
  }

  /** Puts an object in place without counting a write. */
  seed(params: Omit<ObjectParams, "name" | "body">, object: Stored): this {
    this.#objects.set(this.#key(params, object.metadata?.name), structuredClone({ ...object, metadata: { ...object.metadata, namespace: params.namespace, resourceVersion: String(++this.#revision) } }));
    return this;
  }

  async getNamespacedCustomObject(params: ObjectParams): Promise<unknown> {
    const found = this.#objects.get(this.#key(params));
    if (!found) throw new FakeApiError(404, `${params.plural} "${params.name}" not found`);
    return structuredClone(found);
  }

  async listNamespacedCustomObject(params: ObjectParams): Promise<{ items: unknown[] }> {
    const prefix = this.#key(params, "");
    const items = [...this.#objects.entries()].filter(([key, object]) => key.startsWith(prefix) && matches(object.metadata?.labels, params.labelSelector)).map(([, object]) => structuredClone(object));
    return { items };
  }

  async createNamespacedCustomObject(params: ObjectParams): Promise<unknown> {
    const body = params.body as Stored;
    const key = this.#key(params, body.metadata?.name);
    if (this.#objects.has(key)) throw new FakeApiError(409, `${params.plural} "${body.metadata?.name}" already exists`);
    this.writes.push(`create ${params.plural}/${body.metadata?.name}`);
    this.#objects.set(key, structuredClone({ ...body, metadata: { ...body.metadata, namespace: params.namespace, resourceVersion: String(++this.#revision) } }));
    return structuredClone(this.#objects.get(key));
  }

  async patchNamespacedCustomObject(params: ObjectParams): Promise<unknown> {
    return this.#patch(params, "patch");
  }

  async patchNamespacedCustomObjectStatus(params: ObjectParams): Promise<unknown> {
    return this.#patch(params, "patch-status");
  }

  #patch(params: ObjectParams, verb: string): unknown {
    const key = this.#key(params);
    const found = this.#objects.get(key);
    if (!found) throw new FakeApiError(404, `${params.plural} "${params.name}" not found`);
    this.writes.push(`${verb} ${params.plural}/${params.name}`);
    const patched = applyMergePatch(found, params.body) as Stored;
    patched.metadata = { ...patched.metadata, resourceVersion: String(++this.#revision) };
    this.#objects.set(key, patched);
    return structuredClone(patched);
  }
}
