/**
 * The manager's client-node APIs with every successful write recorded as an expectation of its
 * {@link ReadCache}: whatever code writes through them, a later cached read sees that write or
 * goes live. One wrapper at the wiring, instead of a note at each of the pass's write points.
 */
import type { ReadCache } from "./read-cache.js";

const typedWrite = /^(create|replace|patch|delete)Namespaced([A-Z][A-Za-z]*?)(Status)?$/;
const customWrite = /^(create|replace|patch|delete)(Namespaced|Cluster)CustomObject(Status)?$/;

interface WriteParams {
  namespace?: string;
  name?: string;
  group?: string;
  plural?: string;
}

/** The type a write method writes: `group`, plural; undefined for a method that writes nothing the caches hold. */
export function writtenType(method: string, params: WriteParams, group: string): { verb: string; group: string; plural: string } | undefined {
  const custom = customWrite.exec(method);
  if (custom) return params.group && params.plural ? { verb: custom[1]!, group: params.group, plural: params.plural } : undefined;
  const typed = typedWrite.exec(method);
  if (!typed) return undefined;
  return { verb: typed[1]!, group, plural: `${typed[2]!.toLowerCase()}s` };
}

/** `api` (CoreV1Api, BatchV1Api, CustomObjectsApi, …; `group` is its API group, "" for core) with its writes recorded in `cache`. */
export function recordingWrites<A extends object>(api: A, group: string, cache: ReadCache): A {
  return new Proxy(api, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (typeof property !== "string" || typeof value !== "function") return value;
      const method = value as (params: WriteParams, ...rest: unknown[]) => Promise<unknown>;
      return (params: WriteParams, ...rest: unknown[]) => {
        const type = writtenType(property, params ?? {}, group);
        const result = method.call(target, params, ...rest);
        if (!type) return result;
        return result.then((written) => {
          if (type.verb === "delete") cache.deleted(type, params.namespace, params.name ?? "");
          else cache.wrote(type, written as Parameters<ReadCache["wrote"]>[1]);
          return written;
        });
      };
    },
  });
}
