// The pass client: without a cache every read goes to the API server (a missing object is undefined, not an error); with one, reads
// come from it and `.live` still goes to the API server.
import { describe, expect, it } from "@jest/globals";
import { builtinTypes } from "./builtin-types.js";
import { type FakeCall, FakeObjects, fakeClient } from "./fake-client.test-support.js";
import { passClient } from "./pass-client.js";
import type { ReadCache } from "./read-cache.js";

const secret = (name: string, label = "x") => ({ metadata: { name, labels: { app: label } } });

/** A cache that holds one Secret and counts the reads it answers. */
function cacheHolding(name: string): { cache: ReadCache; answered: string[] } {
  const answered: string[] = [];
  const cache = {
    get: async (_type: unknown, _namespace: unknown, wanted: string) => (
      answered.push(`get ${wanted}`), wanted === name ? secret(name) : undefined
    ),
    list: async (_type: unknown, _namespace: unknown, selector: string) => (answered.push(`list ${selector}`), [secret(name)]),
  } as unknown as ReadCache;
  return { cache, answered };
}

describe("passClient", () => {
  it("without a cache reads live: an object, undefined for a missing one, a list by label", async () => {
    const server = new FakeObjects();
    server.seed(builtinTypes.secret, "ns", secret("a"));
    server.seed(builtinTypes.secret, "ns", secret("b", "y"));
    const reads = passClient({ client: server.client });
    expect(reads.cache).toBeUndefined();
    expect(await reads.get(builtinTypes.secret, "ns", "a")).toMatchObject({ metadata: { name: "a" } });
    expect(await reads.get(builtinTypes.secret, "ns", "gone")).toBeUndefined();
    expect((await reads.list<{ metadata: { name: string } }>(builtinTypes.secret, "ns", "app=y")).map((s) => s.metadata.name)).toEqual([
      "b",
    ]);
  });

  it("with a cache: reads from it by default, from the API server through .live", async () => {
    const server = new FakeObjects();
    server.seed(builtinTypes.secret, "ns", secret("live-only"));
    const { cache, answered } = cacheHolding("cached");
    const reads = passClient({ client: server.client, cache });
    expect(await reads.get(builtinTypes.secret, "ns", "cached")).toMatchObject({ metadata: { name: "cached" } });
    expect(await reads.get(builtinTypes.secret, "ns", "live-only")).toBeUndefined();
    expect(await reads.list(builtinTypes.secret, "ns", "app=x")).toHaveLength(1);
    expect(answered).toEqual(["get cached", "get live-only", "list app=x"]);
    expect(await reads.live.get(builtinTypes.secret, "ns", "live-only")).toMatchObject({ metadata: { name: "live-only" } });
    expect(await reads.live.list(builtinTypes.secret, "ns", "app=x")).toHaveLength(1);
    expect(answered).toHaveLength(3);
    expect(reads.client).toBe(server.client);
  });

  it("lists by field selector live, even with a cache: no informer indexes fields", async () => {
    const queries: FakeCall["query"][] = [];
    const client = fakeClient({ "list events": (call) => (queries.push(call.query), { items: [{ reason: "FailedCreate" }] }) });
    const { cache, answered } = cacheHolding("cached");
    const reads = passClient({ client, cache });
    const selector = "involvedObject.uid=u1,reason=FailedCreate";
    expect(await reads.live.listByFields(builtinTypes.coreEvent, "ns", selector)).toEqual([{ reason: "FailedCreate" }]);
    expect(queries).toEqual([{ fieldSelector: selector }]);
    expect(answered).toEqual([]);
  });
});
