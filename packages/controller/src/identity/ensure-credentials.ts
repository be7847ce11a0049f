/**
 * Credentials for one object's Jobs: read its TerraformClusterIdentity, its namespace and the
 * identity's Secret live (never a cache), decide IdentityAllowed, then make the namespace's
 * mirror of the Secret current (CredentialsMirrored), or take it back when the namespace is no
 * longer allowed. Nothing here puts a Secret value into a message: messages name objects and keys.
 */
import type { V1Namespace, V1Secret } from "@kubernetes/client-node";
import { kinds, managerEventReasons, type ManagerEventReason } from "@captf/contract/api";
import { terraformClusterIdentityDefinition, type TerraformClusterIdentity } from "../api/terraformclusteridentity.js";
import { resourceTypeOf } from "../api/resource.js";
import { allowanceNeedsLabels, namespaceAllowance } from "./allowed-namespaces.js";
import { apiErrorMessage, isConflict, isNotFound, KubeApiError } from "../runtime/api-errors.js";
import { conditionReport, type ConditionReport } from "./condition-report.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import type { KubeApi } from "../runtime/kube-client.js";
import { watchedByName, type ReadCache } from "../runtime/read-cache.js";

/** What a cache read reports for a missing object, as a live read would. */
const notFound = new KubeApiError(404, { kind: "Status", reason: "NotFound", code: 404 }, "not found in the cache");
import { credentialsMirrorName, planMirror, planRevocation, type CredentialsUser } from "./credentials-mirror.js";

export interface IdentityClients {
  client: KubeApi;
  /** The manager's caches; without them every read is live. */
  cache?: ReadCache;
}

/** An occurrence the caller records as an event on the using object (once: these happen once). */
export interface CredentialsEvent {
  reason: ManagerEventReason;
  type: "Normal" | "Warning";
  note: string;
}

export interface CredentialsOutcome {
  identityAllowed: ConditionReport;
  credentialsMirrored: ConditionReport;
  /** The mirror Secret to mount in the user's Jobs; set only when both conditions are True. */
  credentialsSecret?: string;
  events: CredentialsEvent[];
  /** The mirror write lost a race with another writer (other users of the identity add their ownerReferences): worth retrying at once. */
  lostRace?: boolean;
}

type ReadResult<T> = { found: true; value: T } | { found: false } | { failed: string };

async function readLive<T>(read: () => Promise<T>): Promise<ReadResult<T>> {
  try {
    return { found: true, value: await read() };
  } catch (error) {
    if (isNotFound(error)) return { found: false };
    return { failed: apiErrorMessage(error) };
  }
}

function event(reason: ManagerEventReason, note: string): CredentialsEvent {
  return { reason, type: managerEventReasons[reason], note };
}

export const identityResourceType = resourceTypeOf(terraformClusterIdentityDefinition);

export function readIdentity(client: KubeApi, name: string): Promise<TerraformClusterIdentity> {
  return client.get<TerraformClusterIdentity>(identityResourceType, undefined, name);
}

/** Brings the user's credentials in order; never throws for an API failure, which becomes a condition instead. */
export async function ensureCredentials(clients: IdentityClients, user: CredentialsUser): Promise<CredentialsOutcome> {
  const checked = await checkIdentity(clients, user);
  return "sourceData" in checked ? mirrorCredentials(clients, user, checked) : checked;
}

function mirrorPending(message: string): ConditionReport {
  return conditionReport("CredentialsMirrored", "Unknown", "MirrorPending", message);
}

/** An identity that allows the user's namespace, with the data of its Secret, which holds every required key. */
interface AllowedCredentials {
  identityAllowed: ConditionReport;
  secretLabel: string;
  sourceData: Record<string, string>;
}

