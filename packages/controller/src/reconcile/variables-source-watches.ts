/**
 * The watches that make a change of a `spec.variablesFrom` source start a pass of every object
 * naming it: labelled ConfigMaps and Secrets (`captf.io/variables=true`, the only ones that
 * count) are watched, metadata only, and mapped through an index of the objects by the sources
 * they name. The pass reads the sources live, so a changed value changes the inputs hash and
 * re-applies the object, and a source that goes (or loses its label) gives VariablesSourceNotFound.
 */
import { labels } from "@captf/contract/api";
import { builtinTypes } from "../runtime/builtin-types.js";
import type { WatchEventType, WatchSpec } from "../runtime/controller.js";
import { objectKey } from "../runtime/informer.js";
import type { KubeObject, ResourceType } from "../runtime/kube-client.js";
import type { Manager } from "../runtime/manager.js";

export const variablesSourceSelector = `${labels.variablesSource}=true`;
/** Index of a kind's objects by the sources they name: `<namespace>/ConfigMap/<name>` or `<namespace>/Secret/<name>`. */
export const variablesSourceIndex = "variables-source";

type SourceKind = "ConfigMap" | "Secret";

function sourceKey(namespace: string | undefined, kind: SourceKind, name: string): string {
  return `${namespace ?? ""}/${kind}/${name}`;
}

/** The sources an object's spec.variablesFrom names. */
export function variablesSourceKeys(object: KubeObject): string[] {
  const entries =
    (object as { spec?: { variablesFrom?: { configMapRef?: { name?: string }; secretRef?: { name?: string } }[] } }).spec?.variablesFrom ??
    [];
  return entries.flatMap((entry) => {
    if (entry.configMapRef?.name) return [sourceKey(object.metadata?.namespace, "ConfigMap", entry.configMapRef.name)];
    if (entry.secretRef?.name) return [sourceKey(object.metadata?.namespace, "Secret", entry.secretRef.name)];
    return [];
  });
}

/** A source is cached by its metadata only: its values are read live by the pass, never kept. */
function metadataOnly<T extends KubeObject>(object: T): T {
  const { managedFields: _managedFields, ...metadata } = object.metadata ?? {};
  return { apiVersion: object.apiVersion, kind: object.kind, metadata } as T;
}

/** Every change but a resync (the resync already reaches every object through its own watch). */
export function sourceChanged(object: KubeObject, event: WatchEventType, oldObject?: KubeObject): boolean {
  return event !== "update" || oldObject?.metadata?.resourceVersion !== object.metadata?.resourceVersion;
}

/** Managers whose source informers exist: only the first request of an informer may set its transform. */
const sourceInformersOf = new WeakSet<object>();

/** The ConfigMap and Secret watches for objects of `type`; `selector` is the kind's own informer's (the --watch-filter). */
export function variablesSourceWatches(type: ResourceType, manager: Pick<Manager, "informer">, selector?: string): WatchSpec[] {
  const users = manager.informer(type, {
    ...(selector ? { labelSelector: selector } : {}),
    indexes: { [variablesSourceIndex]: variablesSourceKeys },
  });
  if (!sourceInformersOf.has(manager)) {
    for (const sourceType of [builtinTypes.configMap, builtinTypes.secret])
      manager.informer(sourceType, { labelSelector: variablesSourceSelector, transform: metadataOnly });
    sourceInformersOf.add(manager);
  }
  const watch = (sourceType: ResourceType, kind: SourceKind): WatchSpec => {
    return {
      type: sourceType,
      labelSelector: variablesSourceSelector,
      predicate: sourceChanged,
      map: (source) =>
        users
          .byIndex(variablesSourceIndex, sourceKey(source.metadata?.namespace, kind, source.metadata?.name ?? ""))
          .map((user) => objectKey(user)),
    };
  };
  return [watch(builtinTypes.configMap, "ConfigMap"), watch(builtinTypes.secret, "Secret")];
}
