/**
 * Leader election on a coordination.k8s.io/v1 Lease, with client-go's algorithm and
 * controller-runtime's defaults (lease 15 s, renew deadline 10 s, retry 2 s):
 *
 * - a candidate takes the Lease when it is free (no holder) or expired; expiry is judged by the
 *   local time at which this candidate last saw the record change, never by the holder's clock;
 * - the leader renews every retry period; if no renewal succeeds within the renew deadline it
 *   stops leading (another candidate may already have taken over);
 * - on a graceful stop the leader releases the Lease (empty holder), so the next candidate takes
 *   over at its next retry instead of waiting for the lease to expire.
 *
 * Writes use the Lease's resourceVersion, so two candidates never both win one round.
 */
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { Logger } from "pino";
import { builtinTypes } from "./builtin-types.js";
import { realClock, sleep, type Clock } from "./clock.js";
import { isConflict, isNotFound } from "./api-errors.js";
import { microTime, type KubeClient, type KubeObject } from "./kube-client.js";

export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

export interface Lease extends KubeObject {
  spec?: LeaseSpec;
}

export const leaderElectionDefaults = {
  /** The manager's Lease (reference flags table). */
  leaseName: "controller-leader-election-captf",
  leaseDurationMillis: 15_000,
  renewDeadlineMillis: 10_000,
  retryPeriodMillis: 2_000,
} as const;

export interface LeaderElectionOptions {
  client: KubeClient;
  /** The namespace of the Lease (the manager's own). */
  namespace: string;
  /** Default `controller-leader-election-captf`. */
  leaseName?: string;
  /** This candidate; default {@link defaultIdentity}. */
  identity?: string;
  leaseDurationMillis?: number;
  renewDeadlineMillis?: number;
  retryPeriodMillis?: number;
  /** Release the Lease when stopped gracefully. Default true. */
  releaseOnCancel?: boolean;
  /**
   * The Lease as the caller already saw it and since when (its local time): an expired holder is then taken at once, not after another full
   * duration.
   */
  observed?: { lease: Lease; at: number };
  logger: Logger;
  clock?: Clock;
  /** Called once this candidate leads; `lost` aborts when it stops leading, for whatever reason. */
  onStartedLeading: (lost: AbortSignal) => void;
  /** Called once leadership ends (lost or released); never called if this candidate never led. */
  onStoppedLeading?: () => void;
  /** Called whenever the observed holder changes (including to this candidate). */
  onNewLeader?: (identity: string) => void;
  /** Reports 1 while leading, 0 otherwise (`leader_election_master_status`). */
  onLeadingChanged?: (leading: boolean) => void;
}

/** `<hostname>_<uuid>`: the pod name (the hostname in a pod) plus a random suffix, like controller-runtime. */
export function defaultIdentity(): string {
  return `${hostname()}_${randomUUID()}`;
}

export type LeaseDecision = "create" | "acquire" | "renew" | "held-by-other";

/**
 * What a candidate may do with the Lease it just read. `observedAt` is the local time this
 * candidate first saw the current record; the holder's renewTime is not trusted (clock skew).
 */
export function decideLease(
  spec: LeaseSpec | undefined,
  identity: string,
  observedAt: number,
  now: number,
  leaseDurationMillis: number,
): LeaseDecision {
  if (!spec) return "create";
  const holder = spec.holderIdentity ?? "";
  if (holder === identity) return "renew";
  const durationMillis = (spec.leaseDurationSeconds ?? leaseDurationMillis / 1000) * 1000;
  if (holder !== "" && observedAt + durationMillis > now) return "held-by-other";
  return "acquire";
}

export class LeaderElector {
  readonly identity: string;
  readonly #o: LeaderElectionOptions;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #leaseName: string;
  readonly #leaseDuration: number;
  readonly #renewDeadline: number;
  readonly #retryPeriod: number;
  #observed: { raw: string; lease: Lease; at: number } | undefined;
  #leading = false;
  #lastHolder: string | undefined;

