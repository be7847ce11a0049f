// The real API server prepared for reconciler tests: captf's CRDs and the real Cluster API CRDs.
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { clusterApiCrdPaths, sharedControlPlane, waitFor } from "@captf/testkit";
import { noopModuleDirectory } from "@captf/module-noop";
import { installCrds } from "../api/crds.test-support.js";
import { kubeEventRecorder } from "../events/event-recorder.js";
import { KubeClient } from "../runtime/kube-client.js";
import type { Role } from "@captf/contract";
import { reconcileWorkspace, type KindAdapter, type PassResult, type ReconcilerDeps } from "./workspace-reconciler.js";

export interface PlaneClients {
  kubeconfigPath: string;
  /** The manager's client: what reconciler deps take. */
  client: KubeClient;
  // client-node's typed APIs, for the suites' own fixtures and checks.
  core: k8s.CoreV1Api;
  batch: k8s.BatchV1Api;
  custom: k8s.CustomObjectsApi;
  coordination: k8s.CoordinationV1Api;
}

/** Clients of the shared plane, with every CRD installed and established, and a fresh namespace. */
export async function preparePlane(namespace: string): Promise<PlaneClients> {
  const plane = sharedControlPlane();
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(plane.kubeconfigPath);
  const extensions = kc.makeApiClient(k8s.ApiextensionsV1Api);
  await installCrds(extensions);
  for (const path of clusterApiCrdPaths()) {
    const body = k8s.loadYaml<k8s.V1CustomResourceDefinition>(readFileSync(path, "utf8"));
    await extensions
      .createCustomResourceDefinition({ body })
      .catch((error) => ((error as { code?: number }).code === 409 ? undefined : Promise.reject(error)));
    await waitFor(async () =>
      (await extensions.readCustomResourceDefinition({ name: body.metadata!.name! })).status?.conditions?.some(
        (c) => c.type === "Established" && c.status === "True",
      )
        ? true
        : undefined,
    );
  }
  // A fresh API server answers the first list of a kind with 429 "storage is (re)initializing": each kind is listed once it answers.
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  for (const crd of (await extensions.listCustomResourceDefinition()).items) {
    const version = crd.spec.versions.find((v) => v.storage)!.name;
    const list = { group: crd.spec.group, version, plural: crd.spec.names.plural, limit: 1 };
    await waitFor(
      () =>
        custom.listClusterCustomObject(list).then(
          () => true,
          (error) => ((error as { code?: number }).code === 429 ? undefined : Promise.reject(error)),
        ),
      60_000,
      `a list of ${crd.metadata!.name}`,
    );
  }
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  return {
    kubeconfigPath: plane.kubeconfigPath,
    client: new KubeClient(kc),
    core,
    batch: kc.makeApiClient(k8s.BatchV1Api),
    custom: kc.makeApiClient(k8s.CustomObjectsApi),
    coordination: kc.makeApiClient(k8s.CoordinationV1Api),
  };
}

/**
 * Waits until every Job of the namespace finished; with `executor`, running each Pod as it appears (kube-controller-manager may create it
 * after the Job).
 */
export async function allJobsFinished(
  batch: k8s.BatchV1Api,
  namespace: string,
  executor?: { runPending(): Promise<number> },
): Promise<void> {
  await waitFor(
    async () => {
      await executor?.runPending();
      const jobs = (await batch.listNamespacedJob({ namespace })).items;
      return jobs.every((job) => job.status?.conditions?.some((c) => (c.type === "Complete" || c.type === "Failed") && c.status === "True"))
        ? true
        : undefined;
      // kube-controller-manager marks Jobs finished within seconds on a quiet machine; a loaded one took over a minute.
    },
    180_000,
    `every Job in ${namespace} finished`,
  );
}

/** Reconciler dependencies on the plane's clients, with events recorded under `instance`; and the events API to read them. */
export function planeReconcilerDeps(plane: PlaneClients, instance: string): { deps: ReconcilerDeps; eventsApi: k8s.EventsV1Api } {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(plane.kubeconfigPath);
  const eventsApi = kc.makeApiClient(k8s.EventsV1Api);
  return { eventsApi, deps: { client: plane.client, events: kubeEventRecorder(plane.client, { instance }) } };
}

/**
 * Reconciler deps on the plane whose pass clock a test can move forward, with its events API, and one pass of an object:
 * `pass(adapter, name, ahead)` runs as if `ahead` ms later (a requeue's or a timeout's time come).
 */
export function skewablePasses(plane: PlaneClients, namespace: string, instance: string) {
  let skew = 0;
  const { deps: planeDeps, eventsApi } = planeReconcilerDeps(plane, instance);
  const deps: ReconcilerDeps = { ...planeDeps, now: () => Date.now() + skew };
  const pass = async <R extends Role>(adapter: KindAdapter<R>, name: string, ahead = 0): Promise<PassResult> => {
    skew = ahead;
    try {
      return await reconcileWorkspace(deps, adapter, namespace, name);
    } finally {
      skew = 0;
    }
  };
  return { deps, eventsApi, pass };
}

/** The manager's events about `name`, once `enough` holds for them (events are recorded in the background). */
export function managerEventsOnce(
  eventsApi: k8s.EventsV1Api,
  namespace: string,
  name: string,
  enough: (events: k8s.EventsV1Event[]) => boolean,
  what: string,
): Promise<k8s.EventsV1Event[]> {
  return waitFor(
    async () => {
      const events = (await eventsApi.listNamespacedEvent({ namespace })).items.filter(
        (event) => event.regarding?.name === name && event.reportingController === "captf-manager",
      );
      return enough(events) ? events : undefined;
    },
    30_000,
    what,
  );
}

/** A client-node call's options for a JSON merge patch (client-node's default patch is a JSON patch). */
export function mergePatchOptions() {
  return k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch);
}

/** A copy of the no-op cluster module with extra files (name to content), for tests that change a module; remove it after. */
export function extendedClusterModule(prefix: string, files: Record<string, string>): string {
  const directory = mkdtempSync(join(tmpdir(), prefix));
  cpSync(noopModuleDirectory("cluster"), directory, { recursive: true });
  for (const [file, content] of Object.entries(files)) writeFileSync(join(directory, file), content);
  return directory;
}

/** A Cluster API Cluster and its TerraformCluster of the same name, owned by it, with the given spec. */
export async function createTerraformCluster(
  plane: PlaneClients,
  namespace: string,
  name: string,
  spec: Record<string, unknown>,
): Promise<void> {
  const cluster = (await plane.custom.createNamespacedCustomObject({
    group: "cluster.x-k8s.io",
    version: "v1beta2",
    namespace,
    plural: "clusters",
    body: {
      apiVersion: "cluster.x-k8s.io/v1beta2",
      kind: "Cluster",
      metadata: { name },
      spec: { infrastructureRef: { apiGroup: "infrastructure.cluster.x-k8s.io", kind: "TerraformCluster", name } },
    },
  })) as { metadata: { uid: string } };
  await plane.custom.createNamespacedCustomObject({
    group: "infrastructure.cluster.x-k8s.io",
    version: "v1alpha1",
    namespace,
    plural: "terraformclusters",
    body: {
      apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
      kind: "TerraformCluster",
      metadata: {
        name,
        labels: { "cluster.x-k8s.io/cluster-name": name },
        ownerReferences: [{ apiVersion: "cluster.x-k8s.io/v1beta2", kind: "Cluster", name, uid: cluster.metadata.uid }],
      },
      spec: { identityRef: { name: "id" }, ...spec },
    },
  });
}
