import type { CoreV1Api } from "@kubernetes/client-node";
import { decodeStateSecrets, defaultStateLimits, type StateLimits, type StateReading } from "./decode-state.js";

/** The label the kubernetes backend puts on every Secret of one state. */
export const backendSuffixLabel = "tfstateSecretSuffix";

/**
 * Reads one object's state live from the API server (never from a cache: a Job may have just
 * written it) and decodes it. API errors propagate; the reconciler retries them.
 */
export async function readState(core: CoreV1Api, namespace: string, suffix: string, limits: StateLimits = defaultStateLimits): Promise<StateReading> {
  const list = await core.listNamespacedSecret({ namespace, labelSelector: `${backendSuffixLabel}=${suffix}` });
  const secrets = list.items.map((item) => ({
    name: item.metadata?.name ?? "",
    data: item.data,
    annotations: item.metadata?.annotations,
  }));
  return decodeStateSecrets(suffix, secrets, limits);
}
