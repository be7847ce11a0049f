// Fakes for the read cache's tests: an informer filled by hand (a watch that lags) and the API server its live reads see.
import type { KubeObject } from "./kube-client.js";
import { matchesLabels, parseLabelSelector, type LabelRequirement } from "./label-selector.js";

/** An informer's cache as the read cache sees it, filled by hand (a watch that lags). */
export function fakeInformer() {
  const objects = new Map<string, KubeObject>();
  return {
    objects,
    resourceVersion: "1" as string | undefined,
    hasSynced: () => true,
    get: (keyOrNamespace: string | undefined, name?: string) => objects.get(name === undefined ? (keyOrNamespace ?? "") : keyOrNamespace === undefined ? name : `${keyOrNamespace}/${name}`),
    list: ({ namespace, labelSelector = [] }: { namespace?: string; labelSelector?: readonly LabelRequirement[] } = {}) => [...objects.values()].filter((o) => o.metadata?.namespace === namespace && matchesLabels(labelSelector, o.metadata?.labels)),
    put(object: KubeObject) {
      objects.set(object.metadata!.namespace ? `${object.metadata!.namespace}/${object.metadata!.name}` : object.metadata!.name!, object);
      this.resourceVersion = object.metadata!.resourceVersion;
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
    get: async <T extends KubeObject>(_type: unknown, namespace: string | undefined, name: string) => {
      reads.push(`get ${name}`);
      const found = objects.get(`${namespace}/${name}`);
      if (!found) throw Object.assign(new Error("not found"), { code: 404 });
      return found as T;
    },
    list: async <T extends KubeObject>(_type: unknown, namespace: string | undefined, query: { labelSelector?: string } = {}) => {
      reads.push("list");
      const requirements = parseLabelSelector(query.labelSelector ?? "");
      return { items: [...objects.values()].filter((o) => o.metadata?.namespace === namespace && matchesLabels(requirements, o.metadata?.labels)) as T[] };
    },
  };
}

