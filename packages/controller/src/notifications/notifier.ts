/**
 * The notifier: a tap on the event recorder hands each event to the receivers that select it, through the bounded
 * {@link DeliveryQueue}. The receivers come from a watch (the manager's informer), the namespace's labels and the
 * receivers' Secrets are read at each use, so a change counts at once. Nothing here waits on a pass: `notify` returns at once.
 * URLs and signing keys never reach a log, an event or a metric: errors name the receiver and the HTTP status or
 * socket error code only.
 */
import { randomUUID } from "node:crypto";
import type { V1Namespace, V1Secret } from "@kubernetes/client-node";
import { managerEventReasons, type ManagerEventReason } from "@captf/contract/api";
import type { Logger } from "pino";
import { resourceTypeOf } from "../api/resource.js";
import { terraformNotificationReceiverDefinition, type TerraformNotificationReceiver } from "../api/terraformnotificationreceiver.js";
import type { EventRecorder, EventSubject } from "../events/event-recorder.js";
import type { CaptfMetrics } from "../metrics/captf-metrics.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import { realClock, type Clock } from "../runtime/clock.js";
import type { Informer } from "../runtime/informer.js";
import type { KubeApi, KubeObject } from "../runtime/kube-client.js";
import { DeliveryQueue, deliveryQueueDefaults, type AttemptOutcome, type DeliveryQueueOptions } from "./delivery-queue.js";
import { selectsEvent, selectsEveryNamespace, selectsNamespace, type Notification, type Receiver } from "./notification.js";
import { notificationRequest, type NotificationRequest } from "./payloads.js";
import { receiverStatusWriter } from "./receiver-status.js";

export const notificationReceiverType = resourceTypeOf(terraformNotificationReceiverDefinition);

/** The receivers as a watch keeps them: the manager's informer of TerraformNotificationReceivers. */
export type ReceiverCache = Pick<Informer<ReceiverObject>, "list" | "addHandlers">;
/** A TerraformNotificationReceiver as the informer caches it. */
export type ReceiverObject = KubeObject & Pick<TerraformNotificationReceiver, "spec">;
/** One try's time limit. */
export const deliveryTimeoutMillis = 10_000;

export type SendRequest = (request: NotificationRequest) => Promise<AttemptOutcome>;

/** A status a later try may change: a timeout, throttling, a server error. */
function retryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/** POSTs with fetch, giving up after `timeoutMillis`; the error names the status or the socket error's code, never the URL. */
export function httpSender(timeoutMillis = deliveryTimeoutMillis): SendRequest {
  return async (request) => {
    try {
      const response = await fetch(request.url, {
        method: "POST",
        headers: request.headers,
        body: request.body,
        redirect: "manual",
        signal: AbortSignal.timeout(timeoutMillis),
      });
      await response.body?.cancel();
      if (response.status >= 200 && response.status < 300) return { ok: true };
      return { ok: false, retry: retryableStatus(response.status), error: `the receiver answered HTTP ${response.status}` };
    } catch (error) {
      const cause = (error as { cause?: { code?: string } }).cause;
      const code = cause?.code ?? (error as Error).name;
      return { ok: false, retry: true, error: `the request failed (${code})` };
    }
  };
}

export interface NotifierOptions {
  client: KubeApi;
  /** The receivers, watched: a new, changed or deleted one counts for the next event. */
  receivers: ReceiverCache;
  logger?: Logger | undefined;
  metrics?: Pick<CaptfMetrics, "notifications"> | undefined;
  clock?: Clock;
  send?: SendRequest;
  queue?: Partial<Omit<DeliveryQueueOptions, "onResult" | "clock">>;
}

export interface Notifier {
  /** Hands the event to the receivers that select it; returns at once. */
  notify(notification: Notification): void;
  /** Resolves once every notification handed over so far is delivered, failed or dropped. */
  idle(): Promise<void>;
}

class SecretValueError extends Error {}

async function secretValue(client: KubeApi, ref: { name: string; namespace: string; key?: string }, defaultKey: string): Promise<Buffer> {
  const key = ref.key ?? defaultKey;
  const secret = await client.get<V1Secret>(builtinTypes.secret, ref.namespace, ref.name).catch(() => undefined);
  const data = secret?.data?.[key];
  if (!data) throw new SecretValueError(`Secret ${ref.namespace}/${ref.name} has no key ${key}`);
  return Buffer.from(data, "base64");
}

