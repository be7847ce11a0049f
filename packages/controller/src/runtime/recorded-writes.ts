/**
 * The manager's client with every successful write recorded as an expectation of its
 * {@link ReadCache}: whatever code writes through it, a later cached read sees that write or goes
 * live. One wrapper at the wiring, instead of a note at each of the pass's write points.
 */
import type { KubeApi, KubeObject } from "./kube-client.js";
import type { ReadCache } from "./read-cache.js";

/** `client` with its creates, replaces, patches (status too) and deletes recorded in `cache`; reads pass through. */
export function recordingWrites(client: KubeApi, cache: ReadCache): KubeApi {
  const wrote = <T>(type: Parameters<ReadCache["wrote"]>[0], written: T): T => {
    cache.wrote(type, written as KubeObject);
    return written;
  };
  return {
    get: (type, namespace, name, options) => client.get(type, namespace, name, options),
    list: (type, namespace, query, options) => client.list(type, namespace, query, options),
    create: async (type, namespace, body, options) => wrote(type, await client.create(type, namespace, body, options)),
    replace: async (type, namespace, name, body, options) => wrote(type, await client.replace(type, namespace, name, body, options)),
    patch: async (type, namespace, name, patch, patchType, options) =>
      wrote(type, await client.patch(type, namespace, name, patch, patchType, options)),
    patchStatus: async (type, namespace, name, patch, patchType, options) =>
      wrote(type, await client.patchStatus(type, namespace, name, patch, patchType, options)),
    delete: async (type, namespace, name, body, options) => {
      const answer = await client.delete(type, namespace, name, body, options);
      cache.deleted(type, namespace, name);
      return answer;
    },
  } as KubeApi;
}
