// Memory that comes back (issue 35 §1): the manager's shipped wiring (createManagerControllers, in
// process, on the shared control plane) provisions TerraformMachines through their Jobs, completed by
// bench/lib/controller-jobs.mjs's stand-in kubelet, and destroys them once deleted. Then nothing the
// manager keeps per object holds anything of them: the informer caches (and their indexes), the
// per-object metric series, the read cache's expectations, the work queues and their backoff, and the
// Job slots' reservations, waiters, promises and record of deleted Jobs (which expires by itself). While
// they exist, the same checks find them. The watch of the identity's Secret stops once no identity names it.
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import { pino } from "pino";
import { describeWithTools, sharedControlPlane, waitFor } from "@captf/testkit";
import { bootstrapManager } from "./bootstrap.js";
import { parseManagerFlags } from "./flags.js";
import { addManagerControllers, createManagerControllers, managerBuildInfo } from "./manager-main.js";
import { reservationTtlMs, type JobSlots } from "./reconcile/job-slots.js";
import {
  capiGroup as capi,
  createNoopCluster,
  createNoopIdentity,
  createNoopMachine,
  infraGroup as infra,
  removeNoopObjects,
} from "./reconcile/noop-clusters.test-support.js";
import { mergePatchOptions, preparePlane, type PlaneClients } from "./reconcile/plane.test-support.js";
import type { ReadBack } from "./reconcile/read-back.test-support.js";
import type { ControllerRunner } from "./runtime/controller.js";
import type { Informer } from "./runtime/informer.js";
import type { KubeObject } from "./runtime/kube-client.js";
import type { ReadCache } from "./runtime/read-cache.js";
import type { TerraformMachine } from "./api/terraformmachine.js";

const machineCount = 4;

describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager"], "what the manager holds of deleted objects", () => {
  const namespace = `deleted-objects-${Date.now().toString(36)}`;
  const identityName = `${namespace}-identity`;
  const clusterName = "c";
  const machineNames = Array.from({ length: machineCount }, (_, i) => `m-${i}`);
  let plane: PlaneClients;
  let completer: { stop(): Promise<void>; synced(): Promise<void>; stats: { errors: string[] } } | undefined;
  const stop = new AbortController();
  let running: Promise<unknown> | undefined;

  beforeAll(async () => {
    plane = await preparePlane(namespace);
  }, 60_000);

  afterAll(async () => {
    stop.abort();
    await running;
    await completer?.stop();
    await removeNoopObjects(plane, namespace, { clusters: [clusterName], machines: machineNames, identity: identityName });
  });

  /** An externally managed cluster (no cluster Job) and `machineNames`, each a Machine owning its TerraformMachine; their uids. */
  async function createObjects(): Promise<string[]> {
    await createNoopIdentity(plane, namespace, identityName);
    await createNoopCluster(plane, namespace, clusterName, identityName);
    return Promise.all(machineNames.map((machine) => createNoopMachine(plane, namespace, clusterName, machine)));
  }

  const terraformMachines = async () =>
    (
      (await plane.custom.listNamespacedCustomObject({ ...infra, namespace, plural: "terraformmachines" })) as {
        items: ReadBack<TerraformMachine>[];
      }
    ).items;

  it("holds nothing of deleted machines (caches, series, expectations, queues, Job slots), no watch of an unnamed Secret", async () => {
    const parsed = await parseManagerFlags(
      [
        `--kubeconfig=${sharedControlPlane().kubeconfigPath}`,
        `--namespace=${namespace}`,
        "--health-addr=127.0.0.1:0",
        "--diagnostics-address=127.0.0.1:0",
        "--insecure-diagnostics",
        "--logging-format=json",
      ],
      { CAPTF_MANAGER_IMAGE: "registry.invalid/captf-controller:test", POD_NAMESPACE: namespace },
    );
    if (parsed.kind !== "run") throw new Error(JSON.stringify(parsed));
    const { manager, client, logger, metrics } = bootstrapManager(parsed.options, {
      buildInfo: managerBuildInfo(),
      stdout: { write: () => undefined },
    });
    // Every informer the wiring asks for, every controller's runner, and the read cache and Job slots it builds.
    const informers = new Set<Informer<KubeObject>>();
    const runners: ControllerRunner[] = [];
    let wired: { cache: ReadCache; jobSlots: JobSlots } | undefined;
    const recording = {
      client: manager.client,
      objectWatch: manager.objectWatch.bind(manager),
      releaseObjectWatch: manager.releaseObjectWatch.bind(manager),
      informer: ((type, request) => {
        const informer = manager.informer(type, request);
        informers.add(informer as unknown as Informer<KubeObject>);
        return informer;
      }) as typeof manager.informer,
      addController: (controller: Parameters<typeof manager.addController>[0]) => {
        const runner = manager.addController(controller);
        runners.push(runner);
        return runner;
      },
    };
    const controllers = createManagerControllers(
      { client, logger, metrics, instance: "deleted-objects", manager: recording, wired: (parts) => (wired = parts) },
      parsed.options,
    );
    addManagerControllers(recording, controllers, undefined);
    running = manager.run(stop.signal);

    const { startJobCompleter } = (await import(fileURLToPath(new URL("../../../bench/lib/controller-jobs.mjs", import.meta.url)))) as {
      startJobCompleter: (options: unknown) => NonNullable<typeof completer>;
    };
    completer = startJobCompleter({ client: plane.client, namespace, logger: pino({ level: "silent" }) });
    await completer.synced();
    const watchesBefore = manager.objectWatches;
    const uids = await createObjects();
    await waitFor(
      async () => ((await terraformMachines()).every((item) => item.status?.initialization?.provisioned === true) ? true : undefined),
      90_000,
      `${machineCount} machines provisioned`,
    );

    // What each structure holds of the machines: objects naming them (by name, label, ownerReference or annotation), series
    // with their name, keys of theirs queued, waiting, in flight or backing off, Job slot entries of theirs, expectations.
    const ofMachine = (text: string) =>
      uids.includes(text) ||
      machineNames.some((name) => text.startsWith(`${namespace}/captf-m-${name}-`)) ||
      machineNames.some((name) => [name, `${namespace}/${name}`].some((own) => text === own || text.startsWith(`${own}-`))) ||
      machineNames.some((name) => text.endsWith(`/TerraformMachine/${name}`));
    const metadataTexts = (object: KubeObject) => {
      const meta = object.metadata ?? {};
      return [
        meta.name ?? "",
        ...Object.values(meta.labels ?? {}),
        ...Object.values(meta.annotations ?? {}),
        ...(meta.ownerReferences ?? []).map((reference) => reference.uid),
      ];
    };
    const held = async () => ({
      cached: [...informers].flatMap((informer) =>
        informer
          .list()
          .filter((object) => metadataTexts(object).some(ofMachine))
          .map((object) => `${informer.type.plural} ${object.metadata?.name}`),
      ),
      series: (await metrics.registry.metrics())
        .split("\n")
        .filter((line) => !line.startsWith("#") && machineNames.some((name) => line.includes(`name="${name}"`))),
      queued: runners.flatMap((runner) =>
        machineNames
          .map((name) => `${namespace}/${name}`)
          .filter((key) => runner.queue.holds(key) || runner.queue.numRequeues(key) > 0)
          .map((key) => `${runner.controller.name} ${key}`),
      ),
      jobSlots: Object.entries(wired!.jobSlots.held).flatMap(([what, entries]) =>
        entries.filter(ofMachine).map((entry) => `${what} ${entry}`),
      ),
      expectations: wired!.cache.pendingExpectations,
    });

    // The checks see the machines while they exist.
    const before = await held();
    expect(before.cached.length).toBeGreaterThan(machineCount);
    expect(before.series.filter((line) => line.startsWith("captf_ready{"))).toHaveLength(machineCount);
    const watchesSecret = (name: string) => manager.objectWatches.some((id) => id.startsWith(`${namespace}/${name} `));
    expect(watchesSecret("credentials")).toBe(true);

    // As Cluster API deletes a Machine: its TerraformMachine first (destroyed by a Job), then the Machine and its bootstrap Secret.
    for (const name of machineNames)
      await plane.custom.deleteNamespacedCustomObject({ ...infra, namespace, plural: "terraformmachines", name });
    await waitFor(
      async () => ((await terraformMachines()).length === 0 ? true : undefined),
      90_000,
      "the TerraformMachines destroyed and gone",
    ).catch(async (error: Error) => {
      const left = (await terraformMachines()).map((item) => ({ name: item.metadata.name, finalizers: item.metadata.finalizers }));
      const pods = (await plane.core.listNamespacedPod({ namespace })).items.map((pod) => [
        pod.metadata?.name,
        pod.status?.phase,
        pod.metadata?.deletionTimestamp,
      ]);
      const jobs = (await plane.batch.listNamespacedJob({ namespace })).items.map((job) => [job.metadata?.name, job.status]);
      throw new Error(`${error.message}: ${JSON.stringify({ left, pods, jobs, errors: completer?.stats.errors })}`);
    });
    for (const name of machineNames) {
      await plane.custom.deleteNamespacedCustomObject({ ...capi, namespace, plural: "machines", name });
      await plane.core.deleteNamespacedSecret({ namespace, name: `${name}-bootstrap` });
    }
    // Their Jobs go by garbage collection after them: the Job slots record them as gone, for a minute.
    await waitFor(
      async () => ((await held()).jobSlots.some((entry) => entry.startsWith("goneJobs ")) ? true : undefined),
      60_000,
      "the machines' Jobs recorded as gone",
    );

    // The identity's Secret: its watch stops when the identity names another, and none is left once the identity is deleted.
    await plane.core.createNamespacedSecret({ namespace, body: { metadata: { name: "credentials-2" }, stringData: { NOOP_TOKEN: "2" } } });
    await plane.custom.patchClusterCustomObject(
      {
        ...infra,
        plural: "terraformclusteridentities",
        name: identityName,
        body: { spec: { secretRef: { name: "credentials-2", namespace } } },
      },
      mergePatchOptions(),
    );
    await waitFor(
      async () => (watchesSecret("credentials") ? undefined : true),
      30_000,
      "the watch of the Secret no identity names stopped",
    );
    await plane.custom.deleteClusterCustomObject({ ...infra, plural: "terraformclusteridentities", name: identityName });
    await waitFor(
      async () => (JSON.stringify(manager.objectWatches) === JSON.stringify(watchesBefore) ? true : undefined),
      30_000,
      "the Secret watches as before the identity",
    ).catch(() => undefined);
    expect(manager.objectWatches).toEqual(watchesBefore);

    const empty = { cached: [], series: [], queued: [], jobSlots: [], expectations: 0 };
    // Their Pods go by garbage collection too; the Job slots forget a deleted Job a minute after it went, with nothing else deleted.
    const after = await waitFor(
      async () => {
        const now = await held();
        return JSON.stringify(now) === JSON.stringify(empty) ? now : undefined;
      },
      reservationTtlMs + 30_000,
      "nothing of the machines held",
    ).catch(() => held());
    expect(after).toEqual(empty);
    expect(completer.stats.errors).toEqual([]);
  }, 330_000);
});
