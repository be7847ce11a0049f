// The shard gate: which keys a replica enqueues and reconciles, and what gaining a shard enqueues.
import { describe, expect, it } from "@jest/globals";
import type { Controller, ControllerRunner } from "./controller.js";
import type { Informer } from "./informer.js";
import type { KubeObject } from "./kube-client.js";
import { ShardGate } from "./shard-gate.js";

const object = (name: string, shard: number): KubeObject => ({ metadata: { namespace: "ns", name, labels: { shard: String(shard) } } });
const objects = [object("a", 0), object("b", 1), object("c", 1)];
const informer = {
  get: (key: string) => objects.find((o) => `ns/${o.metadata!.name}` === key),
  list: () => objects,
} as unknown as Informer<KubeObject>;
const gateOf = () => new ShardGate((o) => Number(o.metadata?.labels?.shard));

function controller(reconciled: string[]): Controller {
  return {
    name: "thing",
    kind: "Thing",
    concurrency: 1,
    watches: [
      {
        type: { group: "", version: "v1", plural: "things", kind: "Thing", namespaced: true },
        map: (o) => [`ns/${o.metadata!.name}`, "ns/gone"],
      },
    ],
    reconcile: async (key) => void reconciled.push(key),
  };
}

describe("ShardGate", () => {
  it("enqueues and reconciles the keys of held shards only, on every replica (no leader election)", async () => {
    const gate = gateOf();
    const reconciled: string[] = [];
    const sharded = gate.shard(controller(reconciled), informer);
    expect(sharded.needsLeaderElection).toBe(false);
    gate.gained(1);
    const map = sharded.watches[0]!.map;
    expect(objects.map((o) => map(o, "add"))).toEqual([[], ["ns/b"], ["ns/c"]]);
    const context = {} as Parameters<Controller["reconcile"]>[1];
    for (const key of ["ns/a", "ns/b", "ns/gone"]) await sharded.reconcile(key, context);
    expect(reconciled).toEqual(["ns/b"]);
    // Lost between enqueue and pass: the pass does nothing.
    gate.lost(1);
    await sharded.reconcile("ns/c", context);
    expect(reconciled).toEqual(["ns/b"]);
  });

  it("enqueues every cached object of a shard it gains, and forgets those of a shard it gives up", () => {
    const forgotten: string[] = [];
    const gate = new ShardGate(
      (o) => Number(o.metadata?.labels?.shard),
      (kind, o) => forgotten.push(`${kind} ${o.metadata!.name}`),
    );
    const added: string[] = [];
    gate.attach(
      { controller: { kind: "Thing" }, queue: { add: (key: string) => added.push(key) } } as unknown as ControllerRunner,
      informer,
    );
    gate.gained(1);
    expect(added).toEqual(["ns/b", "ns/c"]);
    gate.gained(0);
    expect(added).toEqual(["ns/b", "ns/c", "ns/a"]);
    gate.lost(1);
    expect(forgotten).toEqual(["Thing b", "Thing c"]);
  });
});
