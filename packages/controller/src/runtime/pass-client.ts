/**
 * The one client of a reconcile pass, cut as controller-runtime cuts its delegating client and API reader: a read goes to
 * the manager's informer caches (live when there is no cache, or the cache cannot answer it yet), a live read is asked for
 * by name (`.live`), and the writes go to the API server through the client the manager records them on.
 */
import { undefinedIfNotFound } from "./api-errors.js";
import type { KubeApi, ResourceType } from "./kube-client.js";
import type { CachedReadOptions, ReadCache } from "./read-cache.js";

/** Reads that go to the API server, whatever the caches hold: where a cached copy may lag a write that matters. */
export interface LiveReads {
  /** The object, or undefined when it does not exist. */
  get<T>(type: ResourceType, namespace: string, name: string): Promise<T | undefined>;
  list<T>(type: ResourceType, namespace: string, labelSelector: string): Promise<T[]>;
  /** The objects of a field selector: no cache indexes fields, so this read is always live. */
  listByFields<T>(type: ResourceType, namespace: string, fieldSelector: string): Promise<T[]>;
}

export interface PassClient {
  /** Where the writes go (the manager's client records them as the caches' expectations). */
  readonly client: KubeApi;
  /** The caches reads are served from; undefined: every read is live. */
  readonly cache: ReadCache | undefined;
  /** The object from the cache (live without one), undefined when it does not exist. */
  get<T>(type: ResourceType, namespace: string, name: string, options?: CachedReadOptions): Promise<T | undefined>;
  /** The objects of a label selector, from the cache (live without one). */
  list<T>(type: ResourceType, namespace: string, labelSelector: string, options?: CachedReadOptions): Promise<T[]>;
  readonly live: LiveReads;
}

/** The pass client over a client and, when the manager runs informers, its read cache. */
export function passClient(clients: { client: KubeApi; cache?: ReadCache | undefined }): PassClient {
  const { client, cache } = clients;
  const live: LiveReads = {
    get: <T>(type: ResourceType, namespace: string, name: string) => undefinedIfNotFound(client.get<T>(type, namespace, name)),
    list: async <T>(type: ResourceType, namespace: string, labelSelector: string) =>
      (await client.list<T>(type, namespace, { labelSelector })).items,
    listByFields: async <T>(type: ResourceType, namespace: string, fieldSelector: string) =>
      (await client.list<T>(type, namespace, { fieldSelector })).items,
  };
  return {
    client,
    cache,
    live,
    get: (type, namespace, name, options) => (cache ? cache.get(type, namespace, name, options) : live.get(type, namespace, name)),
    list: (type, namespace, labelSelector, options) =>
      cache ? cache.list(type, namespace, labelSelector, options) : live.list(type, namespace, labelSelector),
  };
}
