// The real API server prepared for reconciler tests: captf's CRDs and the real Cluster API CRDs.
import { readFileSync } from "node:fs";
import * as k8s from "@kubernetes/client-node";
import { clusterApiCrdPaths, sharedControlPlane, waitFor } from "@captf/testkit";
import { installCrds } from "../api/crds.test-support.js";

export interface PlaneClients {
  kubeconfigPath: string;
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
    await extensions.createCustomResourceDefinition({ body }).catch((error) => ((error as { code?: number }).code === 409 ? undefined : Promise.reject(error)));
    await waitFor(async () => ((await extensions.readCustomResourceDefinition({ name: body.metadata!.name! })).status?.conditions?.some((c) => c.type === "Established" && c.status === "True") ? true : undefined));
  }
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  return { kubeconfigPath: plane.kubeconfigPath, core, batch: kc.makeApiClient(k8s.BatchV1Api), custom: kc.makeApiClient(k8s.CustomObjectsApi), coordination: kc.makeApiClient(k8s.CoordinationV1Api) };
}

export async function allJobsFinished(batch: k8s.BatchV1Api, namespace: string): Promise<void> {
  await waitFor(async () => {
    const jobs = (await batch.listNamespacedJob({ namespace })).items;
    return jobs.every((job) => job.status?.conditions?.some((c) => (c.type === "Complete" || c.type === "Failed") && c.status === "True")) ? true : undefined;
  });
}
