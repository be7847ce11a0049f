import type { CoreV1Api, V1Secret } from "@kubernetes/client-node";
import { labels } from "@captf/contract/api";
import { decodeStateSecrets, defaultStateLimits, type StateLimits, type StateReading } from "./decode-state.js";

/** The label the kubernetes backend puts on every Secret of one state. */
export const backendSuffixLabel = "tfstateSecretSuffix";

export interface StateObservation {
  reading: StateReading;
  /** UIDs of deleted objects that retained these Secrets (`captf.io/retained-from-uid`), sorted. */
  retainedFromUids: string[];
  /** The state Secrets as listed, for backups. */
  secrets: V1Secret[];
}

/**
 * Reads one object's state live from the API server (never from a cache: a Job may have just
 * written it), decodes it, and notes whether a deleted object retained it. API errors propagate;
 * the reconciler retries them.
 */
export async function observeState(core: CoreV1Api, namespace: string, suffix: string, limits: StateLimits = defaultStateLimits): Promise<StateObservation> {
  const list = await core.listNamespacedSecret({ namespace, labelSelector: `${backendSuffixLabel}=${suffix}` });
  const secrets = list.items.map((item) => ({
    name: item.metadata?.name ?? "",
    data: item.data,
    annotations: item.metadata?.annotations,
  }));
  const retained = new Set(list.items.map((item) => item.metadata?.labels?.[labels.retainedFromUid]).filter((uid): uid is string => Boolean(uid)));
  return { reading: decodeStateSecrets(suffix, secrets, limits), retainedFromUids: [...retained].sort(), secrets: list.items };
}

export async function readState(core: CoreV1Api, namespace: string, suffix: string, limits: StateLimits = defaultStateLimits): Promise<StateReading> {
  return (await observeState(core, namespace, suffix, limits)).reading;
}
