// The read cache's answer to cache lag: own writes are expectations, read live until the cache shows them.
import { describe, expect, it } from "@jest/globals";
import { builtinTypes } from "./builtin-types.js";
import { KubeApiError } from "./api-errors.js";
import type { KubeApi, KubeObject, ResourceType } from "./kube-client.js";
import { fakeInformer, fakeServer } from "./read-cache.test-support.js";
import { atLeast, newestResourceVersion, ReadCache, watchedByName } from "./read-cache.js";
import { recordingWrites } from "./recorded-writes.js";

const secret = (name: string, resourceVersion: string): KubeObject => ({
  metadata: { namespace: "ns", name, resourceVersion, labels: { app: "x" } },
});

describe("the read cache", () => {
  it("reads an own write live until the cache shows it, then from the cache", async () => {
    const informer = fakeInformer();
    const server = fakeServer();
    const cache = new ReadCache(server).add(builtinTypes.secret, { informer });
    informer.put(secret("a", "5"));
    server.objects.set("ns/a", secret("a", "5"));
    expect((await cache.get(builtinTypes.secret, "ns", "a"))?.metadata?.resourceVersion).toBe("5");
    expect(server.reads).toEqual([]);

    // The manager writes a: the watch has not delivered it yet, so a cached read would see the old object.
    server.objects.set("ns/a", secret("a", "9"));
    cache.wrote(builtinTypes.secret, secret("a", "9"));
    expect((await cache.get(builtinTypes.secret, "ns", "a"))?.metadata?.resourceVersion).toBe("9");
    expect((await cache.list(builtinTypes.secret, "ns", "app=x")).map((o) => o.metadata?.resourceVersion)).toEqual(["9"]);
    expect(server.reads).toEqual(["get a", "list"]);

    informer.put(secret("a", "9"));
    expect((await cache.get(builtinTypes.secret, "ns", "a"))?.metadata?.resourceVersion).toBe("9");
    expect(cache.counts).toEqual({ cached: 2, live: 2 });
  });

  it(
    "drops an expectation as soon as the type's own cache shows the write or the delete, without a read; a named cache of the " +
      "type does not",
    async () => {
      const informer = fakeInformer();
      const named = fakeInformer();
      const cache = new ReadCache(fakeServer())
        .add(builtinTypes.secret, { informer })
        .add(builtinTypes.secret, { informer: named, scoped: true }, "other");
      cache.wrote(builtinTypes.secret, secret("a", "9"));
      informer.put(secret("b", "10"));
      named.put(secret("a", "9"));
      expect(cache.pendingExpectations).toBe(1);
      informer.put(secret("a", "8"));
      expect(cache.pendingExpectations).toBe(1);
      informer.put(secret("a", "9"));
      expect(cache.pendingExpectations).toBe(0);
      cache.deleted(builtinTypes.secret, "ns", "a");
      expect(cache.pendingExpectations).toBe(1);
      informer.remove("ns/a");
      expect(cache.pendingExpectations).toBe(0);
    },
  );

  it(
    "records no expectation the cache already meets: the watch delivered the write or the delete before its response came back " +
      "(of a deleted object, nothing would ever drop it)",
    () => {
      const informer = fakeInformer();
      const cache = new ReadCache(fakeServer()).add(builtinTypes.secret, { informer });
      informer.put(secret("a", "9"));
      cache.wrote(builtinTypes.secret, secret("a", "9"));
      informer.put(secret("b", "12"));
      cache.wrote(builtinTypes.secret, secret("b", "11"));
      cache.deleted(builtinTypes.secret, "ns", "gone");
      expect(cache.pendingExpectations).toBe(0);
      // A newer write met already takes an older pending one with it.
      cache.wrote(builtinTypes.secret, secret("c", "3"));
      informer.objects.set("ns/c", secret("c", "4"));
      cache.wrote(builtinTypes.secret, secret("c", "4"));
      expect(cache.pendingExpectations).toBe(0);
    },
  );

  it("expects an object gone after a write that took the last finalizer off it while it was being deleted", () => {
    const informer = fakeInformer();
    const cache = new ReadCache(fakeServer()).add(builtinTypes.secret, { informer });
    const deleting = (name: string, finalizers: string[]) => ({
      metadata: { namespace: "ns", name, resourceVersion: "20", deletionTimestamp: "2026-12-07T12:00:00Z", finalizers },
    });
    informer.put(secret("kept", "19"));
    cache.wrote(builtinTypes.secret, deleting("kept", ["other.example/finalizer"]));
    expect(cache.pendingExpectations).toBe(1);
    informer.put(deleting("kept", ["other.example/finalizer"]));
    expect(cache.pendingExpectations).toBe(0);

    // The watch showed the delete first: nothing stays.
    cache.wrote(builtinTypes.secret, deleting("gone-first", []));
    expect(cache.pendingExpectations).toBe(0);
    // The response came first: the delete, once shown, drops it (the resourceVersion written never shows).
    informer.put(secret("gone-after", "19"));
    cache.wrote(builtinTypes.secret, deleting("gone-after", []));
    expect(cache.pendingExpectations).toBe(1);
    informer.remove("ns/gone-after");
    expect(cache.pendingExpectations).toBe(0);
  });

  it(
    "drops an expectation past its lifetime on any read of its type, also one no read matches (a deleted Secret nobody reads " + "again)",
    async () => {
      const informer = fakeInformer();
      const server = fakeServer();
      let now = 0;
      const cache = new ReadCache(server, () => now).add(builtinTypes.secret, { informer });
      informer.put(secret("gone", "5"));
      cache.deleted(builtinTypes.secret, "ns", "gone");
      cache.wrote(builtinTypes.secret, { metadata: { namespace: "other", name: "b", resourceVersion: "7", labels: { app: "y" } } });
      expect(cache.pendingExpectations).toBe(2);
      await cache.list(builtinTypes.secret, "ns", "app=z");
      expect(cache.pendingExpectations).toBe(2);
      now += 5 * 60_000;
      await cache.list(builtinTypes.secret, "ns", "app=z");
      expect(cache.pendingExpectations).toBe(0);
    },
  );

  it("reads an own create and delete live until the cache shows them; a list waits for every write in its namespace", async () => {
    const informer = fakeInformer();
    const server = fakeServer();
    const cache = new ReadCache(server).add(builtinTypes.job, { informer });
    server.objects.set("ns/j", secret("j", "3"));
    cache.wrote(builtinTypes.job, secret("j", "3"));
    expect(await cache.list(builtinTypes.job, "ns", "app=x")).toHaveLength(1);
    informer.put(secret("j", "3"));
    server.objects.delete("ns/j");
    cache.deleted(builtinTypes.job, "ns", "j");
    expect(await cache.get(builtinTypes.job, "ns", "j")).toBeUndefined();
    expect(await cache.list(builtinTypes.job, "other", "app=x")).toEqual([]);
    expect(server.reads).toEqual(["list", "get j"]);
    informer.objects.delete("ns/j");
    expect(await cache.list(builtinTypes.job, "ns", "app=x")).toEqual([]);
    expect(server.reads).toEqual(["list", "get j"]);
  });

  it("lets a list wait only for the own writes its selector matches, as written or as cached", async () => {
    const informer = fakeInformer();
    const server = fakeServer();
    const cache = new ReadCache(server).add(builtinTypes.secret, { informer });
    const labelled = (name: string, resourceVersion: string, labels: Record<string, string>): KubeObject => ({
      metadata: { namespace: "ns", name, resourceVersion, labels },
    });
    informer.put(labelled("state-a", "2", { suffix: "a" }));
    informer.put(labelled("retained-b", "3", { suffix: "b", retained: "uid" }));
    // Writes the cache has not shown yet: another object's Secret, and b's that drops the label a list of b's retained Secrets selects.
    cache.wrote(builtinTypes.secret, labelled("other", "5", { suffix: "c" }));
    cache.wrote(builtinTypes.secret, labelled("retained-b", "6", { suffix: "b" }));
    expect((await cache.list(builtinTypes.secret, "ns", "suffix=a")).map((o) => o.metadata?.name)).toEqual(["state-a"]);
    expect(server.reads).toEqual([]);
    server.objects.set("ns/retained-b", labelled("retained-b", "6", { suffix: "b" }));
    expect(await cache.list(builtinTypes.secret, "ns", "suffix=b,retained")).toEqual([]);
    expect(server.reads).toEqual(["list"]);
  });

  it("reads live when the cache has not seen the given resourceVersion (a Job that finished after writing state)", async () => {
    const informer = fakeInformer();
    const server = fakeServer();
    const cache = new ReadCache(server).add(builtinTypes.secret, { informer, scoped: true });
    informer.put(secret("s", "10"));
    server.objects.set("ns/s", secret("s", "12"));
    expect((await cache.list(builtinTypes.secret, "ns", "app=x", { inScope: true, freshAsOf: "11" }))[0]?.metadata?.resourceVersion).toBe(
      "12",
    );
    expect((await cache.list(builtinTypes.secret, "ns", "app=x", { inScope: true, freshAsOf: "10" }))[0]?.metadata?.resourceVersion).toBe(
      "10",
    );
    expect(server.reads).toEqual(["list"]);
  });

  it("takes a scoped cache's absence as an answer only for objects in its scope", async () => {
    const server = fakeServer();
    const cache = new ReadCache(server).add(builtinTypes.secret, { informer: fakeInformer(), scoped: true });
    server.objects.set("ns/user", secret("user", "4"));
    expect(await cache.get(builtinTypes.secret, "ns", "user")).toBeDefined();
    expect(await cache.get(builtinTypes.secret, "ns", "managed", { inScope: true })).toBeUndefined();
    expect(server.reads).toEqual(["get user"]);
  });

  it("serves a read that asks for it from a watch of its own object, started on the first read, live until that watch synced", async () => {
    const server = fakeServer();
    const watches = new Map<string, ReturnType<typeof fakeInformer>>();
    const cache = new ReadCache(server)
      .add(builtinTypes.secret, { informer: fakeInformer(), scoped: true })
      .watchByName(builtinTypes.secret, (namespace, name) => {
        let watch = watches.get(`${namespace}/${name}`);
        if (!watch) watches.set(`${namespace}/${name}`, (watch = { ...fakeInformer(), hasSynced: () => false }));
        return watch;
      });
    server.objects.set("ns/source", secret("source", "4"));
    expect((await cache.get(builtinTypes.secret, "ns", "source", { cache: watchedByName }))?.metadata?.resourceVersion).toBe("4");
    expect([...watches.keys()]).toEqual(["ns/source"]);
    const synced = { ...fakeInformer(), hasSynced: () => true };
    synced.put(secret("source", "4"));
    watches.set("ns/source", synced);
    expect((await cache.get(builtinTypes.secret, "ns", "source", { cache: watchedByName }))?.metadata?.resourceVersion).toBe("4");
    // A synced watch of one name that holds nothing: the object does not exist.
    watches.set("ns/gone", { ...fakeInformer(), hasSynced: () => true });
    expect(await cache.get(builtinTypes.secret, "ns", "gone", { cache: watchedByName })).toBeUndefined();
    expect(server.reads).toEqual(["get source"]);
  });

  it("compares resourceVersions as the integers etcd gives, anything else as not yet seen", () => {
    expect(atLeast("10", "9")).toBe(true);
    expect(atLeast("9", "10")).toBe(false);
    expect(atLeast("10", "10")).toBe(true);
    expect(atLeast(undefined, "1")).toBe(false);
    expect(atLeast("x", "1")).toBe(false);
    expect(atLeast("1", undefined)).toBe(true);
    expect(newestResourceVersion(["9", undefined, "10", "2"])).toBe("10");
    expect(newestResourceVersion([])).toBeUndefined();
  });
});

