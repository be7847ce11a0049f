import { readFileSync, rmSync } from "node:fs";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import type * as k8s from "@kubernetes/client-node";
import { describeWithTools } from "@captf/testkit";
import { clusterAdapter } from "../kinds/adapters.js";
import { startJobExecutor, type JobExecutor } from "./job-executor.test-support.js";
import {
  allJobsFinished,
  createTerraformCluster,
  extendedClusterModule,
  planeReconcilerDeps,
  preparePlane,
  type PlaneClients,
} from "./plane.test-support.js";
import { reconcileWorkspace, type ReconcilerDeps } from "./workspace-reconciler.js";

const image = "registry.invalid/captf/error-cluster:v0.1.0";
// The runner's error module (a precondition whose message prints both values, wrapped by OpenTofu), under the no-op cluster module's
// contract.
const errorModule = readFileSync(new URL("../../../runner/src/testdata/error-module/main.tf", import.meta.url), "utf8");
const canaries = { credential: "cred-canary-5c0f2e8a9d1b7364", passphrase: 'lilac-0b7e basalt-62fd "comet-9e14" ferry-d3a8' };
const forbidden = [canaries.credential, ...canaries.passphrase.split(" ").map((word) => word.replace(/"/g, ""))];

// Issue 17's secrets drill through the manager: a TerraformCluster whose sensitive variables (from a
// labelled Secret) appear in its module's error message. Its Job runs the real runner and OpenTofu;
// the values appear in none of the runner's log, the termination message, the events and the status.
describeWithTools(
  ["etcd", "kube-apiserver", "kube-controller-manager", "tofu"],
  "sensitive values in a module's error, through the manager",
  () => {
    const namespace = `secrets-${Date.now().toString(36)}`;
    let plane: PlaneClients;
    let deps: ReconcilerDeps;
    let eventsApi: k8s.EventsV1Api;
    let executor: JobExecutor;
    let moduleDir = "";

    beforeAll(async () => {
      plane = await preparePlane(namespace);
      ({ deps, eventsApi } = planeReconcilerDeps(plane, "secrets-test"));
      moduleDir = extendedClusterModule("captf-error-module-", { "error.tf": errorModule });
      executor = startJobExecutor({ kubeconfigPath: plane.kubeconfigPath, namespace, modules: { [image]: moduleDir } });
    }, 120_000);
    afterAll(() => {
      executor?.close();
      if (moduleDir) rmSync(moduleDir, { recursive: true, force: true });
    });

    it("keeps them out of the runner's log, the termination message, the events and the status", async () => {
      await plane.core.createNamespacedSecret({
        namespace,
        body: { metadata: { name: "api-credentials", labels: { "captf.io/variables": "true" } }, stringData: canaries },
      });
      await createTerraformCluster(plane, namespace, "leaky", {
        source: { image },
        variablesFrom: [{ secretRef: { name: "api-credentials" } }],
        variables: { fail_with: "precondition" },
      });
      const pass = async () => (await reconcileWorkspace(deps, clusterAdapter, namespace, "leaky")).action;
      expect(await pass()).toBe("added finalizer");
      expect(await pass()).toMatch(/^started apply \(NoState\)/);
      await executor.runPending();
      await allJobsFinished(plane.batch, namespace);
      await pass();

      const object = (await plane.custom.getNamespacedCustomObject({
        group: "infrastructure.cluster.x-k8s.io",
        version: "v1alpha1",
        namespace,
        plural: "terraformclusters",
        name: "leaky",
      })) as { status: { lastRun?: { error?: { kind: string; step?: string } } } };
      expect(object.status.lastRun?.error).toMatchObject({ kind: "step", step: "plan" });
      const pods = (await plane.core.listNamespacedPod({ namespace })).items;
      const log = [...executor.logs.values()].join("\n");
      // The runtime printed the message, values replaced.
      expect(log).toContain("rejected the passphrase (sensitive) and the credential");
      const places = {
        log,
        terminationMessage: pods.map((pod) => pod.status?.containerStatuses?.[0]?.state?.terminated?.message ?? "").join("\n"),
        events: JSON.stringify((await eventsApi.listNamespacedEvent({ namespace })).items.map((event) => event.note)),
        status: JSON.stringify(object.status),
      };
      expect(places.terminationMessage).toContain('"kind":"step"');
      for (const [place, text] of Object.entries(places))
        for (const canary of forbidden) expect([place, text.includes(canary)]).toEqual([place, false]);
    }, 120_000);
  },
);
