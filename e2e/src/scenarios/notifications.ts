// Notifications: TerraformNotificationReceivers declared right after bring-up get, from the installed manager, one
// signed notification for each event of theirs the scenarios in between cause (the plan approval's PlanReady, the
// failing module's JobFailed, the unhealthy machine's ReadyLost, needs-a-person's DestructivePlanBlocked,
// StateUnreadable, DriftDetected, ReadyLost and ReadyRegained): the local webhook checks every signature, the
// notifications match the manager's recorded events one to one, and each of those kinds is among them. A receiver
// that is down is retried and given up (captf_notifications_total failed) while those scenarios pass; neither
// receiver's URL nor the key reaches the manager's log or an event.
import { createHmac, randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, expect, it } from "@jest/globals";
import { waitFor } from "@captf/testkit";
import { managerNamespace } from "../captf-install.js";
import { demoNamespace } from "../demo-objects.js";
import { scenarioTimeout, type Scenario } from "./shared-plane.js";

const receiverApi = { group: "infrastructure.cluster.x-k8s.io", version: "v1alpha1", plural: "terraformnotificationreceivers" };
const receivers = { webhook: "e2e-notify-webhook", down: "e2e-notify-down" };
const secretName = "e2e-notify";
/** What the manager sends by default (docs/notifications.md). */
const defaultReasons = [
  "PlanReady",
  "PlanChanged",
  "DestructivePlanBlocked",
  "DriftDetected",
  "JobFailed",
  "ReadyLost",
  "ReadyRegained",
  "StateUnreadable",
];

/**
 * Each kind the scenarios in between cause, once per transition: every default but PlanChanged (an approved plan that
 * changed under its apply, which no scenario races for).
 */
const requiredReasons = defaultReasons.filter((reason) => reason !== "PlanChanged");

interface Delivered {
  reason: string;
  namespace: string | undefined;
  name: string;
  time: string;
  signed: boolean;
}

/** What the two halves share: the webhook's server and what it got, the canaries, when the receivers took effect. */
const state: {
  server?: Server;
  delivered: Delivered[];
  key: string;
  urlCanary: string;
  since: number;
} = { delivered: [], key: `e2e-notify-key-${randomBytes(8).toString("hex")}`, urlCanary: randomBytes(8).toString("hex"), since: 0 };

async function startWebhook(): Promise<string> {
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const body = Buffer.concat(chunks);
      const expected = `sha256=${createHmac("sha256", state.key).update(body).digest("hex")}`;
      const payload = JSON.parse(body.toString("utf8")) as { reason: string; time: string; object: { namespace?: string; name: string } };
      const signed = request.headers["x-captf-signature"] === expected;
      state.delivered.push({
        reason: payload.reason,
        namespace: payload.object.namespace,
        name: payload.object.name,
        time: payload.time,
        signed,
      });
      response.writeHead(signed ? 204 : 401).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  state.server = server;
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A loopback port nothing listens on: the receiver that is down. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** The sum of a metric's series whose labels include `label` (Prometheus text format). */
function sumOfSeries(metrics: string, name: string, label: string): number {
  return metrics
    .split("\n")
    .filter((line) => line.startsWith(`${name}{`) && line.includes(label))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(" ") + 1)), 0);
}

/** Registered right after bring-up: the receivers, which the manager watches, count for the next scenarios' events. */
export const declareNotificationReceivers: Scenario = (shared) => {
  it(
    "declares notification receivers: a signed webhook on loopback and one that is down",
    async () => {
      const { core, custom } = shared;
      const url = await startWebhook();
      await core.createNamespacedSecret({
        namespace: demoNamespace,
        body: {
          metadata: { name: secretName },
          stringData: {
            url: `${url}/hook/${state.urlCanary}`,
            down: `http://127.0.0.1:${await closedPort()}/down/${state.urlCanary}`,
            secret: state.key,
          },
        },
      });
      const ref = (key: string) => ({ name: secretName, namespace: demoNamespace, key });
      for (const [name, urlKey] of [
        [receivers.webhook, "url"],
        [receivers.down, "down"],
      ] as const) {
        await custom.createClusterCustomObject({
          ...receiverApi,
          body: {
            apiVersion: `${receiverApi.group}/${receiverApi.version}`,
            kind: "TerraformNotificationReceiver",
            metadata: { name },
            spec: { type: "webhook", urlSecretRef: ref(urlKey), signingSecretRef: ref("secret") },
          },
        });
      }
      // The manager watches the receivers: what it records from now on is notified (docs/notifications.md).
      state.since = Date.now();
    },
    scenarioTimeout,
  );
  afterAll(() => void state.server?.close());
};

