import { createHmac } from "node:crypto";
import { describe, expect, it } from "@jest/globals";
import { Registry } from "prom-client";
import type { TerraformNotificationReceiverSpec } from "../api/terraformnotificationreceiver.js";
import { CaptfMetrics } from "../metrics/captf-metrics.js";
import { seriesValue } from "../metrics/series.test-support.js";
import { FakeClock, flushPromises } from "../runtime/clock.test-support.js";
import { fakeClient } from "../runtime/fake-client.test-support.js";
import { fakeInformer } from "../runtime/read-cache.test-support.js";
import { DeliveryQueue, type AttemptOutcome, type Delivery } from "./delivery-queue.js";
import { selectsEvent, selectsNamespace, type Notification } from "./notification.js";
import { notificationReceiverType, notifyingRecorder, receiverNotifier, type ReceiverCache, type SendRequest } from "./notifier.js";
import { notificationRequest, signBody, slackMessage } from "./payloads.js";
import { receiverStatusPatch, receiverStatusWriter } from "./receiver-status.js";
import type { NotificationResult } from "../metrics/captf-metrics.js";
import type { NotificationRequest } from "./payloads.js";

const notification: Notification = {
  id: "0b6c7c8e-1111-4222-8333-944445555666",
  time: "2026-12-07T15:00:00.000Z",
  reason: "ReadyLost",
  type: "Warning",
  note: "Ready was lost: Ready is False (NotReady), was True (Ready) <&>",
  object: { apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1", kind: "TerraformMachine", namespace: "team-a", name: "m-1", uid: "u1" },
};
const spec = (fields: Partial<TerraformNotificationReceiverSpec> = {}): TerraformNotificationReceiverSpec => ({
  type: "webhook",
  url: "http://receiver.example/hook",
  ...fields,
});

describe("which receivers take an event", () => {
  it("the reasons that need a person by default; a receiver's own reasons and kinds otherwise", () => {
    expect(selectsEvent(spec(), notification)).toBe(true);
    for (const reason of ["PlanReady", "DestructivePlanBlocked", "DriftDetected", "JobFailed", "ReadyRegained", "StateUnreadable"] as const)
      expect(selectsEvent(spec(), { ...notification, reason })).toBe(true);
    expect(selectsEvent(spec(), { ...notification, reason: "JobCreated" })).toBe(false);
    expect(selectsEvent(spec({ reasons: ["JobCreated"] }), { ...notification, reason: "JobCreated" })).toBe(true);
    expect(selectsEvent(spec({ reasons: ["JobCreated"] }), notification)).toBe(false);
    expect(selectsEvent(spec({ kinds: ["TerraformCluster"] }), notification)).toBe(false);
    expect(selectsEvent(spec({ kinds: ["TerraformCluster", "TerraformMachine"] }), notification)).toBe(true);
  });

  it("namespaces by their labels; a cluster-scoped object's events only with no selector; a broken selector selects nothing", () => {
    const selected = spec({ namespaceSelector: { matchLabels: { team: "a" } } });
    expect(selectsNamespace(spec(), "team-a", undefined)).toBe(true);
    expect(selectsNamespace(spec({ namespaceSelector: {} }), undefined, undefined)).toBe(true);
    expect(selectsNamespace(selected, "team-a", { team: "a" })).toBe(true);
    expect(selectsNamespace(selected, "team-b", { team: "b" })).toBe(false);
    expect(selectsNamespace(selected, undefined, undefined)).toBe(false);
    const expressions = spec({ namespaceSelector: { matchExpressions: [{ key: "team", operator: "In", values: ["a", "c"] }] } });
    expect(selectsNamespace(expressions, "team-c", { team: "c" })).toBe(true);
    const broken = spec({ namespaceSelector: { matchExpressions: [{ key: "team", operator: "Bogus" }] } });
    expect(selectsNamespace(broken, "team-a", { team: "a" })).toBe(false);
  });
});

describe("payloads", () => {
  const key = Buffer.from("canary-signing-key-5f1e");

  it("webhook: the JSON payload, signed with HMAC-SHA256 over the exact body", () => {
    const request = notificationRequest({ type: "webhook", url: "http://r/hook", signingKey: key }, notification);
    const expected = `sha256=${createHmac("sha256", key).update(request.body).digest("hex")}`;
    expect(request.headers["x-captf-signature"]).toBe(expected);
    expect(signBody(request.body, key)).toBe(expected);
    expect(request.headers["x-captf-event"]).toBe("ReadyLost");
    expect(request.headers["content-type"]).toBe("application/json");
    expect(JSON.parse(request.body)).toEqual({
      apiVersion: "notifications.captf.io/v1",
      id: notification.id,
      time: notification.time,
      reason: "ReadyLost",
      type: "Warning",
      note: notification.note,
      object: notification.object,
    });
    // The key is in no header and not in the body.
    expect(JSON.stringify(request)).not.toContain(key.toString());
  });

  it("slack: {text} naming type, reason and object, with &, < and > escaped; unsigned without a key", () => {
    expect(slackMessage(notification)).toEqual({
      text: "[Warning] ReadyLost: TerraformMachine team-a/m-1: Ready was lost: Ready is False (NotReady), was True (Ready) &lt;&amp;&gt;",
    });
    const request = notificationRequest({ type: "slack", url: "https://hooks.example/T/B/x" }, notification);
    expect(JSON.parse(request.body)).toEqual(slackMessage(notification));
    expect(request.headers["x-captf-signature"]).toBeUndefined();
  });

  it("cloudevents: binary mode puts the attributes in ce-* headers, structured mode in one application/cloudevents+json body", () => {
    const binary = notificationRequest({ type: "cloudevents", url: "http://r/ce" }, notification);
    expect(binary.headers).toMatchObject({
      "ce-specversion": "1.0",
      "ce-id": notification.id,
      "ce-source": "/captf-manager",
      "ce-type": "io.captf.event.ReadyLost",
      "ce-subject": "TerraformMachine/team-a/m-1",
      "ce-time": notification.time,
      "content-type": "application/json",
    });
    expect(JSON.parse(binary.body)).toMatchObject({ reason: "ReadyLost" });
    const structured = notificationRequest({ type: "cloudevents", url: "http://r/ce", cloudEventsMode: "structured" }, notification);
    expect(structured.headers["content-type"]).toBe("application/cloudevents+json; charset=utf-8");
    expect(structured.headers["ce-id"]).toBeUndefined();
    expect(JSON.parse(structured.body)).toMatchObject({
      specversion: "1.0",
      id: notification.id,
      type: "io.captf.event.ReadyLost",
      datacontenttype: "application/json",
      data: { object: { name: "m-1" } },
    });
  });
});

/** A queue on a fake clock whose deliveries answer from a script, and what ended how. */
function scriptedQueue(
  options: { capacity?: number; receiverCapacity?: number; maxAttempts?: number; concurrency?: number; receiverConcurrency?: number } = {},
) {
  const clock = new FakeClock();
  const results: { receiver: string; result: NotificationResult; error?: string | undefined }[] = [];
  const queue = new DeliveryQueue({
    capacity: options.capacity ?? 10,
    receiverCapacity: options.receiverCapacity ?? options.capacity ?? 10,
    concurrency: options.concurrency ?? 2,
    receiverConcurrency: options.receiverConcurrency ?? 2,
    maxAttempts: options.maxAttempts ?? 5,
    baseBackoffMillis: 1000,
    maxBackoffMillis: 4000,
    clock,
    onResult: (delivery, result, error) => results.push({ receiver: delivery.receiver, result, error }),
  });
  const delivery = (receiver: string, answers: AttemptOutcome[], tries: number[] = []): Delivery => ({
    receiver,
    attempt: async () => {
      tries.push(clock.now());
      return answers.shift() ?? { ok: false, retry: true, error: "HTTP 503" };
    },
  });
  return { clock, queue, results, delivery };
}

describe("DeliveryQueue", () => {
  it("retries with exponential back-off capped, then gives up as failed with the last error", async () => {
    const { clock, queue, results, delivery } = scriptedQueue();
    const tries: number[] = [];
    const start = clock.now();
    queue.enqueue(delivery("down", [], tries));
    await flushPromises();
    await clock.advance(60_000);
    // 5 tries: waits 1 s, 2 s, 4 s, 4 s (capped).
    expect(tries.map((at) => at - start)).toEqual([0, 1000, 3000, 7000, 11_000]);
    expect(results).toEqual([{ receiver: "down", result: "failed", error: "HTTP 503" }]);
    expect(queue.size).toBe(0);
  });

  it("sent once a retry succeeds; a refusal that cannot change fails at once; a throw counts as retryable", async () => {
    const { clock, queue, results, delivery } = scriptedQueue();
    queue.enqueue(delivery("flaky", [{ ok: false, retry: true, error: "HTTP 502" }, { ok: true }]));
    queue.enqueue(delivery("refusing", [{ ok: false, retry: false, error: "HTTP 404" }]));
    queue.enqueue({
      receiver: "throwing",
      attempt: (() => {
        let calls = 0;
        return async (): Promise<AttemptOutcome> => {
          if (calls++ === 0) throw new Error("boom");
          return { ok: true };
        };
      })(),
    });
    await flushPromises();
    await clock.advance(10_000);
    expect(results).toEqual(
      expect.arrayContaining([
        { receiver: "flaky", result: "sent", error: undefined },
        { receiver: "refusing", result: "failed", error: "HTTP 404" },
        { receiver: "throwing", result: "sent", error: undefined },
      ]),
    );
    expect(results).toHaveLength(3);
  });

  it("drops what comes while it holds its capacity (in flight or between retries), and takes more once one ends", async () => {
    const { clock, queue, results, delivery } = scriptedQueue({ capacity: 2, maxAttempts: 2 });
    expect(queue.enqueue(delivery("a", []))).toBe(true);
    expect(queue.enqueue(delivery("b", []))).toBe(true);
    expect(queue.enqueue(delivery("c", []))).toBe(false);
    expect(results).toEqual([{ receiver: "c", result: "dropped", error: "the manager's notification queue was full" }]);
    await flushPromises();
    await clock.advance(1000);
    expect(results.map((r) => `${r.receiver} ${r.result}`)).toEqual(["c dropped", "a failed", "b failed"]);
    expect(queue.enqueue(delivery("d", [{ ok: true }]))).toBe(true);
    await clock.advance(0);
    expect(results.at(-1)).toEqual({ receiver: "d", result: "sent", error: undefined });
  });

  it("a receiver that hangs holds its own slots only: another receiver's deliveries, queued behind, still go", async () => {
    const { queue, results, delivery } = scriptedQueue({ concurrency: 3, receiverConcurrency: 2 });
    const hung = () => ({ receiver: "hung", attempt: () => new Promise<AttemptOutcome>(() => undefined) });
    for (let index = 0; index < 5; index++) queue.enqueue(hung());
    queue.enqueue(delivery("healthy", [{ ok: true }]));
    queue.enqueue(delivery("healthy", [{ ok: true }]));
    await flushPromises();
    expect(results).toEqual([
      { receiver: "healthy", result: "sent", error: undefined },
      { receiver: "healthy", result: "sent", error: undefined },
    ]);
    expect(queue.size).toBe(5);
  });

  it("a receiver that hangs holds at most its share of the queue: more of its own are dropped, the others' still taken", async () => {
    const { clock, queue, results, delivery } = scriptedQueue({ capacity: 8, receiverCapacity: 2, concurrency: 4 });
    const hung = () => ({ receiver: "hung", attempt: () => new Promise<AttemptOutcome>(() => undefined) });
    const taken = Array.from({ length: 10 }, () => queue.enqueue(hung()));
    expect(taken.filter(Boolean)).toHaveLength(2);
    expect(results).toHaveLength(8);
    expect(results[0]).toEqual({
      receiver: "hung",
      result: "dropped",
      error: "the receiver's share of the notification queue (2) was full",
    });
    // The other receivers' deliveries fit in the rest of the queue, retried as usual.
    const tries: number[] = [];
    for (let index = 0; index < 2; index++)
      expect(queue.enqueue(delivery("flaky", [{ ok: false, retry: true, error: "HTTP 503" }, { ok: true }], tries))).toBe(true);
    expect(queue.enqueue(delivery("healthy", [{ ok: true }]))).toBe(true);
    await flushPromises();
    await clock.advance(1000);
    expect(results.slice(8).map((r) => `${r.receiver} ${r.result}`)).toEqual(["healthy sent", "flaky sent", "flaky sent"]);
    expect(tries).toHaveLength(4);
    expect(queue.size).toBe(2);
  });

  it("never makes enqueue wait: a delivery that hangs holds a slot, not the caller", async () => {
    const { queue, delivery } = scriptedQueue({ concurrency: 1 });
    queue.enqueue({ receiver: "hung", attempt: () => new Promise<AttemptOutcome>(() => undefined) });
    expect(queue.enqueue(delivery("next", [{ ok: true }]))).toBe(true);
    expect(queue.size).toBe(2);
  });
});

describe("receiverNotifier", () => {
  const receiver = (name: string, fields: Partial<TerraformNotificationReceiverSpec>) => ({ metadata: { name }, spec: spec(fields) });
  /** The receivers' watch, holding `receivers`. */
  const watched = (...receivers: ReturnType<typeof receiver>[]) => {
    const informer = fakeInformer();
    for (const object of receivers) informer.put(object);
    return { informer, cache: informer as unknown as ReceiverCache };
  };
  const secret = (data: Record<string, string>) => ({
    data: Object.fromEntries(Object.entries(data).map(([key, value]) => [key, Buffer.from(value).toString("base64")])),
  });

  it("sends each recorded event to the receivers that select it, URL and key from Secrets; counts it; records the event too", async () => {
    const clock = new FakeClock();
    const sent: NotificationRequest[] = [];
    const statusPatches: unknown[] = [];
    const send: SendRequest = async (request) => {
      sent.push(request);
      return { ok: true };
    };
    const { cache } = watched(
      receiver("ops", {
        url: undefined,
        urlSecretRef: { name: "hook", namespace: "captf-system" },
        signingSecretRef: { name: "hook", namespace: "captf-system" },
        namespaceSelector: { matchLabels: { team: "a" } },
      }),
      receiver("clusters-only", { kinds: ["TerraformCluster"] }),
    );
    const client = fakeClient({
      "get secrets": () => secret({ url: "http://canary-host.example/hook-canary-path", secret: "canary-key" }),
      "get namespaces": () => ({ metadata: { name: "team-a", labels: { team: "a" } } }),
      "patchStatus terraformnotificationreceivers": (call) => void statusPatches.push({ name: call.name, body: call.body }),
    });
    const registry = new Registry();
    const metrics = new CaptfMetrics(registry);
    const notifier = receiverNotifier({ client, receivers: cache, metrics, clock, send });
    const recorded: string[] = [];
    const recorder = notifyingRecorder({ record: async (_subject, reason) => void recorded.push(reason) }, notifier, clock);
    const subject = { ...notification.object, uid: "u1" };
    await recorder.record(subject, "ReadyLost", "Ready was lost");
    await recorder.record(subject, "JobCreated", "started apply");
    await notifier.idle();
    expect(recorded).toEqual(["ReadyLost", "JobCreated"]);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.url).toBe("http://canary-host.example/hook-canary-path");
    expect(sent[0]!.headers["x-captf-signature"]).toBe(signBody(sent[0]!.body, Buffer.from("canary-key")));
    expect(await seriesValue(registry, "captf_notifications_total", { receiver: "ops", result: "sent" })).toBe(1);
    expect(statusPatches).toEqual([{ name: "ops", body: { status: { lastSentTime: "2023-11-14T22:13:20Z" } } }]);
    // The receivers come from the watch: never listed per event.
    expect(client.calls.filter((call) => call.startsWith("list"))).toEqual([]);
  });

  it("a receiver the watch adds takes the next event at once; one it deletes takes none, and its last success is forgotten", async () => {
    const clock = new FakeClock();
    const sent: string[] = [];
    const statusPatches: string[] = [];
    const client = fakeClient({
      "patchStatus terraformnotificationreceivers": (call) => void statusPatches.push(String(call.name)),
    });
    const { informer, cache } = watched();
    const notifier = receiverNotifier({
      client,
      receivers: cache,
      clock,
      send: async (request) => {
        sent.push(request.url);
        return { ok: true };
      },
    });
    notifier.notify(notification);
    await notifier.idle();
    expect(sent).toEqual([]);
    informer.put(receiver("ops", { url: "http://receiver.example/ops" }));
    notifier.notify(notification);
    await notifier.idle();
    expect(sent).toEqual(["http://receiver.example/ops"]);
    informer.remove("ops");
    notifier.notify(notification);
    await notifier.idle();
    expect(sent).toHaveLength(1);
    // Declared again within the minute: a new object, whose first success is written.
    informer.put(receiver("ops", { url: "http://receiver.example/ops" }));
    notifier.notify(notification);
    await notifier.idle();
    expect(sent).toHaveLength(2);
    expect(statusPatches).toEqual(["ops", "ops"]);
  });

  it("a receiver whose URL Secret is missing retries, then fails, naming the Secret and not its value", async () => {
    const clock = new FakeClock();
    const warnings: unknown[] = [];
    const logger = { warn: (fields: unknown) => warnings.push(fields), debug: () => undefined } as never;
    const client = fakeClient({ "get secrets": () => Promise.reject(new Error("404")) });
    const { cache } = watched(receiver("ops", { url: undefined, urlSecretRef: { name: "gone", namespace: "x" } }));
    const registry = new Registry();
    const notifier = receiverNotifier({
      client,
      receivers: cache,
      clock,
      logger,
      metrics: new CaptfMetrics(registry),
      send: async () => ({ ok: true }),
    });
    notifier.notify(notification);
    for (let wait = 0; wait < 10; wait++) {
      await flushPromises();
      await clock.advance(30_000);
    }
    await notifier.idle();
    expect(await seriesValue(registry, "captf_notifications_total", { receiver: "ops", result: "failed" })).toBe(1);
    expect(warnings).toEqual([{ receiver: "ops", result: "failed", error: "Secret x/gone has no key url" }]);
  });

  it("counts a drop when the queue is full", async () => {
    const clock = new FakeClock();
    const client = fakeClient({});
    const registry = new Registry();
    const notifier = receiverNotifier({
      client,
      receivers: watched(receiver("slow", {})).cache,
      clock,
      metrics: new CaptfMetrics(registry),
      send: () => new Promise<AttemptOutcome>(() => undefined),
      queue: { capacity: 1 },
    });
    notifier.notify(notification);
    notifier.notify({ ...notification, id: "second" });
    await clock.advance(0);
    expect(await seriesValue(registry, "captf_notifications_total", { receiver: "slow", result: "dropped" })).toBe(1);
  });
});

