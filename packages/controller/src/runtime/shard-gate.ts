/**
 * The controllers of a sharded manager: every replica runs their workers (no leader election),
 * and a pass runs only for an object of a shard this replica holds. Keys of other shards are
 * never enqueued; gaining a shard enqueues every cached object of it, so a hand-over needs no
 * event. The sharded kinds' informers hold the held shards only (by the shard label, see
 * shard-labels.ts); the gate still checks the shard by hash, so an object whose label is stale
 * (being relabelled) is reconciled by the holder of its shard alone.
 */
import type { ControllerRunner, Controller } from "./controller.js";
import { objectKey, type Informer } from "./informer.js";
import type { KubeObject } from "./kube-client.js";

export class ShardGate {
  readonly #shardOfObject: (object: KubeObject) => number;
  readonly #forget: ((kind: string, object: KubeObject) => void) | undefined;
  readonly #held = new Set<number>();
  readonly #kinds: { runner: ControllerRunner; objects: Informer<KubeObject> }[] = [];

  /**
   * `shardOfObject`: the shard an object of a sharded kind belongs to. `forget`: called for each
   * object of a shard given up, so this replica stops reporting what another one now owns (its
   * per-object metrics).
   */
  constructor(shardOfObject: (object: KubeObject) => number, forget?: (kind: string, object: KubeObject) => void) {
    this.#shardOfObject = shardOfObject;
    this.#forget = forget;
  }

  /** Whether this replica reconciles the object now; a key gone from the cache has nothing to reconcile. */
  owns(object: KubeObject | undefined): boolean {
    return object !== undefined && this.#held.has(this.#shardOfObject(object));
  }

  /**
   * `controller` with its keys and passes limited to held shards; `objects` is the informer of its
   * own kind. Keys of other shards are not enqueued (so queue and reconcile metrics count this
   * replica's work only), and a pass checks again: the shard may have gone since the key was queued.
   */
  shard(controller: Controller, objects: Informer<KubeObject>): Controller {
    const held = (key: string) => this.owns(objects.get(key));
    return {
      ...controller,
      needsLeaderElection: false,
      watches: controller.watches.map((watch) => ({
        ...watch,
        map: (object, event, oldObject) => watch.map(object, event, oldObject).filter(held),
      })),
      reconcile: async (key, context) => (held(key) ? controller.reconcile(key, context) : undefined),
    };
  }

  /** Registers the runner the manager made of a {@link shard}ed controller, for the hand-over enqueue. */
  attach(runner: ControllerRunner, objects: Informer<KubeObject>): void {
    this.#kinds.push({ runner, objects });
  }

  gained(index: number): void {
    this.#held.add(index);
    for (const { runner, object } of this.#objectsOf(index)) runner.queue.add(objectKey(object));
  }

  lost(index: number): void {
    this.#held.delete(index);
    for (const { runner, object } of this.#objectsOf(index)) this.#forget?.(runner.controller.kind, object);
  }

  *#objectsOf(index: number): Generator<{ runner: ControllerRunner; object: KubeObject }> {
    for (const { runner, objects } of this.#kinds) {
      for (const object of objects.list()) if (this.#shardOfObject(object) === index) yield { runner, object };
    }
  }
}
