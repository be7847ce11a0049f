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
  const find = (namespace: string | undefined, name: string) =>
    objects.findIndex((o) => o.metadata?.namespace === namespace && o.metadata?.name === name);
  const store = (o: KubeObject) => {
    const at = find(o.metadata?.namespace, o.metadata!.name!);
    if (at >= 0) objects[at] = o;
    else objects.push(o);
  };
  const informer = {
    type,
    list: () => objects,
    get: (namespace: string | undefined, name: string) => objects[find(namespace, name)],
    addHandlers: (h: InformerHandlers<KubeObject>) => void handlers.push(h),
  } as unknown as Informer<KubeObject>;
  return {
    informer,
    add: (o: KubeObject) => {
      store(o);
      handlers.forEach((h) => h.add?.(o, { initialList: false }));
    },
    update: (o: KubeObject) => {
      store(o);
      handlers.forEach((h) => h.update?.(o, o, { resync: false }));
    },
    /** The watch delivers the object's delete (gone, or out of the informer's selector). */
    remove: (o: KubeObject) => {
      objects.splice(find(o.metadata?.namespace, o.metadata!.name!), 1);
      handlers.forEach((h) => h.delete?.(o));
    },
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

  it("remembers nothing of an object its caches let go of, whether before or after its write's answer", async () => {
    const { labeller, patches } = labellerOf(new Set([1]));
    const unassigned = fakeInformer();
    const scoped = fakeInformer();
    labeller.watchUnassigned(unassigned.informer);
    labeller.watchScoped(scoped.informer);
    // The write answered while the unassigned cache still shows the old copy: remembered, so that copy is not written again.
    unassigned.add(object("a", 1));
    await settle();
    expect(labeller.remembered).toBe(1);
    labeller.gained(1);
    await settle();
    expect(patches).toHaveLength(1);
    // The label moves it out of the unassigned cache into the shard's: nothing left to skip, nothing remembered.
    unassigned.remove(object("a", 1));
    scoped.add(object("a", 1, "1"));
    expect(labeller.remembered).toBe(0);

    // Deleted while its write was in flight: the answer comes after the delete, and nothing is remembered of it.
    unassigned.add(object("b", 1));
    unassigned.remove(object("b", 1));
    await settle();
    expect(patches).toHaveLength(2);
    expect(labeller.written).toBe(2);
    expect(labeller.remembered).toBe(0);
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
