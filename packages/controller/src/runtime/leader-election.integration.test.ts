// Leader election: the lease decision as a table, then two candidates on the real API server.
import { afterAll, beforeAll, describe, expect, it, jest } from "@jest/globals";
import { describeWithTools } from "@captf/testkit";
import { builtinTypes } from "./builtin-types.js";
import { decideLease, defaultIdentity, LeaderElector, type Lease, type LeaderElectionOptions } from "./leader-election.js";
import { microTime } from "./kube-client.js";
import { captureLogs, createTestNamespace, eventually, FaultyKubeClient } from "./runtime.test-support.js";

jest.setTimeout(30_000);

describe("decideLease", () => {
  const now = 100_000;
  it.each([
    ["no Lease yet: create it", undefined, 0, "create"],
    ["held by me: renew", { holderIdentity: "me", leaseDurationSeconds: 15 }, 0, "renew"],
    ["held by another, seen changing 5 s ago: wait", { holderIdentity: "other", leaseDurationSeconds: 15 }, now - 5_000, "held-by-other"],
    ["held by another, unchanged for 15 s: take it", { holderIdentity: "other", leaseDurationSeconds: 15 }, now - 15_000, "acquire"],
    ["released (no holder): take it", { holderIdentity: "", leaseDurationSeconds: 1 }, now, "acquire"],
  ] as const)("%s", (_name, spec, observedAt, expected) => {
    expect(decideLease(spec, "me", observedAt, now, 15_000)).toBe(expected);
  });
});

describe("lease text", () => {
  it("writes MicroTime with six fractional digits", () => {
    expect(microTime(Date.UTC(2026, 0, 2, 3, 4, 5, 678))).toBe("2026-01-02T03:04:05.678000Z");
  });

  it("identifies a candidate by host name and a random suffix", () => {
    const [a, b] = [defaultIdentity(), defaultIdentity()];
    expect(a).toMatch(/^.+_[0-9a-f-]{36}$/);
    expect(a).not.toBe(b);
  });

  it("refuses timings that cannot work", () => {
    const base = { client: {} as never, namespace: "ns", logger: captureLogs().logger, onStartedLeading: () => undefined };
    expect(() => new LeaderElector({ ...base, leaseDurationMillis: 10_000, renewDeadlineMillis: 10_000 })).toThrow(/lease duration/);
    expect(() => new LeaderElector({ ...base, renewDeadlineMillis: 2_000, retryPeriodMillis: 2_000 })).toThrow(/renew deadline/);
    expect(() => new LeaderElector({ ...base, namespace: "" })).toThrow(/namespace/);
  });
});

describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager"], "leader election on a real API server", () => {
  let client: FaultyKubeClient;
  let namespace: string;
  const stops: AbortController[] = [];
  const runs: Promise<void>[] = [];

  beforeAll(async () => {
    client = new FaultyKubeClient();
    namespace = await createTestNamespace(client, "leader");
  });

  afterAll(async () => {
    for (const stop of stops) stop.abort();
    await Promise.all(runs);
    await client.delete(builtinTypes.namespace, undefined, namespace).catch(() => undefined);
    client.close();
  });

  /** A candidate with short timings, recording its transitions. */
  function candidate(identity: string, leaseName: string, overrides: Partial<LeaderElectionOptions> = {}) {
    const log: string[] = [];
    const stop = new AbortController();
    let lost: AbortSignal | undefined;
    const elector = new LeaderElector({
      client,
      namespace,
      leaseName,
      identity,
      leaseDurationMillis: 4_000,
      renewDeadlineMillis: 3_000,
      retryPeriodMillis: 200,
      logger: captureLogs().logger,
      onStartedLeading: (signal) => {
        lost = signal;
        log.push("started");
      },
      onStoppedLeading: () => void log.push("stopped"),
      ...overrides,
    });
    const run = elector.run(stop.signal);
    stops.push(stop);
    runs.push(run);
    return { elector, log, stop, run, lost: () => lost };
  }

  const readLease = (name: string) => client.get<Lease>(builtinTypes.lease, namespace, name);

  it("lets exactly one of two candidates lead, and hands over at once when the leader releases on shutdown", async () => {
    const [first, second] = [candidate("candidate-a", "handover"), candidate("candidate-b", "handover")];
    await eventually(() => first.elector.isLeader() || second.elector.isLeader(), 10_000, "one to lead");
    // Several retry periods pass: still exactly one leader.
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect([first, second].filter((c) => c.elector.isLeader())).toHaveLength(1);
    const [a, b] = first.elector.isLeader() ? [first, second] : [second, first];
    expect(b.log).toEqual([]);
    expect((await readLease("handover")).spec).toMatchObject({
      holderIdentity: a.elector.identity,
      leaseDurationSeconds: 4,
      leaseTransitions: 0,
    });

    a.stop.abort();
    await a.run;
    expect(a.log).toEqual(["started", "stopped"]);
    expect(a.lost()?.aborted).toBe(true);
    // Released, not left to expire: once a has stopped, the Lease names nobody (or b already).
    expect(["", b.elector.identity]).toContain((await readLease("handover")).spec?.holderIdentity);
    await eventually(() => b.elector.isLeader(), 10_000, "b to take over");
    expect((await readLease("handover")).spec).toMatchObject({ holderIdentity: b.elector.identity, leaseTransitions: 0 });
  });

  it("takes over an expired lease when the leader vanished without releasing it", async () => {
    const short = { leaseDurationMillis: 2_000, renewDeadlineMillis: 1_500 };
    const a = candidate("crashing-a", "expiry", { ...short, releaseOnCancel: false });
    await eventually(() => a.elector.isLeader(), 10_000, "a to lead");
    const b = candidate("standby-b", "expiry", short);
    a.stop.abort();
    await a.run;
    const stoppedAt = Date.now();
    await eventually(() => b.elector.isLeader(), 10_000, "b to take over");
    // Not before the 2 s lease expired, as b observed it.
    expect(Date.now() - stoppedAt).toBeGreaterThanOrEqual(1_000);
    expect((await readLease("expiry")).spec).toMatchObject({ holderIdentity: "standby-b", leaseTransitions: 1 });
  });

  it("takes a Lease its caller already watched expire at its first round, not after another full duration", async () => {
    const long = { leaseDurationMillis: 60_000, renewDeadlineMillis: 3_000 };
    const a = candidate("vanished-a", "watched", { ...long, releaseOnCancel: false });
    await eventually(() => a.elector.isLeader(), 10_000, "a to lead");
    a.stop.abort();
    await a.run;
    // The shard coordinator's case: it saw this record unchanged for longer than the lease duration.
    const b = candidate("watcher-b", "watched", { ...long, observed: { lease: await readLease("watched"), at: Date.now() - 61_000 } });
    await eventually(() => b.elector.isLeader(), 10_000, "b to take the expired Lease");
    expect((await readLease("watched")).spec).toMatchObject({ holderIdentity: "watcher-b", leaseTransitions: 1 });
  });

  it("stops leading when it cannot renew within the renew deadline", async () => {
    const a = candidate("renewing-a", "usurped", { leaseDurationMillis: 2_000, renewDeadlineMillis: 1_500 });
    await eventually(() => a.elector.isLeader(), 10_000, "a to lead");
    // Another writer takes the Lease over (retrying when a's renewal wrote first); a's renewals now see a valid foreign holder.
    await eventually(async () => {
      const lease = await readLease("usurped");
      return client.replace(builtinTypes.lease, namespace, "usurped", {
        ...lease,
        spec: { ...lease.spec, holderIdentity: "usurper", renewTime: microTime(Date.now()) },
      });
    });
    await a.run;
    expect(a.elector.isLeader()).toBe(false);
    expect(a.log).toEqual(["started", "stopped"]);
    expect(a.lost()?.aborted).toBe(true);
  });
});
