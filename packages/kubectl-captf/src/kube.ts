/**
 * The connection, as kubectl makes it: the kubeconfig from --kubeconfig, else $KUBECONFIG (a list,
 * merged, the first file's current context winning), else ~/.kube/config; --context picks a
 * context; the namespace is -n, else the context's, else `default`.
 */
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { UsageError } from "./objects.js";

export interface ConnectionOptions {
  kubeconfig?: string;
  context?: string;
  namespace?: string;
}

export interface Connection {
  kubeConfig: k8s.KubeConfig;
  namespace: string;
  objects: k8s.CustomObjectsApi;
  core: k8s.CoreV1Api;
  batch: k8s.BatchV1Api;
  events: k8s.EventsV1Api;
  authentication: k8s.AuthenticationV1Api;
}

/** The kubeconfig files to read, in kubectl's order of precedence. */
export function kubeconfigFiles(options: ConnectionOptions, env: Readonly<Record<string, string | undefined>>): string[] {
  if (options.kubeconfig) return [options.kubeconfig];
  const listed = (env.KUBECONFIG ?? "").split(delimiter).filter(Boolean);
  if (listed.length > 0) return listed;
  return [join(env.HOME ?? homedir(), ".kube", "config")];
}

export function connect(options: ConnectionOptions, env: Readonly<Record<string, string | undefined>>): Connection {
  const files = kubeconfigFiles(options, env);
  const kubeConfig = new k8s.KubeConfig();
  const present = options.kubeconfig ? files : files.filter((file) => existsSync(file));
  if (present.length === 0) throw new UsageError(`no kubeconfig: ${files.join(", ")} not found; pass --kubeconfig or set KUBECONFIG`);
  for (const [index, file] of present.entries()) {
    if (index === 0) kubeConfig.loadFromFile(file);
    else {
      const next = new k8s.KubeConfig();
      next.loadFromFile(file);
      kubeConfig.mergeConfig(next, true);
    }
  }
  if (options.context) {
    if (!kubeConfig.getContextObject(options.context))
      throw new UsageError(`context ${JSON.stringify(options.context)} is not in ${present.join(", ")}`);
    kubeConfig.setCurrentContext(options.context);
  }
  const namespace = options.namespace || kubeConfig.getContextObject(kubeConfig.getCurrentContext())?.namespace || "default";
  return {
    kubeConfig,
    namespace,
    objects: kubeConfig.makeApiClient(k8s.CustomObjectsApi),
    core: kubeConfig.makeApiClient(k8s.CoreV1Api),
    batch: kubeConfig.makeApiClient(k8s.BatchV1Api),
    events: kubeConfig.makeApiClient(k8s.EventsV1Api),
    authentication: kubeConfig.makeApiClient(k8s.AuthenticationV1Api),
  };
}

/** Whether an API call failed with this HTTP status. */
export function isStatus(error: unknown, code: number): boolean {
  return error instanceof k8s.ApiException && error.code === code;
}

/** A 404 for the object, not for the resource: the API server answers a resource it does not serve with plain text, not a Status. */
export function isObjectNotFound(error: unknown): boolean {
  if (!isStatus(error, 404)) return false;
  try {
    const body: unknown =
      typeof (error as k8s.ApiException<unknown>).body === "string"
        ? JSON.parse((error as k8s.ApiException<string>).body)
        : (error as k8s.ApiException<unknown>).body;
    return (body as { kind?: unknown } | undefined)?.kind === "Status";
  } catch {
    return false;
  }
}

/** The API server's message of a failed call (its Status body), else the error's. */
export function apiMessage(error: unknown): string {
  if (error instanceof k8s.ApiException) {
    try {
      const body: unknown = typeof error.body === "string" ? JSON.parse(error.body) : error.body;
      const message = (body as { message?: unknown } | undefined)?.message;
      if (typeof message === "string" && message) return `${message} (HTTP ${error.code})`;
    } catch {
      // fall through to the exception's own text
    }
    return error.code === 404
      ? "the API server does not serve captf's kinds (HTTP 404): are captf's CRDs installed?"
      : `HTTP ${error.code}`;
  }
  return error instanceof Error ? error.message : String(error);
}