describe("receiverStatusWriter", () => {
  it("remembers a receiver's last written success until it is deleted: a new receiver of its name gets its first one written", async () => {
    const clock = new FakeClock();
    const patched: string[] = [];
    const client = fakeClient({ "patchStatus terraformnotificationreceivers": (call) => void patched.push(String(call.name)) });
    const writer = receiverStatusWriter(client, notificationReceiverType, clock);
    const sent = (receiver: string) => writer.write({ receiver, result: "sent", reason: "ReadyLost" });
    sent("ops");
    sent("dev");
    await clock.advance(10_000);
    sent("ops");
    expect(patched).toEqual(["ops", "dev"]);
    expect([...writer.remembered].sort()).toEqual(["dev", "ops"]);
    writer.forget("ops");
    expect(writer.remembered).toEqual(["dev"]);
    sent("ops");
    expect(patched).toEqual(["ops", "dev", "ops"]);
  });
});

describe("receiverStatusPatch", () => {
  const at = Date.parse("2026-12-07T15:00:00Z");
  it("a success's time, again only a minute after the last one written; each failure with its reason and message", () => {
    expect(receiverStatusPatch({ receiver: "r", result: "sent", reason: "JobFailed", at }, undefined)).toEqual({
      lastSentTime: "2026-12-07T15:00:00Z",
    });
    expect(receiverStatusPatch({ receiver: "r", result: "sent", reason: "JobFailed", at: at + 59_000 }, at)).toBeUndefined();
    expect(receiverStatusPatch({ receiver: "r", result: "sent", reason: "JobFailed", at: at + 60_000 }, at)).toEqual({
      lastSentTime: "2026-12-07T15:01:00Z",
    });
    expect(
      receiverStatusPatch({ receiver: "r", result: "failed", reason: "ReadyLost", error: "the receiver answered HTTP 404", at }, at),
    ).toEqual({
      lastFailure: { time: "2026-12-07T15:00:00Z", result: "failed", reason: "ReadyLost", message: "the receiver answered HTTP 404" },
    });
    expect(receiverStatusPatch({ receiver: "r", result: "dropped", reason: "PlanReady", at }, undefined)).toEqual({
      lastFailure: {
        time: "2026-12-07T15:00:00Z",
        result: "dropped",
        reason: "PlanReady",
        message: "the manager's notification queue was full",
      },
    });
  });
});
