// Shards: the cluster → shard hash, the share and the claim plan of one replica, as tables.
import { describe, expect, it } from "@jest/globals";
import { shardIndexOf } from "./shard-coordinator.js";
import { matchesLabels, parseLabelSelector } from "./label-selector.js";
import {
  andSelectors,
  heldShardsSelector,
  planShardClaims,
  shardLabelToWrite,
  shardLabelValue,
  shardMemberLeaseName,
  shardOf,
  shardShare,
  unassignedShardSelector,
  type ObservedShardLease,
  type ShardClaimFacts,
} from "./shards.js";

describe("shardOf", () => {
  it("is stable and depends on namespace and cluster name only", () => {
    // Fixed values: a change of the hash would move every cluster of an upgraded manager.
    expect([shardOf("default", "prod", 1000), shardOf("team-a", "prod", 1000), shardOf("default", "staging", 1000)]).toEqual([
      325, 463, 820,
    ]);
    expect(shardOf("ns", "c", 1)).toBe(0);
  });

  it("spreads 300 clusters over 3 shards evenly enough", () => {
    const counts = [0, 0, 0];
    for (let i = 0; i < 300; i++) counts[shardOf("ns", `c-${i}`, 3)]!++;
    for (const count of counts) expect(count).toBeGreaterThan(70);
  });
});

describe("shard Lease names", () => {
  it("reads a shard index below the count only", () => {
    expect([
      shardIndexOf("captf-shard-2", 3),
      shardIndexOf("captf-shard-3", 3),
      shardIndexOf(shardMemberLeaseName("a"), 3),
      shardIndexOf("captf-run-x", 3),
    ]).toEqual([2, undefined, undefined, undefined]);
    expect(shardMemberLeaseName("pod-a_1234")).toMatch(/^captf-shard-member-[0-9a-f]{16}$/);
  });
});

describe("planShardClaims", () => {
  const now = 100_000;
  const live = (holder: string): ObservedShardLease => ({ holder, unchangedSinceMillis: now - 1_000, durationMillis: 15_000 });
  const expired = (holder: string): ObservedShardLease => ({ holder, unchangedSinceMillis: now - 15_000, durationMillis: 15_000 });
  const facts = (over: Partial<ShardClaimFacts>): ShardClaimFacts => ({
    shards: 3,
    liveReplicas: 1,
    held: new Set(),
    campaigning: new Set(),
    leases: new Map(),
    startAt: 0,
    now,
    ...over,
  });

  it("shares ceil(shards / replicas)", () => {
    expect([shardShare(3, 1), shardShare(3, 2), shardShare(3, 3), shardShare(3, 5), shardShare(3, 0)]).toEqual([3, 2, 1, 1, 3]);
  });

  it.each([
    [
      "alone, nothing held: campaign for every shard from its start",
      facts({ startAt: 1 }),
      { release: [], campaign: [1, 2, 0], abandon: [] },
    ],
    [
      "three replicas, holding all: release the two highest",
      facts({
        liveReplicas: 3,
        held: new Set([0, 1, 2]),
        leases: new Map([
          [0, live("me")],
          [1, live("me")],
          [2, live("me")],
        ]),
      }),
      { release: [1, 2], campaign: [], abandon: [] },
    ],
    [
      "a peer died (its Lease expired): take its shard",
      facts({
        liveReplicas: 2,
        held: new Set([0]),
        leases: new Map([
          [0, live("me")],
          [1, live("b")],
          [2, expired("c")],
        ]),
      }),
      { release: [], campaign: [2], abandon: [] },
    ],
    [
      "a peer holds the free shard now: drop the campaign",
      facts({
        liveReplicas: 2,
        held: new Set([0]),
        campaigning: new Set([2]),
        leases: new Map([
          [0, live("me")],
          [2, live("b")],
        ]),
      }),
      { release: [], campaign: [1], abandon: [2] },
    ],
    [
      "share met: claim nothing, drop surplus campaigns",
      facts({ liveReplicas: 3, held: new Set([0]), campaigning: new Set([1]), leases: new Map([[0, live("me")]]) }),
      { release: [], campaign: [], abandon: [1] },
    ],
    [
      "a shard it just gave up is left to the others, even when a peer seems gone",
      facts({
        liveReplicas: 2,
        held: new Set([0]),
        leases: new Map([
          [0, live("me")],
          [1, live("b")],
          [2, live("")],
        ]),
        recentlyReleased: new Set([2]),
      }),
      { release: [], campaign: [], abandon: [] },
    ],
    [
      "every other shard held by live peers: wait",
      facts({
        liveReplicas: 2,
        held: new Set([0]),
        leases: new Map([
          [0, live("me")],
          [1, live("b")],
          [2, live("b")],
        ]),
      }),
      { release: [], campaign: [], abandon: [] },
    ],
  ] as const)("%s", (_name, input, expected) => {
    expect(planShardClaims(input)).toEqual(expected);
  });
});

describe("the shard label", () => {
  const label = "captf.io/shard";
  const matches = (selector: string, labels?: Record<string, string>) => matchesLabels(parseLabelSelector(selector), labels);

  it("is the shard index; the held shards' selector names each held shard once, and none selects nothing", () => {
    expect(shardLabelValue(2)).toBe("2");
    expect(heldShardsSelector(label, [2, 0, 2])).toBe("captf.io/shard in (0,2)");
    expect(heldShardsSelector(label, new Set())).toBeUndefined();
    const held = heldShardsSelector(label, [0, 2])!;
    const objects: Record<string, string>[] = [{ [label]: "0" }, { [label]: "1" }, { [label]: "2" }, {}, { [label]: "5" }];
    expect(objects.map((labels) => matches(held, labels))).toEqual([true, false, true, false, false]);
  });

  it("leaves to the unassigned selector what no shard informer of this count sees: no label, or another count's value", () => {
    const unassigned = unassignedShardSelector(label, 3);
    expect(unassigned).toBe("captf.io/shard notin (0,1,2)");
    const objects: (Record<string, string> | undefined)[] = [
      undefined,
      {},
      { other: "x" },
      { [label]: "3" },
      { [label]: "0" },
      { [label]: "2" },
    ];
    expect(objects.map((labels) => matches(unassigned, labels))).toEqual([true, true, true, true, false, false]);
    // Every object is in exactly one of: the unassigned informer, or the shard informer of the shard its label names.
    for (const value of ["0", "1", "2", "3", "x"]) {
      const labels = { [label]: value };
      const seenBy =
        [0, 1, 2].filter((index) => matches(heldShardsSelector(label, [index])!, labels)).length + (matches(unassigned, labels) ? 1 : 0);
      expect([value, seenBy]).toEqual([value, 1]);
    }
  });

  it("is written only when the object's label is not that of its shard", () => {
    expect(shardLabelToWrite(undefined, label, 1)).toBe("1");
    expect(shardLabelToWrite({ app: "x" }, label, 0)).toBe("0");
    expect(shardLabelToWrite({ [label]: "1" }, label, 1)).toBeUndefined();
    // After --shards 3 → 2, or when the object's cluster changed.
    expect(shardLabelToWrite({ [label]: "2" }, label, 1)).toBe("1");
  });

  it("joins selectors, dropping the missing ones", () => {
    expect(andSelectors("a=b", undefined, "", "c notin (0)")).toBe("a=b,c notin (0)");
    expect(andSelectors(undefined, "")).toBeUndefined();
  });
});
