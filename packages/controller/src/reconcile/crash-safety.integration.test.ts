import { afterAll, beforeAll, expect, it } from "@jest/globals";
import { noopModuleDirectory } from "@captf/module-noop";
import { describeWithTools } from "@captf/testkit";
import { machineAdapter } from "../kinds/adapters.js";
import { startJobExecutor, type JobExecutor } from "./job-executor.test-support.js";
import { createExternalCluster, createMachine } from "./machine-fixture.test-support.js";
import { allJobsFinished, preparePlane } from "./plane.test-support.js";
import { reconcileWorkspace, type ReconcilerDeps } from "./workspace-reconciler.js";
import { pino } from "pino";
import { waitFor } from "@captf/testkit";
import { Informer } from "../runtime/informer.js";
import { KubeClient, type KubeObject, type ResourceType } from "../runtime/kube-client.js";
import type { ReadCache } from "../runtime/read-cache.js";
import { recordingWrites } from "../runtime/recorded-writes.js";
import { planeKubeConfig } from "../runtime/runtime.test-support.js";
import { managerReadCache } from "./manager-cache.js";
import type { TerraformMachine } from "../api/terraformmachine.js";
import type { ReadBack } from "./read-back.test-support.js";

const image = "registry.invalid/captf/noop-machine:v0.1.0";
const writeVerbs = /^(create|patch|replace|delete)/;

class ManagerKilled extends Error {}

/** A client that lets `budget` writes through, then "kills the manager": the next write throws before it reaches the API server. */
function killAfterWrites<T extends object>(client: T, counter: { writes: number; budget: number }): T {
  return new Proxy(client, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== "function") return value;
      // Bound: the client's methods reach its private fields through `this`.
      if (typeof property !== "string" || !writeVerbs.test(property)) return (value as (...a: unknown[]) => unknown).bind(target);
      return (...args: unknown[]) => {
        if (counter.writes >= counter.budget) throw new ManagerKilled(`killed before write ${counter.writes + 1} (${property})`);
        counter.writes++;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

// A manager killed between any two of its writes converges on the next passes without a duplicate
// Job or a lost result: every pass is cut after each possible number of writes in turn.
describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager", "tofu", "go"], "crash safety of the reconcile pass", () => {
  const namespace = `crash-${Date.now().toString(36)}`;
  let plane: Awaited<ReturnType<typeof preparePlane>>;
  let executor: JobExecutor;

  beforeAll(async () => {
    plane = await preparePlane(namespace);
    executor = startJobExecutor({ kubeconfigPath: plane.kubeconfigPath, namespace, modules: { [image]: noopModuleDirectory("machine") } });
    await createExternalCluster(plane, namespace);
  }, 120_000);
  afterAll(() => executor?.close());

  /** The manager's read cache over this namespace's informers (started here), or none: every read live. */
  let cache: ReadCache | undefined;
  const informers: Informer<KubeObject>[] = [];
  afterAll(async () => {
    await Promise.all(informers.map((informer) => informer.stop()));
    client?.close();
  });
  let client: KubeClient | undefined;
  function startCache(): ReadCache {
    client = new KubeClient(planeKubeConfig());
    const logger = pino({ level: "silent" });
    const before = informers.length;
    const started = managerReadCache(
      {
        client,
        informer: <T extends KubeObject>(
          type: ResourceType,
          request: { labelSelector?: string; fieldSelector?: string; transform?: (object: T) => T } = {},
        ) => {
          const informer = new Informer<T>({ client: client!, type, logger, ...(type.namespaced ? { namespace } : {}), ...request });
          informers.push(informer as unknown as Informer<KubeObject>);
          return informer;
        },
      } as unknown as Parameters<typeof managerReadCache>[0],
      [machineAdapter],
    );
    // Started once the cache added its indexes, as the manager starts them.
    for (const informer of informers.slice(before)) informer.start();
    return started;
  }

  // Without a cache (every read live), and with the manager's cache: its reads lag its own writes, which are expectations.
  for (const [budget, cached] of [
    [0, false],
    [1, false],
    [2, false],
    [3, false],
    [4, false],
    [5, false],
    [6, false],
    [7, false],
    [8, false],
    [9, false],
    [2, true],
    [5, true],
    [8, true],
  ] as const) {
    it(`converges with one apply Job when every pass is killed after ${budget} ` +
      `writes${cached ? ", reading from the manager's caches" : ""}`, async () => {
      const name = `m-${budget}${cached ? "-cached" : ""}`;
      if (cached && !cache) {
        cache = startCache();
        await waitFor(async () => (informers.every((informer) => informer.hasSynced()) ? true : undefined));
      }
      await createMachine(plane, namespace, name, image);
      let kills = 0;
      for (let pass = 0; pass < 30; pass++) {
        // Each pass is killed after `budget` writes while kills last, then the manager runs clean.
        const counter = { writes: 0, budget: kills < 4 ? budget : Infinity };
        const killable = killAfterWrites(plane.client, counter);
        const deps: ReconcilerDeps = cached ? { client: recordingWrites(killable, cache!), cache: cache! } : { client: killable };
        try {
          await reconcileWorkspace(deps, machineAdapter, namespace, name);
        } catch (error) {
          if (!(error instanceof ManagerKilled)) throw error;
          kills++;
        }
        if (await executor.runPending()) await allJobsFinished(plane.batch, namespace);
        const object = (await plane.custom.getNamespacedCustomObject({
          group: "infrastructure.cluster.x-k8s.io",
          version: "v1alpha1",
          namespace,
          plural: "terraformmachines",
          name,
        })) as ReadBack<TerraformMachine>;
        const jobs = (
          await plane.batch.listNamespacedJob({ namespace, labelSelector: `captf.infrastructure.cluster.x-k8s.io/owner-name=${name}` })
        ).items;
        if (
          object.status?.initialization?.provisioned &&
          jobs.every((job) => job.metadata?.annotations?.["captf.io/bookkept"] === "true")
        ) {
          expect(jobs.map((job) => job.metadata?.labels?.["captf.infrastructure.cluster.x-k8s.io/op"])).toEqual(["apply"]);
          expect(object.status.lastRun).toMatchObject({ operation: "apply", job: jobs[0]!.metadata!.name });
          expect(object.spec.providerID).toBe(`noop:///${namespace}/${name}`);
          if (cached) expect(cache!.counts.cached).toBeGreaterThan(0);
          return;
        }
      }
      throw new Error(`${name} did not converge after 30 passes`);
    }, 120_000);
  }
});