  constructor(options: LeaderElectionOptions) {
    this.#o = options;
    this.identity = options.identity ?? defaultIdentity();
    if (!this.identity) throw new Error("leader election needs a non-empty identity");
    if (!options.namespace) throw new Error("leader election needs the namespace of its Lease");
    this.#clock = options.clock ?? realClock;
    this.#leaseName = options.leaseName ?? leaderElectionDefaults.leaseName;
    this.#leaseDuration = options.leaseDurationMillis ?? leaderElectionDefaults.leaseDurationMillis;
    this.#renewDeadline = options.renewDeadlineMillis ?? leaderElectionDefaults.renewDeadlineMillis;
    this.#retryPeriod = options.retryPeriodMillis ?? leaderElectionDefaults.retryPeriodMillis;
    if (this.#leaseDuration <= this.#renewDeadline)
      throw new Error("leader election: the lease duration must be greater than the renew deadline");
    if (this.#renewDeadline <= this.#retryPeriod * 1.2)
      throw new Error("leader election: the renew deadline must be greater than 1.2 × the retry period");
    this.#log = options.logger.child({ lease: `${options.namespace}/${this.#leaseName}`, identity: this.identity });
    if (options.observed)
      this.#observed = { raw: JSON.stringify(options.observed.lease.spec ?? {}), lease: options.observed.lease, at: options.observed.at };
  }

  isLeader(): boolean {
    return this.#leading;
  }

  /**
   * Campaigns until this candidate leads, then renews until leadership is lost or `stop` aborts
   * (then releases the Lease if configured). Resolves when done; never rejects.
   */
  async run(stop: AbortSignal): Promise<void> {
    if (!(await this.#acquire(stop))) return;
    const lost = new AbortController();
    this.#setLeading(true);
    this.#log.info("started leading");
    try {
      this.#o.onStartedLeading(lost.signal);
    } catch (error) {
      this.#log.error({ err: error }, "onStartedLeading threw");
    }
    await this.#renewLoop(stop);
    lost.abort();
    if (stop.aborted && (this.#o.releaseOnCancel ?? true)) await this.#release();
    this.#setLeading(false);
    this.#log.info(stop.aborted ? "stopped leading (shutdown)" : "leadership lost");
    this.#o.onStoppedLeading?.();
  }

  /** Tries every retry period (jittered) until this candidate holds the Lease; false if stopped first. */
  async #acquire(stop: AbortSignal): Promise<boolean> {
    this.#log.info("waiting to acquire the leader lease");
    while (!stop.aborted) {
      if (await this.#tryAcquireOrRenew(stop)) return true;
      await sleep(this.#clock, this.#retryPeriod * (1 + Math.random() * 0.2), stop);
    }
    return false;
  }

  /** Renews every retry period; returns when stopped, or when no renewal succeeded within the renew deadline. */
  async #renewLoop(stop: AbortSignal): Promise<void> {
    while (!stop.aborted) {
      const deadline = this.#clock.now() + this.#renewDeadline;
      let renewed = false;
      while (!stop.aborted && this.#clock.now() < deadline) {
        if (await this.#tryAcquireOrRenew(stop)) {
          renewed = true;
          break;
        }
        await sleep(this.#clock, Math.min(this.#retryPeriod, Math.max(0, deadline - this.#clock.now())), stop);
      }
      if (!renewed) return;
      await sleep(this.#clock, this.#retryPeriod, stop);
    }
  }

  /** One round of client-go's tryAcquireOrRenew. */
  async #tryAcquireOrRenew(stop: AbortSignal): Promise<boolean> {
    // controller-runtime's client timeout for election requests: max(renewDeadline / 2, 1 s).
    const requestOptions = { signal: stop, timeoutMillis: Math.max(this.#renewDeadline / 2, 1000) };
    const type = builtinTypes.lease;
    const now = this.#clock.now();
    const spec = (transitions: number, acquireTime: string): LeaseSpec => ({
      holderIdentity: this.identity,
      leaseDurationSeconds: Math.round(this.#leaseDuration / 1000),
      acquireTime,
      renewTime: microTime(now),
      leaseTransitions: transitions,
    });
    try {
      let current: Lease | undefined;
      try {
        current = await this.#o.client.get<Lease>(type, this.#o.namespace, this.#leaseName, requestOptions);
      } catch (error) {
        if (!isNotFound(error)) throw error;
      }
      if (current) this.#observe(current);
      const decision = decideLease(current?.spec, this.identity, this.#observed?.at ?? now, now, this.#leaseDuration);
      if (decision === "held-by-other") return false;
      if (decision === "create") {
        const created = await this.#o.client.create<Lease>(
          type,
          this.#o.namespace,
          {
            apiVersion: "coordination.k8s.io/v1",
            kind: "Lease",
            metadata: { name: this.#leaseName, namespace: this.#o.namespace },
            spec: spec(0, microTime(now)),
          },
          requestOptions,
        );
        this.#observe(created);
        return true;
      }
      const old = current!.spec ?? {};
      const next =
        decision === "renew"
          ? spec(old.leaseTransitions ?? 0, old.acquireTime ?? microTime(now))
          : spec((old.leaseTransitions ?? 0) + (old.holderIdentity ? 1 : 0), microTime(now));
      const updated = await this.#o.client.replace<Lease>(
        type,
        this.#o.namespace,
        this.#leaseName,
        { ...current!, spec: next },
        requestOptions,
      );
      this.#observe(updated);
      return true;
    } catch (error) {
      if (stop.aborted) return false;
      // A conflict means another candidate wrote first: an ordinary lost round.
      if (isConflict(error)) this.#log.debug("lost a lease write race");
      else this.#log.warn({ err: error }, this.#leading ? "failed to renew the leader lease" : "failed to acquire the leader lease");
      return false;
    }
  }

  /** Remembers when the record last changed (by our clock) and reports holder changes. */
  #observe(lease: Lease): void {
    const raw = JSON.stringify(lease.spec ?? {});
    if (this.#observed?.raw !== raw) this.#observed = { raw, lease, at: this.#clock.now() };
    else this.#observed.lease = lease;
    const holder = lease.spec?.holderIdentity ?? "";
    if (holder !== this.#lastHolder) {
      this.#lastHolder = holder;
      if (holder) {
        this.#log.info({ leader: holder }, "new leader observed");
        this.#o.onNewLeader?.(holder);
      }
    }
  }

  /** Gives the Lease up so a standby takes over at its next retry, not after the lease expires. */
  async #release(): Promise<void> {
    let observed = this.#observed?.lease;
    // A renewal racing the release makes the first write conflict: re-read once and try again.
    for (let attempt = 1; attempt <= 2; attempt++) {
      if (!observed || observed.spec?.holderIdentity !== this.identity) return;
      const now = microTime(this.#clock.now());
      try {
        await this.#o.client.replace<Lease>(
          builtinTypes.lease,
          this.#o.namespace,
          this.#leaseName,
          {
            ...observed,
            spec: {
              holderIdentity: "",
              leaseDurationSeconds: 1,
              acquireTime: now,
              renewTime: now,
              leaseTransitions: observed.spec?.leaseTransitions ?? 0,
            },
          },
          { timeoutMillis: Math.max(this.#renewDeadline, 2000) },
        );
        this.#log.info("released the leader lease");
        return;
      } catch (error) {
        if (attempt === 1 && isConflict(error)) {
          observed = await this.#o.client.get<Lease>(builtinTypes.lease, this.#o.namespace, this.#leaseName).catch(() => undefined);
          continue;
        }
        this.#log.warn({ err: error }, "failed to release the leader lease; a standby takes over once it expires");
        return;
      }
    }
  }

  #setLeading(leading: boolean): void {
    this.#leading = leading;
    this.#o.onLeadingChanged?.(leading);
  }
}
