// Three manager processes (the bundle as shipped) with --shards=3 on the shared plane: 30
// clusters with a machine each, as issue 16 asks (CAPTF_SHARD_CLUSTERS sets another count). Each object is reconciled by the holder of its
// shard alone;
// one manager is SIGKILLed while every machine's apply Job runs (the Pods are completed only
// afterwards, by bench/lib/controller-jobs.mjs's stand-in kubelet): its clusters move to the others,
// every machine ends with exactly one apply Job, bookkept once; then 3 → 1 → 3 replicas. At each
// step every replica's caches of the sharded kinds hold the objects of its shards and no other
// (captf_shard_cached_objects), and every object carries its shard label, written once by its holder.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import { KubeConfig } from "@kubernetes/client-node";
import { pino } from "pino";
import { describeWithTools, sharedControlPlane, waitFor } from "@captf/testkit";
import { apiGroup, apiVersion, labels } from "@captf/contract/api";
import { buildManagerBundle, killManagerProcess, startManagerProcess, type ManagerProcess } from "./manager-process.test-support.js";
import { createNoopCluster, createNoopIdentity, createNoopMachine, removeNoopObjects } from "./reconcile/noop-clusters.test-support.js";
import { preparePlane, type PlaneClients, mergePatchOptions } from "./reconcile/plane.test-support.js";
import { KubeClient } from "./runtime/kube-client.js";
import { shardLeaseName, shardOf } from "./runtime/shards.js";
import type { TerraformMachine } from "./api/terraformmachine.js";
import type { CapiObject, ReadBack } from "./reconcile/read-back.test-support.js";

const shards = 3;
const clusterCount = Number(process.env.CAPTF_SHARD_CLUSTERS ?? 30);
const infra = { group: apiGroup, version: apiVersion };

/** `count` names c-<i>, the first of each shard until each has count / shards. */
function balancedClusterNames(count: number, shardOfName: (name: string) => number): string[] {
  const perShard = new Array<number>(shards).fill(0);
  const names: string[] = [];
  for (let i = 0; names.length < count; i++) {
    const name = `c-${String(i).padStart(3, "0")}`;
    const shard = shardOfName(name);
    if (perShard[shard]! >= Math.ceil(count / shards)) continue;
    perShard[shard]!++;
    names.push(name);
  }
  return names;
}

describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager"], "managers splitting the clusters into shards", () => {
  const namespace = `shards-${Date.now().toString(36)}`;
  const identityName = `${namespace}-identity`;
  const work = mkdtempSync(join(tmpdir(), "captf-shards-"));
  const shardOfCluster = (cluster: string) => shardOf(namespace, cluster, shards);
  // An equal number of clusters per shard (the namespace's name varies per run): the hash still decides.
  const clusterNames = balancedClusterNames(clusterCount, (name) => shardOfCluster(name));
  const machineOf = (cluster: string) => `m-${cluster.slice(2)}`;
  let bundle: string;
  let plane: PlaneClients;
  let client: KubeClient;
  let completer: { stop(): Promise<void>; stats: { errors: string[] } } | undefined;
  const managers: ManagerProcess[] = [];

  const startManager = async (): Promise<ManagerProcess> => {
    const manager = await startManagerProcess({
      bundle,
      kubeconfigPath: sharedControlPlane().kubeconfigPath,
      dir: mkdtempSync(join(work, "m-")),
      args: [
        `--namespace=${namespace}`,
        "--insecure-diagnostics",
        "--leader-elect",
        `--shards=${shards}`,
        "--leader-elect-lease-duration=8s",
        "--leader-elect-renew-deadline=6s",
        "--leader-elect-retry-period=1s",
      ],
      env: { POD_NAMESPACE: namespace, CAPTF_MANAGER_IMAGE: "registry.invalid/captf-controller:test" },
    });
    managers.push(manager);
    return manager;
  };
  const identityOf = (manager: ManagerProcess) =>
    manager.records().find((record) => record.msg === "claiming shards")?.identity as string | undefined;
  const alive = (manager: ManagerProcess) => manager.child.exitCode === null && manager.child.signalCode === null;
  const holders = async () =>
    Promise.all(
      Array.from({ length: shards }, (_, i) =>
        plane.coordination.readNamespacedLease({ namespace, name: shardLeaseName(i) }).then(
          (lease) => lease.spec?.holderIdentity ?? "",
          () => "",
        ),
      ),
    );
  /** Waits until the running managers hold every shard, `perManager` each at most, and returns shard → manager. */
  const settled = async (running: ManagerProcess[], perManager: number): Promise<ManagerProcess[]> =>
    waitFor(
      async () => {
        const ids = running.map(identityOf);
        const owners = (await holders()).map((holder) => running[ids.indexOf(holder)]);
        if (owners.some((owner) => owner === undefined)) return undefined;
        return running.every((manager) => owners.filter((owner) => owner === manager).length <= perManager)
          ? (owners as ManagerProcess[])
          : undefined;
      },
      60_000,
      `shards settled over ${running.length} managers`,
    ).catch((error: Error) => {
      // Under heavy load a lease can be lost (a replica then logs it, or exits on losing the leader Lease): say which.
      const story = running.map((manager) => {
        const state = alive(manager) ? "running" : `exited ${manager.child.exitCode ?? manager.child.signalCode}`;
        return `${managers.indexOf(manager)} ${state}: ${manager
          .records()
          .filter((record) => /shard|lead/.test(record.msg))
          .slice(-8)
          .map((record) => `${record.msg} ${record.shard ?? ""}`)
          .join("; ")}`;
      });
      throw new Error(`${error.message}\n${story.join("\n")}`);
    });
  /** Keys each manager logged "reconciled" for, from its `from`-th record on. */
  const reconciledKeys = (manager: ManagerProcess, from = 0) =>
    new Set(
      manager
        .records()
        .slice(from)
        .filter((record) => record.msg === "reconciled")
        .map((record) => String(record.key)),
    );
  /** The managers that held `shard` at some point from their `from`-th record on, by their own log. */
  const holdersOf = (shard: number, from: Map<ManagerProcess, number>) =>
    managers
      .map((_, i) => i)
      .filter((i) => {
        const start = from.get(managers[i]!) ?? 0;
        // The coordinator's hand-over records only (other records may name a shard too).
        const events = managers[i]!.records()
          .map((record, at) => ({ record, at }))
          .filter(({ record }) => record.shard === shard && /^(shard gained|shard lost|releasing shard)/.test(record.msg));
        const heldAtStart = events.filter(({ at }) => at < start).at(-1)?.record.msg === "shard gained";
        return heldAtStart || events.some(({ record, at }) => at >= start && record.msg === "shard gained");
      });
  /**
   * Every key is reconciled by the manager holding its cluster's shard and by no other; only where
   * that shard changed hands meanwhile (a lease lost under load: each step is logged) by its holders.
   */
  const expectOneManagerPerObject = (
    owners: ManagerProcess[],
    keys: readonly { key: string; cluster: string }[],
    from: Map<ManagerProcess, number> = new Map(),
  ) => {
    const seen = managers.map((manager) => reconciledKeys(manager, from.get(manager) ?? 0));
    const by = keys.map(({ key }) => ({ key, managers: managers.map((_, i) => i).filter((i) => seen[i]!.has(key)) }));
    const expected = keys.map(({ key, cluster }) => {
      const holders = holdersOf(shardOfCluster(cluster), from);
      return { key, managers: holders.length === 1 ? [managers.indexOf(owners[shardOfCluster(cluster)]!)] : expect.arrayContaining([]) };
    });
    const moved = [...new Set(keys.map(({ cluster }) => shardOfCluster(cluster)))].filter((shard) => holdersOf(shard, from).length !== 1);
    expect({ moved: moved.length, by }).toEqual({ moved: moved.length, by: expected });
    // Where a shard moved, its keys were still reconciled only by managers that held it.
    for (const [k, { cluster }] of keys.entries()) {
      const holders = holdersOf(shardOfCluster(cluster), from);
      for (const manager of by[k]!.managers) expect(holders).toContain(manager);
    }
  };
  /** captf_shard_cached_objects of a manager: `<kind> <shard>` → objects in its caches. */
  const cachedObjects = async (manager: ManagerProcess): Promise<Record<string, number>> => {
    const text = await (await fetch(`http://127.0.0.1:${manager.ports.metrics}/metrics`)).text();
    const counts: Record<string, number> = {};
    for (const [, labelText, value] of text.matchAll(/^captf_shard_cached_objects\{([^}]*)\} (\d+)$/gm)) {
      const labelValues = Object.fromEntries([...labelText!.matchAll(/(\w+)="([^"]*)"/g)].map(([, key, v]) => [key, v])) as Record<
        string,
        string
      >;
      counts[`${labelValues.kind} ${labelValues.shard}`] = Number(value);
    }
    return counts;
  };
  /** What the caches of the holder of `held` hold: each held shard's TerraformClusters and TerraformMachines, one of each per cluster. */
  const expectedCached = (held: number[]): Record<string, number> =>
    Object.fromEntries(
      held.flatMap((shard) => {
        const count = clusterNames.filter((cluster) => shardOfCluster(cluster) === shard).length;
        return count === 0
          ? []
          : [
              [`TerraformCluster ${shard}`, count],
              [`TerraformMachine ${shard}`, count],
            ];
      }),
    );
  /**
   * Every running manager's caches of the sharded kinds hold exactly the objects of the shards it
   * holds (`owners`: shard → manager): per shard label the count of that shard's objects, and no
   * other shard. With every object labelled with its own shard (checked apart), that is exactly
   * the objects of its shards: a cache holding a label's count holds all objects of that label.
   */
  const expectCachesHoldTheirShards = async (running: ManagerProcess[], owners: ManagerProcess[]) => {
    const expected = running.map((manager) =>
      expectedCached(owners.map((owner, shard) => (owner === manager ? shard : -1)).filter((shard) => shard >= 0)),
    );
    let observed: Record<string, number>[] = [];
    await waitFor(
      async () => {
        observed = await Promise.all(running.map(cachedObjects));
        return JSON.stringify(observed) === JSON.stringify(expected) ? true : undefined;
      },
      30_000,
      "every replica's caches holding its shards",
    ).catch(() => undefined);
    expect(observed).toEqual(expected);
  };
  /** Every TerraformCluster and TerraformMachine carries the label of its cluster's shard. */
  const expectShardLabels = async () => {
    for (const plural of ["terraformclusters", "terraformmachines"]) {
      const items = ((await plane.custom.listNamespacedCustomObject({ ...infra, namespace, plural })) as { items: CapiObject[] }).items;
      const cluster = (item: CapiObject) =>
        plural === "terraformclusters" ? item.metadata.name! : item.metadata.labels![labels.clusterName]!;
      expect(items.map((item) => [item.metadata.name, item.metadata.labels?.[labels.shard]])).toEqual(
        items.map((item) => [item.metadata.name, String(shardOfCluster(cluster(item)))]),
      );
    }
  };
  const machineKeys = clusterNames.map((cluster) => ({ key: `${namespace}/${machineOf(cluster)}`, cluster }));
  const clusterKeys = clusterNames.map((cluster) => ({ key: `${namespace}/${cluster}`, cluster }));

  beforeAll(async () => {
    bundle = buildManagerBundle(join(work, "bundle"));
    plane = await preparePlane(namespace);
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(plane.kubeconfigPath);
    client = new KubeClient(kubeConfig);
  }, 60_000);

  afterAll(async () => {
    await completer?.stop();
    for (const manager of managers) await killManagerProcess(manager);
    // The managers are gone: take the finalizers off so the namespace can go.
    await removeNoopObjects(plane, namespace, { clusters: clusterNames, machines: clusterNames.map(machineOf), identity: identityName });
    client?.close();
    rmSync(work, { recursive: true, force: true });
  });

  /** bench/controller-fixtures.mjs's cluster, per cluster: an externally managed TerraformCluster (no cluster Job) and one machine. */
  async function createClusters(): Promise<void> {
    await createNoopIdentity(plane, namespace, identityName);
    await Promise.all(
      clusterNames.map(async (cluster) => {
        await createNoopCluster(plane, namespace, cluster, identityName);
        await createNoopMachine(plane, namespace, cluster, machineOf(cluster));
      }),
    );
  }

  const applyJobs = async () =>
    (await plane.batch.listNamespacedJob({ namespace, labelSelector: `${labels.ownerKind}=TerraformMachine` })).items;

  it("reconciles each object on one manager, hands a killed manager's clusters over without a second Job, and rebalances 3 → 1 " +
    "→ 3", async () => {
    const [a, b, c] = await Promise.all([startManager(), startManager(), startManager()]);
    let owners = await settled([a!, b!, c!], 1);

    // 30 clusters; every machine's apply Job is created and stays running (no Pod completes yet).
    await createClusters();
    await waitFor(async () => ((await applyJobs()).length === clusterCount ? true : undefined), 60_000, `${clusterCount} apply Jobs`);
    await waitFor(
      async () =>
        machineKeys.every(({ key }) => managers.some((m) => reconciledKeys(m).has(key))) &&
        clusterKeys.every(({ key }) => managers.some((m) => reconciledKeys(m).has(key)))
          ? true
          : undefined,
      30_000,
      "every object reconciled",
    );
    expectOneManagerPerObject(owners, [...clusterKeys, ...machineKeys]);
    // Each new object was labelled once, by the holder of its shard, and each replica caches its shard alone.
    await expectShardLabels();
    const labelledBy = (key: string) =>
      managers
        .map((manager, i) => ({
          i,
          n: manager.records().filter((record) => record.msg === "labelled with its shard" && record.key === key).length,
        }))
        .filter(({ n }) => n > 0);
    for (const { key, cluster } of [...clusterKeys, ...machineKeys])
      expect([key, labelledBy(key)]).toEqual([key, [{ i: managers.indexOf(owners[shardOfCluster(cluster)]!), n: 1 }]]);
    await expectCachesHoldTheirShards([a!, b!, c!], owners);

    // SIGKILL one manager mid-run: its shard's Jobs are still running.
    const victim = owners[0]!;
    const victimClusters = clusterNames.filter((cluster) => owners[shardOfCluster(cluster)] === victim);
    expect(victimClusters.length).toBeGreaterThan(0);
    const survivors = [a!, b!, c!].filter((manager) => manager !== victim);
    const beforeKill = new Map(survivors.map((manager) => [manager, manager.records().length]));
    victim.child.kill("SIGKILL");
    await victim.exited;

    // Now the stand-in kubelet completes every Pod; the survivors bookkeep every run.
    const { startJobCompleter } = (await import(fileURLToPath(new URL("../../../bench/lib/controller-jobs.mjs", import.meta.url)))) as {
      startJobCompleter: (options: unknown) => { stop(): Promise<void>; synced(): Promise<void>; stats: { errors: string[] } };
    };
    const started = startJobCompleter({ client, namespace, logger: pino({ level: "silent" }) });
    completer = started;
    await started.synced();
    const provisioned = async () => {
      const items = (
        (await plane.custom.listNamespacedCustomObject({ ...infra, namespace, plural: "terraformmachines" })) as {
          items: ReadBack<TerraformMachine>[];
        }
      ).items;
      return items.filter((item) => item.status?.initialization?.provisioned === true).length;
    };
    await waitFor(async () => ((await provisioned()) === clusterCount ? true : undefined), 90_000, `${clusterCount} machines provisioned`);
    owners = await settled(survivors, 2);
    expect(owners).not.toContain(victim);
    // The survivors' caches now hold the killed manager's shard too.
    await expectCachesHoldTheirShards(survivors, owners);
    // The killed manager's machines were finished by the managers that took its shard.
    const reconcilersOf = (cluster: string) =>
      survivors.filter((manager) => reconciledKeys(manager, beforeKill.get(manager)).has(`${namespace}/${machineOf(cluster)}`));
    // The managers flush their log every few seconds: wait for the lines, not only for the status.
    await waitFor(
      async () => (victimClusters.every((cluster) => reconcilersOf(cluster).length > 0) ? true : undefined),
      30_000,
      "the killed manager's machines in the others' logs",
    );
    for (const cluster of victimClusters)
      for (const manager of reconcilersOf(cluster))
        expect(holdersOf(shardOfCluster(cluster), beforeKill)).toContain(managers.indexOf(manager));
    // Every run finished once: one apply Job per machine, complete and bookkept.
    const jobs = await applyJobs();
    expect(jobs.map((job) => job.metadata!.labels![labels.ownerName]).sort()).toEqual(clusterNames.map(machineOf).sort());
    for (const job of jobs) {
      expect(job.status?.conditions?.some((condition) => condition.type === "Complete" && condition.status === "True")).toBe(true);
      expect(job.metadata?.annotations?.["captf.io/bookkept"]).toBe("true");
    }
    expect(started.stats.errors).toEqual([]);

    // 3 → 1: a graceful stop releases its shards at once; the last manager holds them all.
    const [last, stopping] = survivors as [ManagerProcess, ManagerProcess];
    stopping.child.kill("SIGTERM");
    expect(await stopping.exited).toEqual({ code: 0, signal: null });
    await expectCachesHoldTheirShards([last], await settled([last], shards));

    // 1 → 3: the newcomers take their share; from then on each object is reconciled by its shard's holder alone.
    const [d, e] = await Promise.all([startManager(), startManager()]);
    owners = await settled([last, d!, e!], 1);
    await expectCachesHoldTheirShards([last, d!, e!], owners);

    // A wrong label is put right: another shard's value by that shard's holder (the only one that
    // sees it), another shard count's value (after a --shards change) by the holder of the object's shard.
    const [inRange, otherCount] = [machineKeys[0]!, machineKeys[1]!];
    const wrongShard = (shardOfCluster(inRange.cluster) + 1) % shards;
    const beforeRelabel = new Map(managers.map((manager) => [manager, manager.records().length]));
    const setShardLabel = (key: string, value: string) =>
      plane.custom.patchNamespacedCustomObject(
        {
          ...infra,
          namespace,
          plural: "terraformmachines",
          name: key.split("/")[1]!,
          body: { metadata: { labels: { [labels.shard]: value } } },
        },
        mergePatchOptions(),
      );
    await setShardLabel(inRange.key, String(wrongShard));
    await setShardLabel(otherCount.key, "7");
    const relabelledBy = (key: string, from: string) =>
      managers.filter((manager) =>
        manager
          .records()
          .slice(beforeRelabel.get(manager))
          .some((record) => record.msg === "labelled with its shard" && record.key === key && record.from === from),
      );
    await waitFor(
      async () =>
        relabelledBy(inRange.key, String(wrongShard)).length > 0 && relabelledBy(otherCount.key, "7").length > 0 ? true : undefined,
      30_000,
      "both labels put right",
    );
    expect(relabelledBy(inRange.key, String(wrongShard))).toEqual([owners[wrongShard]]);
    expect(relabelledBy(otherCount.key, "7")).toEqual([owners[shardOfCluster(otherCount.cluster)]]);
    await expectShardLabels();
    await expectCachesHoldTheirShards([last, d!, e!], owners);
    const window = new Map(managers.map((manager) => [manager, manager.records().length]));
    await Promise.all(
      machineKeys.map(({ key }) =>
        plane.custom.patchNamespacedCustomObject(
          {
            ...infra,
            namespace,
            plural: "terraformmachines",
            name: key.split("/")[1]!,
            body: { metadata: { labels: { "test.captf.io/touched": "1" } } },
          },
          mergePatchOptions(),
        ),
      ),
    );
    await waitFor(
      async () => (machineKeys.every(({ key }) => managers.some((m) => reconciledKeys(m, window.get(m)).has(key))) ? true : undefined),
      30_000,
      "every machine reconciled after 1 → 3",
    );
    expectOneManagerPerObject(owners, machineKeys, window);
    expect((await applyJobs()).length).toBe(clusterCount);
    for (const manager of managers.filter(alive)) expect(manager.records().filter((record) => record.level >= 50)).toEqual([]);
  }, 240_000);
});
