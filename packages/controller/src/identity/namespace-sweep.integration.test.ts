// The namespace sweep on the real API server: nothing is removed while a captf object remains;
// once the last one is gone, captf's ServiceAccount, RoleBinding and Leases go, and what captf did
// not make (no captf.io/managed label) stays.
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { apiGroup, apiVersion, labels } from "@captf/contract/api";
import { minimalMachine } from "../api/examples.test-support.js";
import { preparePlane, type PlaneClients } from "../reconcile/plane.test-support.js";
import { ensureRunnerRbac } from "./runner-rbac.js";
import { pino } from "pino";
import { describeWithTools, waitFor } from "@captf/testkit";
import { KubeClient } from "../runtime/kube-client.js";
import { Manager } from "../runtime/manager.js";
import { namespaceSweepController, sweepNamespace } from "./namespace-sweep.js";

describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager"], "the namespace sweep", () => {
  const namespace = `sweep-${Date.now().toString(36)}`;
  let plane: PlaneClients;
  let rbac: k8s.RbacAuthorizationV1Api;

  beforeAll(async () => {
    plane = await preparePlane(namespace);
    const kubeConfig = new k8s.KubeConfig();
    kubeConfig.loadFromFile(plane.kubeconfigPath);
    rbac = kubeConfig.makeApiClient(k8s.RbacAuthorizationV1Api);
    // The first suite on the shared plane installs and waits for the CRDs: longer than jest's 5 s default on a busy machine.
  }, 120_000);
  afterAll(async () => {
    await plane?.core.deleteNamespace({ name: namespace }).catch(() => undefined);
  });

  it("keeps everything while an object remains, then removes only what captf made", async () => {
    const client = plane.client;
    expect((await ensureRunnerRbac({ client }, namespace)).status).toBe("True");
    await plane.coordination.createNamespacedLease({
      namespace,
      body: { metadata: { name: "captf-run-test", labels: { [labels.managed]: "true" } }, spec: { holderIdentity: "job" } },
    });
    await plane.coordination.createNamespacedLease({
      namespace,
      body: { metadata: { name: "someone-elses" }, spec: { holderIdentity: "them" } },
    });
    await plane.core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: "team-runner" } } });
    const machines = { group: apiGroup, version: apiVersion, namespace, plural: "terraformmachines" };
    await plane.custom.createNamespacedCustomObject({ ...machines, body: minimalMachine("m-0") });

    expect(await sweepNamespace(client, namespace)).toEqual({ swept: false });
    expect((await rbac.listNamespacedRoleBinding({ namespace })).items.map((binding) => binding.metadata!.name)).toEqual(["captf-runner"]);

    await plane.custom.deleteNamespacedCustomObject({ ...machines, name: "m-0" });
    const result = await sweepNamespace(client, namespace);
    expect(result).toEqual({ swept: true, removed: ["ServiceAccount/captf-runner", "RoleBinding/captf-runner", "Lease/captf-run-test"] });
    expect((await rbac.listNamespacedRoleBinding({ namespace })).items).toEqual([]);
    expect((await plane.core.listNamespacedServiceAccount({ namespace })).items.map((account) => account.metadata!.name).sort()).toEqual(
      expect.not.arrayContaining(["captf-runner"]),
    );
    expect((await plane.core.listNamespacedServiceAccount({ namespace })).items.map((account) => account.metadata!.name)).toContain(
      "team-runner",
    );
    expect((await plane.coordination.listNamespacedLease({ namespace })).items.map((lease) => lease.metadata!.name)).toEqual([
      "someone-elses",
    ]);
  });

  it("sweeps at start, as the manager's leader: a namespace left with captf's RBAC and no object is cleaned, one with an object " +
    "is kept", async () => {
    const left = `${namespace}-left`;
    const used = `${namespace}-used`;
    for (const name of [left, used]) {
      await plane.core.createNamespace({ body: { metadata: { name } } });
      await ensureRunnerRbac({ client: plane.client }, name);
      await plane.coordination.createNamespacedLease({
        namespace: name,
        body: { metadata: { name: "captf-run-left", labels: { [labels.managed]: "true" } }, spec: { holderIdentity: "job" } },
      });
    }
    await plane.custom.createNamespacedCustomObject({
      group: apiGroup,
      version: apiVersion,
      namespace: used,
      plural: "terraformmachines",
      body: minimalMachine("m-0"),
    });
    const kubeConfig = new k8s.KubeConfig();
    kubeConfig.loadFromFile(plane.kubeconfigPath);
    const client = new KubeClient(kubeConfig);
    const manager = new Manager({ client, logger: pino({ level: "silent" }), healthAddress: "127.0.0.1:0", metricsAddress: "127.0.0.1:0" });
    manager.addController(namespaceSweepController(plane.client, { syncPeriodMillis: 600_000 }));
    const stop = new AbortController();
    const running = manager.run(stop.signal);
    try {
      const managed = async (name: string) => [
        ...(await plane.core.listNamespacedServiceAccount({ namespace: name, labelSelector: `${labels.managed}=true` })).items,
        ...(await rbac.listNamespacedRoleBinding({ namespace: name, labelSelector: `${labels.managed}=true` })).items,
        ...(await plane.coordination.listNamespacedLease({ namespace: name, labelSelector: `${labels.managed}=true` })).items,
      ];
      await waitFor(
        async () => ((await managed(left)).length === 0 ? true : undefined),
        30_000,
        `captf's RBAC and Lease swept from ${left}`,
      );
      expect((await managed(used)).map((object) => object.metadata!.name).sort()).toEqual([
        "captf-run-left",
        "captf-runner",
        "captf-runner",
      ]);
    } finally {
      stop.abort();
      await running;
      client.close();
      for (const name of [left, used]) await plane.core.deleteNamespace({ name }).catch(() => undefined);
    }
  }, 90_000);
});
