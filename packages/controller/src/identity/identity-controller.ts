/**
 * The TerraformClusterIdentity controller (cluster-scoped): each pass reads the identity's Secret
 * live and lists the credential mirrors, then writes Ready and status.namespaces in one status
 * patch (none when nothing changed). The Secret is not watched, so a pass asks to run again in
 * 5 minutes when Ready is True and in 30 seconds otherwise; mirrors are watched, so a mirror
 * appearing or going wakes the identity it names.
 */
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { V1Secret } from "@kubernetes/client-node";
import { annotations, eventReporters, groupVersion, kinds, labels } from "@captf/contract/api";
import type { TerraformClusterIdentity } from "../api/terraformclusteridentity.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import { generationOrMetadataChanged, watchSelf, type Controller, type WatchSpec } from "../runtime/controller.js";
import { microTime, type KubeApi, type KubeObject } from "../runtime/kube-client.js";
import { apiErrorMessage, isNotFound } from "../runtime/api-errors.js";
import { identityResourceType, readIdentity, type CredentialsEvent } from "./ensure-credentials.js";
import { decideIdentityStatus, type SourceSecretReading } from "./identity-status.js";
import type { ReadCache } from "../runtime/read-cache.js";

export { identityResourceType };

export const mirrorLabelSelector = `${labels.mirrored}=true,${labels.managed}=true`;

/** Identity events land here: the identity itself has no namespace. */
const identityEventNamespace = "default";

export interface IdentityControllerClients {
  client: KubeApi;
  /** Record IdentitySecretFound / IdentitySecretNotFound as events; without it, none are. */
  recordEvents?: boolean;
}

export interface IdentityControllerOptions {
  concurrency?: number;
  now?: () => number;
  /** The events' reportingInstance: the manager pod's name. */
  instance?: string;
  /** The manager's caches: the identity is read from them, and the mirrors are the mirror watch's cache; without them both are read live. */
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
    const page = await client.list<V1Secret>(builtinTypes.secret, undefined, { labelSelector: mirrorLabelSelector, limit: 500, continue: token });
    mirrors.push(...page.items);
    token = page.metadata?.continue || undefined;
  } while (token);
  return mirrors;
}

async function readSource(client: KubeApi, identity: TerraformClusterIdentity): Promise<SourceSecretReading> {
  try {
    const secret = await client.get<V1Secret>(builtinTypes.secret, identity.spec.secretRef.namespace, identity.spec.secretRef.name);
    return { found: true, keys: Object.keys(secret.data ?? {}) };
  } catch (error) {
    return isNotFound(error) ? { found: false } : { failed: apiErrorMessage(error) };
  }
}

async function recordIdentityEvent(client: KubeApi, identity: TerraformClusterIdentity, event: CredentialsEvent, now: number, instance: string): Promise<void> {
  const name = identity.metadata?.name ?? "";
  await client.create(builtinTypes.event, identityEventNamespace, {
    apiVersion: "events.k8s.io/v1",
    kind: "Event",
    // client-go's naming: <object>.<event time in hex nanoseconds>, plus a random part against a same-millisecond twin.
    metadata: { name: `${name.slice(0, 200).replace(/[-.]+$/, "")}.${(BigInt(now) * 1_000_000n).toString(16)}${randomBytes(2).toString("hex")}`, namespace: identityEventNamespace },
    eventTime: microTime(now),
    reportingController: eventReporters.manager,
    reportingInstance: instance.slice(0, 128),
    action: "CheckSecret",
    reason: event.reason,
    type: event.type,
    note: event.note.slice(0, 1024),
    regarding: { apiVersion: groupVersion, kind: kinds.clusterIdentity, name, ...(identity.metadata?.uid ? { uid: identity.metadata.uid } : {}) },
  });
}

export function identityController(clients: IdentityControllerClients, options: IdentityControllerOptions = {}): Controller {
  const { client } = clients;
  const now = options.now ?? Date.now;
  const instance = options.instance ?? hostname();
  return {
    name: kinds.clusterIdentity.toLowerCase(),
    kind: kinds.clusterIdentity,
    concurrency: options.concurrency ?? 1,
    watches: [watchSelf(identityResourceType, generationOrMetadataChanged), watchMirrors],
    async reconcile(_key, context) {
      let identity: TerraformClusterIdentity;
      try {
        const cached = options.cache ? await options.cache.reads.get<TerraformClusterIdentity>(identityResourceType, undefined, context.name) : undefined;
        if (options.cache && !cached) return {};
        identity = cached ?? (await readIdentity(client, context.name));
      } catch (error) {
        if (isNotFound(error)) return {};
        throw error;
      }
      // The source Secret is the user's, outside the managed-Secret cache: read live.
      const [source, mirrors] = await Promise.all([readSource(client, identity), options.cache ? [...options.cache.mirrors()] : listMirrors(client)]);
      const decision = decideIdentityStatus({ identity, source, mirrors, now: now() });
      if (decision.changed) {
        const { conditions, namespaces } = decision.status;
        await client.patchStatus(identityResourceType, undefined, context.name, { status: { conditions, namespaces: namespaces.length > 0 ? namespaces : null } }, "merge");
      }
      if (decision.event && clients.recordEvents) {
        await recordIdentityEvent(client, identity, decision.event, now(), instance).catch((error: unknown) =>
          context.logger.warn({ reason: decision.event?.reason, error: apiErrorMessage(error) }, "recording an identity event failed"),
        );
      }
      const ready = decision.status.conditions.find((condition) => condition.type === "Ready");
      context.logger.info({ ready: ready?.reason, namespaces: decision.status.namespaces.length, patched: decision.changed }, "reconciled");
      return { requeueAfterMillis: decision.requeueAfterMillis };
    },
  };
}
