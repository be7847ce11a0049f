// The informer against the real kube-apiserver: cache, indexes and events, then each way a watch
// breaks (a real 410 Gone, a cut connection, a silent connection) and the periodic relist.
import { afterAll, beforeAll, describe, expect, it, jest } from "@jest/globals";
import { describeWithTools } from "@captf/testkit";
import { Registry } from "prom-client";
import { RuntimeMetrics } from "../metrics/runtime-metrics.js";
import { builtinTypes } from "./builtin-types.js";
import { Informer, labelIndex, objectKey, splitKey, type InformerOptions, type WatchRestartReason } from "./informer.js";
import type { KubeObject, ResourceType } from "./kube-client.js";
import { captureLogs, createTestNamespace, eventually, FaultyKubeClient } from "./runtime.test-support.js";

jest.setTimeout(30_000);

interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
}

describe("object keys", () => {
  it("are namespace/name, or the name alone when cluster-scoped, and split back", () => {
    expect(objectKey({ metadata: { namespace: "ns", name: "a" } })).toBe("ns/a");
    expect(objectKey({ metadata: { name: "node-1" } })).toBe("node-1");
    expect(splitKey("ns/a")).toEqual({ namespace: "ns", name: "a" });
    expect(splitKey("node-1")).toEqual({ namespace: undefined, name: "node-1" });
  });
});

describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager"], "the resilient informer on a real API server", () => {
  let client: FaultyKubeClient;
  let namespace: string;
  const informers: Informer<KubeObject>[] = [];

  beforeAll(async () => {
    client = new FaultyKubeClient();
    namespace = await createTestNamespace(client, "informer");
  });

  afterAll(async () => {
    await Promise.all(informers.map((informer) => informer.stop()));
    await client.delete(builtinTypes.namespace, undefined, namespace).catch(() => undefined);
    client.close();
  });

  /** An informer on ConfigMaps (or `type`) of this suite's namespace recording what it saw. */
  function startInformer<T extends KubeObject = ConfigMap>(
    overrides: Partial<InformerOptions<T>> = {},
    type: ResourceType = builtinTypes.configMap,
    labelIndexes: readonly string[] = [],
  ) {
    const logs = captureLogs();
    const events: string[] = [];
    const restarts: WatchRestartReason[] = [];
    const lists: number[] = [];
    const informer = new Informer<T>({
      client,
      type,
      namespace,
      logger: logs.logger,
      backoffInitialMillis: 50,
      backoffMaxMillis: 200,
      metrics: { listed: (items) => void lists.push(items), watchRestarted: (reason) => void restarts.push(reason) },
      ...overrides,
    });
    for (const key of labelIndexes) informer.indexLabel(key);
    informer.addHandlers({
      add: (o, { initialList }) => void events.push(`add ${o.metadata?.name}${initialList ? " (initial)" : ""}`),
      update: (_old, o, { resync }) => void events.push(`${resync ? "resync" : "update"} ${o.metadata?.name}`),
      delete: (o) => void events.push(`delete ${o.metadata?.name}`),
    });
    informer.start();
    informers.push(informer as unknown as Informer<KubeObject>);
    return { informer, events, restarts, logs, lists };
  }

  const configMap = (name: string, labels: Record<string, string> = {}, data: Record<string, string> = {}): ConfigMap => ({
    metadata: { name, labels },
    data,
  });
  const create = (body: ConfigMap) => client.create(builtinTypes.configMap, namespace, body);

  it("fills its cache, then sees creates, updates and deletes, with label selection and an index", async () => {
    await create(configMap("before", { app: "web" }));
    const { informer, events } = startInformer<ConfigMap>({ indexes: { byApp: labelIndex("app") } });
    expect(await informer.waitForSync(10_000)).toBe(true);
    expect(events).toContain("add before (initial)");

    await create(configMap("web-2", { app: "web", tier: "front" }));
    await create(configMap("db-1", { app: "db" }));
    await client.patch(builtinTypes.configMap, namespace, "web-2", { data: { changed: "yes" } });
    await client.delete(builtinTypes.configMap, namespace, "db-1");
    await eventually(() => events.includes("delete db-1"), 10_000, "the delete event");

    expect(events).toEqual(expect.arrayContaining(["add web-2", "add db-1", "update web-2", "delete db-1"]));
    expect(informer.get(namespace, "web-2")?.data).toEqual({ changed: "yes" });
    expect(informer.get(`${namespace}/db-1`)).toBeUndefined();
    expect(
      informer
        .list({ labelSelector: "app=web" })
        .map((o) => o.metadata?.name)
        .sort(),
    ).toEqual(["before", "web-2"]);
    expect(informer.list({ labelSelector: "app=web,tier" }).map((o) => o.metadata?.name)).toEqual(["web-2"]);
    expect(
      informer
        .byIndex("byApp", "web")
        .map((o) => o.metadata?.name)
        .sort(),
    ).toEqual(["before", "web-2"]);
    expect(informer.byIndex("byApp", "db")).toEqual([]);
    // Cached objects are frozen: a reconciler must copy before changing one.
    expect(() => {
      (informer.get(namespace, "web-2")!.data as Record<string, string>).x = "y";
    }).toThrow(TypeError);
  });

  it("transforms a list page by page, so a relist of thousands never holds them all as the server sent them", async () => {
    for (const name of ["page-1", "page-2", "page-3", "page-4", "page-5"])
      await create(configMap(name, { suite: "pages" }, { big: "x".repeat(1000) }));
    const steps: string[] = [];
    const listing = Object.create(client) as FaultyKubeClient;
    listing.list = ((...args: Parameters<FaultyKubeClient["list"]>) => {
      steps.push("page");
      return client.list(...args);
    }) as FaultyKubeClient["list"];
    const { informer } = startInformer<ConfigMap>({
      client: listing,
      labelSelector: "suite=pages",
      pageSize: 2,
      transform: (object) => {
        steps.push("transform");
        return { ...object, data: { size: String(object.data?.big?.length ?? 0) } };
      },
    });
    expect(await informer.waitForSync(10_000)).toBe(true);
    expect(steps.slice(0, 8)).toEqual(["page", "transform", "transform", "page", "transform", "transform", "page", "transform"]);
    expect(informer.get(namespace, "page-5")?.data).toEqual({ size: "1000" });
  });

  it("lists by an indexed label from that label's value's objects, with the same answers as a scan, as objects change", async () => {
    await create(configMap("idx-a1", { owner: "a", kind: "x" }));
    await create(configMap("idx-a2", { owner: "a", kind: "y" }));
    await create(configMap("idx-b1", { owner: "b", kind: "x" }));
    const indexed = startInformer<ConfigMap>({}, builtinTypes.configMap, ["owner"]).informer;
    const scanned = startInformer<ConfigMap>().informer;
    expect(await indexed.waitForSync(10_000)).toBe(true);
    expect(await scanned.waitForSync(10_000)).toBe(true);
    const names = (informer: Informer<ConfigMap>, labelSelector: string) =>
      informer
        .list({ namespace, labelSelector })
        .map((o) => o.metadata?.name)
        .sort();
    const selectors = ["owner=a", "owner=a,kind=x", "owner=b", "owner=c", "kind=x", "owner in (a,b)", "owner!=a"];
    for (const selector of selectors) expect(names(indexed, selector)).toEqual(names(scanned, selector));
    expect(names(indexed, "owner=a")).toEqual(["idx-a1", "idx-a2"]);
    // A label changed and an object deleted: the index follows.
    await client.patch(builtinTypes.configMap, namespace, "idx-a2", { metadata: { labels: { owner: "b" } } });
    await client.delete(builtinTypes.configMap, namespace, "idx-a1");
    await eventually(
      () => names(indexed, "owner=a").length === 0 && names(scanned, "owner=a").length === 0,
      10_000,
      "the label change and delete",
    );
    expect(names(indexed, "owner=b")).toEqual(["idx-a2", "idx-b1"]);
    for (const selector of selectors) expect(names(indexed, selector)).toEqual(names(scanned, selector));
    expect(() => indexed.indexLabel("kind")).toThrow(/before starting/);
  });

  it(
    "follows a new label selector (a sharded manager's held shards): adds what entered, deletes what left, fires nothing for " +
      "what stayed",
    async () => {
      for (const [name, shard] of [
        ["s0", "0"],
        ["s1", "1"],
        ["s2", "2"],
      ] as const)
        await create(configMap(name, { suite: "rescope", shard }));
      await create(configMap("s-none", { suite: "rescope" }));
      const held = (shards: string) => `suite=rescope,shard in (${shards})`;
      // Nothing held yet: no list, no watch, an empty cache that counts as synced.
      const { informer, events, lists } = startInformer({ labelSelector: false });
      expect(await informer.waitForSync(10_000)).toBe(true);
      expect([informer.size, informer.listedCurrentScope(), lists]).toEqual([0, true, []]);

      informer.rescope(held("0"));
      expect(informer.listedCurrentScope()).toBe(false);
      await eventually(() => informer.listedCurrentScope(), 10_000, "the first scope listed");
      expect(informer.list().map((o) => o.metadata?.name)).toEqual(["s0"]);
      informer.rescope(held("0,1"));
      await eventually(() => informer.listedCurrentScope(), 10_000, "the second scope listed");
      // The watch follows the new scope too.
      await create(configMap("s1-late", { suite: "rescope", shard: "1" }));
      await create(configMap("s2-late", { suite: "rescope", shard: "2" }));
      await eventually(() => events.includes("add s1-late"), 10_000, "s1-late");
      informer.rescope(held("1"));
      await eventually(() => informer.listedCurrentScope(), 10_000, "the third scope listed");
      expect(
        informer
          .list()
          .map((o) => o.metadata?.name)
          .sort(),
      ).toEqual(["s1", "s1-late"]);
      informer.rescope(false);
      await eventually(() => informer.size === 0 && informer.listedCurrentScope(), 10_000, "nothing held");
      expect(events).toEqual(["add s0", "add s1", "add s1-late", "delete s0", "delete s1", "delete s1-late"]);
      expect(informer.labelSelector).toBe(false);
    },
  );

  it("relists after a real 410 Gone from the server and misses nothing", async () => {
    // A CRD installed just now has a watch cache that starts now: resourceVersion "1" is too old for it.
    const plural = `gadgets${Date.now().toString(36)}`;
    const crdType: ResourceType = {
      group: "apiextensions.k8s.io",
      version: "v1",
      kind: "CustomResourceDefinition",
      plural: "customresourcedefinitions",
      namespaced: false,
    };
    const gadgetType: ResourceType = { group: "runtime-test.captf.io", version: "v1", kind: "Gadget", plural, namespaced: true };
    await client.create(crdType, undefined, {
      metadata: { name: `${plural}.runtime-test.captf.io` },
      spec: {
        group: "runtime-test.captf.io",
        scope: "Namespaced",
        names: { plural, singular: plural, kind: "Gadget" },
        versions: [
          {
            name: "v1",
            served: true,
            storage: true,
            schema: { openAPIV3Schema: { type: "object", "x-kubernetes-preserve-unknown-fields": true } },
          },
        ],
      },
    } as KubeObject);
    try {
      await eventually(async () => {
        const crd = await client.get<KubeObject & { status?: { conditions?: { type: string; status: string }[] } }>(
          crdType,
          undefined,
          `${plural}.runtime-test.captf.io`,
        );
        return crd.status?.conditions?.some((c) => c.type === "Established" && c.status === "True");
      });
      await eventually(() => client.list(gadgetType, namespace).then(() => true), 10_000, "the new resource to be served");
      const gadget = (name: string) => ({ apiVersion: "runtime-test.captf.io/v1", kind: "Gadget", metadata: { name } });
      await client.create(gadgetType, namespace, gadget("g1"));

      client.nextWatchResourceVersion = "1";
      const { informer, events, restarts, logs } = startInformer<KubeObject>({}, gadgetType);
      await eventually(() => restarts.includes("gone"), 10_000, "the 410");
      await client.create(gadgetType, namespace, gadget("g2"));
      await eventually(() => events.includes("add g2"), 10_000, "g2 after the relist");

      expect(client.watchQueries.some((q) => q.resourceVersion === "1")).toBe(true);
      expect(logs.messages()).toContain("resourceVersion expired (410 Gone), relisting");
      expect(events.slice(0, 2)).toEqual(["add g1 (initial)", "resync g1"]);
      expect(
        informer
          .list()
          .map((o) => o.metadata?.name)
          .sort(),
      ).toEqual(["g1", "g2"]);
    } finally {
      await client.delete(crdType, undefined, `${plural}.runtime-test.captf.io`).catch(() => undefined);
    }
  });

  it("reconnects with backoff after the connection is cut and replays what happened meanwhile", async () => {
    await create(configMap("cut-0", { suite: "cut" }));
    const { informer, events, restarts, logs } = startInformer({ labelSelector: "suite=cut", backoffInitialMillis: 300 });
    await informer.waitForSync(10_000);
    await eventually(() => client.liveWatches > 0, 10_000, "a live watch");

    client.cutWatches();
    // Written while no watch is connected: the rewatch from the last resourceVersion must replay it.
    await create(configMap("cut-1", { suite: "cut" }));
    await eventually(() => events.includes("add cut-1"), 10_000, "cut-1 after the reconnect");

    expect(restarts).toContain("error");
    expect(restarts).not.toContain("gone");
    expect(logs.messages()).toContain("list/watch failed, retrying");
    expect(events.filter((e) => e.startsWith("add cut-0"))).toHaveLength(1);
  });

  it("reconnects when the watch goes silent for longer than the inactivity timeout", async () => {
    const { informer, events, restarts } = startInformer({ labelSelector: "suite=silent", inactivityTimeoutMillis: 400 });
    await informer.waitForSync(10_000);
    client.swallowWatchEvents = true;
    await create(configMap("silent-1", { suite: "silent" }));
    await eventually(() => restarts.includes("inactive"), 5_000, "the inactivity restart");
    client.swallowWatchEvents = false;
    await eventually(() => events.includes("add silent-1"), 10_000, "the missed add, replayed");
    expect(informer.get(namespace, "silent-1")).toBeDefined();
  });

  it("re-delivers every cached object as a resync each period, from its cache: no list, the watch goes on", async () => {
    await create(configMap("periodic-1", { suite: "periodic" }));
    await create(configMap("periodic-2", { suite: "periodic" }));
    const { informer, events, restarts, lists } = startInformer({ labelSelector: "suite=periodic", resyncPeriodMillis: 700 });
    await informer.waitForSync(10_000);
    await eventually(() => events.filter((event) => event.startsWith("resync")).length >= 4, 5_000, "two periodic resyncs");
    expect(
      events
        .filter((event) => event.startsWith("resync"))
        .slice(0, 4)
        .sort(),
    ).toEqual(["resync periodic-1", "resync periodic-1", "resync periodic-2", "resync periodic-2"]);
    // One list (the first) and the same watch throughout: a resync costs the API server nothing.
    expect({ lists: lists.length, restarts }).toEqual({ lists: 1, restarts: [] });
    // The watch still delivers changes between resyncs.
    await client.delete(builtinTypes.configMap, namespace, "periodic-2");
    await eventually(() => events.includes("delete periodic-2"), 5_000, "the delete, from the watch");
    expect(informer.list().map((o) => o.metadata?.name)).toEqual(["periodic-1"]);
  });

  it("rewatches from its resourceVersion, without a relist, when the server ends a watch at its timeout", async () => {
    const { informer, events, restarts, lists } = startInformer({ labelSelector: "suite=timeout", watchTimeoutSeconds: () => 1 });
    await informer.waitForSync(10_000);
    await eventually(() => restarts.includes("ended"), 5_000, "the server to end the watch");
    await create(configMap("after-timeout", { suite: "timeout" }));
    await eventually(() => events.includes("add after-timeout"), 5_000, "the add on the new watch");
    expect(restarts).not.toContain("gone");
    expect(lists).toHaveLength(1);
  });

  it("counts its watch restarts by reason in captf_informer_watch_restarts_total", async () => {
    const registry = new Registry();
    const { informer } = startInformer({
      labelSelector: "suite=counted",
      watchTimeoutSeconds: () => 1,
      metrics: new RuntimeMetrics(registry).informerSink("configmaps"),
    });
    await informer.waitForSync(10_000);
    const ended = async () =>
      (await registry.getSingleMetric("captf_informer_watch_restarts_total")!.get()).values.find(
        (value) => value.labels.reason === "ended",
      );
    await eventually(async () => ((await ended())?.value ?? 0) >= 1, 5_000, "the server to end the watch");
    expect((await ended())?.labels).toEqual({ resource: "configmaps", reason: "ended" });
  });

  it("stops cleanly and can hand a late handler the cache as adds", async () => {
    const { informer } = startInformer({ labelSelector: "suite=cut" });
    await informer.waitForSync(10_000);
    await informer.stop();
    const late: string[] = [];
    informer.addHandlers({ add: (o, { initialList }) => void late.push(`${o.metadata?.name}:${initialList}`) });
    expect(late.sort()).toEqual(["cut-0:true", "cut-1:true"]);
  });
});
