import { afterAll, beforeAll, expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { pino } from "pino";
import { describeWithTools, waitFor } from "@captf/testkit";
import { defaultJobEnvironment } from "../jobs/build-job.js";
import { machineAdapter } from "../kinds/adapters.js";
import { KubeClient } from "../runtime/kube-client.js";
import { Manager } from "../runtime/manager.js";
import { createMachine } from "./machine-fixture.test-support.js";
import { runnerImage, startNoopMachineKubelet, type NoopMachineKubelet } from "./noop-kubelet.test-support.js";
import { preparePlane } from "./plane.test-support.js";
import { workspaceController } from "./workspace-controller.js";
import type { TerraformMachine } from "../api/terraformmachine.js";
import type { ReadBack } from "./read-back.test-support.js";

// The manager as it runs: informers, work queue, leader election and the TerraformMachine
// controller, with no pass driven by the test. The chroot kubelet runs the Jobs.
describeWithTools(
  ["etcd", "kube-apiserver", "kube-controller-manager", "tofu", "go", "umoci", "skopeo", "docker-registry"],
  "the manager reconciling a TerraformMachine on its own",
  () => {
    const namespace = `manager-e2e-${Date.now().toString(36)}`;
    let plane: Awaited<ReturnType<typeof preparePlane>>;
    let kubelet: NoopMachineKubelet;
    let client: KubeClient;
    const stop = new AbortController();
    let running: Promise<unknown>;

    beforeAll(async () => {
      plane = await preparePlane(namespace);
      kubelet = await startNoopMachineKubelet(plane, namespace, "manager-e2e");

      const kc = new k8s.KubeConfig();
      kc.loadFromFile(plane.kubeconfigPath);
      client = new KubeClient(kc);
      const manager = new Manager({
        client,
        logger: pino({ level: "warn" }),
        namespace,
        healthAddress: "127.0.0.1:0",
        metricsAddress: "127.0.0.1:0",
        leaderElection: {
          namespace,
          leaseName: "captf-manager",
          leaseDurationMillis: 6_000,
          renewDeadlineMillis: 5_000,
          retryPeriodMillis: 250,
        },
      });
      const deps = { client: plane.client, jobEnvironment: { ...defaultJobEnvironment, runnerImage } };
      manager.addController(workspaceController(machineAdapter, deps, { concurrency: 2, manager }));
      running = manager.run(stop.signal);

      // No bootstrap data yet: the first test gives the Machine its Secret.
      await createMachine(plane, namespace, "m-0", kubelet.image, {
        clusterSpec: { source: { image: "registry.invalid/unused:v1" } },
        bootstrap: {},
      });
    }, 240_000);

    afterAll(async () => {
      stop.abort();
      await running;
      client?.close();
      await kubelet?.stop();
    }, 60_000);

    it("waits for bootstrap data, and starts its apply as soon as the Machine names it (the Machine watch, not the 30 s " +
      "requeue)", async () => {
      const getObject = async () =>
        (await plane.custom.getNamespacedCustomObject({
          group: "infrastructure.cluster.x-k8s.io",
          version: "v1alpha1",
          namespace,
          plural: "terraformmachines",
          name: "m-0",
        })) as ReadBack<TerraformMachine>;
      await waitFor(
        async () =>
          ((await getObject()).status?.conditions ?? []).find(
            (c: { type: string; reason: string }) => c.type === "DependenciesReady" && c.reason === "WaitingForBootstrapData",
          ),
        30_000,
        "DependenciesReady=WaitingForBootstrapData",
      );
      await plane.custom.patchNamespacedCustomObject(
        {
          group: "cluster.x-k8s.io",
          version: "v1beta2",
          namespace,
          plural: "machines",
          name: "m-0",
          body: { spec: { bootstrap: { dataSecretName: "m-0-bootstrap" } } },
        },
        k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
      );
      const patchedAt = Date.now();
      await waitFor(
        async () => ((await plane.batch.listNamespacedJob({ namespace })).items.length > 0 ? true : undefined),
        30_000,
        "an apply Job",
      );
      // The pass that waited asked to be requeued after 30 s; only the Machine watch starts it sooner.
      expect(Date.now() - patchedAt).toBeLessThan(20_000);
    }, 90_000);

    it("provisions it, bookkeeps its one Job, and settles", async () => {
      const object = await waitFor(
        async () => {
          const current = (await plane.custom.getNamespacedCustomObject({
            group: "infrastructure.cluster.x-k8s.io",
            version: "v1alpha1",
            namespace,
            plural: "terraformmachines",
            name: "m-0",
          })) as ReadBack<TerraformMachine>;
          const jobs = (await plane.batch.listNamespacedJob({ namespace })).items;
          return current.status?.initialization?.provisioned &&
            jobs.every((job) => job.metadata?.annotations?.["captf.io/bookkept"] === "true")
            ? current
            : undefined;
        },
        120_000,
        "the TerraformMachine provisioned and its Job bookkept",
      );
      expect(object.spec.providerID).toBe(`noop:///${namespace}/m-0`);
      expect((await plane.batch.listNamespacedJob({ namespace })).items).toHaveLength(1);
    }, 180_000);
  },
);
