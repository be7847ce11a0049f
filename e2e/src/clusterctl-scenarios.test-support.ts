// The clusterctl scenarios of the e2e suite (e2e.test.ts registers them on its plane): every
// flavor through `clusterctl generate cluster`, the no-op and ClusterClass flavors brought to
// Ready, and `clusterctl move` to a second management plane, idle and while a captf Job runs.
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { afterAll, expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { waitFor } from "@captf/testkit";
import { pushImage } from "@captf/testkit/plane";
import { annotations } from "@captf/contract/api";
import { applyObjects, describeObject, errorText, makeApplier } from "./apply.js";
import { managerNamespace, moduleTag } from "./captf-install.js";
import { clusterctl, startClusterctl, startMoveTarget, type MoveTarget } from "./clusterctl.js";
import type { ManagementPlane } from "./management-plane.js";
import { formatProgress, listCaptfJobs, readProgress } from "./progress.js";

type AnyObject = Record<string, any>;

const kubernetesVersion = "v1.36.3";
const capiApi = { group: "cluster.x-k8s.io", version: "v1beta2" };
const infraApi = { group: "infrastructure.cluster.x-k8s.io", version: "v1alpha1" };
const infraPlurals = ["terraformclusters", "terraformmachines", "terraformmachinepools"] as const;
const capiPlurals = ["clusters", "machinedeployments", "machinesets", "machines", "machinepools"] as const;
const stateSelector = "tfstateSecretSuffix";
const opLabel = "captf.infrastructure.cluster.x-k8s.io/op";
const scenarioTimeout = 600_000;
const mergePatch = k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch);

/** The state's lineage and serial, from a kubernetes-backend Secret's data (gzip, base64). */
function decodedState(tfstate: string): { lineage: string; serial: number } {
  const { lineage, serial } = JSON.parse(gunzipSync(Buffer.from(tfstate, "base64")).toString()) as { lineage: string; serial: number };
  return { lineage, serial };
}

/** Everything of one namespace clusterctl move carries: the objects by kind and name (spec and status) and the state Secrets' data. */
async function snapshot(kubeConfig: k8s.KubeConfig, namespace: string) {
  const custom = kubeConfig.makeApiClient(k8s.CustomObjectsApi);
  const objects: Record<string, { spec: AnyObject; status?: AnyObject; annotations: Record<string, string> }> = {};
  for (const [api, plurals] of [[infraApi, infraPlurals], [capiApi, capiPlurals]] as const) {
    for (const plural of plurals) {
      // A plane whose CRDs clusterctl just made answers 429 "storage is (re)initializing" for a moment.
      const listed = await waitFor(async () => ((await custom.listNamespacedCustomObject({ ...api, namespace, plural }).catch((error: { code?: number }) => (error.code === 429 ? undefined : Promise.reject(error)))) as { items: AnyObject[] } | undefined), 30_000, `listing ${plural}`);
      for (const object of listed.items) {
        objects[`${object.kind}/${object.metadata.name}`] = { spec: object.spec, status: object.status, annotations: object.metadata.annotations ?? {} };
      }
    }
  }
  const states = Object.fromEntries(
    (await kubeConfig.makeApiClient(k8s.CoreV1Api).listNamespacedSecret({ namespace, labelSelector: stateSelector })).items.map((secret) => [secret.metadata!.name!, secret.data!.tfstate!]),
  );
  return { objects, states };
}

