/**
 * The HTTP request of one notification for each receiver type: a signed JSON webhook, a Slack-compatible incoming webhook
 * message, a CloudEvent 1.0 in binary or structured mode. Pure: the URL and signing key are handed in, never kept.
 */
import { createHmac } from "node:crypto";
import type { ReceiverType } from "../api/terraformnotificationreceiver.js";
import type { Notification } from "./notification.js";

/** The header of the webhook's signature: `sha256=<hex HMAC-SHA256 of the body>`. */
export const signatureHeader = "x-captf-signature";
/** The payload's schema version (the webhook's body, the CloudEvent's data). */
export const notificationApiVersion = "notifications.captf.io/v1";
/** The CloudEvent's source: the manager. */
export const cloudEventSource = "/captf-manager";
export const cloudEventTypePrefix = "io.captf.event.";

export interface NotificationRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
}

export interface RequestSettings {
  type: ReceiverType;
  url: string;
  /** The HMAC-SHA256 key: signs the body of any type when set (a webhook receiver always has one). */
  signingKey?: Buffer | undefined;
  cloudEventsMode?: "binary" | "structured" | undefined;
}

/** `sha256=<hex>`: HMAC-SHA256 of the exact body bytes with the key. Pure. */
export function signBody(body: string, key: Buffer): string {
  return `sha256=${createHmac("sha256", key).update(body, "utf8").digest("hex")}`;
}

/** The webhook body and the CloudEvent's data. */
export function notificationData(notification: Notification): Record<string, unknown> {
  return {
    apiVersion: notificationApiVersion,
    id: notification.id,
    time: notification.time,
    reason: notification.reason,
    type: notification.type,
    note: notification.note,
    object: notification.object,
  };
}

function objectName(object: Notification["object"]): string {
  return object.namespace ? `${object.namespace}/${object.name}` : object.name;
}

/** Slack's text escapes only these three (mrkdwn); the note may name `<` or `&` in a reason's words. */
function slackEscape(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/** `[Warning] ReadyLost: TerraformMachine ns/name: <note>` as a Slack-compatible message. */
export function slackMessage(notification: Notification): { text: string } {
  const head = `[${notification.type}] ${notification.reason}: ${notification.object.kind} ${objectName(notification.object)}`;
  return { text: slackEscape(`${head}: ${notification.note}`) };
}

function cloudEventAttributes(notification: Notification): Record<string, string> {
  return {
    specversion: "1.0",
    id: notification.id,
    source: cloudEventSource,
    type: `${cloudEventTypePrefix}${notification.reason}`,
    subject: `${notification.object.kind}/${objectName(notification.object)}`,
    time: notification.time,
  };
}

function bodyAndHeaders(settings: RequestSettings, notification: Notification): { body: string; headers: Record<string, string> } {
  if (settings.type === "slack")
    return { body: JSON.stringify(slackMessage(notification)), headers: { "content-type": "application/json" } };
  if (settings.type === "webhook") {
    return {
      body: JSON.stringify(notificationData(notification)),
      headers: { "content-type": "application/json", "x-captf-event": notification.reason, "x-captf-delivery": notification.id },
    };
  }
  const attributes = cloudEventAttributes(notification);
  if (settings.cloudEventsMode === "structured") {
    const event = { ...attributes, datacontenttype: "application/json", data: notificationData(notification) };
    return { body: JSON.stringify(event), headers: { "content-type": "application/cloudevents+json; charset=utf-8" } };
  }
  const headers = Object.fromEntries(Object.entries(attributes).map(([name, value]) => [`ce-${name}`, value]));
  return { body: JSON.stringify(notificationData(notification)), headers: { ...headers, "content-type": "application/json" } };
}

/** The POST that delivers the notification to a receiver of these settings. Pure. */
export function notificationRequest(settings: RequestSettings, notification: Notification): NotificationRequest {
  const { body, headers } = bodyAndHeaders(settings, notification);
  return {
    url: settings.url,
    headers: {
      ...headers,
      "user-agent": "captf-manager",
      ...(settings.signingKey ? { [signatureHeader]: signBody(body, settings.signingKey) } : {}),
    },
    body,
  };
}
