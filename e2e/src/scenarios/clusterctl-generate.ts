// clusterctl: `clusterctl generate cluster` writes every flavor and the API server, with Cluster
// API's and captf's webhooks, accepts them; clusters of the default (no-op) flavor and of the
// ClusterClass flavor reach Cluster API's readiness and clusterctl describe shows them Ready. On
// namespaces of their own (clusterctl-clusters.ts); clusterctl-move.ts moves two of these clusters.
import { expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { waitFor } from "@captf/testkit";
import { applyObjects, describeObject, errorText } from "../apply.js";
import { clusterctl } from "../clusterctl.js";
import {
  busy,
  capiApi,
  clusterctlClusters,
  flavorsNamespace,
  idle,
  identityName,
  infraApi,
  ofClass,
  snapshot,
} from "./clusterctl-clusters.js";
import type { Cluster, CustomObjectList, TerraformObject } from "../objects.js";
import { scenarioTimeout, type Scenario } from "./shared-plane.js";

export const clusterctlGenerate: Scenario = (shared) => {
  const { plane, waitReady, registry, generate, applyIdentity } = clusterctlClusters(shared);

  it(
    "generates the cloud and ClusterClass flavors with clusterctl, and the API server accepts them (a server-side dry run of the clusters)",
    async () => {
      await applyIdentity();
      await applyObjects(plane().applier, [{ apiVersion: "v1", kind: "Namespace", metadata: { name: flavorsNamespace } }]);
      const api = k8s.KubernetesObjectApi.makeApiClient(plane().kubeConfig);
      const env = {
        CAPTF_MODULE_REGISTRY: registry(),
        CAPTF_CLUSTER_MODULE_IMAGE: plane().images.modules.cluster,
        CAPTF_CONTROL_PLANE_MODULE_IMAGE: plane().images.modules.machine,
        CAPTF_IDENTITY_NAME: identityName,
        GCP_NODE_IMAGE: "projects/my-images/global/images/capi-ubuntu-2404-{slug}",
        AZURE_NODE_IMAGE_ID: "/communityGalleries/ClusterAPI-f72ceb4f-5159-4c26-a0fe-2ea738f0d019/images/capi-ubun2-2404/versions/{semver}",
      };
      const accepted: Record<string, string[]> = {};
      for (const flavor of ["gcp-machinepool", "azure-machinepool", "clusterclass"]) {
        const objects = await generate(flavor, `f-${flavor.split("-")[0]}`, flavorsNamespace, env);
        accepted[flavor] = [];
        for (const object of objects) {
          try {
            // A ClusterClass and its templates are inert: they are created, so that the API server judges the Cluster of the
            // class against them.
            const inert = flavor === "clusterclass" && object.kind !== "Cluster";
            await (inert ? plane().applier.apply(object) : api.create(object, undefined, "All"));
            accepted[flavor].push(object.kind!);
          } catch (error) {
            throw new Error(`${flavor}: ${describeObject(object)} refused: ${errorText(error)}`);
          }
        }
        accepted[flavor].sort();
        const pool = objects.find((object) => object.kind === "TerraformMachinePool") as TerraformObject | undefined;
        if (flavor === "gcp-machinepool")
          expect(pool?.spec).toMatchObject({
            source: { image: `${registry()}/gcp-machinepool:v0.1.0-opentofu` },
            variables: { image: env.GCP_NODE_IMAGE, machine_type: "n2-standard-4" },
          });
        if (flavor === "azure-machinepool")
          expect(pool?.spec).toMatchObject({
            source: { image: `${registry()}/azure-machinepool:v0.1.0-opentofu` },
            variables: { image_id: env.AZURE_NODE_IMAGE_ID, vm_size: "Standard_D4s_v5" },
          });
      }
      const cloud = [
        "Cluster",
        "KubeadmConfig",
        "KubeadmControlPlane",
        "MachinePool",
        "TerraformCluster",
        "TerraformMachinePool",
        "TerraformMachineTemplate",
      ];
      expect(accepted).toEqual({
        "gcp-machinepool": cloud,
        "azure-machinepool": cloud,
        clusterclass: [
          "Cluster",
          "ClusterClass",
          "KubeadmConfigTemplate",
          "KubeadmControlPlaneTemplate",
          "TerraformClusterTemplate",
          "TerraformMachinePoolTemplate",
          "TerraformMachineTemplate",
          "TerraformMachineTemplate",
        ],
      });
    },
    scenarioTimeout,
  );

  it(
    "brings clusters of the default (no-op) flavor from clusterctl generate to Ready, and clusterctl describe shows them Ready",
    async () => {
      await applyIdentity();
      // The busy cluster has no workers: its pool's Job is all the held move needs.
      for (const [at, workers] of [
        [idle, 1],
        [busy, 0],
      ] as const) {
        await applyObjects(plane().applier, [{ apiVersion: "v1", kind: "Namespace", metadata: { name: at.namespace } }]);
        await applyObjects(
          plane().applier,
          await generate("", at.cluster, at.namespace, { CAPTF_MODULE_REGISTRY: registry(), CAPTF_IDENTITY_NAME: identityName }, workers),
        );
      }
      await waitReady(idle);
      await waitReady(busy);
      const described = (
        await clusterctl(plane().clusterctlRepository, plane().kubeconfigPath, [
          "describe",
          "cluster",
          idle.cluster,
          "--namespace",
          idle.namespace,
          "--grouping=false",
        ])
      ).stdout;
      shared.planeLog.push(`clusterctl describe cluster:\n${described}`);
      const line = (name: string) => described.split("\n").find((candidate) => candidate.includes(name)) ?? "";
      for (const name of [
        `Cluster ${idle.namespace}/${idle.cluster}`,
        `TerraformCluster ${idle.namespace}/${idle.cluster}`,
        `MachineDeployment ${idle.namespace}/${idle.cluster}-md-0`,
        `Machine ${idle.namespace}/${idle.cluster}-md-0-`,
      ]) {
        expect({ name, line: line(name) }).toEqual({ name, line: expect.stringMatching(/\sTrue\s/) });
      }
      expect(line(`MachinePool ${idle.namespace}/${idle.cluster}-mp-0`)).not.toBe("");
    },
    scenarioTimeout,
  );

  it(
    "brings a cluster of the ClusterClass flavor from clusterctl generate to Ready through Cluster API's topology controller, " +
      "and deletes it",
    async () => {
      await applyIdentity();
      await applyObjects(plane().applier, [{ apiVersion: "v1", kind: "Namespace", metadata: { name: ofClass.namespace } }]);
      const objects = await generate("clusterclass", ofClass.cluster, ofClass.namespace, {
        CAPTF_MODULE_REGISTRY: registry(),
        CAPTF_IDENTITY_NAME: identityName,
      });
      expect(objects.map((object) => object.kind).sort()).toEqual([
        "Cluster",
        "ClusterClass",
        "KubeadmConfigTemplate",
        "KubeadmControlPlaneTemplate",
        "TerraformClusterTemplate",
        "TerraformMachinePoolTemplate",
        "TerraformMachineTemplate",
        "TerraformMachineTemplate",
      ]);
      // The class, its templates and the Cluster at once, as a user applies the generated file.
      await applyObjects(plane().applier, objects);
      await waitReady(ofClass);

      // Every object of the cluster is the topology controller's, made from the class's templates.
      const custom = plane().kubeConfig.makeApiClient(k8s.CustomObjectsApi);
      const cluster = (await custom.getNamespacedCustomObject({
        ...capiApi,
        namespace: ofClass.namespace,
        plural: "clusters",
        name: ofClass.cluster,
      })) as Cluster;
      expect(cluster.status!.conditions!.find((condition) => condition.type === "TopologyReconciled")).toMatchObject({
        status: "True",
      });
      const owned = async (api: { group: string; version: string }, plural: string) =>
        (
          (await custom.listNamespacedCustomObject({
            ...api,
            namespace: ofClass.namespace,
            plural,
            labelSelector: `cluster.x-k8s.io/cluster-name=${ofClass.cluster},topology.cluster.x-k8s.io/owned`,
          })) as CustomObjectList
        ).items;
      expect(
        (await owned(infraApi, "terraformclusters")).map((object) => object.metadata.annotations?.["cluster.x-k8s.io/cloned-from-name"]),
      ).toEqual(["captf-noop"]);
      expect(
        (await owned(capiApi, "machinedeployments")).map((object) => object.metadata.labels!["topology.cluster.x-k8s.io/deployment-name"]),
      ).toEqual(["md-0"]);
      expect(
        (await owned(capiApi, "machinepools")).map((object) => object.metadata.labels!["topology.cluster.x-k8s.io/pool-name"]),
      ).toEqual(["mp-0"]);
      const [machinesOfClass, poolsOfClass] = await Promise.all([
        custom.listNamespacedCustomObject({
          ...infraApi,
          namespace: ofClass.namespace,
          plural: "terraformmachines",
        }) as Promise<CustomObjectList>,
        custom.listNamespacedCustomObject({
          ...infraApi,
          namespace: ofClass.namespace,
          plural: "terraformmachinepools",
        }) as Promise<CustomObjectList>,
      ]);
      expect([machinesOfClass.items.length, poolsOfClass.items.length]).toEqual([1, 1]);

      // Deleting the Cluster takes the topology's objects with it, captf's destroyed by their Jobs.
      await custom.deleteNamespacedCustomObject({ ...capiApi, namespace: ofClass.namespace, plural: "clusters", name: ofClass.cluster });
      const remaining = async () => Object.keys((await snapshot(plane().kubeConfig, ofClass.namespace)).objects);
      await waitFor(
        async () => ((await remaining()).length === 0 ? true : undefined),
        300_000,
        `the ClusterClass cluster's objects gone`,
      ).catch(async (error) => {
        throw new Error(
          `${(error as Error).message}\nleft: ${(await remaining()).join(", ")}\n` +
            `manager:\n${(await plane().managerLog()).split("\n").slice(-30).join("\n")}`,
        );
      });
      // Each captf object was destroyed by its Job before its finalizer went (its Jobs went with it).
      const destroyed = (
        await plane().kubeConfig.makeApiClient(k8s.CoreV1Api).listNamespacedEvent({ namespace: ofClass.namespace })
      ).items.filter((event) => event.reason === "Destroyed");
      expect(destroyed.map((event) => event.involvedObject.kind).sort()).toEqual([
        "TerraformCluster",
        "TerraformMachine",
        "TerraformMachinePool",
      ]);
    },
    scenarioTimeout,
  );
};
