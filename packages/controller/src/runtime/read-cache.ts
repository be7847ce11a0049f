/**
 * Reads served from the manager's informer caches, with the manager's own writes as expectations
 * (controller-runtime's and the ReplicaSet controller's answer to cache lag): after the manager
 * writes an object, reads that could see it go to the API server until the cache shows that write
 * (the object at the written resourceVersion or later, or gone after a delete). A type without a
 * cache, or a cache not synced yet, is read live. Cached objects are deep-frozen: copy to change.
 */
import { objectKey, type Informer } from "./informer.js";
import type { KubeClient, KubeObject, ResourceType } from "./kube-client.js";
import { isNotFound } from "./api-errors.js";
import { matchesLabels, parseLabelSelector, type LabelRequirement } from "./label-selector.js";

/** `group/plural`: one cache per resource type. */
export function typeKey(type: Pick<ResourceType, "group" | "plural">): string {
  return `${type.group}/${type.plural}`;
}

/** A cache of one type; a `scoped` one (label- or field-selected) holds only some objects of its type. */
export interface CacheSource {
  /** `listedCurrentScope`: an informer whose label selector changes (the held shards) is read live while it relists. */
  informer: Pick<Informer<KubeObject>, "get" | "list" | "hasSynced" | "resourceVersion"> &
    Partial<Pick<Informer<KubeObject>, "listedCurrentScope" | "addHandlers">>;
  scoped?: boolean;
}

export interface CachedReadOptions {
  /** The caller knows the objects it reads are in the scope of a scoped cache: its absence there is an answer. */
  inScope?: boolean;
  /** The cache must have seen everything up to this resourceVersion (a Job's that finished after writing them), else the read is live. */
  freshAsOf?: string;
  /** Read from the cache of the type added under this name (another scope of the same type). */
  cache?: string;
}

/** An own write the cache has not shown yet: the resourceVersion written, or gone. */
interface Expectation {
  resourceVersion?: string;
  /** The labels written: with the cached object's, whether a list by label selector can be affected. */
  labels?: Readonly<Record<string, string>>;
  deleted: boolean;
  until: number;
}

/** Whether `cached` (the object as a cache shows it, undefined when absent) shows the own write or delete. */
function metBy(expectation: Expectation, cached: KubeObject | undefined): boolean {
  return expectation.deleted ? cached === undefined : atLeast(cached?.metadata?.resourceVersion, expectation.resourceVersion);
}

/** Expectations expire like controller-runtime's (5 minutes): a lost watch event cannot force live reads forever. */
const expectationTtlMillis = 5 * 60_000;

/** Whether resourceVersion `seen` is at least `written`; etcd revisions are integers, anything else counts as not yet. */
export function atLeast(seen: string | undefined, written: string | undefined): boolean {
  if (written === undefined) return true;
  if (seen === undefined || !/^\d+$/.test(seen) || !/^\d+$/.test(written)) return false;
  return seen.length !== written.length ? seen.length > written.length : seen >= written;
}

/** The newest of some resourceVersions (undefined when none is given). */
export function newestResourceVersion(versions: readonly (string | undefined)[]): string | undefined {
  return versions.reduce<string | undefined>(
    (newest, version) => (version !== undefined && (newest === undefined || atLeast(version, newest)) ? version : newest),
    undefined,
  );
}

/** The cache name of reads served by a watch of their own object (`cache: watchedByName`). */
export const watchedByName = "by-name";

/** Gives the watch of one object (started, or starting: read live until it syncs); undefined: read it live. */
export type ObjectWatch = (namespace: string | undefined, name: string) => CacheSource["informer"] | undefined;

export interface ReadCacheCounts {
  cached: number;
  live: number;
}

export class ReadCache {
  readonly #sources = new Map<string, CacheSource>();
  readonly #expected = new Map<string, Map<string, Expectation>>();
  readonly #objectWatches = new Map<string, ObjectWatch>();
  readonly #live: Pick<KubeClient, "get" | "list">;
  readonly #now: () => number;
  /** Reads served from a cache and reads sent live, for tests and the bench. */
  readonly counts: ReadCacheCounts = { cached: 0, live: 0 };

