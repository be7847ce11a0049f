import { describe, expect, it } from "@jest/globals";
import { pino } from "pino";
import { namespaceSweepController, nextSweepMillis, sweepNamespaceLogged } from "./namespace-sweep.js";
import { fakeClient, type FakeHandlers } from "../runtime/fake-client.test-support.js";

/**
 * Lists that answer from fixed tables: `objects` captf objects of each kind remain in every namespace; `workspaces` answers the lists of
 * those instead.
 */
function listingClient(objects: number, workspaces?: FakeHandlers[string]) {
  const empty = async () => ({ items: [] });
  const remaining = workspaces ?? (async () => ({ items: Array.from({ length: objects }, () => ({})) }));
  return fakeClient({
    "list terraformclusters": remaining,
    "list terraformmachines": remaining,
    "list terraformmachinepools": remaining,
    "list serviceaccounts": empty,
    "list rolebindings": empty,
    "list leases": empty,
  });
}

const context = (name: string) => ({
  namespace: undefined,
  name,
  reconcileId: "r",
  logger: pino({ level: "silent" }),
  signal: new AbortController().signal,
});

describe("the periodic namespace sweep", () => {
  it("waits the sync period plus up to 10% jitter", () => {
    expect(nextSweepMillis(600_000, () => 0)).toBe(600_000);
    expect(nextSweepMillis(600_000, () => 0.5)).toBe(630_000);
    expect(nextSweepMillis(600_000, () => 0.999)).toBe(659_940);
  });

  it("keys by namespace and starts only on a newly listed ServiceAccount or RoleBinding of captf's", () => {
    const controller = namespaceSweepController(listingClient(0), { syncPeriodMillis: 1000 });
    expect(controller.needsLeaderElection ?? true).toBe(true);
    expect(controller.watches.map((watch) => [watch.type.kind, watch.labelSelector])).toEqual([
      ["ServiceAccount", "captf.io/managed=true"],
      ["RoleBinding", "captf.io/managed=true"],
    ]);
    const watch = controller.watches[0]!;
    const account = { metadata: { name: "captf-runner", namespace: "team-a" } };
    expect(watch.map(account, "add")).toEqual(["team-a"]);
    expect(watch.predicate!(account, "add")).toBe(true);
    expect(watch.predicate!(account, "update", account)).toBe(false);
    expect(watch.predicate!(account, "delete")).toBe(false);
  });

  it("looks again after the jittered sync period while captf objects remain, and not once the namespace is swept", async () => {
    const inUse = namespaceSweepController(listingClient(1), { syncPeriodMillis: 1000, random: () => 0.5 });
    expect(await inUse.reconcile("team-a", context("team-a"))).toEqual({ requeueAfterMillis: 1050 });
    const unused = namespaceSweepController(listingClient(0), { syncPeriodMillis: 1000 });
    expect(await unused.reconcile("team-b", context("team-b"))).toEqual({});
  });

  it("tries a sweep that failed on a dropped connection again, and gives up quietly after three attempts", async () => {
    let lists = 0;
    const flaky = listingClient(0, async () => (++lists === 1 ? Promise.reject(new Error("socket hang up")) : { items: [] }));
    expect(await sweepNamespaceLogged(flaky, "team-a", pino({ level: "silent" }), 0)).toEqual({ swept: true, removed: [] });
    const broken = listingClient(0, async () => Promise.reject(new Error("socket hang up")));
    expect(await sweepNamespaceLogged(broken, "team-a", pino({ level: "silent" }), 0)).toBeUndefined();
  });
});
