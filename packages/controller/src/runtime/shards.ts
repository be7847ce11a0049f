/**
 * Shards (`--shards N`): which shard an object belongs to, and which shards one replica should
 * claim or give back. Pure; the Lease reads and writes are in shard-coordinator.ts.
 *
 * An object belongs to the shard of its Cluster: a stable hash of namespace and cluster name, so
 * a cluster, its machines, its pools and its operation gate always share one shard. Every replica
 * aims at an equal share, ceil(N / live replicas), and claims only shards whose Lease is free
 * or expired, so the shares settle without a central assignment.
 */
import { createHash } from "node:crypto";

/** The Lease a replica holds while it reconciles shard `index`. */
export function shardLeaseName(index: number): string {
  return `captf-shard-${index}`;
}

/** Each replica's presence, renewed like a Lease: how replicas count each other, shards held or not. */
export const shardMemberLeasePrefix = "captf-shard-member-";

export function shardMemberLeaseName(identity: string): string {
  return `${shardMemberLeasePrefix}${createHash("sha256").update(identity).digest("hex").slice(0, 16)}`;
}

/** The shard of a cluster: the first 32 bits of sha256("<namespace>/<cluster>"), modulo the shard count. */
export function shardOf(namespace: string, clusterName: string, shards: number): number {
  return createHash("sha256").update(`${namespace}/${clusterName}`).digest().readUInt32BE(0) % shards;
}

/** One shard's Lease as a replica last saw it: its holder and, by this replica's clock, since when it has not changed. */
export interface ObservedShardLease {
  holder: string;
  unchangedSinceMillis: number;
  durationMillis: number;
}

/** A holder that has not renewed within its duration (by the observer's clock, never the holder's) has lost the Lease. */
export function leaseExpired(lease: ObservedShardLease, now: number): boolean {
  return lease.holder === "" || now - lease.unchangedSinceMillis >= lease.durationMillis;
}

/** The shards each live replica should hold: an equal share, rounded up so every shard has a taker. */
export function shardShare(shards: number, liveReplicas: number): number {
  return Math.ceil(shards / Math.max(1, liveReplicas));
}

export interface ShardClaimFacts {
  shards: number;
  /** The replicas seen alive, this one included. */
  liveReplicas: number;
  /** Shards this replica holds now. */
  held: ReadonlySet<number>;
  /** Shards this replica campaigns for (an elector waits on their Lease). */
  campaigning: ReadonlySet<number>;
  /** Every shard Lease seen; an absent index has no Lease yet. */
  leases: ReadonlyMap<number, ObservedShardLease>;
  /** Where this replica starts looking for a free shard, so replicas starting together try different ones. */
  startAt: number;
  /**
   * Shards this replica gave up a moment ago: not claimed back while the others take them (a blip in the replica count must not make it
   * flap).
   */
  recentlyReleased?: ReadonlySet<number>;
  now: number;
}

export interface ShardClaimPlan {
  /** Held shards beyond the share: stop reconciling them, then release their Lease. */
  release: number[];
  /** Free or expired shards to campaign for, up to the share. */
  campaign: number[];
  /** Campaigns to drop: the share is met, or another replica holds that shard now. */
  abandon: number[];
}

/** What one replica does with the shard Leases this round. */
export function planShardClaims(facts: ShardClaimFacts): ShardClaimPlan {
  const share = shardShare(facts.shards, facts.liveReplicas);
  const held = [...facts.held].sort((a, b) => a - b);
  const release = held.length > share ? held.slice(share) : [];
  const claimable = (index: number) => {
    const lease = facts.leases.get(index);
    return lease === undefined || leaseExpired(lease, facts.now);
  };
  const abandon = [...facts.campaigning].filter((index) => !claimable(index));
  const kept = [...facts.campaigning].filter((index) => claimable(index));
  let room = Math.max(0, share - held.length);
  // Too many campaigns (the share shrank): drop the surplus.
  for (const index of kept.splice(room)) abandon.push(index);
  room -= kept.length;
  const campaign: number[] = [];
  for (let step = 0; step < facts.shards && room > 0; step++) {
    const index = (facts.startAt + step) % facts.shards;
    if (facts.held.has(index) || facts.campaigning.has(index) || facts.recentlyReleased?.has(index) || !claimable(index)) continue;
    campaign.push(index);
    room--;
  }
  return { release, campaign, abandon };
}

/**
 * The shard label (`--shards` > 1): the manager keeps `<label>=<index>` on every object of the
 * sharded kinds, and each replica's informers of those kinds select the shards it holds, so a
 * replica caches its share of them only.
 */
export function shardLabelValue(index: number): string {
  return String(index);
}

/** The selector of the held shards' objects (`<label> in (0,2)`); undefined when none is held: nothing to watch. */
export function heldShardsSelector(label: string, held: Iterable<number>): string | undefined {
  const values = [...new Set(held)].sort((a, b) => a - b).map(shardLabelValue);
  return values.length > 0 ? `${label} in (${values.join(",")})` : undefined;
}

/**
 * The selector of objects no replica's shard informers see: without the label, or with a value of another shard count (`notin` matches a
 * missing label too).
 */
export function unassignedShardSelector(label: string, shards: number): string {
  return `${label} notin (${Array.from({ length: shards }, (_, index) => shardLabelValue(index)).join(",")})`;
}

/** The label value to write when the object's label is not that of its shard, else undefined (nothing to write). */
export function shardLabelToWrite(labels: Readonly<Record<string, string>> | undefined, label: string, shard: number): string | undefined {
  const value = shardLabelValue(shard);
  return labels?.[label] === value ? undefined : value;
}

/** `a,b` of the selectors given (undefined and "" dropped); undefined when none is left. */
export function andSelectors(...selectors: (string | undefined)[]): string | undefined {
  const parts = selectors.filter((selector): selector is string => selector !== undefined && selector !== "");
  return parts.length > 0 ? parts.join(",") : undefined;
}
