// Fakes for the read cache's tests: an informer filled by hand (a watch that lags) and the API server its live reads see.
import { apiError } from "./fake-client.test-support.js";
import type { KubeObject } from "./kube-client.js";
import { matchesLabels, parseLabelSelector, type LabelRequirement } from "./label-selector.js";

/** An informer's cache as the read cache sees it, filled by hand (a watch that lags). */
export function fakeInformer() {
  const objects = new Map<string, KubeObject>();
  const handlers: {
    add?: (object: KubeObject) => void;
    update?: (old: KubeObject, object: KubeObject) => void;
    delete?: (object: KubeObject) => void;
  }[] = [];
  return {
    objects,
    addHandlers: (added: (typeof handlers)[number]) => void handlers.push(added),
    resourceVersion: "1" as string | undefined,
    hasSynced: () => true,
    get: (keyOrNamespace: string | undefined, name?: string) =>
      objects.get(name === undefined ? (keyOrNamespace ?? "") : keyOrNamespace === undefined ? name : `${keyOrNamespace}/${name}`),
    list: ({ namespace, labelSelector = [] }: { namespace?: string; labelSelector?: readonly LabelRequirement[] } = {}) =>
      [...objects.values()].filter((o) => o.metadata?.namespace === namespace && matchesLabels(labelSelector, o.metadata?.labels)),
    put(object: KubeObject) {
      const key = object.metadata!.namespace ? `${object.metadata!.namespace}/${object.metadata!.name}` : object.metadata!.name!;
      const old = objects.get(key);
      objects.set(key, object);
      this.resourceVersion = object.metadata!.resourceVersion;
      for (const h of handlers)
        if (old) h.update?.(old, object);
        else h.add?.(object);
    },
    /** The watch delivers the delete of `key`. */
    remove(key: string) {
      const old = objects.get(key);
      objects.delete(key);
      if (old) for (const h of handlers) h.delete?.(old);
    },
  };
}

/** The API server as the live reads see it. */
export function fakeServer() {
  const objects = new Map<string, KubeObject>();
  const reads: string[] = [];
  return {
    objects,
    reads,
    get: async <T = KubeObject>(_type: unknown, namespace: string | undefined, name: string) => {
      reads.push(`get ${name}`);
      const found = objects.get(`${namespace}/${name}`);
      if (!found) throw apiError(404, `${name} not found`, "NotFound");
      return found as T;
    },
    list: async <T = KubeObject>(_type: unknown, namespace: string | undefined, query: { labelSelector?: string } = {}) => {
      reads.push("list");
      const requirements = parseLabelSelector(query.labelSelector ?? "");
      return {
        items: [...objects.values()].filter(
          (o) => o.metadata?.namespace === namespace && matchesLabels(requirements, o.metadata?.labels),
        ) as T[],
      };
    },
  };
}
