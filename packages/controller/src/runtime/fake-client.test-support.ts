// A KubeApi for unit tests: each call goes to the handler named by its verb and plural, the server's errors are KubeApiErrors.
import { applyMergePatch } from "@captf/testkit";
import { KubeApiError, type KubeStatus } from "./api-errors.js";
import { matchesLabels, parseLabelSelector } from "./label-selector.js";
import type { DeleteOptions, KubeApi, PatchType, Query, ResourceType } from "./kube-client.js";

/** What a handler is given: where the call goes and what it sends. */
export interface FakeCall {
  type: ResourceType;
  namespace: string | undefined;
  name: string | undefined;
  body?: unknown;
  patchType?: PatchType;
  query?: Query;
  deleteOptions?: DeleteOptions;
}

/**
 * Handlers by `<verb> <plural>`: `get secrets`, `list jobs`, `create rolebindings`, `patch secrets`,
 * `patchStatus terraformclusteridentities`, `delete leases`, …
 */
export type FakeHandlers = Record<string, (call: FakeCall) => unknown>;

/** The API server's answer to a failed request, as the client throws it. */
export function apiError(code: number, message: string, reason?: string): KubeApiError {
  const status: KubeStatus = { kind: "Status", status: "Failure", message, code, ...(reason ? { reason } : {}) };
  return new KubeApiError(code, status, `request: ${code} ${message}`);
}

/**
 * A client whose calls go to `handlers`; a call without one fails (the test did not expect it). `calls` lists them as
 * `<verb> <plural> <name>`.
 */
export function fakeClient(handlers: FakeHandlers): KubeApi & { calls: string[] } {
  const calls: string[] = [];
  const send = async (verb: string, call: FakeCall) => {
    calls.push(`${verb} ${call.type.plural}${call.name ? ` ${call.name}` : ""}`);
    const handler = handlers[`${verb} ${call.type.plural}`];
    if (!handler) throw new Error(`unexpected ${verb} ${call.type.plural} ${call.name ?? ""}`);
    return handler(call);
  };
  const client = {
    calls,
    get: (type: ResourceType, namespace: string | undefined, name: string) => send("get", { type, namespace, name }),
    list: (type: ResourceType, namespace: string | undefined, query?: Query) =>
      send("list", { type, namespace, name: undefined, ...(query ? { query } : {}) }),
    create: (type: ResourceType, namespace: string | undefined, body: { metadata?: { name?: string } }) =>
      send("create", { type, namespace, name: body.metadata?.name, body }),
    replace: (type: ResourceType, namespace: string | undefined, name: string, body: unknown) =>
      send("replace", { type, namespace, name, body }),
    patch: (type: ResourceType, namespace: string | undefined, name: string, body: unknown, patchType: PatchType = "merge") =>
      send("patch", { type, namespace, name, body, patchType }),
    patchStatus: (type: ResourceType, namespace: string | undefined, name: string, body: unknown, patchType: PatchType = "merge") =>
      send("patchStatus", { type, namespace, name, body, patchType }),
    delete: (type: ResourceType, namespace: string | undefined, name: string, deleteOptions?: DeleteOptions) =>
      send("delete", { type, namespace, name, ...(deleteOptions ? { deleteOptions } : {}) }),
  };
  return client as unknown as KubeApi & { calls: string[] };
}

type Stored = {
  metadata?: { name?: string; namespace?: string; labels?: Record<string, string>; resourceVersion?: string };
  [key: string]: unknown;
};

/**
 * An in-memory API server of namespaced objects (get, list by label, create, replace, merge patch, status patch, delete),
 * so a reconcile phase or a kind adapter gets a fast unit test. A missing object rejects with 404 as
 * the API server does, an existing one on create with 409 AlreadyExists. Behaviour a user depends on
 * stays proven on the real API server (the *.integration.test.ts files).
 */
export class FakeObjects {
  readonly #objects = new Map<string, Stored>();
  #revision = 0;
  /** Every write, in order, as `verb plural/name`. */
  readonly writes: string[] = [];

