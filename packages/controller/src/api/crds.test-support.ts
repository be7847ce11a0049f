// Helpers for suites that run against the testkit's real kube-apiserver: a client, the CRDs
// installed and Established, and the server's own rejection message.
import { readFileSync } from "node:fs";
import { request } from "node:https";
import * as k8s from "@kubernetes/client-node";
import { sharedControlPlane } from "@captf/testkit";
import { apiGroup, apiVersion } from "@captf/contract/api";
import { renderCrdFiles } from "./crds.js";
import { kindDefinitions } from "./kinds.js";

export interface PlaneClients {
  kubeConfig: k8s.KubeConfig;
  core: k8s.CoreV1Api;
  extensions: k8s.ApiextensionsV1Api;
  objects: k8s.CustomObjectsApi;
}

export function planeClients(): PlaneClients {
  const kubeConfig = new k8s.KubeConfig();
  kubeConfig.loadFromFile(sharedControlPlane().kubeconfigPath);
  return {
    kubeConfig,
    core: kubeConfig.makeApiClient(k8s.CoreV1Api),
    extensions: kubeConfig.makeApiClient(k8s.ApiextensionsV1Api),
    objects: kubeConfig.makeApiClient(k8s.CustomObjectsApi),
  };
}

/** Creates or replaces every generated CRD, then waits until each is Established. */
export async function installCrds(extensions: k8s.ApiextensionsV1Api): Promise<void> {
  for (const file of renderCrdFiles()) {
    // Through loadYaml, not a cast: the typed client serializes from its model's property names
    // and silently drops JSON-named keys such as x-kubernetes-validations.
    const body = k8s.loadYaml<k8s.V1CustomResourceDefinition>(file.content);
    const name = body.metadata!.name!;
    try {
      await extensions.createCustomResourceDefinition({ body });
    } catch (error) {
      // Another suite of this run may have installed them already.
      if (!(error instanceof k8s.ApiException) || error.code !== 409) throw error;
      const current = await extensions.readCustomResourceDefinition({ name });
      body.metadata!.resourceVersion = current.metadata!.resourceVersion!;
      await extensions.replaceCustomResourceDefinition({ name, body });
    }
  }
  for (const definition of kindDefinitions) {
    await waitFor(`CRD ${definition.plural} Established`, async () => {
      const crd = await extensions.readCustomResourceDefinition({ name: `${definition.plural}.${apiGroup}` });
      return crd.status?.conditions?.some((condition) => condition.type === "Established" && condition.status === "True")
        ? true
        : undefined;
    });
  }
}

export async function waitFor<T>(what: string, check: () => Promise<T | undefined>, timeoutMillis = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMillis;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMillis / 1000}s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The message of the Status the server answered a rejected write with; fails when the write succeeded. */
export async function rejection(write: Promise<unknown>): Promise<{ code: number; message: string }> {
  try {
    await write;
  } catch (error) {
    if (!(error instanceof k8s.ApiException)) throw error;
    const body: unknown = typeof error.body === "string" ? JSON.parse(error.body) : error.body;
    return { code: error.code, message: String((body as { message?: unknown }).message ?? "") };
  }
  throw new Error("the API server accepted a write it should have rejected");
}

/** Coordinates of a namespaced kind for CustomObjectsApi. */
export function namespaced(plural: string, namespace: string) {
  return { group: apiGroup, version: apiVersion, plural, namespace };
}

/** A meta.k8s.io Table: the parts of it the tests read. */
interface Table {
  columnDefinitions: { name: string }[];
  rows: { cells: unknown[] }[];
}

/** A GET answered as a meta.k8s.io Table, which is what kubectl's printer columns come from. */
export async function getTable(path: string): Promise<Table> {
  const plane = sharedControlPlane();
  const url = new URL(path, plane.server);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        ca: readFileSync(plane.caFile),
        headers: { Authorization: `Bearer ${plane.token}`, Accept: "application/json;as=Table;v=v1;g=meta.k8s.io" },
      },
      (response) => {
        let text = "";
        response.on("data", (chunk: Buffer) => (text += chunk.toString()));
        response.on("end", () =>
          response.statusCode === 200
            ? resolve(JSON.parse(text) as Table)
            : reject(new Error(`GET ${path}: ${response.statusCode} ${text}`)),
        );
      },
    );
    req.on("error", reject);
    req.end();
  });
}

/** A KubeConfig for the shared plane as `user`, impersonated with the admin's token (RBAC decides what it may do). */
export function impersonatingConfig(user: string): k8s.KubeConfig {
  const plane = sharedControlPlane();
  const config = new k8s.KubeConfig();
  config.loadFromOptions({
    clusters: [{ name: "plane", server: plane.server, caFile: plane.caFile }],
    users: [{ name: user, token: plane.token, impersonateUser: user }],
    contexts: [{ name: user, cluster: "plane", user }],
    currentContext: user,
  });
  return config;
}