/** Registered after the scenarios whose transitions it reads (plan approval, failing module, health remediation, needs a person). */
export const notificationsDelivered: Scenario = (shared) => {
  it(
    "delivered one signed notification per recorded event, and gave up on the receiver that is down",
    async () => {
      const { core, custom, events, plane } = shared;
      try {
        expect(state.since).toBeGreaterThan(0);
        // The manager's events of the default reasons since the receivers took effect, as `<reason> <object>`.
        const recorded = async () =>
          (await events.listNamespacedEvent({ namespace: demoNamespace })).items
            .filter(
              (event) =>
                event.reportingController === "captf-manager" &&
                defaultReasons.includes(event.reason ?? "") &&
                new Date(event.eventTime as unknown as string).getTime() >= state.since,
            )
            .map((event) => `${event.reason} ${event.regarding?.name}`)
            .sort();
        const notified = () =>
          state.delivered
            .filter((delivery) => delivery.namespace === demoNamespace && new Date(delivery.time).getTime() >= state.since)
            .map((delivery) => `${delivery.reason} ${delivery.name}`)
            .sort();
        const matched = await waitFor(
          async () => {
            const expected = await recorded();
            return expected.length > 0 && JSON.stringify(notified()) === JSON.stringify(expected) ? expected : undefined;
          },
          120_000,
          "a notification for each recorded event",
        ).catch(async (error: unknown) => {
          throw new Error(`${(error as Error).message}\nrecorded: ${(await recorded()).join(", ")}\nnotified: ${notified().join(", ")}`);
        });
        const reasons = new Set(matched.map((line) => line.split(" ")[0] ?? ""));
        // Each kind of notification, once per transition (needs-a-person.ts causes the ones the other scenarios do not).
        expect([...reasons].filter((reason) => requiredReasons.includes(reason)).sort()).toEqual(requiredReasons.sort());
        expect(state.delivered.every((delivery) => delivery.signed)).toBe(true);

        // Each notification the receiver that is down got: tried 5 times with back-off, then counted failed. The counter is the
        // running manager's: the interrupted-runs scenario replaced the manager's Pod, and its predecessor's queue and counts went
        // with it (docs/notifications.md), so the events this Pod recorded (their reportingInstance) are the ones it must count.
        const runningManager = (await core.listNamespacedPod({ namespace: managerNamespace })).items.find(
          (pod) => pod.status?.phase === "Running" && !pod.metadata?.deletionTimestamp,
        )?.metadata?.name;
        const recordedByRunningManager = (await events.listNamespacedEvent({ namespace: demoNamespace })).items.filter(
          (event) =>
            event.reportingInstance === runningManager &&
            defaultReasons.includes(event.reason ?? "") &&
            new Date(event.eventTime as unknown as string).getTime() >= state.since,
        ).length;
        expect(recordedByRunningManager).toBeGreaterThan(0);
        await waitFor(
          async () =>
            sumOfSeries(await plane.managerMetrics(), "captf_notifications_total", `receiver="${receivers.down}",result="failed"`) >=
            recordedByRunningManager
              ? true
              : undefined,
          120_000,
          `captf_notifications_total{receiver="${receivers.down}",result="failed"} reaching ${recordedByRunningManager}`,
        );
        // The shipped RBAC lets the manager write the receivers' status: why the down one fails, when the webhook last got one.
        type ReceiverStatus = { status?: { lastSentTime?: string; lastFailure?: { result: string; message: string } } };
        const statusOf = async (name: string) => ((await custom.getClusterCustomObject({ ...receiverApi, name })) as ReceiverStatus).status;
        const downFailure = await waitFor(async () => (await statusOf(receivers.down))?.lastFailure, 60_000, "the down receiver's status");
        expect(downFailure).toMatchObject({ result: "failed", message: "the request failed (ECONNREFUSED)" });
        expect((await statusOf(receivers.webhook))?.lastSentTime).toBeDefined();
        const log = await plane.managerLog();
        expect(log).toContain("a notification was not delivered");
        expect(log).not.toContain(state.urlCanary);
        expect(log).not.toContain(state.key);
        const allEvents = JSON.stringify((await events.listNamespacedEvent({ namespace: demoNamespace })).items);
        expect(allEvents).not.toContain(state.urlCanary);
        expect(allEvents).not.toContain(state.key);
      } finally {
        for (const name of Object.values(receivers))
          await custom.deleteClusterCustomObject({ ...receiverApi, name }).catch(() => undefined);
        await core.deleteNamespacedSecret({ name: secretName, namespace: demoNamespace }).catch(() => undefined);
        state.server?.close();
      }
    },
    scenarioTimeout,
  );
};