/** IdentityAllowed: the identity, the namespace (when its labels decide) and the identity's Secret, read; an outcome if not allowed. */
async function checkIdentity(clients: IdentityClients, user: CredentialsUser): Promise<AllowedCredentials | CredentialsOutcome> {
  const { client, cache } = clients;
  const identityName = user.identity;
  const identityLabel = `${kinds.clusterIdentity} ${identityName}`;
  const checkFailed = (message: string): CredentialsOutcome => ({
    identityAllowed: conditionReport("IdentityAllowed", "Unknown", "IdentityCheckFailed", message),
    credentialsMirrored: mirrorPending(`waiting for the check of ${identityLabel}`),
    events: [],
  });
  const notAllowed = (reason: string, message: string, waitingFor: string): CredentialsOutcome => ({
    identityAllowed: conditionReport("IdentityAllowed", "False", reason, message),
    credentialsMirrored: mirrorPending(`waiting for ${waitingFor}`),
    events: [],
  });

  const identity = await readLive(() =>
    cache
      ? cache
          .get<TerraformClusterIdentity>(identityResourceType, undefined, identityName)
          .then((found) => found ?? Promise.reject(notFound))
      : readIdentity(client, identityName),
  );
  if ("failed" in identity) return checkFailed(`reading ${identityLabel} failed: ${identity.failed}`);
  if (!identity.found) {
    const message = `${identityLabel} does not exist; create it or reference another identity`;
    return notAllowed("IdentityNotFound", message, `${identityLabel} to exist`);
  }
  const spec = identity.value.spec;

  let namespace: V1Namespace | undefined;
  if (allowanceNeedsLabels(spec.allowedNamespaces, user.namespace)) {
    const read = await readLive(() => client.get<V1Namespace>(builtinTypes.namespace, undefined, user.namespace));
    if ("failed" in read) return checkFailed(`reading namespace ${user.namespace} for ${identityLabel} failed: ${read.failed}`);
    namespace = read.found ? read.value : undefined;
  }
  const allowance = namespaceAllowance(spec.allowedNamespaces, user.namespace, namespace?.metadata);
  if (!allowance.allowed)
    return revoke(
      client,
      user,
      credentialsMirrorName(identityName),
      `${identityLabel} does not allow namespace ${user.namespace}: ${allowance.why}`,
    );

  const { name: secretName, namespace: secretNamespace } = spec.secretRef;
  const secretLabel = `Secret ${secretNamespace}/${secretName} of ${identityLabel}`;
  // The user's Secret, which no label scopes: from a watch of its own when the manager's caches are given.
  const source = await readLive(() =>
    cache
      ? cache
          .get<V1Secret>(builtinTypes.secret, secretNamespace, secretName, { cache: watchedByName })
          .then((found) => found ?? Promise.reject(notFound))
      : client.get<V1Secret>(builtinTypes.secret, secretNamespace, secretName),
  );
  if ("failed" in source) return checkFailed(`reading ${secretLabel} failed: ${source.failed}`);
  if (!source.found) return notAllowed("SecretNotFound", `${secretLabel} does not exist`, secretLabel);
  const sourceData = source.value.data ?? {};
  const missingKeys = (spec.requiredKeys ?? []).filter((key) => !(key in sourceData));
  if (missingKeys.length > 0) {
    const message = `${secretLabel} lacks required keys: ${missingKeys.join(", ")}`;
    return notAllowed("CredentialsIncomplete", message, `${secretLabel} to hold every required key`);
  }

  const identityAllowed = conditionReport(
    "IdentityAllowed",
    "True",
    "IdentityAllowed",
    `${identityLabel} allows namespace ${user.namespace} (by spec.allowedNamespaces.${allowance.by})`,
  );
  return { identityAllowed, secretLabel, sourceData };
}

