// The variablesFrom source watches of the workspace controllers, on a running Manager against the
// real API server: creating, changing or unlabelling a labelled ConfigMap or Secret starts a pass
// of exactly the objects that name it. First with passes that are recorded, not run; then with the
// real pass and real Jobs: a changed value changes the inputs hash and re-applies the cluster.
import { rmSync } from "node:fs";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { pino } from "pino";
import { describeWithTools, waitFor } from "@captf/testkit";
import { clusterAdapter, poolAdapter } from "../kinds/adapters.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import { KubeClient } from "../runtime/kube-client.js";
import { Manager } from "../runtime/manager.js";
import { eventually } from "../runtime/runtime.test-support.js";
import { durableInputsSecretName } from "./durable-inputs.js";
import { startJobExecutor, type JobExecutor } from "./job-executor.test-support.js";
import {
  createTerraformCluster,
  extendedClusterModule,
  planeReconcilerDeps,
  preparePlane,
  type PlaneClients,
} from "./plane.test-support.js";
import { variablesSourceSelector } from "./variables-source-watches.js";
import { workspaceController, workspaceResourceType } from "./workspace-controller.js";
import type { ReconcilerDeps } from "./workspace-reconciler.js";
import type { TerraformCluster } from "../api/terraformcluster.js";
import type { ReadBack } from "./read-back.test-support.js";

describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager"], "variablesFrom sources watched", () => {
  const namespace = `varsrc-${Date.now().toString(36)}`;
  let plane: PlaneClients;
  let client: KubeClient;
  let manager: Manager;
  const stop = new AbortController();
  let running: Promise<unknown>;
  const passes: string[] = [];

  beforeAll(async () => {
    plane = await preparePlane(namespace);
    const create = (plural: string, kind: string, name: string, spec: Record<string, unknown>) =>
      plane.custom.createNamespacedCustomObject({
        group: "infrastructure.cluster.x-k8s.io",
        version: "v1alpha1",
        namespace,
        plural,
        body: { apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1", kind, metadata: { name }, spec },
      });
    const source = { image: "registry.invalid/unused:v1" };
    await create("terraformclusters", "TerraformCluster", "uses-both", {
      source,
      identityRef: { name: "id" },
      variablesFrom: [{ configMapRef: { name: "settings" } }, { secretRef: { name: "creds" } }],
    });
    await create("terraformclusters", "TerraformCluster", "uses-none", { source, identityRef: { name: "id" } });
    await create("terraformmachinepools", "TerraformMachinePool", "pool", {
      source,
      variablesFrom: [{ configMapRef: { name: "settings" }, optional: true }],
    });

    const kc = new k8s.KubeConfig();
    kc.loadFromFile(plane.kubeconfigPath);
    client = new KubeClient(kc);
    manager = new Manager({ client, logger: pino({ level: "warn" }), namespace, healthAddress: "", metricsAddress: "" });
    // The workspace controllers' own watches, with a pass that only records its key.
    for (const adapter of [clusterAdapter, poolAdapter]) {
      const controller = workspaceController(adapter, {} as ReconcilerDeps, { concurrency: 1, manager });
      manager.addController({
        ...controller,
        watches: controller.watches.filter((watch) => watch.labelSelector === variablesSourceSelector),
        reconcile: async (key) => void passes.push(`${adapter.kind}/${key}`),
      });
    }
    running = manager.run(stop.signal);
    const informers = [
      manager.informer(workspaceResourceType(clusterAdapter)),
      manager.informer(workspaceResourceType(poolAdapter)),
      manager.informer(builtinTypes.configMap, { labelSelector: variablesSourceSelector }),
      manager.informer(builtinTypes.secret, { labelSelector: variablesSourceSelector }),
    ];
    await eventually(() => informers.every((informer) => informer.hasSynced()), 30_000, "the manager's caches");
  }, 60_000);

  afterAll(async () => {
    stop.abort();
    await running;
    client?.close();
    await plane?.core.deleteNamespace({ name: namespace }).catch(() => undefined);
  });

  const labelled = { labels: { "captf.io/variables": "true" } };
  const passesFor = (key: string) => passes.filter((pass) => pass === key).length;

  it("starts a pass of each object naming a labelled ConfigMap when it appears and when it changes", async () => {
    await plane.core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: "settings", ...labelled }, data: { region: "eu-west-1" } },
    });
    await eventually(
      () => passesFor(`TerraformCluster/${namespace}/uses-both`) === 1 && passesFor(`TerraformMachinePool/${namespace}/pool`) === 1,
      30_000,
      "passes after the ConfigMap appeared",
    );
    await plane.core.patchNamespacedConfigMap(
      { namespace, name: "settings", body: { data: { region: "us-east-1" } } },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
    );
    await eventually(() => passesFor(`TerraformCluster/${namespace}/uses-both`) === 2, 30_000, "a pass after the ConfigMap changed");
  });

  it("starts a pass when a labelled Secret changes, and when a source loses its label", async () => {
    await plane.core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: "creds", ...labelled }, stringData: { token: "secret-value" } },
    });
    await eventually(() => passesFor(`TerraformCluster/${namespace}/uses-both`) === 3, 30_000, "a pass after the Secret appeared");
    await plane.core.patchNamespacedConfigMap(
      { namespace, name: "settings", body: { metadata: { labels: { "captf.io/variables": null } } } },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
    );
    await eventually(
      () => passesFor(`TerraformCluster/${namespace}/uses-both`) === 4 && passesFor(`TerraformMachinePool/${namespace}/pool`) === 3,
      30_000,
      "passes after the label went",
    );
  });

  it("never starts a pass of an object naming no source, and keeps no source value in its cache", () => {
    expect(passes.filter((pass) => pass.endsWith("/uses-none"))).toEqual([]);
    const cached = manager.informer(builtinTypes.secret, { labelSelector: variablesSourceSelector }).list();
    expect(cached.map((secret) => secret.metadata?.name)).toEqual(["creds"]);
    expect(JSON.stringify(cached)).not.toContain(Buffer.from("secret-value").toString("base64"));
  });
});

