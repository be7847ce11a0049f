// The variablesFrom source watches of the workspace controllers, on a running Manager against the
// real API server: creating, changing or unlabelling a labelled ConfigMap or Secret starts a pass
// of exactly the objects that name it (the pass then reads the sources live: a changed value
// changes the inputs hash and re-applies). The passes are recorded, not run.
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { pino } from "pino";
import { describeWithTools } from "@captf/testkit";
import { clusterAdapter, poolAdapter } from "../kinds/adapters.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import { KubeClient } from "../runtime/kube-client.js";
import { Manager } from "../runtime/manager.js";
import { eventually } from "../runtime/runtime.test-support.js";
import { preparePlane, type PlaneClients } from "./plane.test-support.js";
import { variablesSourceSelector } from "./variables-source-watches.js";
import { workspaceController, workspaceResourceType } from "./workspace-controller.js";
import type { ReconcilerDeps } from "./workspace-reconciler.js";

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
      plane.custom.createNamespacedCustomObject({ group: "infrastructure.cluster.x-k8s.io", version: "v1alpha1", namespace, plural, body: { apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1", kind, metadata: { name }, spec } });
    const source = { image: "registry.invalid/unused:v1" };
    await create("terraformclusters", "TerraformCluster", "uses-both", { source, identityRef: { name: "id" }, variablesFrom: [{ configMapRef: { name: "settings" } }, { secretRef: { name: "creds" } }] });
    await create("terraformclusters", "TerraformCluster", "uses-none", { source, identityRef: { name: "id" } });
    await create("terraformmachinepools", "TerraformMachinePool", "pool", { source, variablesFrom: [{ configMapRef: { name: "settings" }, optional: true }] });

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
    await plane.core.createNamespacedConfigMap({ namespace, body: { metadata: { name: "settings", ...labelled }, data: { region: "eu-west-1" } } });
    await eventually(() => passesFor(`TerraformCluster/${namespace}/uses-both`) === 1 && passesFor(`TerraformMachinePool/${namespace}/pool`) === 1, 30_000, "passes after the ConfigMap appeared");
    await plane.core.patchNamespacedConfigMap({ namespace, name: "settings", body: { data: { region: "us-east-1" } } }, k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch));
    await eventually(() => passesFor(`TerraformCluster/${namespace}/uses-both`) === 2, 30_000, "a pass after the ConfigMap changed");
  });

  it("starts a pass when a labelled Secret changes, and when a source loses its label", async () => {
    await plane.core.createNamespacedSecret({ namespace, body: { metadata: { name: "creds", ...labelled }, stringData: { token: "secret-value" } } });
    await eventually(() => passesFor(`TerraformCluster/${namespace}/uses-both`) === 3, 30_000, "a pass after the Secret appeared");
    await plane.core.patchNamespacedConfigMap({ namespace, name: "settings", body: { metadata: { labels: { "captf.io/variables": null } } } }, k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch));
    await eventually(() => passesFor(`TerraformCluster/${namespace}/uses-both`) === 4 && passesFor(`TerraformMachinePool/${namespace}/pool`) === 3, 30_000, "passes after the label went");
  });

  it("never starts a pass of an object naming no source, and keeps no source value in its cache", () => {
    expect(passes.filter((pass) => pass.endsWith("/uses-none"))).toEqual([]);
    const cached = manager.informer(builtinTypes.secret, { labelSelector: variablesSourceSelector }).list();
    expect(cached.map((secret) => secret.metadata?.name)).toEqual(["creds"]);
    expect(JSON.stringify(cached)).not.toContain(Buffer.from("secret-value").toString("base64"));
  });
});