  constructor(live: Pick<KubeClient, "get" | "list">, now: () => number = Date.now) {
    this.#live = live;
    this.#now = now;
  }

  /** Serves reads of `type` from this cache; a `name`d one serves the reads that ask for it. */
  add(type: ResourceType, source: CacheSource, name?: string): this {
    this.#sources.set(name ? `${typeKey(type)}@${name}` : typeKey(type), source);
    // The type's own cache drops an expectation as soon as it shows the write (controller-runtime's way), so reads never walk met ones.
    if (!name)
      source.informer.addHandlers?.({
        add: (object) => this.#shown(type, object, false),
        update: (_old, object) => this.#shown(type, object, false),
        delete: (object) => this.#shown(type, object, true),
      });
    return this;
  }

  /** The type's cache shows `object` (or its delete): the expectation it meets goes. */
  #shown(type: Pick<ResourceType, "group" | "plural">, object: KubeObject, gone: boolean): void {
    const byObject = this.#expected.get(typeKey(type));
    if (!byObject || !object.metadata?.name) return;
    const key = objectKey(object);
    const expectation = byObject.get(key);
    if (expectation && (gone || metBy(expectation, object))) byObject.delete(key);
  }

  /**
   * Serves the reads of `type` that ask for {@link watchedByName} from a watch of their own object, by name: for objects no label scopes.
   */
  watchByName(type: ResourceType, watch: ObjectWatch): this {
    this.#objectWatches.set(typeKey(type), watch);
    return this;
  }

  /** Own writes the cache has not shown yet (or that no read has checked since), by type. */
  get pendingExpectations(): number {
    let count = 0;
    for (const byObject of this.#expected.values()) count += byObject.size;
    return count;
  }

  /** Records an own write of an object (its response), so reads wait for the cache to show it. */
  wrote(type: Pick<ResourceType, "group" | "plural">, object: KubeObject | undefined): void {
    const meta = object?.metadata;
    if (!meta?.name) return;
    // A write that took the last finalizer off an object being deleted deleted it: reads expect it gone.
    if (meta.deletionTimestamp && !(meta.finalizers as readonly string[] | undefined)?.length)
      return this.deleted(type, meta.namespace, meta.name);
    this.#expect(type, meta.namespace, meta.name, {
      ...(meta.resourceVersion ? { resourceVersion: meta.resourceVersion } : {}),
      ...(meta.labels ? { labels: meta.labels } : {}),
      deleted: false,
      until: this.#now() + expectationTtlMillis,
    });
  }

  /** Records an own delete. */
  deleted(type: Pick<ResourceType, "group" | "plural">, namespace: string | undefined, name: string): void {
    this.#expect(type, namespace, name, { deleted: true, until: this.#now() + expectationTtlMillis });
  }

  #expect(type: Pick<ResourceType, "group" | "plural">, namespace: string | undefined, name: string, expectation: Expectation): void {
    const key = typeKey(type);
    const source = this.#sources.get(key);
    if (!source) return;
    const objectId = namespace ? `${namespace}/${name}` : name;
    // Met already (the watch delivered the write or the delete before its response came back): no event would drop it later.
    if (metBy(expectation, source.informer.get(objectId))) {
      this.#expected.get(key)?.delete(objectId);
      return;
    }
    let byObject = this.#expected.get(key);
    if (!byObject) this.#expected.set(key, (byObject = new Map<string, Expectation>()));
    byObject.set(objectId, expectation);
  }

  /**
   * Whether the cache shows every own write to objects of `type` in `namespace` that the read can
   * see: the object `name`, or those a list's label selector matches as written or as cached (a
   * write neither matches changes nothing the list returns). Met expectations are dropped.
   */
  #caughtUp(
    type: ResourceType,
    source: CacheSource,
    namespace: string | undefined,
    read: { name: string } | { requirements: readonly LabelRequirement[] },
  ): boolean {
    const byObject = this.#expected.get(typeKey(type));
    if (!byObject || byObject.size === 0) return true;
    const now = this.#now();
    if ("name" in read) {
      // One object: its own expectation alone.
      const key = namespace ? `${namespace}/${read.name}` : read.name;
      const expectation = byObject.get(key);
      if (!expectation) return true;
      const done = metBy(expectation, source.informer.get(key)) || expectation.until <= now;
      if (done) byObject.delete(key);
      return done;
    }
    let caughtUp = true;
    for (const [key, expectation] of byObject) {
      // Expired first, whatever the read: an expectation no read ever matches again (a deleted per-run Secret) must not stay forever.
      if (expectation.until <= now) {
        byObject.delete(key);
        continue;
      }
      const slash = key.indexOf("/");
      const keyNamespace = slash < 0 ? undefined : key.slice(0, slash);
      if (keyNamespace !== namespace) continue;
      const cached = source.informer.get(key);
      if (
        !matchesLabels(read.requirements, expectation.labels ?? {}) &&
        !(cached && matchesLabels(read.requirements, cached.metadata?.labels))
      )
        continue;
      if (metBy(expectation, cached)) byObject.delete(key);
      else caughtUp = false;
    }
    return caughtUp;
  }

  /** The synced cache of `type`, when it is as fresh as the read asks. */
  #source(type: ResourceType, options: CachedReadOptions): CacheSource | undefined {
    const source = this.#sources.get(options.cache ? `${typeKey(type)}@${options.cache}` : typeKey(type));
    if (!source?.informer.hasSynced() || source.informer.listedCurrentScope?.() === false) return undefined;
    return atLeast(source.informer.resourceVersion, options.freshAsOf) ? source : undefined;
  }

  /** The object, from the cache when it can answer, else live; undefined when it does not exist. */
  async get<T = KubeObject>(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    options: CachedReadOptions = {},
  ): Promise<T | undefined> {
    const source = this.#source(type, options) ?? this.#objectSource(type, options, namespace, name);
    if (source && this.#caughtUp(type, source, namespace, { name })) {
      const cached = source.informer.get(namespace, name);
      // A scoped cache's "not there" is an answer only for objects that would be in its scope.
      if (cached || !source.scoped || options.inScope) {
        this.counts.cached++;
        return cached as unknown as T | undefined;
      }
    }
    this.counts.live++;
    return (this.#live.get<KubeObject>(type, namespace, name) as Promise<unknown> as Promise<T>).catch((error: unknown) =>
      isNotFound(error) ? undefined : Promise.reject(error),
    );
  }

  /** The synced watch of the one object read, when the read asks for one; its absence there is an answer. */
  #objectSource(type: ResourceType, options: CachedReadOptions, namespace: string | undefined, name: string): CacheSource | undefined {
    const watch = options.cache === watchedByName ? this.#objectWatches.get(typeKey(type)) : undefined;
    const informer = watch?.(namespace, name);
    return informer?.hasSynced() && atLeast(informer.resourceVersion, options.freshAsOf) ? { informer } : undefined;
  }

  /** The objects of a namespace matching a label selector, from the cache when it holds them all, else live. */
  async list<T = KubeObject>(type: ResourceType, namespace: string, labelSelector: string, options: CachedReadOptions = {}): Promise<T[]> {
    const source = this.#source(type, options);
    const requirements = parseLabelSelector(labelSelector);
    if (source && (!source.scoped || options.inScope) && this.#caughtUp(type, source, namespace, { requirements })) {
      this.counts.cached++;
      return source.informer.list({ namespace, labelSelector: requirements }) as unknown as T[];
    }
    this.counts.live++;
    return (await this.#live.list<KubeObject>(type, namespace, { labelSelector })).items as unknown as T[];
  }
}