describeWithTools(
  ["etcd", "kube-apiserver", "kube-controller-manager", "tofu", "go"],
  "a changed variablesFrom source, through the running manager",
  () => {
    const namespace = `varsrc-apply-${Date.now().toString(36)}`;
    const image = "registry.invalid/captf/region-cluster:v1";
    const infra = { group: "infrastructure.cluster.x-k8s.io", version: "v1alpha1", namespace, plural: "terraformclusters" };
    let plane: PlaneClients;
    let client: KubeClient;
    let executor: JobExecutor;
    let eventsApi: k8s.EventsV1Api;
    let moduleDir = "";
    const stop = new AbortController();
    let running: Promise<unknown>;
    let kubelet: ReturnType<typeof setInterval> | undefined;
    let busy = false;
    /** The action of each pass of the TerraformCluster, as its controller logs it. */
    const actions: string[] = [];

    beforeAll(async () => {
      plane = await preparePlane(namespace);
      moduleDir = extendedClusterModule("captf-varsrc-module-", {
        "region.tf":
          'variable "region" {\n  type    = string\n  default = ""\n}\n\nresource "terraform_data" "region" {\n  input = var.region\n}\n',
      });
      executor = startJobExecutor({ kubeconfigPath: plane.kubeconfigPath, namespace, modules: { [image]: moduleDir } });
      // Plays the kubelet for the manager's Jobs: runs each new Pod (one sweep at a time).
      kubelet = setInterval(() => {
        if (busy) return;
        busy = true;
        void executor
          .runPending()
          .catch(() => undefined)
          .finally(() => (busy = false));
      }, 500);

      const planeDeps = planeReconcilerDeps(plane, "varsrc-apply-test");
      eventsApi = planeDeps.eventsApi;
      const kc = new k8s.KubeConfig();
      kc.loadFromFile(plane.kubeconfigPath);
      client = new KubeClient(kc);
      const logger = pino(
        { level: "info" },
        {
          write: (line: string) => {
            const record = JSON.parse(line) as { msg?: string; action?: string };
            if (record.msg === "reconciled" && record.action) actions.push(record.action);
          },
        },
      );
      const manager = new Manager({ client, logger, namespace, healthAddress: "", metricsAddress: "" });
      manager.addController(workspaceController(clusterAdapter, planeDeps.deps, { concurrency: 1, manager }));
      running = manager.run(stop.signal);

      await plane.core.createNamespacedConfigMap({
        namespace,
        body: { metadata: { name: "settings", labels: { "captf.io/variables": "true" } }, data: { region: "eu-west-1" } },
      });
      await createTerraformCluster(plane, namespace, "c", { source: { image }, variablesFrom: [{ configMapRef: { name: "settings" } }] });
    }, 120_000);

    afterAll(async () => {
      if (kubelet) clearInterval(kubelet);
      await waitFor(async () => (busy ? undefined : true), 60_000, "the executor's last sweep");
      stop.abort();
      await running;
      client?.close();
      executor?.close();
      if (moduleDir) rmSync(moduleDir, { recursive: true, force: true });
    });

    const getCluster = () => plane.custom.getNamespacedCustomObject({ ...infra, name: "c" }) as Promise<ReadBack<TerraformCluster>>;
    const condition = (object: ReadBack<TerraformCluster>, type: string) =>
      (object.status?.conditions ?? []).find((c: { type: string }) => c.type === type);
    const applies = async () =>
      (await plane.batch.listNamespacedJob({ namespace, labelSelector: "captf.infrastructure.cluster.x-k8s.io/op=apply" })).items;
    const conditionChanged = async () =>
      (await eventsApi.listNamespacedEvent({ namespace })).items.filter(
        (event) => event.regarding?.name === "c" && event.reason === "ConditionChanged",
      );
    /** Waits until the manager's passes of the cluster settle: provisioned, its Jobs bookkept, the newest pass UpToDate. */
    async function settled(): Promise<void> {
      await waitFor(
        async () => {
          const cluster = await getCluster();
          const jobs = (await plane.batch.listNamespacedJob({ namespace })).items;
          return cluster.status?.initialization?.provisioned &&
            jobs.every((job) => job.metadata?.annotations?.["captf.io/bookkept"] === "true") &&
            actions.at(-1) === "UpToDate"
            ? true
            : undefined;
        },
        120_000,
        `the cluster settled (passes: ${actions.join(" | ")})`,
      );
    }

    it("re-applies the TerraformCluster when a value of its labelled ConfigMap changes: the watch starts the pass, which starts " +
      "apply (InputsChanged)", async () => {
      await settled();
      expect(await applies()).toHaveLength(1);
      const before = actions.length;
      await plane.core.patchNamespacedConfigMap(
        { namespace, name: "settings", body: { data: { region: "us-east-1" } } },
        k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
      );
      const changedAt = Date.now();
      await waitFor(
        async () => (actions.slice(before).some((action) => /^started apply \(InputsChanged\)/.test(action)) ? true : undefined),
        30_000,
        `an apply after the change (passes: ${actions.slice(before).join(" | ")})`,
      );
      // The settled pass asked for its next look after the drift interval (minutes): only the ConfigMap watch starts one this soon.
      expect(Date.now() - changedAt).toBeLessThan(20_000);
      await settled();
      const jobs = await applies();
      expect(jobs).toHaveLength(2);
      const cluster = await getCluster();
      expect(condition(cluster, "ApplyJobSucceeded")).toMatchObject({ status: "True", reason: "ApplySucceeded" });
      expect(condition(cluster, "InputsApplied")).toMatchObject({ status: "True", reason: "InputsApplied" });
      const newest = jobs.find((job) => job.metadata?.labels?.["captf.infrastructure.cluster.x-k8s.io/attempt"] === "2")!;
      expect(newest.metadata?.annotations?.["captf.io/inputs-hash"]).not.toBe(
        jobs.find((job) => job !== newest)!.metadata?.annotations?.["captf.io/inputs-hash"],
      );
      const inputs = await plane.core.readNamespacedSecret({ namespace, name: durableInputsSecretName("cluster", "c") });
      expect(JSON.parse(Buffer.from(inputs.data!["terraform.tfvars.json"]!, "base64").toString("utf8"))).toMatchObject({
        region: "us-east-1",
      });
    }, 180_000);

    it("records one Warning ConditionChanged when DependenciesReady turns bad (the source lost its label), and one Normal when " +
      "it recovers", async () => {
      expect(await conditionChanged()).toEqual([]);
      const unlabel = (labels: Record<string, string | null>) =>
        plane.core.patchNamespacedConfigMap(
          { namespace, name: "settings", body: { metadata: { labels } } },
          k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
        );
      await unlabel({ "captf.io/variables": null });
      await waitFor(
        async () => (condition(await getCluster(), "DependenciesReady")?.status === "False" ? true : undefined),
        30_000,
        "DependenciesReady False",
      );
      expect(condition(await getCluster(), "DependenciesReady")).toMatchObject({ reason: "VariablesSourceNotFound" });
      const warning = await waitFor(
        async () => ((await conditionChanged()).length > 0 ? await conditionChanged() : undefined),
        10_000,
        "a ConditionChanged event",
      );
      expect(warning.map((event) => [event.type, event.note])).toEqual([
        ["Warning", "DependenciesReady is False (VariablesSourceNotFound), was True (DependenciesReady)"],
      ]);

      await unlabel({ "captf.io/variables": "true" });
      await waitFor(
        async () => (condition(await getCluster(), "DependenciesReady")?.status === "True" ? true : undefined),
        30_000,
        "DependenciesReady True again",
      );
      const both = await waitFor(
        async () => ((await conditionChanged()).length > 1 ? await conditionChanged() : undefined),
        10_000,
        "a second ConditionChanged event",
      );
      expect(both.map((event) => [event.type, event.note])).toEqual([
        ["Warning", "DependenciesReady is False (VariablesSourceNotFound), was True (DependenciesReady)"],
        ["Normal", "DependenciesReady is True (DependenciesReady), was False (VariablesSourceNotFound)"],
      ]);
      // The same inputs as applied: nothing runs again.
      await settled();
      expect(await applies()).toHaveLength(2);
    }, 120_000);
  },
);
