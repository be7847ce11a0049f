/**
 * The status of a TerraformClusterIdentity, decided from what the controller read: Ready says
 * whether its Secret exists and holds every required key (names only, never values), and
 * status.namespaces lists the namespaces holding a proper mirror that some object uses.
 */
import type { V1Secret } from "@kubernetes/client-node";
import { annotations, apiGroup, kinds } from "@captf/contract/api";
import type { Condition } from "../api/kubernetes-types.js";
import { maxMirrorNamespaces, type TerraformClusterIdentity } from "../api/terraformclusteridentity.js";
import { sameJsonValue } from "@captf/contract";
import { conditionReport, type ConditionReport } from "./condition-report.js";
import { isCredentialsMirror } from "./credentials-mirror.js";
import type { CredentialsEvent } from "./ensure-credentials.js";

/** The source Secret is not watched: it is read again this often. */
export const identityRequeueMillis = { ready: 5 * 60_000, notReady: 30_000 } as const;

/** The identity's Secret as read live: its key names, absence, or why reading failed. */
export type SourceSecretReading = { found: true; keys: readonly string[] } | { found: false } | { failed: string };

export interface IdentityStatusFacts {
  identity: TerraformClusterIdentity;
  source: SourceSecretReading;
  /** Secrets labelled as credential mirrors, in every namespace. */
  mirrors: readonly V1Secret[];
  now: number;
}

export interface IdentityStatusDecision {
  status: { conditions: Condition[]; namespaces: string[] };
  /** False when the stored status already says this: no patch needed. */
  changed: boolean;
  requeueAfterMillis: number;
  /** Recorded when Ready changes: IdentitySecretFound, or IdentitySecretNotFound (also for missing keys). */
  event?: CredentialsEvent;
}

const userKinds: readonly string[] = [kinds.cluster, kinds.machine, kinds.machinePool];

export function readyCondition(identity: TerraformClusterIdentity, source: SourceSecretReading): ConditionReport {
  const { namespace, name } = identity.spec.secretRef;
  const secret = `Secret ${namespace}/${name}`;
  if ("failed" in source) return conditionReport("Ready", "Unknown", "ReadyUnknown", `reading ${secret} failed: ${source.failed}`);
  if (!source.found) return conditionReport("Ready", "False", "SecretNotFound", `${secret} does not exist`);
  const missing = (identity.spec.requiredKeys ?? []).filter((key) => !source.keys.includes(key));
  if (missing.length > 0)
    return conditionReport("Ready", "False", "CredentialsIncomplete", `${secret} lacks required keys: ${missing.join(", ")}`);
  return conditionReport(
    "Ready",
    "True",
    "SecretFound",
    identity.spec.requiredKeys?.length ? `${secret} exists and holds every required key` : `${secret} exists`,
  );
}

/** Namespaces holding a correctly labelled and annotated mirror of the identity that at least one object owns. */
export function mirroredNamespaces(identityName: string, mirrors: readonly V1Secret[]): string[] {
  const used = mirrors.filter(
    (secret) =>
      isCredentialsMirror(secret, identityName) &&
      secret.metadata?.annotations?.[annotations.sourceHash] !== undefined &&
      (secret.metadata.ownerReferences ?? []).some((ref) => userKinds.includes(ref.kind) && ref.apiVersion.split("/")[0] === apiGroup),
  );
  const namespaces = [...new Set(used.map((secret) => secret.metadata?.namespace ?? ""))].filter((namespace) => namespace !== "");
  return namespaces.sort().slice(0, maxMirrorNamespaces);
}

function identityEvent(previous: Condition | undefined, ready: ConditionReport, secret: string): CredentialsEvent | undefined {
  if (ready.status === "True" && previous !== undefined && previous.status !== "True") {
    return { reason: "IdentitySecretFound", type: "Normal", note: `${secret} found: ${ready.message}` };
  }
  if (ready.status === "False" && (previous?.status !== "False" || previous.reason !== ready.reason)) {
    return { reason: "IdentitySecretNotFound", type: "Warning", note: ready.message };
  }
  return undefined;
}

function timestamp(millis: number): string {
  return new Date(millis).toISOString().replace(/\.\d+Z$/, "Z");
}

export function decideIdentityStatus(facts: IdentityStatusFacts): IdentityStatusDecision {
  const { identity, now } = facts;
  const name = identity.metadata?.name ?? "";
  const stored = identity.status?.conditions ?? [];
  const previous = stored.find((condition) => condition.type === "Ready");
  const ready = readyCondition(identity, facts.source);
  const generation = identity.metadata?.generation;
  const condition: Condition = {
    type: "Ready",
    status: ready.status,
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
    lastTransitionTime: previous && previous.status === ready.status ? previous.lastTransitionTime : timestamp(now),
    reason: ready.reason,
    message: ready.message,
  };
  const conditions = [...stored.filter((c) => c.type !== "Ready"), condition];
  const namespaces = mirroredNamespaces(name, facts.mirrors);
  const changed = !sameJsonValue(conditions, stored) || !sameJsonValue(namespaces, identity.status?.namespaces ?? []);
  const { namespace, name: secretName } = identity.spec.secretRef;
  const event = identityEvent(previous, ready, `Secret ${namespace}/${secretName}`);
  return {
    status: { conditions, namespaces },
    changed,
    requeueAfterMillis: ready.status === "True" ? identityRequeueMillis.ready : identityRequeueMillis.notReady,
    ...(event ? { event } : {}),
  };
}
