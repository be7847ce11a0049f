/**
 * A create the API server refused for a ResourceQuota or a LimitRange of the namespace (403 Forbidden
 * from their admission plugins): what refused it, read from the server's message (a Job's create) or
 * the Job controller's event (its Pod's), and how long the object waits before it tries again. Pure.
 */
import { KubeApiError } from "../runtime/api-errors.js";

export interface QuotaRefusal {
  kind: "ResourceQuota" | "LimitRange";
  /** The ResourceQuota's name; a LimitRange refusal does not name its object. */
  name?: string;
  /** What the admission plugin said, after `forbidden: `. */
  detail: string;
}

// The ResourceQuota admission plugin's refusals (k8s.io/apiserver's quota evaluator), each naming the quota first.
const quotaPatterns = [/exceeded quota: ([^,\s]+)/, /status unknown for quota: ([^,\s]+)/, /failed quota: ([^:\s]+):/];
// The LimitRanger plugin's refusals name no object: they state the bound a container or Pod breaks.
const limitRangePattern = /(maximum|minimum) \S+ usage per (Container|Pod|PersistentVolumeClaim)|LimitRange|limit to request ratio/;

/** The quota or LimitRange refusal this error is, or undefined for any other error. */
export function quotaRefusalOf(error: unknown): QuotaRefusal | undefined {
  if (!(error instanceof KubeApiError) || error.statusCode !== 403) return undefined;
  return refusalIn(error.status?.message ?? error.message);
}

/**
 * The quota or LimitRange refusal a Job controller's FailedCreate event tells (`Error creating: pods "…" is forbidden: …`): a
 * LimitRange, or a quota on Pods or compute resources, refuses the Job's Pod, never the Job.
 */
export function podRefusalOf(failedCreate: string): QuotaRefusal | undefined {
  return / is forbidden: /.test(failedCreate) ? refusalIn(failedCreate) : undefined;
}

function refusalIn(message: string): QuotaRefusal | undefined {
  const detail = message.replace(/^.*? is forbidden: /, "").slice(0, 400);
  for (const pattern of quotaPatterns) {
    const name = pattern.exec(message)?.[1];
    if (name) return { kind: "ResourceQuota", name, detail };
  }
  return limitRangePattern.test(message) ? { kind: "LimitRange", detail } : undefined;
}

/** A refused Pod's wait: what refused it, and that the Job controller keeps trying (the Job exists; captf changes nothing). */
export function podRefusalMessage(refusal: QuotaRefusal, job: string): string {
  return `${refuserOf(refusal)} refused the Pod of Job ${job}: ${refusal.detail}; the Job controller tries again until the Job's deadline`;
}

/** The first look after a refusal; each later one waits twice as long as the one before, up to the cap. */
export const quotaRetryBaseMs = 10_000;
export const quotaRetryMaxMs = 120_000;

const announcedRetry = /tried again in (\d+) s/;

/**
 * The wait the previous pass announced on the condition, when it was refused by a quota too. The condition's message carries it: its
 * lastTransitionTime does not, as it stays put while the status (Unknown) does not change, so it can predate the first refusal.
 */
export function previousQuotaRetryMs(previous: { reason: string; message?: string } | undefined): number | undefined {
  if (previous?.reason !== "JobQuotaExceeded") return undefined;
  const seconds = announcedRetry.exec(previous.message ?? "")?.[1];
  return seconds === undefined ? undefined : Number(seconds) * 1000;
}

/** The wait before the next try: 10 s after a first refusal, then twice the previous wait (20 s, 40 s, …) up to 2 min. */
export function quotaRetryMs(previousRetryMs: number | undefined): number {
  if (previousRetryMs === undefined) return quotaRetryBaseMs;
  return Math.min(Math.max(previousRetryMs * 2, quotaRetryBaseMs), quotaRetryMaxMs);
}

/** The condition message and event note: what refused which Job, why, and when it is tried again. */
export function quotaRefusalMessage(refusal: QuotaRefusal, job: string, retryMs: number): string {
  const seconds = Math.round(retryMs / 1000);
  return `${refuserOf(refusal)} refused Job ${job}: ${refusal.detail}; tried again in ${seconds} s or on the next change`;
}

const refuserOf = (refusal: QuotaRefusal) => (refusal.name ? `the ResourceQuota ${refusal.name}` : "a LimitRange of the namespace");