  #key(type: ResourceType, namespace: string | undefined, name: string | undefined): string {
    return `${type.group}/${type.plural}/${namespace ?? ""}/${name ?? ""}`;
  }

  /** Puts an object in place without counting a write. */
  seed(type: ResourceType, namespace: string, object: Pick<Stored, "metadata"> | Stored): this {
    this.#objects.set(
      this.#key(type, namespace, object.metadata?.name),
      structuredClone({ ...object, metadata: { ...object.metadata, namespace, resourceVersion: String(++this.#revision) } }),
    );
    return this;
  }

  /** This fake as the client the code under test takes. */
  get client(): KubeApi {
    return this as unknown as KubeApi;
  }

  async get(type: ResourceType, namespace: string | undefined, name: string): Promise<unknown> {
    const found = this.#objects.get(this.#key(type, namespace, name));
    if (!found) throw apiError(404, `${type.plural} "${name}" not found`, "NotFound");
    return structuredClone(found);
  }

  async list(type: ResourceType, namespace: string | undefined, query: Query = {}): Promise<{ items: unknown[] }> {
    const prefix = this.#key(type, namespace, "");
    const requirements = parseLabelSelector(String(query.labelSelector ?? ""));
    const items = [...this.#objects.entries()]
      .filter(([key, object]) => key.startsWith(prefix) && matchesLabels(requirements, object.metadata?.labels))
      .map(([, object]) => structuredClone(object));
    return { items };
  }

  async create(type: ResourceType, namespace: string | undefined, body: Stored): Promise<unknown> {
    const key = this.#key(type, namespace, body.metadata?.name);
    if (this.#objects.has(key)) throw apiError(409, `${type.plural} "${body.metadata?.name}" already exists`, "AlreadyExists");
    this.writes.push(`create ${type.plural}/${body.metadata?.name}`);
    this.#objects.set(
      key,
      structuredClone({ ...body, metadata: { ...body.metadata, namespace, resourceVersion: String(++this.#revision) } }),
    );
    return structuredClone(this.#objects.get(key));
  }

  async patch(type: ResourceType, namespace: string | undefined, name: string, patch: unknown): Promise<unknown> {
    return this.#patch(type, namespace, name, patch, "patch");
  }

  /** A whole-object update; a resourceVersion in `body` other than the stored one is a 409 Conflict, as on the API server. */
  async replace(type: ResourceType, namespace: string | undefined, name: string, body: Stored): Promise<unknown> {
    const key = this.#key(type, namespace, name);
    const found = this.#objects.get(key);
    if (!found) throw apiError(404, `${type.plural} "${name}" not found`, "NotFound");
    const expected = body.metadata?.resourceVersion;
    if (expected !== undefined && expected !== found.metadata?.resourceVersion)
      throw apiError(409, `the object ${type.plural} "${name}" has been modified`, "Conflict");
    this.writes.push(`replace ${type.plural}/${name}`);
    this.#objects.set(
      key,
      structuredClone({ ...body, metadata: { ...body.metadata, namespace, resourceVersion: String(++this.#revision) } }),
    );
    return structuredClone(this.#objects.get(key));
  }

  /** A delete; preconditions naming another uid or resourceVersion are a 409 Conflict, as on the API server. */
  async delete(type: ResourceType, namespace: string | undefined, name: string, options: DeleteOptions = {}): Promise<unknown> {
    const key = this.#key(type, namespace, name);
    const found = this.#objects.get(key) as (Stored & { metadata?: { uid?: string } }) | undefined;
    if (!found) throw apiError(404, `${type.plural} "${name}" not found`, "NotFound");
    const { uid, resourceVersion } = options.preconditions ?? {};
    if (
      (uid !== undefined && uid !== found.metadata?.uid) ||
      (resourceVersion !== undefined && resourceVersion !== found.metadata?.resourceVersion)
    )
      throw apiError(409, `the precondition of deleting ${type.plural} "${name}" failed`, "Conflict");
    this.writes.push(`delete ${type.plural}/${name}`);
    this.#objects.delete(key);
    return {};
  }

  async patchStatus(type: ResourceType, namespace: string | undefined, name: string, patch: unknown): Promise<unknown> {
    return this.#patch(type, namespace, name, patch, "patch-status");
  }

  #patch(type: ResourceType, namespace: string | undefined, name: string, patch: unknown, verb: string): unknown {
    const key = this.#key(type, namespace, name);
    const found = this.#objects.get(key);
    if (!found) throw apiError(404, `${type.plural} "${name}" not found`, "NotFound");
    this.writes.push(`${verb} ${type.plural}/${name}`);
    const patched = applyMergePatch(found, patch) as Stored;
    patched.metadata = { ...patched.metadata, resourceVersion: String(++this.#revision) };
    this.#objects.set(key, patched);
    return structuredClone(patched);
  }
}
