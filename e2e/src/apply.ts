// Applying YAML as a user does (`kubectl apply --server-side`): the e2e's and the demo's one way to
// create, read and delete objects of any kind.
import { readFileSync } from "node:fs";
import * as k8s from "@kubernetes/client-node";

export interface Applier {
  apply(object: k8s.KubernetesObject): Promise<k8s.KubernetesObject>;
  read(object: k8s.KubernetesObject): Promise<k8s.KubernetesObject>;
  delete(object: k8s.KubernetesObject): Promise<void>;
}

const fieldManager = "captf-e2e";

export function makeApplier(kubeConfig: k8s.KubeConfig): Applier {
  const api = k8s.KubernetesObjectApi.makeApiClient(kubeConfig);
  return {
    apply: (object) => api.patch(object, undefined, undefined, fieldManager, true, k8s.PatchStrategy.ServerSideApply),
    read: (object) =>
      api.read({
        apiVersion: object.apiVersion!,
        kind: object.kind!,
        metadata: { name: object.metadata!.name!, namespace: object.metadata!.namespace },
      }),
    delete: async (object) => {
      await api.delete(object);
    },
  };
}

/** Applies the objects in order (server-side apply), retrying while a just-installed CRD or webhook settles. */
export async function applyObjects(applier: Applier, objects: readonly k8s.KubernetesObject[]): Promise<void> {
  for (const object of objects) {
    for (let attempt = 1; ; attempt++) {
      try {
        await applier.apply(object);
        break;
      } catch (error) {
        if (attempt >= 30) throw new Error(`applying ${describeObject(object)}: ${errorText(error)}`);
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    }
  }
}

/**
 * Deletes, then applies each object: for what another field manager made in a shape a merge cannot change (a webhook's URL
 * beside its Service).
 */
export async function replaceObjects(applier: Applier, objects: readonly k8s.KubernetesObject[]): Promise<void> {
  for (const object of objects) await applier.delete(object).catch(() => undefined);
  await applyObjects(applier, objects);
}

/**
 * The objects of a YAML file with every `${NAME}` (or `${NAME:=default}`) replaced from `variables`,
 * as clusterctl does; a name without a value or default is an error naming the file and the variable.
 */
export function loadManifest(file: string, variables: Readonly<Record<string, string>>): k8s.KubernetesObject[] {
  const text = readFileSync(file, "utf8").replace(/\$\{([A-Z0-9_]+)(?::=([^}]*))?\}/g, (_, name: string, fallback: string | undefined) => {
    const value = variables[name] ?? fallback;
    if (value === undefined) throw new Error(`${file}: no value for \${${name}}`);
    return value;
  });
  return k8s.loadAllYaml(text).filter(Boolean) as k8s.KubernetesObject[];
}

export function describeObject(object: k8s.KubernetesObject): string {
  const namespace = object.metadata?.namespace ? `${object.metadata.namespace}/` : "";
  return `${object.kind}/${namespace}${object.metadata?.name}`;
}

/** The API server's message of a client-node error, else the error's own text. */
export function errorText(error: unknown): string {
  const body = (error as { body?: unknown }).body;
  if (typeof body === "string") {
    try {
      return (JSON.parse(body) as { message?: string }).message ?? body;
    } catch {
      return body;
    }
  }
  return error instanceof Error ? error.message : String(error);
}
