import { afterAll, beforeAll, expect, it } from "@jest/globals";
import type * as k8s from "@kubernetes/client-node";
import { parseRunResult } from "@captf/contract/run-result";
import { describeWithTools } from "@captf/testkit";
import { defaultJobEnvironment } from "../jobs/build-job.js";
import { machineAdapter } from "../kinds/adapters.js";
import { createMachine } from "./machine-fixture.test-support.js";
import { runnerImage, startNoopMachineKubelet, type NoopMachineKubelet } from "./noop-kubelet.test-support.js";
import { allJobsFinished, preparePlane } from "./plane.test-support.js";
import { reconcileWorkspace, type ReconcilerDeps } from "./workspace-reconciler.js";
import type { TerraformMachine } from "../api/terraformmachine.js";
import type { ReadBack } from "./read-back.test-support.js";

// The whole path of one machine with nothing stood in: the reconciler builds the Job, the chroot
// kubelet pulls the no-op module image from a loopback registry, the init container copies the
// runner bundle out of the manager image, the runner applies the module with in-cluster
// credentials, and the reconciler reads the termination message and the state back.
describeWithTools(
  ["etcd", "kube-apiserver", "kube-controller-manager", "tofu", "go", "umoci", "skopeo", "docker-registry"],
  "a TerraformMachine through the chroot kubelet",
  () => {
    const namespace = `kubelet-e2e-${Date.now().toString(36)}`;
    let plane: Awaited<ReturnType<typeof preparePlane>>;
    let kubelet: NoopMachineKubelet;
    let deps: ReconcilerDeps;

    beforeAll(async () => {
      plane = await preparePlane(namespace);
      kubelet = await startNoopMachineKubelet(plane, namespace, "e2e");
      deps = { client: plane.client, jobEnvironment: { ...defaultJobEnvironment, runnerImage } };
      await createMachine(plane, namespace, "m-0", kubelet.image, { clusterSpec: { source: { image: "registry.invalid/unused:v1" } } });
    }, 240_000);

    afterAll(async () => {
      await kubelet?.stop();
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
