/**
 * Keeps the shard label (`--shards` > 1) on the objects of the sharded kinds, so that each
 * replica's informers of those kinds can select the shards it holds.
 *
 * Who writes it, so that nothing is missed and no two replicas fight over an object:
 * - An object no replica's shard informers see (no label, or the value of another shard count
 *   after a `--shards` change) is in every replica's "unassigned" informer
 *   (`<label> notin (0,…,N-1)`); the replica holding its shard labels it, at once when it holds
 *   the shard, else when it gains it. A new object is labelled by its shard's holder only.
 * - An object whose label names a shard in range but no longer its own (its cluster name changed:
 *   a TerraformCluster got its owner Cluster) is seen by the holder of the labelled shard only,
 *   which relabels it; the holder of its new shard then sees it arrive.
 * No leader is needed, and each replica caches the unassigned objects only until they are labelled.
 */
import type { Logger } from "pino";
import { isNotFound } from "./api-errors.js";
import { objectKey, type Informer } from "./informer.js";
import type { KubeClient, KubeObject, ResourceType } from "./kube-client.js";
import { shardLabelToWrite } from "./shards.js";

export interface ShardLabellerOptions {
  client: Pick<KubeClient, "patch">;
  /** The label key (`captf.io/shard`). */
  label: string;
  /** The shard an object belongs to (by its cluster). */
  shardOfObject(object: KubeObject): number;
  /** The shards this replica holds now. */
  held(): ReadonlySet<number>;
  logger: Logger;
}

/** What the unassigned informers cache of an object: what its shard and its label are computed from. */
export function shardLabelMetadata<T extends KubeObject>(object: T): T {
  const { name, namespace, labels, ownerReferences, resourceVersion, uid } = object.metadata ?? {};
  return {
    apiVersion: object.apiVersion,
    kind: object.kind,
    metadata: { name, namespace, labels, ownerReferences, resourceVersion, uid },
  } as T;
}

export class ShardLabeller {
  readonly #o: ShardLabellerOptions;
  readonly #unassigned: Informer<KubeObject>[] = [];
  readonly #scoped: Informer<KubeObject>[] = [];
  /** `<plural> <key>=<value>` of label writes in flight: one write per object and value. */
  readonly #writing = new Set<string>();
  /** `<plural> <key>` → `<value>@<resourceVersion>` of a write done from a copy a cache still shows: not written again from that copy. */
  readonly #written = new Map<string, string>();
  /** Label writes that succeeded, for tests and logs. */
  written = 0;

  constructor(options: ShardLabellerOptions) {
    this.#o = options;
  }

  /** An informer of the objects of one kind no shard informer sees: labels those of held shards. */
  watchUnassigned(informer: Informer<KubeObject>): void {
    this.#unassigned.push(informer);
    const label = (object: KubeObject) => {
      const shard = this.#o.shardOfObject(object);
      if (this.#o.held().has(shard)) this.#write(informer.type, object, shard);
    };
    informer.addHandlers({ add: label, update: (_old, object) => label(object), delete: (object) => this.#gone(informer, object) });
  }

  /** A shard informer of one kind (held shards only): relabels what no longer belongs to the labelled shard. */
  watchScoped(informer: Informer<KubeObject>): void {
    this.#scoped.push(informer);
    const relabel = (object: KubeObject) => this.#write(informer.type, object, this.#o.shardOfObject(object));
    informer.addHandlers({ add: relabel, update: (_old, object) => relabel(object), delete: (object) => this.#gone(informer, object) });
  }

  /** Objects remembered as written from a copy a cache still shows, for tests: none of an object no cache holds. */
  get remembered(): number {
    return this.#written.size;
  }

  /** A cache let go of an object (deleted, labelled out of the unassigned ones, out of the held shards): no copy of it to skip. */
  #gone(informer: Informer<KubeObject>, object: KubeObject): void {
    this.#written.delete(`${informer.type.plural} ${objectKey(object)}`);
  }

  /** Whether a cache of `type` still holds the object: only then can a stale copy of it come back. */
  #cached(type: ResourceType, namespace: string | undefined, name: string): boolean {
    return [...this.#unassigned, ...this.#scoped].some(
      (informer) => informer.type.plural === type.plural && informer.get(namespace, name) !== undefined,
    );
  }

  /** This replica now holds shard `index`: labels its unassigned objects. */
  gained(index: number): void {
    for (const informer of this.#unassigned) {
      for (const object of informer.list()) if (this.#o.shardOfObject(object) === index) this.#write(informer.type, object, index);
    }
  }

  #write(type: ResourceType, object: KubeObject, shard: number): void {
    const value = shardLabelToWrite(object.metadata?.labels, this.#o.label, shard);
    const namespace = object.metadata?.namespace;
    const name = object.metadata?.name;
    const objectId = `${type.plural} ${objectKey(object)}`;
    if (value === undefined) this.#written.delete(objectId);
    // A deleting object is labelled too: only a replica that caches it removes its finalizer.
    if (value === undefined || !name) return;
    const id = `${objectId}=${value}`;
    const source = `${value}@${object.metadata?.resourceVersion ?? ""}`;
    if (this.#writing.has(id) || this.#written.get(objectId) === source) return;
    this.#writing.add(id);
    const from = object.metadata?.labels?.[this.#o.label];
    this.#o.client
      .patch(type, namespace, name, { metadata: { labels: { [this.#o.label]: value } } }, "merge")
      .then(
        () => {
          // A cache that let go of the object before this answer came keeps no copy of it: nothing to remember.
          if (this.#cached(type, namespace, name)) this.#written.set(objectId, source);
          this.written++;
          this.#o.logger.info(
            { kind: type.kind, key: objectKey(object), to: value, ...(from !== undefined ? { from } : {}) },
            "labelled with its shard",
          );
        },
        (error: unknown) => {
          // Gone: nothing to label. Anything else: the next event or relist of the object tries again.
          if (!isNotFound(error))
            this.#o.logger.warn(
              { err: error, kind: type.kind, key: objectKey(object), to: value },
              "labelling an object with its shard failed",
            );
        },
      )
      .finally(() => this.#writing.delete(id));
  }
}
