/**
 * A create the API server refused for a ResourceQuota or a LimitRange of the namespace (403 Forbidden
 * from their admission plugins): what refused it, read from the server's message, and how long the
 * object waits before it tries again. Pure.
 */
import { KubeApiError } from "../runtime/api-errors.js";
import { exponentialBackoffMillis } from "../runtime/backoff.js";

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
  const message = error.status?.message ?? error.message;
  const detail = message.replace(/^.*? is forbidden: /, "").slice(0, 400);
  for (const pattern of quotaPatterns) {
    const name = pattern.exec(message)?.[1];
    if (name) return { kind: "ResourceQuota", name, detail };
  }
  return limitRangePattern.test(message) ? { kind: "LimitRange", detail } : undefined;
}

/** The first look after a refusal; each later one waits twice as long as the wait so far, up to the cap. */
export const quotaRetryBaseMs = 10_000;
export const quotaRetryMaxMs = 120_000;

/**
 * The wait before the next try, from how long the object has waited on the quota already (undefined: refused just now): the waits
 * double (10 s, 20 s, 40 s, …) up to 2 min, so a freed quota is used within that.
 */
export function quotaRetryMs(waitedMs: number | undefined): number {
  if (waitedMs === undefined || waitedMs < quotaRetryBaseMs) return quotaRetryBaseMs;
  return exponentialBackoffMillis(Math.floor(Math.log2(waitedMs / quotaRetryBaseMs)), quotaRetryBaseMs, quotaRetryMaxMs);
}

/** The condition message and event note: what refused which Job, why, and when it is tried again. */
export function quotaRefusalMessage(refusal: QuotaRefusal, job: string, retryMs: number): string {
  const refuser = refusal.name ? `the ResourceQuota ${refusal.name}` : "a LimitRange of the namespace";
  return `${refuser} refused Job ${job}: ${refusal.detail}; tried again in ${Math.round(retryMs / 1000)} s or on the next change`;
}
