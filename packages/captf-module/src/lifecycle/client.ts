// What `captf-module test` needs of Kubernetes, as an interface the driver is given: five verbs on any kind, and a
// clock. The command passes the real ones (client-node over a kubeconfig); the unit tests a fake cluster and clock.
import * as k8s from "@kubernetes/client-node";

export interface ObjectRef {
  readonly apiVersion: string;
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
}

export interface Condition {
  readonly type: string;
  readonly status: string;
  readonly reason?: string;
  readonly message?: string;
  /** The generation the manager computed the condition for. */
  readonly observedGeneration?: number;
}

/** An object as the API server returns it; only the fields the lifecycle reads are typed. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    generation?: number;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    deletionTimestamp?: string;
  };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown> & { conditions?: Condition[] };
  [field: string]: unknown;
}

export interface LifecycleClient {
  /** The object, or undefined when it does not exist. */
  get(ref: ObjectRef): Promise<KubeObject | undefined>;
  list(apiVersion: string, kind: string, namespace: string, labelSelector?: string): Promise<KubeObject[]>;
  create(object: KubeObject): Promise<void>;
  /** A JSON merge patch (RFC 7386): null removes a field. */
  patch(ref: ObjectRef, patch: Record<string, unknown>): Promise<void>;
  /** Deletes the object (foreground for nothing: Kubernetes' default); absent is not an error. */
  delete(ref: ObjectRef): Promise<void>;
}

export interface Clock {
  /** Milliseconds, as Date.now(). */
  now(): number;
  sleep(ms: number): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

function header(ref: ObjectRef): { apiVersion: string; kind: string; metadata: { name: string; namespace: string } } {
  return { apiVersion: ref.apiVersion, kind: ref.kind, metadata: { name: ref.name, namespace: ref.namespace } };
}

function isNotFound(error: unknown): boolean {
  return error instanceof k8s.ApiException && error.code === 404;
}

/** The API server's message of a failed call, else the error's. */
export function apiMessage(error: unknown): string {
  if (error instanceof k8s.ApiException) {
    try {
      const body = (typeof error.body === "string" ? JSON.parse(error.body) : error.body) as { message?: unknown } | undefined;
      if (typeof body?.message === "string" && body.message) return `${body.message} (HTTP ${error.code})`;
    } catch {
      // fall through
    }
    return `HTTP ${error.code}`;
  }
  return error instanceof Error ? error.message : String(error);
}

/** The client over a kubeconfig file (its current context, or `context`). */
export function kubernetesClient(kubeconfig: string, context?: string): LifecycleClient {
  const config = new k8s.KubeConfig();
  config.loadFromFile(kubeconfig);
  if (context) config.setCurrentContext(context);
  const api = k8s.KubernetesObjectApi.makeApiClient(config);
  const call = async <T>(what: string, run: () => Promise<T>): Promise<T> => {
    try {
      return await run();
    } catch (error) {
      throw new Error(`${what}: ${apiMessage(error)}`, { cause: error });
    }
  };
  return {
    async get(ref) {
      try {
        return (await api.read(header(ref))) as unknown as KubeObject;
      } catch (error) {
        if (isNotFound(error)) return undefined;
        throw new Error(`reading ${ref.kind} ${ref.namespace}/${ref.name}: ${apiMessage(error)}`, { cause: error });
      }
    },
    async list(apiVersion, kind, namespace, labelSelector) {
      const list = await call(`listing ${kind} in ${namespace}`, () =>
        api.list(apiVersion, kind, namespace, undefined, undefined, undefined, undefined, labelSelector),
      );
      return list.items as unknown as KubeObject[];
    },
    async create(object) {
      await call(`creating ${object.kind} ${object.metadata.name}`, () => api.create(object as k8s.KubernetesObject));
    },
    async patch(ref, patch) {
      const metadata = { ...(patch.metadata as Record<string, unknown> | undefined), name: ref.name, namespace: ref.namespace };
      const body = { ...patch, apiVersion: ref.apiVersion, kind: ref.kind, metadata } as k8s.KubernetesObject;
      await call(`patching ${ref.kind} ${ref.name}`, () =>
        api.patch(body, undefined, undefined, "captf-module", undefined, k8s.PatchStrategy.MergePatch),
      );
    },
    async delete(ref) {
      try {
        await api.delete(header(ref));
      } catch (error) {
        if (!isNotFound(error)) throw new Error(`deleting ${ref.kind} ${ref.name}: ${apiMessage(error)}`, { cause: error });
      }
    },
  };
}
