/**
 * The TerraformClusterIdentity controller (cluster-scoped): each pass reads the identity's Secret
 * live (and makes the identity one of its owners, so clusterctl move carries it) and lists the
 * credential mirrors, then writes Ready and status.namespaces in one status patch (none when
 * nothing changed). The Secret is not watched, so a pass asks to run again in
 * 5 minutes when Ready is True and in 30 seconds otherwise; mirrors are watched, so a mirror
 * appearing or going wakes the identity it names.
 */
import type { V1OwnerReference, V1Secret } from "@kubernetes/client-node";
import { annotations, groupVersion, kinds, labels } from "@captf/contract/api";
import type { TerraformClusterIdentity } from "../api/terraformclusteridentity.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import { generationOrMetadataChanged, watchSelf, type Controller, type WatchSpec } from "../runtime/controller.js";
import type { KubeApi, KubeObject } from "../runtime/kube-client.js";
import type { EventRecorder } from "../events/event-recorder.js";
import { apiErrorMessage, isNotFound } from "../runtime/api-errors.js";
import { identityResourceType, readIdentity } from "./ensure-credentials.js";
import { decideIdentityStatus, type SourceSecretReading } from "./identity-status.js";
import type { ReadCache } from "../runtime/read-cache.js";

export { identityResourceType };

export const mirrorLabelSelector = `${labels.mirrored}=true,${labels.managed}=true`;

export interface IdentityControllerClients {
  client: KubeApi;
  /** Where IdentitySecretFound / IdentitySecretNotFound go (the default namespace: the identity has none); without it, nowhere. */
  events?: EventRecorder;
  /**
   * The client whose writes the read cache does not expect, for the identity's ownerReference on its Secret: no cache but the Secret's
   * by-name watch shows it, and that watch stops once no identity names the Secret, so nothing would ever meet the expectation.
   */
  unexpectedWrites?: KubeApi;
}

export interface IdentityControllerOptions {
  concurrency?: number;
  now?: () => number;
  /**
   * The manager's caches: the identity is read from them, and the mirrors are the mirror watch's cache; without them both are read live.
   */
  cache?: { reads: ReadCache; mirrors: () => readonly V1Secret[] };
}

/** A mirror Secret wakes the identity its `captf.io/identity` annotation names. */
const watchMirrors: WatchSpec = {
  type: builtinTypes.secret,
  labelSelector: mirrorLabelSelector,
  map: (secret: KubeObject) => {
    const identity = secret.metadata?.annotations?.[annotations.identity];
    return identity ? [identity] : [];
  },
};

async function listMirrors(client: KubeApi): Promise<V1Secret[]> {
  const mirrors: V1Secret[] = [];
  let token: string | undefined;
  do {
    const page = await client.list<V1Secret>(builtinTypes.secret, undefined, {
      labelSelector: mirrorLabelSelector,
      limit: 500,
      continue: token,
    });
    mirrors.push(...page.items);
    token = page.metadata?.continue || undefined;
  } while (token);
  return mirrors;
}

async function readSource(
  client: KubeApi,
  identity: TerraformClusterIdentity,
): Promise<{ reading: SourceSecretReading; secret?: V1Secret }> {
  try {
    const secret = await client.get<V1Secret>(builtinTypes.secret, identity.spec.secretRef.namespace, identity.spec.secretRef.name);
    return { reading: { found: true, keys: Object.keys(secret.data ?? {}) }, secret };
  } catch (error) {
    return { reading: isNotFound(error) ? { found: false } : { failed: apiErrorMessage(error) } };
  }
}

/**
 * The source Secret's ownerReferences with the identity's added, or undefined when it is there already. clusterctl move carries an
 * identity (its CRD is labelled move-hierarchy) with every object it owns, and copies rather than moves those (a global hierarchy):
 * owned by the identity, the Secret arrives on the target with it and stays on the source. Never a controller reference. Pure.
 */
export function sourceOwnerReferences(
  secret: Pick<V1Secret, "metadata">,
  identity: Pick<TerraformClusterIdentity, "metadata">,
): V1OwnerReference[] | undefined {
  const references = secret.metadata?.ownerReferences ?? [];
  const uid = identity.metadata?.uid;
  if (!uid || references.some((reference) => reference.uid === uid)) return undefined;
  return [...references, { apiVersion: groupVersion, kind: kinds.clusterIdentity, name: identity.metadata!.name!, uid }];
}

export function identityController(clients: IdentityControllerClients, options: IdentityControllerOptions = {}): Controller {
  const { client } = clients;
  const now = options.now ?? Date.now;
  return {
    name: kinds.clusterIdentity.toLowerCase(),
    kind: kinds.clusterIdentity,
    concurrency: options.concurrency ?? 1,
    watches: [watchSelf(identityResourceType, generationOrMetadataChanged), watchMirrors],
    async reconcile(_key, context) {
      let identity: TerraformClusterIdentity;
      try {
        const cached = options.cache
          ? await options.cache.reads.get<TerraformClusterIdentity>(identityResourceType, undefined, context.name)
          : undefined;
        if (options.cache && !cached) return {};
        identity = cached ?? (await readIdentity(client, context.name));
      } catch (error) {
        if (isNotFound(error)) return {};
        throw error;
      }
      // The source Secret is the user's, outside the managed-Secret cache: read live.
      const [{ reading: source, secret }, mirrors] = await Promise.all([
        readSource(client, identity),
        options.cache ? [...options.cache.mirrors()] : listMirrors(client),
      ]);
      const ownerReferences = secret && sourceOwnerReferences(secret, identity);
      if (ownerReferences) {
        // The resourceVersion makes the list's replacement conditional: a concurrent change of it is a conflict, tried again.
        await (clients.unexpectedWrites ?? client).patch(
          builtinTypes.secret,
          identity.spec.secretRef.namespace,
          identity.spec.secretRef.name,
          {
            metadata: { ownerReferences, resourceVersion: secret.metadata?.resourceVersion },
          },
        );
      }
      const decision = decideIdentityStatus({ identity, source, mirrors, now: now() });
      if (decision.changed) {
        const { conditions, namespaces } = decision.status;
        await client.patchStatus(
          identityResourceType,
          undefined,
          context.name,
          { status: { conditions, namespaces: namespaces.length > 0 ? namespaces : null } },
          "merge",
        );
      }
      if (decision.event) {
        const { reason, note, type } = decision.event;
        await clients.events?.record(
          { apiVersion: groupVersion, kind: kinds.clusterIdentity, name: context.name, uid: identity.metadata?.uid ?? "" },
          reason,
          note,
          "CheckSecret",
          type,
        );
      }
      const ready = decision.status.conditions.find((condition) => condition.type === "Ready");
      context.logger.info({ ready: ready?.reason, namespaces: decision.status.namespaces.length, patched: decision.changed }, "reconciled");
      return { requeueAfterMillis: decision.requeueAfterMillis };
    },
  };
}
