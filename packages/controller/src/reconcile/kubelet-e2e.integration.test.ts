import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import type * as k8s from "@kubernetes/client-node";
import { parseRunResult } from "@captf/contract/run-result";
import { noopModuleDirectory } from "@captf/module-noop";
import {
  buildModuleImage,
  describeWithTools,
  prepareRunnerImageRoot,
  pushImage,
  requireTool,
  sharedControlPlane,
  startChrootKubelet,
  startLocalRegistry,
  type ChrootKubelet,
  type LocalRegistry,
} from "@captf/testkit";
import { defaultJobEnvironment } from "../jobs/build-job.js";
import { machineAdapter } from "../kinds/adapters.js";
import { allJobsFinished, preparePlane } from "./plane.test-support.js";
import { reconcileWorkspace, type ReconcilerDeps } from "./workspace-reconciler.js";
import type { TerraformMachine } from "../api/terraformmachine.js";
import type { ReadBack } from "./read-back.test-support.js";

const runnerImage = "captf-controller:e2e";

// The whole path of one machine with nothing stood in: the reconciler builds the Job, the chroot
// kubelet pulls the no-op module image from a loopback registry, the init container copies the
// runner bundle out of the manager image, the runner applies the module with in-cluster
// credentials, and the reconciler reads the termination message and the state back.
describeWithTools(
  ["etcd", "kube-apiserver", "kube-controller-manager", "tofu", "go", "umoci", "skopeo", "docker-registry"],
  "a TerraformMachine through the chroot kubelet",
  () => {
    const namespace = `kubelet-e2e-${Date.now().toString(36)}`;
    const work = mkdtempSync(join(tmpdir(), "captf-e2e-"));
    let plane: Awaited<ReturnType<typeof preparePlane>>;
    let registry: LocalRegistry;
    let kubelet: ChrootKubelet;
    let deps: ReconcilerDeps;
    let image: string;

    beforeAll(async () => {
      plane = await preparePlane(namespace);
      registry = await startLocalRegistry();
      buildModuleImage(join(work, "layout"), "v0.1.0", {
        moduleDir: noopModuleDirectory("machine"),
        runtime: requireTool("tofu"),
        runtimeVersion: "1.12.6",
        role: "machine",
      });
      image = `${registry.host}/captf/noop-machine:v0.1.0`;
      pushImage(join(work, "layout"), "v0.1.0", image);
      const bundle = join(work, "bundle");
      execFileSync(
        process.execPath,
        [fileURLToPath(new URL("../../../runner/scripts/build-bundle.mjs", import.meta.url)), "--out", bundle],
        { stdio: "pipe" },
      );
      const runnerRoot = prepareRunnerImageRoot(join(work, "runner-image"), bundle);
      kubelet = await startChrootKubelet({
        kubeconfigPath: plane.kubeconfigPath,
        nodeName: `e2e-${Date.now().toString(36)}`,
        namespaces: [namespace],
        imageResolver: (reference) => (reference === runnerImage ? runnerRoot : undefined),
        // The runner's state and events go through this token; a real install binds captf-runner's Role.
        serviceAccountTokens: { token: sharedControlPlane().token },
      });
      deps = { client: plane.client, jobEnvironment: { ...defaultJobEnvironment, runnerImage } };

      const capi = { group: "cluster.x-k8s.io", version: "v1beta2", namespace };
      await plane.custom.createNamespacedCustomObject({
        group: "infrastructure.cluster.x-k8s.io",
        version: "v1alpha1",
        namespace,
        plural: "terraformclusters",
        body: {
          apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
          kind: "TerraformCluster",
          metadata: { name: "ext", annotations: { "cluster.x-k8s.io/managed-by": "external" } },
          spec: { source: { image: "registry.invalid/unused:v1" }, identityRef: { name: "id" } },
        },
      });
      await plane.custom.createNamespacedCustomObject({
        ...capi,
        plural: "clusters",
        body: {
          apiVersion: "cluster.x-k8s.io/v1beta2",
          kind: "Cluster",
          metadata: { name: "ext" },
          spec: { infrastructureRef: { apiGroup: "infrastructure.cluster.x-k8s.io", kind: "TerraformCluster", name: "ext" } },
        },
      });
      await plane.core.createNamespacedSecret({
        namespace,
        body: { metadata: { name: "m-0-bootstrap" }, stringData: { value: "#cloud-config\n" } },
      });
      const machine = (await plane.custom.createNamespacedCustomObject({
        ...capi,
        plural: "machines",
        body: {
          apiVersion: "cluster.x-k8s.io/v1beta2",
          kind: "Machine",
          metadata: { name: "m-0", labels: { "cluster.x-k8s.io/cluster-name": "ext" } },
          spec: {
            clusterName: "ext",
            bootstrap: { dataSecretName: "m-0-bootstrap" },
            infrastructureRef: { apiGroup: "infrastructure.cluster.x-k8s.io", kind: "TerraformMachine", name: "m-0" },
          },
        },
      })) as { metadata: { uid: string } };
      await plane.custom.createNamespacedCustomObject({
        group: "infrastructure.cluster.x-k8s.io",
        version: "v1alpha1",
        namespace,
        plural: "terraformmachines",
        body: {
          apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
          kind: "TerraformMachine",
          metadata: {
            name: "m-0",
            ownerReferences: [
              { apiVersion: "cluster.x-k8s.io/v1beta2", kind: "Machine", name: "m-0", uid: machine.metadata.uid, controller: true },
            ],
          },
          spec: { source: { image } },
        },
      });
    }, 240_000);

    afterAll(async () => {
      await kubelet?.stop();
      await registry?.stop();
      rmSync(work, { recursive: true, force: true });
    }, 60_000);

    it("provisions the machine from the real Job, pod and termination message", async () => {
      let object = {} as ReadBack<TerraformMachine>;
      for (let pass = 0; pass < 12 && !object.status?.initialization?.provisioned; pass++) {
        await reconcileWorkspace(deps, machineAdapter, namespace, "m-0");
        await allJobsFinished(plane.batch, namespace);
        object = (await plane.custom.getNamespacedCustomObject({
          group: "infrastructure.cluster.x-k8s.io",
          version: "v1alpha1",
          namespace,
          plural: "terraformmachines",
          name: "m-0",
        })) as ReadBack<TerraformMachine>;
      }
      expect(object.status?.initialization).toEqual({ provisioned: true });
      expect(object.spec.providerID).toBe(`noop:///${namespace}/m-0`);
      const jobs = (await plane.batch.listNamespacedJob({ namespace })).items as k8s.V1Job[];
      expect(jobs).toHaveLength(1);
      const pods = await plane.core.listNamespacedPod({ namespace, labelSelector: `job-name=${jobs[0]!.metadata!.name}` });
      const message = pods.items[0]?.status?.containerStatuses?.find((status) => status.name === "source")?.state?.terminated?.message;
      expect(parseRunResult(message)).toMatchObject({ ok: true, result: { op: "apply", error: null } });
    }, 240_000);
  },
);
