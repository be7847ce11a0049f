// The shard labeller: who labels which object with its shard, and when.
import { describe, expect, it } from "@jest/globals";
import { pino } from "pino";
import type { Informer, InformerHandlers } from "./informer.js";
import type { KubeObject, ResourceType } from "./kube-client.js";
import { shardLabelMetadata, ShardLabeller } from "./shard-labels.js";

const label = "captf.io/shard";
const type: ResourceType = {
  group: "infrastructure.cluster.x-k8s.io",
  version: "v1alpha1",
  plural: "terraformmachines",
  kind: "TerraformMachine",
  namespaced: true,
};
/** An object of cluster `cluster` (its shard is the cluster's number), labelled `value` when given. */
const object = (name: string, cluster: number, value?: string): KubeObject => ({
  metadata: { namespace: "ns", name, labels: { cluster: String(cluster), ...(value !== undefined ? { [label]: value } : {}) } },
});

/** An informer that only holds objects and calls its handlers. */
function fakeInformer(objects: KubeObject[] = []) {
  const handlers: InformerHandlers<KubeObject>[] = [];
  const informer = {
    type,
    list: () => objects,
    addHandlers: (h: InformerHandlers<KubeObject>) => void handlers.push(h),
  } as unknown as Informer<KubeObject>;
  return {
    informer,
    add: (o: KubeObject) => handlers.forEach((h) => h.add?.(o, { initialList: false })),
    update: (o: KubeObject) => handlers.forEach((h) => h.update?.(o, o, { resync: false })),
  };
}

function labellerOf(held: Set<number>, failWith?: unknown) {
  const patches: string[] = [];
  const labeller = new ShardLabeller({
    client: {
      patch: async (_type: ResourceType, namespace: string | undefined, name: string, patch: unknown) => {
        patches.push(`${namespace}/${name} ${JSON.stringify(patch)}`);
        if (failWith) throw failWith;
        return {} as never;
      },
    } as never,
    label,
    shardOfObject: (o) => Number(o.metadata?.labels?.cluster),
    held: () => held,
    logger: pino({ level: "silent" }),
  });
  return { labeller, patches };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe("ShardLabeller", () => {
  it("labels an unassigned object when this replica holds its shard, and the others of a shard when it gains it", async () => {
    const held = new Set([1]);
    const { labeller, patches } = labellerOf(held);
    const waiting = object("b", 2);
    const unassigned = fakeInformer([waiting]);
    labeller.watchUnassigned(unassigned.informer);
    unassigned.add(object("a", 1));
    unassigned.add(waiting);
    // The same object again while its write is in flight: one write.
    unassigned.update(object("a", 1));
    await settle();
    expect(patches).toEqual([`ns/a {"metadata":{"labels":{"${label}":"1"}}}`]);
    held.add(2);
    labeller.gained(2);
    await settle();
    expect(patches).toEqual([`ns/a {"metadata":{"labels":{"${label}":"1"}}}`, `ns/b {"metadata":{"labels":{"${label}":"2"}}}`]);
    expect(labeller.written).toBe(2);
    // A cache still showing b as it was before the write (its removal from the unassigned informer not seen yet): not written again.
    labeller.gained(2);
    await settle();
    expect(patches).toHaveLength(2);
  });

  it("relabels, from a shard informer, an object whose label is not its shard's any more; a correct label is left alone", async () => {
    const { labeller, patches } = labellerOf(new Set([0]));
    const scoped = fakeInformer();
    labeller.watchScoped(scoped.informer);
    scoped.add(object("ok", 0, "0"));
    // Labelled 0, but its cluster is in shard 2 now (held elsewhere): the holder of 0 sees it, so it moves it.
    scoped.update(object("moved", 2, "0"));
    await settle();
    expect(patches).toEqual([`ns/moved {"metadata":{"labels":{"${label}":"2"}}}`]);
  });

  it("forgets a failed write, so the next event tries again", async () => {
    const { labeller, patches } = labellerOf(new Set([1]), Object.assign(new Error("conflict"), { code: 500 }));
    const unassigned = fakeInformer();
    labeller.watchUnassigned(unassigned.informer);
    unassigned.add(object("a", 1));
    await settle();
    unassigned.update(object("a", 1));
    await settle();
    expect(patches).toHaveLength(2);
    expect(labeller.written).toBe(0);
  });

  it("caches of an unassigned object what its shard is computed from", () => {
    const full = {
      apiVersion: "v1",
      kind: "TerraformMachine",
      metadata: {
        name: "a",
        namespace: "ns",
        uid: "u",
        resourceVersion: "3",
        labels: { x: "y" },
        ownerReferences: [],
        managedFields: [{}],
        annotations: { big: "…" },
      },
      spec: { a: 1 },
      status: { b: 2 },
    };
    expect(shardLabelMetadata(full as KubeObject)).toEqual({
      apiVersion: "v1",
      kind: "TerraformMachine",
      metadata: { name: "a", namespace: "ns", uid: "u", resourceVersion: "3", labels: { x: "y" }, ownerReferences: [] },
    });
  });
});
