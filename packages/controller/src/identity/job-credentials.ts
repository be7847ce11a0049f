/**
 * The reconcile pass's view of identities: resolve the object's identity, mirror its Secret into
 * the object's namespace, make sure the runner's ServiceAccount and RoleBinding exist, and say
 * whether a Job may start and which Secret it mounts.
 */
import { kindOfRole } from "@captf/contract";
import { groupVersion, kinds } from "@captf/contract/api";
import type { EventRecorder } from "../events/event-recorder.js";
import type { CredentialsResolver, JobCredentials } from "../reconcile/types.js";
import { conditionReport } from "./condition-report.js";
import { ensureCredentials, type IdentityClients } from "./ensure-credentials.js";
import { resolveIdentityName } from "./resolve-identity.js";
import { ensureRunnerRbac } from "./runner-rbac.js";
import { undefinedIfNotFound } from "../runtime/api-errors.js";
import { builtinTypes } from "../runtime/builtin-types.js";

/** Credentials not in order are looked at again this soon (identity edits are not watched). */
export const credentialsRetryMs = 30_000;
/** A mirror write that lost a race (many users of one identity start at once) is tried again this soon. */
export const lostRaceRetryMs = 1_000;

/** The `reason` label of captf_identity_denied_total for an IdentityAllowed=False reason, if it is a denial the metric counts. */
export function identityDeniedReason(reason: string): "notfound" | "namespace" | undefined {
  if (reason === "NamespaceNotAllowed") return "namespace";
  if (reason === "IdentityNotFound" || reason === "SecretNotFound") return "notfound";
  return undefined;
}

export function identityCredentials(clients: IdentityClients, events?: EventRecorder): CredentialsResolver {
  return async ({ role, object, terraformCluster }): Promise<JobCredentials> => {
    const { namespace, name } = object.metadata;
    const kind = kindOfRole[role];
    const resolution = resolveIdentityName(
      role,
      object.spec as Parameters<typeof resolveIdentityName>[1],
      terraformCluster?.spec as Parameters<typeof resolveIdentityName>[2],
    );
    if (!resolution.resolved) {
      return { conditions: [{ type: "IdentityAllowed", value: resolution.condition }], ready: false, requeueAfterMs: credentialsRetryMs };
    }
    if (resolution.kind !== kinds.clusterIdentity) {
      // identityRef.kind Secret: a Secret in the object's own namespace, used as it is.
      const secret = (await undefinedIfNotFound(clients.client.get(builtinTypes.secret, namespace, resolution.name))) !== undefined;
      const allowed = secret
        ? conditionReport("IdentityAllowed", "True", "LocalSecret", `Jobs use Secret ${resolution.name} of this namespace`)
        : conditionReport(
            "IdentityAllowed",
            "False",
            "SecretNotFound",
            `Secret ${resolution.name} named by ${resolution.source} does not exist in namespace ${namespace}`,
          );
      if (!secret) return { conditions: [{ type: "IdentityAllowed", value: allowed }], ready: false, requeueAfterMs: credentialsRetryMs };
      // The Job still runs as captf-runner, which needs its ServiceAccount and RoleBinding like any other.
      const rbac = await ensureRunnerRbac(clients, namespace);
      const ready = rbac.status === "True";
      return {
        conditions: [
          { type: "IdentityAllowed", value: allowed },
          { type: "RunnerRBACReady", value: rbac },
        ],
        ready,
        secretName: resolution.name,
        ...(ready ? {} : { requeueAfterMs: credentialsRetryMs }),
      };
    }

    const outcome = await ensureCredentials(clients, { kind, namespace, name, uid: object.metadata.uid, identity: resolution.name });
    const rbac = await ensureRunnerRbac(clients, namespace);
    const subject = { apiVersion: groupVersion, kind, namespace, name, uid: object.metadata.uid };
    for (const event of outcome.events) void events?.record(subject, event.reason, event.note);
    const ready = outcome.credentialsSecret !== undefined && rbac.status === "True";
    return {
      conditions: [
        { type: "IdentityAllowed", value: outcome.identityAllowed },
        { type: "CredentialsMirrored", value: outcome.credentialsMirrored },
        { type: "RunnerRBACReady", value: rbac },
      ],
      ready,
      identity: resolution.name,
      ...(outcome.credentialsSecret ? { secretName: outcome.credentialsSecret } : {}),
      ...(ready ? {} : { requeueAfterMs: outcome.lostRace ? lostRaceRetryMs : credentialsRetryMs }),
    };
  };
}