/** CredentialsMirrored: the namespace's mirror of the identity's Secret created, claimed or rewritten as planMirror says. */
async function mirrorCredentials(
  clients: IdentityClients,
  user: CredentialsUser,
  { identityAllowed, secretLabel, sourceData }: AllowedCredentials,
): Promise<CredentialsOutcome> {
  const { client, cache } = clients;
  const mirrorName = credentialsMirrorName(user.identity);
  const mirrorLabel = `Secret ${user.namespace}/${mirrorName}`;
  const mirrored = (message: string, events: CredentialsEvent[] = []): CredentialsOutcome => ({
    identityAllowed,
    credentialsMirrored: conditionReport("CredentialsMirrored", "True", "Mirrored", message),
    credentialsSecret: mirrorName,
    events,
  });
  const failed = (message: string): CredentialsOutcome => ({
    identityAllowed,
    credentialsMirrored: conditionReport("CredentialsMirrored", "False", "MirrorFailed", message),
    events: [],
  });
  // Users of one identity in one namespace race to make its mirror: a write that lost reads the winner's live and plans again, once.
  for (let attempt = 1; ; attempt++) {
    // A cached mirror plans the write: a stale one loses the replace to a conflict, and an added owner merges by uid. Its absence is read
    // live: a foreign Secret of that name is not in the cache's view.
    const cachedMirror =
      cache && attempt === 1
        ? await readLive(() => cache.get<V1Secret>(builtinTypes.secret, user.namespace, mirrorName, { inScope: true }))
        : undefined;
    const cachedFound = cachedMirror && "found" in cachedMirror && cachedMirror.found && cachedMirror.value !== undefined;
    const existing = cachedFound
      ? cachedMirror
      : await readLive(() => client.get<V1Secret>(builtinTypes.secret, user.namespace, mirrorName));
    if ("failed" in existing)
      return {
        identityAllowed,
        credentialsMirrored: mirrorPending(`reading ${mirrorLabel} failed, will retry: ${existing.failed}`),
        events: [],
      };
    const plan = planMirror(existing.found ? existing.value : undefined, sourceData, user);
    try {
      switch (plan.action) {
        case "foreign":
          return failed(plan.why);
        case "keep":
          return mirrored(`${mirrorLabel} mirrors ${secretLabel}`);
        case "create":
          await client.create(builtinTypes.secret, user.namespace, plan.secret);
          return mirrored(`${mirrorLabel} mirrors ${secretLabel}`, [event("MirrorCreated", `mirrored ${secretLabel} into ${mirrorLabel}`)]);
        case "addOwner":
          // Appended after the refs as read; refs other users added meanwhile are kept (a strategic merge, by uid).
          await client.patch(
            builtinTypes.secret,
            user.namespace,
            mirrorName,
            {
              metadata: { "$setElementOrder/ownerReferences": plan.order.map((uid) => ({ uid })), ownerReferences: [plan.ownerReference] },
            },
            "strategic",
          );
          return mirrored(`${mirrorLabel} mirrors ${secretLabel}`);
        case "replace":
          await client.replace(builtinTypes.secret, user.namespace, mirrorName, plan.secret);
          return mirrored(
            plan.rewritesData
              ? `${mirrorLabel} mirrors ${secretLabel}; rewritten with its changed data`
              : `${mirrorLabel} mirrors ${secretLabel}`,
          );
      }
    } catch (error) {
      if (isConflict(error) && attempt === 1) continue;
      // Someone else wrote the Secret between our read and write, again: the next pass reads it again.
      if (isConflict(error))
        return {
          identityAllowed,
          credentialsMirrored: mirrorPending(`${mirrorLabel} changed while it was being written, will retry`),
          events: [],
          lostRace: true,
        };
      return failed(`writing ${mirrorLabel} failed: ${apiErrorMessage(error)}`);
    }
  }
}

/** The namespace may no longer use the identity: give up the user's claim on the mirror, and remove it once nobody claims it. */
async function revoke(client: KubeApi, user: CredentialsUser, mirrorName: string, why: string): Promise<CredentialsOutcome> {
  const identityAllowed = conditionReport("IdentityAllowed", "False", "NamespaceNotAllowed", why);
  const mirrorLabel = `Secret ${user.namespace}/${mirrorName}`;
  const notMirrored = conditionReport(
    "CredentialsMirrored",
    "Unknown",
    "MirrorPending",
    `not mirrored while namespace ${user.namespace} is not allowed`,
  );
  const existing = await readLive(() => client.get<V1Secret>(builtinTypes.secret, user.namespace, mirrorName));
  if ("failed" in existing)
    return {
      identityAllowed,
      credentialsMirrored: conditionReport(
        "CredentialsMirrored",
        "False",
        "MirrorFailed",
        `reading ${mirrorLabel} to remove it failed: ${existing.failed}`,
      ),
      events: [],
    };
  const plan = planRevocation(existing.found ? existing.value : undefined, user);
  try {
    switch (plan.action) {
      case "none":
        return { identityAllowed, credentialsMirrored: notMirrored, events: [] };
      case "replace":
        await client.replace(builtinTypes.secret, user.namespace, mirrorName, plan.secret);
        return { identityAllowed, credentialsMirrored: notMirrored, events: [] };
      case "delete":
        await client.delete(
          builtinTypes.secret,
          user.namespace,
          mirrorName,
          plan.resourceVersion ? { preconditions: { resourceVersion: plan.resourceVersion } } : undefined,
        );
        return { identityAllowed, credentialsMirrored: notMirrored, events: [event("MirrorRemoved", `removed ${mirrorLabel}: ${why}`)] };
    }
  } catch (error) {
    if (isNotFound(error)) return { identityAllowed, credentialsMirrored: notMirrored, events: [] };
    if (isConflict(error))
      return {
        identityAllowed,
        credentialsMirrored: conditionReport(
          "CredentialsMirrored",
          "False",
          "MirrorFailed",
          `${mirrorLabel} changed while it was being removed, will retry`,
        ),
        events: [],
      };
    return {
      identityAllowed,
      credentialsMirrored: conditionReport(
        "CredentialsMirrored",
        "False",
        "MirrorFailed",
        `removing ${mirrorLabel} failed: ${apiErrorMessage(error)}`,
      ),
      events: [],
    };
  }
}
