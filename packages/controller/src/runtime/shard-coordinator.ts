/**
 * Claims shard Leases (`captf-shard-<i>`) in the manager's namespace for one replica. Every retry
 * period it renews its member Lease (`captf-shard-member-<hash>`: how replicas count each other),
 * lists the Leases, and follows {@link planShardClaims}: a {@link LeaderElector} per shard it
 * campaigns for or holds, released when the share shrinks (a replica joined) or on shutdown.
 *
 * Each elector keeps leader election's guarantees per shard: writes carry the resourceVersion read,
 * expiry is judged by this replica's clock, and a holder that cannot renew within the renew
 * deadline stops reconciling the shard before anyone else may take it. The run Lease and the
 * cluster operation gate still guard every Job against a pass of the previous holder in flight.
 */
import type { Logger } from "pino";
import { builtinTypes } from "./builtin-types.js";
import { realClock, sleep, type Clock } from "./clock.js";
import { isConflict, isNotFound } from "./api-errors.js";
import { defaultIdentity, LeaderElector, type Lease } from "./leader-election.js";
import { microTime, type KubeClient } from "./kube-client.js";
import {
  leaseExpired,
  planShardClaims,
  shardLeaseName,
  shardMemberLeaseName,
  shardMemberLeasePrefix,
  type ObservedShardLease,
} from "./shards.js";

export interface ShardCoordinatorOptions {
  client: KubeClient;
  /** The manager's namespace: where the shard and member Leases live. */
  namespace: string;
  shards: number;
  identity?: string;
  leaseDurationMillis: number;
  renewDeadlineMillis: number;
  retryPeriodMillis: number;
  logger: Logger;
  clock?: Clock;
  /** This replica now holds shard `index`: enqueue its objects. */
  onShardGained(index: number): void;
  /** This replica no longer holds shard `index` (released, or a renewal failed): its passes stop starting. */
  onShardLost(index: number): void;
}

interface Claim {
  stop: AbortController;
  run: Promise<void>;
  elector: LeaderElector;
}

/** Member Leases unchanged this many lease durations belong to replicas long gone: any replica deletes them. */
const staleMemberDurations = 4;

export class ShardCoordinator {
  readonly identity: string;
  readonly #o: ShardCoordinatorOptions;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #claims = new Map<number, Claim>();
  readonly #held = new Set<number>();
  /** Lease name → its spec as last seen and since when (local clock). */
  readonly #seen = new Map<string, { raw: string; at: number; lease: Lease }>();
  readonly #startAt: number;
  /** Shard → when this replica released it (local clock). */
  readonly #releasedAt = new Map<number, number>();
  #rounds = 0;

  constructor(options: ShardCoordinatorOptions) {
    if (!Number.isInteger(options.shards) || options.shards < 1) throw new Error("shards must be an integer >= 1");
    this.#o = options;
    this.identity = options.identity ?? defaultIdentity();
    this.#clock = options.clock ?? realClock;
    this.#log = options.logger.child({ shards: options.shards, identity: this.identity });
    this.#startAt =
      Number.parseInt(shardMemberLeaseName(this.identity).slice(shardMemberLeasePrefix.length, shardMemberLeasePrefix.length + 8), 16) %
      options.shards;
  }

  /** The shards this replica holds now. */
  held(): ReadonlySet<number> {
    return this.#held;
  }

