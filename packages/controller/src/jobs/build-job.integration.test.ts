import { beforeAll, expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { describeWithTools, sharedControlPlane } from "@captf/testkit";
import { buildJob } from "./build-job.js";

// The real API server's own validation and Pod Security admission judge what buildJob makes.
describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager"], "Jobs from buildJob on the real API server", () => {
  const namespace = `jobs-${Date.now().toString(36)}`;
  let batch: k8s.BatchV1Api;
  let core: k8s.CoreV1Api;
  const request = {
    owner: { role: "machine" as const, name: "m-0", namespace, uid: "0b7e2b1e-1111-4c1e-9a55-2f1f0e0c0002", clusterName: "demo" },
    op: "apply" as const,
    attempt: 1,
    image: "registry.invalid/module:v1",
    inputsHash: "h2:" + "0".repeat(64),
    credentialsSecret: "captf-creds-demo",
  };

  beforeAll(async () => {
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(sharedControlPlane().kubeconfigPath);
    batch = kc.makeApiClient(k8s.BatchV1Api);
    core = kc.makeApiClient(k8s.CoreV1Api);
    await core.createNamespace({
      body: {
        metadata: {
          name: namespace,
          labels: { "pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest" },
        },
      },
    });
  });

  it("are valid Jobs", async () => {
    const job = buildJob(request);
    const created = await batch.createNamespacedJob({ namespace, body: job, dryRun: "All" });
    expect(created.metadata?.name).toBe(job.metadata?.name);
  });

  it("run pods the restricted Pod Security profile admits", async () => {
    const template = buildJob(request).spec!.template;
    const pod = { apiVersion: "v1", kind: "Pod", metadata: { ...template.metadata, name: "restricted-probe" }, spec: template.spec };
    await expect(core.createNamespacedPod({ namespace, body: pod, dryRun: "All" })).resolves.toBeDefined();
    const privileged = structuredClone(pod);
    privileged.spec!.containers[0]!.securityContext = { privileged: true };
    await expect(core.createNamespacedPod({ namespace, body: privileged, dryRun: "All" })).rejects.toThrow(
      /violates PodSecurity \W+restricted:latest.*privileged/,
    );
  });
});