export function clusterctlScenarios(context: () => { plane: ManagementPlane; planeLog: string[] }): void {
  // Two clusters of the default flavor, each in a namespace of its own: one moved idle, one moved while a Job runs.
  const idle = { namespace: "move-idle", cluster: "idle" };
  const busy = { namespace: "move-busy", cluster: "busy" };
  const flavorsNamespace = "clusterctl-flavors";
  // A cluster of the ClusterClass flavor, brought to Ready and deleted.
  const ofClass = { namespace: "clusterclass-ready", cluster: "of-class" };
  let target: MoveTarget | undefined;
  const plane = () => context().plane;
  const progressTable = async (at: { namespace: string; cluster: string }) => formatProgress((await readProgress(plane().kubeConfig, at.namespace, at.cluster)).rows);
  const waitReady = async (at: { namespace: string; cluster: string }) => {
    await waitFor(async () => ((await readProgress(plane().kubeConfig, at.namespace, at.cluster)).ready ? true : undefined), 300_000, `${at.namespace}/${at.cluster} Ready`).catch(async (error) => {
      throw new Error(`${(error as Error).message}\nnow:\n${await progressTable(at)}\nplane:\n${context().planeLog.slice(-30).join("\n")}\nmanager:\n${(await plane().managerLog()).split("\n").slice(-30).join("\n")}`);
    });
  };
  const registry = () => plane().images.modules.cluster.slice(0, plane().images.modules.cluster.indexOf("/"));
  const generate = async (flavor: string, name: string, targetNamespace: string, env: Record<string, string>, workers = 1) => {
    const run = await clusterctl(plane().clusterctlRepository, plane().kubeconfigPath, ["generate", "cluster", name, "--target-namespace", targetNamespace, "--kubernetes-version", kubernetesVersion, "--worker-machine-count", String(workers), ...(flavor ? ["--flavor", flavor] : [])], env);
    return k8s.loadAllYaml(run.stdout).filter(Boolean) as k8s.KubernetesObject[];
  };
  // The identity the generated clusters run under: a credential the no-op modules never read, usable from the e2e's namespaces.
  const identityName = "clusterctl-e2e";
  const applyIdentity = () =>
    applyObjects(plane().applier, [
      { apiVersion: "v1", kind: "Secret", metadata: { name: identityName, namespace: managerNamespace }, stringData: { NOOP_API_TOKEN: "unused" } } as k8s.KubernetesObject,
      { apiVersion: `${infraApi.group}/${infraApi.version}`, kind: "TerraformClusterIdentity", metadata: { name: identityName }, spec: { secretRef: { name: identityName, namespace: managerNamespace }, requiredKeys: ["NOOP_API_TOKEN"], allowedNamespaces: { list: [idle.namespace, busy.namespace, flavorsNamespace, ofClass.namespace] } } } as k8s.KubernetesObject,
    ]);
  const move = (namespace: string) => startClusterctl(plane().clusterctlRepository, plane().kubeconfigPath, ["move", "--namespace", namespace, `--to-kubeconfig=${target!.kubeconfigPath}`]);

  afterAll(async () => {
    await target?.stop();
  }, 120_000);

  it("generates the cloud and ClusterClass flavors with clusterctl, and the API server accepts them (a server-side dry run of the clusters)", async () => {
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
          // A ClusterClass and its templates are inert: they are created, so that the API server judges the Cluster of the class against them.
          const inert = flavor === "clusterclass" && object.kind !== "Cluster";
          await (inert ? plane().applier.apply(object) : api.create(object, undefined, "All"));
          accepted[flavor].push(object.kind!);
        } catch (error) {
          throw new Error(`${flavor}: ${describeObject(object)} refused: ${errorText(error)}`);
        }
      }
      accepted[flavor].sort();
      const pool = objects.find((object) => object.kind === "TerraformMachinePool") as AnyObject | undefined;
      if (flavor === "gcp-machinepool") expect(pool?.spec).toMatchObject({ source: { image: `${registry()}/gcp-machinepool:v0.1.0-opentofu` }, variables: { image: env.GCP_NODE_IMAGE, machine_type: "n2-standard-4" } });
      if (flavor === "azure-machinepool") expect(pool?.spec).toMatchObject({ source: { image: `${registry()}/azure-machinepool:v0.1.0-opentofu` }, variables: { image_id: env.AZURE_NODE_IMAGE_ID, vm_size: "Standard_D4s_v5" } });
    }
    const cloud = ["Cluster", "KubeadmConfig", "KubeadmControlPlane", "MachinePool", "TerraformCluster", "TerraformMachinePool", "TerraformMachineTemplate"];
    expect(accepted).toEqual({
      "gcp-machinepool": cloud,
      "azure-machinepool": cloud,
      clusterclass: ["Cluster", "ClusterClass", "KubeadmConfigTemplate", "KubeadmControlPlaneTemplate", "TerraformClusterTemplate", "TerraformMachinePoolTemplate", "TerraformMachineTemplate", "TerraformMachineTemplate"],
    });
  }, scenarioTimeout);

  it("brings clusters of the default (no-op) flavor from clusterctl generate to Ready, and clusterctl describe shows them Ready", async () => {
    await applyIdentity();
    // The busy cluster has no workers: its pool's Job is all the held move needs.
    for (const [at, workers] of [[idle, 1], [busy, 0]] as const) {
      await applyObjects(plane().applier, [{ apiVersion: "v1", kind: "Namespace", metadata: { name: at.namespace } }]);
      await applyObjects(plane().applier, await generate("", at.cluster, at.namespace, { CAPTF_MODULE_REGISTRY: registry(), CAPTF_IDENTITY_NAME: identityName }, workers));
    }
    await waitReady(idle);
    await waitReady(busy);
    const described = (await clusterctl(plane().clusterctlRepository, plane().kubeconfigPath, ["describe", "cluster", idle.cluster, "--namespace", idle.namespace, "--grouping=false"])).stdout;
    context().planeLog.push(`clusterctl describe cluster:\n${described}`);
    const line = (name: string) => described.split("\n").find((candidate) => candidate.includes(name)) ?? "";
    for (const name of [`Cluster ${idle.namespace}/${idle.cluster}`, `TerraformCluster ${idle.namespace}/${idle.cluster}`, `MachineDeployment ${idle.namespace}/${idle.cluster}-md-0`, `Machine ${idle.namespace}/${idle.cluster}-md-0-`]) {
      expect({ name, line: line(name) }).toEqual({ name, line: expect.stringMatching(/\sTrue\s/) });
    }
    expect(line(`MachinePool ${idle.namespace}/${idle.cluster}-mp-0`)).not.toBe("");
  }, scenarioTimeout);

  it("brings a cluster of the ClusterClass flavor from clusterctl generate to Ready through Cluster API's topology controller, and deletes it", async () => {
    await applyIdentity();
    await applyObjects(plane().applier, [{ apiVersion: "v1", kind: "Namespace", metadata: { name: ofClass.namespace } }]);
    const objects = await generate("clusterclass", ofClass.cluster, ofClass.namespace, { CAPTF_MODULE_REGISTRY: registry(), CAPTF_IDENTITY_NAME: identityName });
    expect(objects.map((object) => object.kind).sort()).toEqual(["Cluster", "ClusterClass", "KubeadmConfigTemplate", "KubeadmControlPlaneTemplate", "TerraformClusterTemplate", "TerraformMachinePoolTemplate", "TerraformMachineTemplate", "TerraformMachineTemplate"]);
    // The class, its templates and the Cluster at once, as a user applies the generated file.
    await applyObjects(plane().applier, objects);
    await waitReady(ofClass);

    // Every object of the cluster is the topology controller's, made from the class's templates.
    const custom = plane().kubeConfig.makeApiClient(k8s.CustomObjectsApi);
    const cluster = (await custom.getNamespacedCustomObject({ ...capiApi, namespace: ofClass.namespace, plural: "clusters", name: ofClass.cluster })) as AnyObject;
    expect(cluster.status.conditions.find((condition: AnyObject) => condition.type === "TopologyReconciled")).toMatchObject({ status: "True" });
    const owned = async (api: { group: string; version: string }, plural: string) =>
      ((await custom.listNamespacedCustomObject({ ...api, namespace: ofClass.namespace, plural, labelSelector: `cluster.x-k8s.io/cluster-name=${ofClass.cluster},topology.cluster.x-k8s.io/owned` })) as { items: AnyObject[] }).items;
    expect((await owned(infraApi, "terraformclusters")).map((object) => object.metadata.annotations?.["cluster.x-k8s.io/cloned-from-name"])).toEqual(["captf-noop"]);
    expect((await owned(capiApi, "machinedeployments")).map((object) => object.metadata.labels["topology.cluster.x-k8s.io/deployment-name"])).toEqual(["md-0"]);
    expect((await owned(capiApi, "machinepools")).map((object) => object.metadata.labels["topology.cluster.x-k8s.io/pool-name"])).toEqual(["mp-0"]);
    const [machinesOfClass, poolsOfClass] = await Promise.all([custom.listNamespacedCustomObject({ ...infraApi, namespace: ofClass.namespace, plural: "terraformmachines" }), custom.listNamespacedCustomObject({ ...infraApi, namespace: ofClass.namespace, plural: "terraformmachinepools" })]);
    expect([(machinesOfClass as { items: AnyObject[] }).items.length, (poolsOfClass as { items: AnyObject[] }).items.length]).toEqual([1, 1]);

    // Deleting the Cluster takes the topology's objects with it, captf's destroyed by their Jobs.
    await custom.deleteNamespacedCustomObject({ ...capiApi, namespace: ofClass.namespace, plural: "clusters", name: ofClass.cluster });
    const remaining = async () => Object.keys((await snapshot(plane().kubeConfig, ofClass.namespace)).objects);
    await waitFor(async () => ((await remaining()).length === 0 ? true : undefined), 300_000, `the ClusterClass cluster's objects gone`).catch(async (error) => {
      throw new Error(`${(error as Error).message}\nleft: ${(await remaining()).join(", ")}\nmanager:\n${(await plane().managerLog()).split("\n").slice(-30).join("\n")}`);
    });
    // Each captf object was destroyed by its Job before its finalizer went (its Jobs went with it).
    const destroyed = (await plane().kubeConfig.makeApiClient(k8s.CoreV1Api).listNamespacedEvent({ namespace: ofClass.namespace })).items.filter((event) => event.reason === "Destroyed");
    expect(destroyed.map((event) => event.involvedObject.kind).sort()).toEqual(["TerraformCluster", "TerraformMachine", "TerraformMachinePool"]);
  }, scenarioTimeout);

  it("moves an idle cluster to a second management plane: every object and its state arrive, nothing is destroyed", async () => {
    target = await startMoveTarget(plane().clusterctlRepository, plane().images.manager, plane().install.objects.filter((object) => object.kind!.endsWith("WebhookConfiguration")));
    const before = await snapshot(plane().kubeConfig, idle.namespace);
    expect(Object.keys(before.states)).toHaveLength(3);
    const run = move(idle.namespace);
    await run.done;
    context().planeLog.push(`clusterctl move:\n${run.output()}`);

    const arrived = await snapshot(target.kubeConfig, idle.namespace);
    expect(Object.keys(arrived.objects).sort()).toEqual(Object.keys(before.objects).sort());
    for (const [key, object] of Object.entries(before.objects)) {
      if (key.startsWith("Terraform")) expect({ key, spec: arrived.objects[key]!.spec, status: arrived.objects[key]!.status }).toEqual({ key, spec: object.spec, status: undefined });
    }
    // Each state arrives whole: the same lineage, at the serial it had (or a later one, when the pool's periodic refresh ran first and held the move).
    expect(Object.keys(arrived.states).sort()).toEqual(Object.keys(before.states).sort());
    for (const [name, tfstate] of Object.entries(before.states)) {
      const moved = decodedState(arrived.states[name]!);
      expect(moved.lineage).toBe(decodedState(tfstate).lineage);
      expect(moved.serial).toBeGreaterThanOrEqual(decodedState(tfstate).serial);
    }
    expect(arrived.objects[`Cluster/${idle.cluster}`]!.spec.paused ?? false).toBe(false);

    expect(await snapshot(plane().kubeConfig, idle.namespace)).toEqual({ objects: {}, states: {} });
    const destroyed = (await plane().kubeConfig.makeApiClient(k8s.CoreV1Api).listNamespacedEvent({ namespace: idle.namespace })).items.filter((event) => event.reason === "Destroyed");
    expect(destroyed.map((event) => event.message)).toEqual([]);
    const destroyJobs = (await listCaptfJobs(plane().kubeConfig, idle.namespace)).filter((job) => job.metadata!.labels![opLabel] === "destroy");
    expect(destroyJobs).toEqual([]);
  }, scenarioTimeout);

  it("holds a move while a captf Job runs (block-move), and completes it with the Job's result once it ends", async () => {
    const custom = plane().kubeConfig.makeApiClient(k8s.CustomObjectsApi);
    const poolName = `${busy.cluster}-mp-0`;
    const poolState = async () => Object.entries((await snapshot(plane().kubeConfig, busy.namespace)).states).find(([name]) => name.endsWith("-mp"))![1];
    const serialBefore = decodedState(await poolState()).serial;
    // A module image not in the registry yet: the pool's apply Job waits in its image pull, holding block-move, until the e2e pushes it.
    const heldImage = `${registry()}/captf/noop-machinepool:move-hold`;
    await custom.patchNamespacedCustomObject({ ...infraApi, namespace: busy.namespace, plural: "terraformmachinepools", name: poolName, body: { spec: { source: { image: heldImage } } } }, mergePatch);
    await waitFor(async () => {
      const pool = (await custom.getNamespacedCustomObject({ ...infraApi, namespace: busy.namespace, plural: "terraformmachinepools", name: poolName })) as AnyObject;
      return pool.metadata.annotations?.[annotations.blockMove] !== undefined && pool.status?.activeJob?.operation === "apply" ? true : undefined;
    }, 120_000, `the pool's apply Job running, block-move set\n${await progressTable(busy)}`);

    const run = move(busy.namespace);
    await waitFor(async () => (run.output().includes("Move blocked by clusterctl.cluster.x-k8s.io/block-move annotation") ? true : undefined), 120_000, "clusterctl move waiting on block-move").catch((error) => {
      throw new Error(`${(error as Error).message}\n${run.output()}`);
    });
    // Held: nothing has reached the target yet.
    expect((await snapshot(target!.kubeConfig, busy.namespace)).objects).toEqual({});
    pushImage(join(plane().workDir, "oci"), `machinepool-${moduleTag}`, heldImage);
    await run.done;
    context().planeLog.push(`clusterctl move (held):\n${run.output()}`);

    const arrived = await snapshot(target!.kubeConfig, busy.namespace);
    const pool = arrived.objects[`TerraformMachinePool/${poolName}`]!;
    expect(pool.spec.source.image).toBe(heldImage);
    expect(pool.annotations[annotations.blockMove]).toBeUndefined();
    const state = Object.entries(arrived.states).find(([name]) => name.endsWith("-mp"))!;
    expect(decodedState(state[1]).serial).toBeGreaterThan(serialBefore);
    expect(await snapshot(plane().kubeConfig, busy.namespace)).toEqual({ objects: {}, states: {} });
  }, scenarioTimeout);
}
