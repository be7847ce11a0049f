import { expect, it, beforeAll } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { describeWithTools } from "./integration.js";
import { sharedControlPlane } from "./shared-control-plane.js";
import { waitFor } from "./tools.js";

describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager"], "the local control plane", () => {
  let core: k8s.CoreV1Api;
  let batch: k8s.BatchV1Api;
  const namespace = `plane-${Date.now().toString(36)}`;

  beforeAll(async () => {
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(sharedControlPlane().kubeconfigPath);
    core = kc.makeApiClient(k8s.CoreV1Api);
    batch = kc.makeApiClient(k8s.BatchV1Api);
    await core.createNamespace({ body: { metadata: { name: namespace } } });
  });

  it("serves the API over verified TLS with the admin token", async () => {
    const list = await core.listNamespace();
    expect(list.items.map((ns) => ns.metadata?.name)).toEqual(expect.arrayContaining(["default", "kube-system", namespace]));
  });

  it("runs the Job controller and the garbage collector", async () => {
    await batch.createNamespacedJob({
      namespace,
      body: {
        metadata: { name: "probe" },
        spec: {
          backoffLimit: 0,
          template: { spec: { restartPolicy: "Never", containers: [{ name: "main", image: "example.invalid/probe:v1" }] } },
        },
      },
    });
    const pods = await waitFor(async () => {
      const list = await core.listNamespacedPod({ namespace, labelSelector: "job-name=probe" });
      return list.items.length > 0 ? list.items : undefined;
    });
    expect(pods[0]?.metadata?.ownerReferences?.[0]?.kind).toBe("Job");
    await batch.deleteNamespacedJob({ name: "probe", namespace, propagationPolicy: "Background" });
    await waitFor(async () =>
      (await core.listNamespacedPod({ namespace, labelSelector: "job-name=probe" })).items.length === 0 ? true : undefined,
    );
  });
});
