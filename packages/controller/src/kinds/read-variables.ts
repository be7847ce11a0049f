import type { V1ConfigMap, V1Secret } from "@kubernetes/client-node";
import type { JsonValue, Role } from "@captf/contract";
import { labels } from "@captf/contract/api";
import { mergeUserVariables, UserVariablesError, type UserVariables, type VariablesSource } from "@captf/render";
import { undefinedIfNotFound } from "../runtime/api-errors.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import type { KubeApi } from "../runtime/kube-client.js";

/**
 * An object's user variables: `spec.variablesFrom` sources read live (only ConfigMaps and Secrets
 * labelled `captf.io/variables=true` count), merged under the inline `spec.variables`.
 */

export interface VariablesFromEntry {
  configMapRef?: { name: string };
  secretRef?: { name: string };
  optional?: boolean;
  format?: "String" | "JSON";
}

export type VariablesReading =
  | { ok: true; variables: UserVariables }
  | { ok: false; reason: "VariablesSourceNotFound" | "VariablesInvalid"; message: string };

async function readSource(client: KubeApi, namespace: string, entry: VariablesFromEntry): Promise<VariablesSource | undefined> {
  if (entry.configMapRef) {
    const map = await undefinedIfNotFound(client.get<V1ConfigMap>(builtinTypes.configMap, namespace, entry.configMapRef.name));
    if (!map || map.metadata?.labels?.[labels.variablesSource] !== "true") return undefined;
    return { kind: "ConfigMap", name: entry.configMapRef.name, format: entry.format ?? "String", data: map.data ?? {} };
  }
  if (entry.secretRef) {
    const secret = await undefinedIfNotFound(client.get<V1Secret>(builtinTypes.secret, namespace, entry.secretRef.name));
    if (!secret || secret.metadata?.labels?.[labels.variablesSource] !== "true") return undefined;
    const data = Object.fromEntries(
      Object.entries(secret.data ?? {}).map(([key, value]) => [key, Buffer.from(value, "base64").toString("utf8")]),
    );
    return { kind: "Secret", name: entry.secretRef.name, format: entry.format ?? "String", data };
  }
  return undefined;
}

export async function readUserVariables(
  client: KubeApi,
  role: Role,
  namespace: string,
  spec: { variables?: Record<string, JsonValue>; variablesFrom?: VariablesFromEntry[] },
): Promise<VariablesReading> {
  const sources: VariablesSource[] = [];
  for (const entry of spec.variablesFrom ?? []) {
    const source = await readSource(client, namespace, entry);
    if (source) sources.push(source);
    else if (!entry.optional) {
      const what = entry.configMapRef ? `ConfigMap ${entry.configMapRef.name}` : `Secret ${entry.secretRef?.name ?? ""}`;
      return {
        ok: false,
        reason: "VariablesSourceNotFound",
        message: `${what} listed in spec.variablesFrom does not exist or is not labelled ${labels.variablesSource}=true`,
      };
    }
  }
  try {
    return { ok: true, variables: mergeUserVariables(role, spec.variables, sources) };
  } catch (error) {
    if (error instanceof UserVariablesError) return { ok: false, reason: "VariablesInvalid", message: error.message };
    throw error;
  }
}
