/**
 * The act step's signature check of the image a Job is about to run: the verifier's answer as the pass's ImageVerified
 * condition (a refusal is the pass's wait: no Job starts), its event on a change, its metric; the image the Job runs is
 * the verified digest.
 */
import type { ConditionValue } from "../conditions/conditions.js";
import type { EventRecorder, EventSubject } from "../events/event-recorder.js";
import type { CaptfMetrics, MetricKind } from "../metrics/captf-metrics.js";
import type { ImageVerifier } from "./image-verifier.js";
import { verificationEvent, verificationRequeueMs } from "./module-policy.js";

export interface RunImageCheck {
  verifier: ImageVerifier;
  kind: MetricKind;
  namespace: string;
  image: string;
  pullSecrets: readonly string[];
  /** ImageVerified as the status has it: an event only when this check changes it. */
  previous: { reason?: string; message?: string } | undefined;
  events: EventRecorder;
  subject: EventSubject;
  metrics: CaptfMetrics | undefined;
}

const noPolicy: ConditionValue = {
  status: "True",
  reason: "NoPolicy",
  message: "no TerraformModulePolicy governs this namespace: the image runs unverified",
};

export type RunImageVerdict =
  | { image: string; condition: ConditionValue | undefined; refused?: undefined }
  | { refused: { condition: ConditionValue; requeueAfterMs: number }; image?: undefined; condition?: undefined };

/** The image the Job runs (pinned to the verified digest when a policy governs it), or the refusal that holds it. */
export async function checkRunImage(check: RunImageCheck): Promise<RunImageVerdict> {
  const verification = await check.verifier.verify({ namespace: check.namespace, image: check.image, pullSecrets: check.pullSecrets });
  if (verification.kind === "ungoverned")
    // A policy that governed the object before no longer does: the condition says so instead of a stale verdict.
    return { image: check.image, condition: check.previous ? noPolicy : undefined };
  check.metrics?.imageVerifications.inc({ kind: check.kind, result: verification.kind === "verified" ? "verified" : verification.result });
  const event = verificationEvent(verification, check.previous);
  if (event) void check.events.record(check.subject, event.reason, event.note);
  if (verification.kind === "verified") return { image: verification.image, condition: verification.condition };
  return { refused: { condition: verification.condition, requeueAfterMs: verificationRequeueMs(verification) } };
}