/** One try: the URL and key read anew (a rotated Secret is used at once), the request built and sent. */
async function attemptDelivery(
  client: KubeApi,
  send: SendRequest,
  receiver: Receiver,
  notification: Notification,
): Promise<AttemptOutcome> {
  const { spec } = receiver;
  let url: string;
  let signingKey: Buffer | undefined;
  try {
    url = spec.url ?? (await secretValue(client, spec.urlSecretRef!, "url")).toString("utf8").trim();
    signingKey = spec.signingSecretRef ? await secretValue(client, spec.signingSecretRef, "secret") : undefined;
  } catch (error) {
    if (error instanceof SecretValueError) return { ok: false, retry: true, error: error.message };
    throw error;
  }
  if (!/^https?:\/\//.test(url)) return { ok: false, retry: false, error: "the URL Secret's value is no http(s) URL" };
  return send(notificationRequest({ type: spec.type, url, signingKey, cloudEventsMode: spec.cloudEvents?.mode }, notification));
}

/** The notifier on the live API. */
export function receiverNotifier(options: NotifierOptions): Notifier {
  const { client, logger } = options;
  const clock = options.clock ?? realClock;
  const send = options.send ?? httpSender();
  const receivers = (): Receiver[] => options.receivers.list().map((item) => ({ name: item.metadata?.name ?? "", spec: item.spec }));
  const status = receiverStatusWriter(client, notificationReceiverType, clock, logger);
  // A deleted receiver's bookkeeping goes with it.
  options.receivers.addHandlers({ delete: (receiver) => status.forget(receiver.metadata?.name ?? "") });
  const queue = new DeliveryQueue({
    ...deliveryQueueDefaults,
    ...options.queue,
    clock,
    onResult(delivery, result, error) {
      status.write({ receiver: delivery.receiver, result, reason: delivery.reason ?? "", error });
      options.metrics?.notifications.inc({ receiver: delivery.receiver, result });
      if (result !== "sent") logger?.warn({ receiver: delivery.receiver, result, error }, "a notification was not delivered");
    },
  });
  const dispatch = async (notification: Notification) => {
    const selecting = receivers().filter((receiver) => selectsEvent(receiver.spec, notification));
    if (selecting.length === 0) return;
    const namespace = notification.object.namespace;
    const labels =
      namespace && selecting.some((receiver) => !selectsEveryNamespace(receiver.spec))
        ? (await client.get<V1Namespace>(builtinTypes.namespace, undefined, namespace).catch(() => undefined))?.metadata?.labels
        : undefined;
    for (const receiver of selecting) {
      if (!selectsNamespace(receiver.spec, namespace, labels)) continue;
      queue.enqueue({
        receiver: receiver.name,
        reason: notification.reason,
        attempt: () => attemptDelivery(client, send, receiver, notification),
      });
    }
  };
  const dispatching = new Set<Promise<void>>();
  return {
    notify(notification) {
      const done = dispatch(notification)
        .catch((error: unknown) => logger?.warn({ reason: notification.reason, error: (error as Error).message }, "notification skipped"))
        .finally(() => dispatching.delete(done));
      dispatching.add(done);
    },
    async idle() {
      while (dispatching.size > 0) await Promise.all([...dispatching]);
      await queue.idle();
    },
  };
}

/** The notification of one recorded event. */
export function notificationOf(
  subject: EventSubject,
  reason: ManagerEventReason,
  note: string,
  type: "Normal" | "Warning",
  now: number,
): Notification {
  return {
    id: randomUUID(),
    time: new Date(now).toISOString(),
    reason,
    type,
    note,
    object: {
      apiVersion: subject.apiVersion,
      kind: subject.kind,
      ...(subject.namespace ? { namespace: subject.namespace } : {}),
      name: subject.name,
      ...(subject.uid ? { uid: subject.uid } : {}),
    },
  };
}

/** The recorder that also notifies: each event the manager records (once per transition) is one notification. */
export function notifyingRecorder(inner: EventRecorder, notifier: Notifier, clock: Clock = realClock): EventRecorder {
  return {
    record(subject, reason, note, action, type = managerEventReasons[reason]) {
      notifier.notify(notificationOf(subject, reason, note, type, clock.now()));
      return inner.record(subject, reason, note, action, type);
    },
  };
}