  /** Claims and renews until `stop` aborts; then releases every shard and its member Lease. Never rejects. */
  async run(stop: AbortSignal): Promise<void> {
    this.#log.info("claiming shards");
    const membership = this.#every(stop, "renewing the member lease failed", () => this.#renewMembership(stop));
    await this.#every(stop, "shard round failed", () => this.#round(stop));
    await membership;
    await Promise.all([...this.#claims.keys()].map((index) => this.#endClaim(index)));
    await this.#o.client.delete(builtinTypes.lease, this.#o.namespace, shardMemberLeaseName(this.identity)).catch(() => undefined);
    this.#log.info("released every shard");
  }

  /** Runs `step` every retry period (jittered) until `stop`; a failed step is logged and tried again. */
  async #every(stop: AbortSignal, failure: string, step: () => Promise<void>): Promise<void> {
    while (!stop.aborted) {
      try {
        await step();
      } catch (error) {
        if (!stop.aborted) this.#log.warn({ err: error }, `${failure}; trying again`);
      }
      await sleep(this.#clock, this.#o.retryPeriodMillis * (1 + Math.random() * 0.2), stop);
    }
  }

  /**
   * One look at the Leases and the claims that follow; the member Lease is renewed apart, so a slow round never makes this replica look
   * gone.
   */
  async #round(stop: AbortSignal): Promise<void> {
    const now = this.#clock.now();
    const items = (await this.#o.client.list<Lease>(builtinTypes.lease, this.#o.namespace, undefined, { signal: stop })).items;
    const shardLeases = new Map<number, ObservedShardLease>();
    let liveReplicas = 0;
    for (const lease of items) {
      const name = lease.metadata?.name ?? "";
      const seen = this.#observe(name, lease, now);
      const observed: ObservedShardLease = {
        holder: lease.spec?.holderIdentity ?? "",
        unchangedSinceMillis: seen.at,
        durationMillis: (lease.spec?.leaseDurationSeconds ?? 0) * 1000,
      };
      if (name.startsWith(shardMemberLeasePrefix)) {
        if (observed.holder === this.identity || !leaseExpired(observed, now)) liveReplicas++;
        else if (now - seen.at >= staleMemberDurations * observed.durationMillis)
          await this.#o.client.delete(builtinTypes.lease, this.#o.namespace, name).catch(() => undefined);
        continue;
      }
      const index = shardIndexOf(name, this.#o.shards);
      if (index !== undefined) shardLeases.set(index, observed);
    }
    const campaigning = new Set([...this.#claims.keys()].filter((index) => !this.#held.has(index)));
    for (const [index, at] of this.#releasedAt) if (now - at >= 2 * this.#o.leaseDurationMillis) this.#releasedAt.delete(index);
    const recentlyReleased = new Set(this.#releasedAt.keys());
    const plan = planShardClaims({
      shards: this.#o.shards,
      liveReplicas: Math.max(1, liveReplicas),
      held: this.#held,
      campaigning,
      leases: shardLeases,
      startAt: this.#startAt,
      recentlyReleased,
      now,
    });
    // The first round only announces this replica: replicas starting together then count each other before claiming.
    if (this.#rounds++ === 0) plan.campaign = [];
    if (plan.release.length > 0 || plan.campaign.length > 0)
      this.#log.info({ liveReplicas, held: [...this.#held], ...plan }, "rebalancing shards");
    await Promise.all([...plan.release, ...plan.abandon].map((index) => this.#endClaim(index)));
    for (const index of plan.campaign) this.#startClaim(index, this.#seen.get(shardLeaseName(index)));
  }

  /** Creates or renews this replica's member Lease (same duration as the shard Leases). */
  async #renewMembership(stop: AbortSignal): Promise<void> {
    const name = shardMemberLeaseName(this.identity);
    const spec = {
      holderIdentity: this.identity,
      leaseDurationSeconds: Math.round(this.#o.leaseDurationMillis / 1000),
      renewTime: microTime(this.#clock.now()),
    };
    const options = { signal: stop, timeoutMillis: Math.max(this.#o.renewDeadlineMillis / 2, 1000) };
    try {
      const current = await this.#o.client.get<Lease>(builtinTypes.lease, this.#o.namespace, name, options);
      await this.#o.client.replace<Lease>(
        builtinTypes.lease,
        this.#o.namespace,
        name,
        { ...current, spec: { ...current.spec, ...spec } },
        options,
      );
    } catch (error) {
      if (!isNotFound(error)) {
        if (isConflict(error)) return;
        throw error;
      }
      await this.#o.client.create<Lease>(
        builtinTypes.lease,
        this.#o.namespace,
        { apiVersion: "coordination.k8s.io/v1", kind: "Lease", metadata: { name, namespace: this.#o.namespace }, spec },
        options,
      );
    }
  }

  #observe(name: string, lease: Lease, now: number): { raw: string; at: number; lease: Lease } {
    const raw = JSON.stringify(lease.spec ?? {});
    const previous = this.#seen.get(name);
    const seen = previous?.raw === raw ? { ...previous, lease } : { raw, at: now, lease };
    this.#seen.set(name, seen);
    return seen;
  }

  #startClaim(index: number, seen: { at: number; lease: Lease } | undefined): void {
    const stop = new AbortController();
    const elector = new LeaderElector({
      client: this.#o.client,
      namespace: this.#o.namespace,
      leaseName: shardLeaseName(index),
      identity: this.identity,
      leaseDurationMillis: this.#o.leaseDurationMillis,
      renewDeadlineMillis: this.#o.renewDeadlineMillis,
      retryPeriodMillis: this.#o.retryPeriodMillis,
      logger: this.#log,
      clock: this.#clock,
      // What this coordinator already watched: an expired holder is taken at once.
      ...(seen ? { observed: { lease: seen.lease, at: seen.at } } : {}),
      onStartedLeading: () => {
        this.#held.add(index);
        this.#log.info({ shard: index }, "shard gained");
        this.#o.onShardGained(index);
      },
      onStoppedLeading: () => {
        if (!this.#held.delete(index)) return;
        this.#log.warn({ shard: index }, "shard lost: its renewal failed");
        this.#o.onShardLost(index);
      },
    });
    const run = elector.run(stop.signal).finally(() => {
      if (this.#claims.get(index)?.elector === elector) this.#claims.delete(index);
    });
    this.#claims.set(index, { stop, run, elector });
  }

  /** Stops reconciling the shard first, then releases its Lease (or drops the campaign). */
  async #endClaim(index: number): Promise<void> {
    const claim = this.#claims.get(index);
    if (!claim) return;
    if (this.#held.delete(index)) {
      this.#releasedAt.set(index, this.#clock.now());
      this.#log.info({ shard: index }, "releasing shard");
      this.#o.onShardLost(index);
    }
    claim.stop.abort();
    await claim.run;
  }
}

/** The index of a shard Lease name below `shards`, else undefined (a member Lease, another Lease, a shard of a larger count). */
export function shardIndexOf(leaseName: string, shards: number): number | undefined {
  const match = /^captf-shard-(\d+)$/.exec(leaseName);
  const index = match ? Number(match[1]) : NaN;
  return Number.isInteger(index) && index < shards ? index : undefined;
}
