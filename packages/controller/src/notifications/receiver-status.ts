/**
 * A receiver's status: when a notification was last delivered, and the last one that was not and why, so an administrator
 * sees a broken receiver on `kubectl get terraformnotificationreceivers`. Written in the background, best effort; a
 * success at most once a minute per receiver (a failure every time: its message is news).
 */
import type { Logger } from "pino";
import type { TerraformNotificationReceiverStatus } from "../api/terraformnotificationreceiver.js";
import type { NotificationResult } from "../metrics/captf-metrics.js";
import type { Clock } from "../runtime/clock.js";
import type { KubeApi, ResourceType } from "../runtime/kube-client.js";

/** A success is written again only after this long. */
export const sentStatusIntervalMillis = 60_000;

export interface DeliveryOutcome {
  receiver: string;
  result: NotificationResult;
  reason: string;
  error?: string | undefined;
  at: number;
}

/** The status merge patch an outcome owes, or undefined for a success written less than a minute ago. Pure. */
export function receiverStatusPatch(
  outcome: DeliveryOutcome,
  lastSentWrittenAt: number | undefined,
): TerraformNotificationReceiverStatus | undefined {
  const time = new Date(outcome.at).toISOString().replace(/\.\d+Z$/, "Z");
  if (outcome.result === "sent")
    return lastSentWrittenAt !== undefined && outcome.at - lastSentWrittenAt < sentStatusIntervalMillis
      ? undefined
      : { lastSentTime: time };
  const message = outcome.error ?? (outcome.result === "dropped" ? "the manager's notification queue was full" : "not delivered");
  return { lastFailure: { time, result: outcome.result, reason: outcome.reason, message: message.slice(0, 1024) } };
}

export interface ReceiverStatusWriter {
  /** Writes the outcome's patch to the receiver's status subresource; a failed write is logged at debug and forgotten. */
  write(outcome: Omit<DeliveryOutcome, "at">): void;
  /** Forgets a deleted receiver: a new one of its name gets its first success written. */
  forget(receiver: string): void;
  /** The receivers whose last written success it remembers. */
  readonly remembered: readonly string[];
}

/** The status writer of the receivers: remembers when it last wrote each one's success, until the receiver is deleted. */
export function receiverStatusWriter(client: KubeApi, type: ResourceType, clock: Clock, logger?: Logger): ReceiverStatusWriter {
  const sentWrittenAt = new Map<string, number>();
  return {
    write(partial) {
      const outcome = { ...partial, at: clock.now() };
      const patch = receiverStatusPatch(outcome, sentWrittenAt.get(outcome.receiver));
      if (!patch) return;
      if (patch.lastSentTime) sentWrittenAt.set(outcome.receiver, outcome.at);
      void client
        .patchStatus(type, undefined, outcome.receiver, { status: patch })
        .catch((error: unknown) =>
          logger?.debug({ receiver: outcome.receiver, error: (error as Error).message }, "receiver status not written"),
        );
    },
    forget: (receiver) => void sentWrittenAt.delete(receiver),
    get remembered() {
      return [...sentWrittenAt.keys()];
    },
  };
}