describe("recorded writes", () => {
  /** A client whose writes answer the object as written (resourceVersion "6"), logging each call; `patch` replaced when given. */
  function fakeClient(patch?: () => Promise<KubeObject>) {
    const calls: string[] = [];
    const answer = async (call: string, type: ResourceType, namespace: string | undefined, name: string) => {
      calls.push(`${call} ${type.plural} ${name}`);
      return { metadata: { ...(namespace ? { namespace } : {}), name, resourceVersion: "6" } };
    };
    const client = {
      calls,
      get: async (type: ResourceType, namespace: string | undefined, name: string) => answer("get", type, namespace, name),
      list: async (type: ResourceType) => (calls.push(`list ${type.plural}`), { items: [] }),
      create: async (type: ResourceType, namespace: string | undefined, body: KubeObject) =>
        answer("create", type, namespace, body.metadata!.name!),
      replace: async (type: ResourceType, namespace: string | undefined, name: string) => answer("replace", type, namespace, name),
      patch: patch ?? (async (type: ResourceType, namespace: string | undefined, name: string) => answer("patch", type, namespace, name)),
      patchStatus: async (type: ResourceType, namespace: string | undefined, name: string) => answer("patchStatus", type, namespace, name),
      delete: async (type: ResourceType, _namespace: string | undefined, name: string) => (
        calls.push(`delete ${type.plural} ${name}`), { status: "Success" }
      ),
    };
    return client as unknown as KubeApi & { calls: string[] };
  }

  it(
    "record each write under the type it writes (creates, replaces, patches and status patches as the object written, deletes " +
      "as gone); reads record nothing",
    async () => {
      const thing: ResourceType = { group: "g", version: "v1", plural: "things", kind: "Thing", namespaced: true };
      const types = [builtinTypes.secret, builtinTypes.job, builtinTypes.roleBinding, thing];
      const informers = types.map(() => fakeInformer());
      const cache = new ReadCache(fakeServer());
      types.forEach((type, index) => cache.add(type, { informer: informers[index]! }));
      const client = fakeClient();
      const recorded = recordingWrites(client, cache);
      await recorded.get(builtinTypes.secret, "ns", "read");
      await recorded.list(builtinTypes.job, "ns");
      expect(cache.pendingExpectations).toBe(0);
      await recorded.create(builtinTypes.secret, "ns", { metadata: { name: "s" } });
      await recorded.patch(builtinTypes.job, "ns", "j", {}, "merge");
      await recorded.replace(builtinTypes.roleBinding, "ns", "rb", {});
      await recorded.patchStatus(thing, "ns", "t", { status: {} });
      expect(cache.pendingExpectations).toBe(4);
      // Each is met by its own type's cache showing the written resourceVersion, and by nothing else.
      informers[0]!.put({ metadata: { namespace: "ns", name: "j", resourceVersion: "6" } });
      expect(cache.pendingExpectations).toBe(4);
      types.forEach((_type, index) =>
        informers[index]!.put({ metadata: { namespace: "ns", name: ["s", "j", "rb", "t"][index]!, resourceVersion: "6" } }),
      );
      expect(cache.pendingExpectations).toBe(0);
      await recorded.delete(builtinTypes.job, "ns", "j", { propagationPolicy: "Background" });
      expect(cache.pendingExpectations).toBe(1);
      informers[1]!.remove("ns/j");
      expect(cache.pendingExpectations).toBe(0);
      expect(client.calls).toEqual([
        "get secrets read",
        "list jobs",
        "create secrets s",
        "patch jobs j",
        "replace rolebindings rb",
        "patchStatus things t",
        "delete jobs j",
      ]);
    },
  );

  it("record nothing for a write that fails", async () => {
    const cache = new ReadCache(fakeServer()).add(builtinTypes.secret, { informer: fakeInformer() });
    const client = fakeClient(async () => Promise.reject(new KubeApiError(409, { reason: "Conflict" }, "conflict")));
    await expect(recordingWrites(client, cache).patch(builtinTypes.secret, "ns", "a", {})).rejects.toThrow("conflict");
    expect(cache.pendingExpectations).toBe(0);
  });

  it("become expectations of the cache: the next read of the written object is live", async () => {
    const informer = fakeInformer();
    const server = fakeServer();
    const cache = new ReadCache(server).add(builtinTypes.secret, { informer });
    informer.put(secret("a", "5"));
    const client = fakeClient(async () => {
      server.objects.set("ns/a", secret("a", "6"));
      return secret("a", "6");
    });
    const recorded = recordingWrites(client, cache);
    await recorded.patch(builtinTypes.secret, "ns", "a", {});
    expect((await cache.get(builtinTypes.secret, "ns", "a"))?.metadata?.resourceVersion).toBe("6");
    await recorded.delete(builtinTypes.secret, "ns", "a");
    server.objects.delete("ns/a");
    expect(await cache.get(builtinTypes.secret, "ns", "a")).toBeUndefined();
    expect(server.reads).toEqual(["get a", "get a"]);
  });

  it("reads a sharded cache live while it relists a new scope, and an object absent there live too", async () => {
    let listed = false;
    const informer = { ...fakeInformer(), listedCurrentScope: () => listed };
    const server = fakeServer();
    const cache = new ReadCache(server).add(builtinTypes.secret, { informer, scoped: true });
    server.objects.set("ns/a", secret("a", "4"));
    // A shard just gained: the cache has not listed it yet.
    expect((await cache.get(builtinTypes.secret, "ns", "a"))?.metadata?.resourceVersion).toBe("4");
    expect(server.reads).toEqual(["get a"]);
    listed = true;
    informer.objects.set("ns/a", secret("a", "4"));
    expect((await cache.get(builtinTypes.secret, "ns", "a"))?.metadata?.resourceVersion).toBe("4");
    // Not in the held shards' cache: asked live (it may belong to another shard).
    expect(await cache.get(builtinTypes.secret, "ns", "b")).toBeUndefined();
    expect(server.reads).toEqual(["get a", "get b"]);
  });
});
