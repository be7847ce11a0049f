/**
 * What a notification is (one event the manager recorded) and which receivers it goes to. Pure: the notifier reads the
 * receivers and the namespace's labels, these decide.
 */
import type { ManagerEventReason } from "@captf/contract/api";
import { defaultNotificationReasons, type TerraformNotificationReceiverSpec } from "../api/terraformnotificationreceiver.js";
import { matchesLabels, structuredSelectorRequirements } from "../runtime/label-selector.js";

export interface Notification {
  /** Unique per notification: the webhook's X-Captf-Delivery, the CloudEvent's id (the same across its retries). */
  id: string;
  /** RFC 3339, when the manager recorded the event. */
  time: string;
  reason: ManagerEventReason;
  type: "Normal" | "Warning";
  /** The event's note: names objects and reasons, never secret values. */
  note: string;
  object: { apiVersion: string; kind: string; namespace?: string; name: string; uid?: string };
}

/** A receiver as the notifier reads it. */
export interface Receiver {
  name: string;
  spec: TerraformNotificationReceiverSpec;
}

/** Whether a receiver's reasons and kinds take the notification; the namespace is {@link selectsNamespace}'s. Pure. */
export function selectsEvent(spec: TerraformNotificationReceiverSpec, notification: Pick<Notification, "reason" | "object">): boolean {
  const reasons: readonly string[] = spec.reasons ?? defaultNotificationReasons;
  if (!reasons.includes(notification.reason)) return false;
  return spec.kinds === undefined || (spec.kinds as readonly string[]).includes(notification.object.kind);
}

/** Whether the selector is unset or selects every namespace (no labels needed). Pure. */
export function selectsEveryNamespace(spec: TerraformNotificationReceiverSpec): boolean {
  const selector = spec.namespaceSelector;
  return (
    !selector ||
    ((selector.matchLabels === undefined || Object.keys(selector.matchLabels).length === 0) && !selector.matchExpressions?.length)
  );
}

/**
 * Whether a receiver takes an event of an object in a namespace with these labels; a cluster-scoped object's (namespace
 * undefined) only when the receiver selects every namespace. A selector the API server would refuse selects nothing. Pure.
 */
export function selectsNamespace(
  spec: TerraformNotificationReceiverSpec,
  namespace: string | undefined,
  namespaceLabels: Readonly<Record<string, string>> | undefined,
): boolean {
  if (selectsEveryNamespace(spec)) return true;
  if (namespace === undefined) return false;
  try {
    return matchesLabels(structuredSelectorRequirements(spec.namespaceSelector!), namespaceLabels);
  } catch {
    return false;
  }
}
