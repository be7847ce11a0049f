import type { V1Secret } from "@kubernetes/client-node";
import { labels } from "@captf/contract/api";
import { builtinTypes } from "../runtime/builtin-types.js";
import type { KubeApi } from "../runtime/kube-client.js";
import type { ReadCache } from "../runtime/read-cache.js";
import { defaultStateLimits, type StateLimits, type StateReading } from "./decode-state.js";
import { decodeStateSecretsWithDecryption, type StateDecryption } from "./state-encryption.js";
import { passClient } from "../runtime/pass-client.js";

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
 * Reads one object's state (live, or from a cache proven as fresh as the newest Job that may have
 * written it), decodes it (decrypting OpenTofu's encrypted state when given the object's encryption
 * configuration), and notes whether a deleted object retained it. API errors propagate; the
 * reconciler retries them.
 */
export async function observeState(
  client: KubeApi,
  namespace: string,
  suffix: string,
  limits: StateLimits = defaultStateLimits,
  cached?: { cache: ReadCache | undefined; freshAsOf: string | undefined },
  decryption?: StateDecryption,
): Promise<StateObservation> {
  const labelSelector = `${backendSuffixLabel}=${suffix}`;
  // A cached read only when the cache has seen everything up to the object's newest Job (which may have written the state); the backend
  // labels every state Secret captf.io/managed.
  const list = {
    items: await passClient({ client, cache: cached?.cache }).list<V1Secret>(builtinTypes.secret, namespace, labelSelector, {
      inScope: true,
      ...(cached?.freshAsOf ? { freshAsOf: cached.freshAsOf } : {}),
    }),
  };
  const secrets = list.items.map((item) => ({
    name: item.metadata?.name ?? "",
    data: item.data,
    annotations: item.metadata?.annotations,
  }));
  const retained = new Set(
    list.items.map((item) => item.metadata?.labels?.[labels.retainedFromUid]).filter((uid): uid is string => Boolean(uid)),
  );
  return {
    reading: await decodeStateSecretsWithDecryption(suffix, secrets, decryption, limits),
    retainedFromUids: [...retained].sort(),
    secrets: list.items,
  };
}

export async function readState(
  client: KubeApi,
  namespace: string,
  suffix: string,
  limits: StateLimits = defaultStateLimits,
  decryption?: StateDecryption,
): Promise<StateReading> {
  return (await observeState(client, namespace, suffix, limits, undefined, decryption)).reading;
}
