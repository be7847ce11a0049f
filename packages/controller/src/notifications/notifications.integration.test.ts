import { createHmac, randomBytes } from "node:crypto";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import type * as k8s from "@kubernetes/client-node";
import { noopModuleDirectory } from "@captf/module-noop";
import { stateSecretName, stateSecretSuffix } from "@captf/render";
import { describeWithTools, waitFor } from "@captf/testkit";
import { pino } from "pino";
import { Registry } from "prom-client";
import { clusterAdapter, machineAdapter } from "../kinds/adapters.js";
import { CaptfMetrics } from "../metrics/captf-metrics.js";
import { seriesValue } from "../metrics/series.test-support.js";
import { startJobExecutor, type JobExecutor } from "../reconcile/job-executor.test-support.js";
import { createMachine } from "../reconcile/machine-fixture.test-support.js";
import {
  allJobsFinished,
  createTerraformCluster,
  extendedClusterModule,
  mergePatchOptions,
  planeReconcilerDeps,
  preparePlane,
  type PlaneClients,
} from "../reconcile/plane.test-support.js";
import { reconcileWorkspace, type KindAdapter, type ReconcilerDeps } from "../reconcile/workspace-reconciler.js";
import { Informer } from "../runtime/informer.js";
import { notificationReceiverType, notifyingRecorder, receiverNotifier, type Notifier, type ReceiverObject } from "./notifier.js";

const clusterImage = "registry.invalid/captf/notify-cluster:v1";
const machineImage = "registry.invalid/captf/notify-machine:v1";
const infra = { group: "infrastructure.cluster.x-k8s.io", version: "v1alpha1" };

/** What the webhook's body and the Slack message carry, as far as the test reads them. */
type Payload = { reason: string; object: { name: string }; text: string };

interface Received {
  path: string;
  headers: IncomingMessage["headers"];
  body: string;
}

/** A local HTTP receiver: records each POST; `/hang` never answers (until closed). */
async function startReceiver(): Promise<{ server: Server; url: string; received: Received[]; hanging: ServerResponse[] }> {
  const received: Received[] = [];
  const hanging: ServerResponse[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      received.push({ path: request.url ?? "", headers: request.headers, body: Buffer.concat(chunks).toString("utf8") });
      if (request.url?.startsWith("/hang")) hanging.push(response);
      else response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received, hanging };
}

/** A port nothing listens on: a receiver that is down. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

// Notifications from real passes on the real API server, with the real runner and OpenTofu: the manager's recorder tapped as
// manager-main wires it, TerraformNotificationReceivers read from the API, their URL and key from Secrets, delivered to a local
// HTTP receiver that checks each webhook's signature; one notification per transition, however many passes see it.
describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager", "tofu", "go"], "notifications", () => {
  const id = Date.now().toString(36);
  const namespace = `notify-${id}`;
  const work = mkdtempSync(join(tmpdir(), "captf-notify-"));
  const signingKey = `canary-key-${randomBytes(6).toString("hex")}`;
  const urlCanary = `canary-path-${randomBytes(6).toString("hex")}`;
  const logs: string[] = [];
  const registry = new Registry();
  const metrics = new CaptfMetrics(registry);
  const receiverNames = {
    hook: `hook-${id}`,
    slack: `slack-${id}`,
    ce: `ce-${id}`,
    down: `down-${id}`,
    hang: `hang-${id}`,
    other: `other-${id}`,
  };
  let plane: PlaneClients;
  let executor: JobExecutor;
  let eventsApi: k8s.EventsV1Api;
  let deps: ReconcilerDeps;
  let notifier: Notifier;
  let receiverWatch: Informer<ReceiverObject> | undefined;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let moduleDir = "";
  let skew = 0;

  const createReceiver = (name: string, spec: Record<string, unknown>) =>
    plane.custom.createClusterCustomObject({
      ...infra,
      plural: "terraformnotificationreceivers",
      body: { apiVersion: `${infra.group}/${infra.version}`, kind: "TerraformNotificationReceiver", metadata: { name }, spec },
    });

  beforeAll(async () => {
    plane = await preparePlane(namespace);
    await plane.core.patchNamespace({ name: namespace, body: { metadata: { labels: { notify: "yes" } } } }, mergePatchOptions());
    receiver = await startReceiver();
    const down = `http://127.0.0.1:${await closedPort()}/${urlCanary}`;
    await plane.core.createNamespacedSecret({
      namespace,
      body: {
        metadata: { name: "hook" },
        stringData: { url: `${receiver.url}/hook/${urlCanary}`, secret: signingKey, down, hang: `${receiver.url}/hang/${urlCanary}` },
      },
    });
    const secretRef = (key: string) => ({ name: "hook", namespace, key });
    await createReceiver(receiverNames.hook, {
      type: "webhook",
      urlSecretRef: secretRef("url"),
      signingSecretRef: secretRef("secret"),
      namespaceSelector: { matchLabels: { notify: "yes" } },
    });
    await createReceiver(receiverNames.slack, { type: "slack", url: `${receiver.url}/slack`, kinds: ["TerraformMachine"] });
    await createReceiver(receiverNames.ce, { type: "cloudevents", url: `${receiver.url}/ce`, reasons: ["DriftDetected", "PlanReady"] });
    await createReceiver(receiverNames.down, { type: "webhook", urlSecretRef: secretRef("down"), signingSecretRef: secretRef("secret") });
    await createReceiver(receiverNames.other, {
      type: "slack",
      url: `${receiver.url}/other`,
      namespaceSelector: { matchLabels: { notify: "never" } },
    });

    const logger = pino({ level: "debug" }, new Writable({ write: (chunk, _encoding, done) => done(void logs.push(String(chunk))) }));
    const planeDeps = planeReconcilerDeps(plane, "notifications-test");
    eventsApi = planeDeps.eventsApi;
    // Short back-off and time limit so the receiver that is down gives up within the test.
    // The receivers' watch, as the manager's informer keeps them.
    receiverWatch = new Informer<ReceiverObject>({
      client: plane.client,
      type: notificationReceiverType,
      logger: pino({ level: "silent" }),
    });
    receiverWatch.start();
    expect(await receiverWatch.waitForSync(30_000)).toBe(true);
    notifier = receiverNotifier({
      client: plane.client,
      receivers: receiverWatch,
      logger,
      metrics,
      queue: { baseBackoffMillis: 200, maxBackoffMillis: 400, maxAttempts: 3, concurrency: 8 },
    });
    deps = {
      ...planeDeps.deps,
      events: notifyingRecorder(planeDeps.deps.events!, notifier),
      metrics,
      logger,
      now: () => Date.now() + skew,
    };

    // The no-op cluster module: `generation` replaces a resource (a destructive plan), `fail` fails the plan, `note` changes one
    // in place (a plan to approve), a marker file in the module's own (temporary) directory changes one (drift).
    moduleDir = extendedClusterModule("captf-notify-module-", {
      "notify.tf": [
        'variable "generation" {\n  type    = string\n  default = "1"\n}\n\n',
        'variable "fail" {\n  type    = string\n  default = "no"\n}\n\n',
        'variable "note" {\n  type    = string\n  default = ""\n}\n\n',
        'resource "terraform_data" "replaced" {\n  triggers_replace = var.generation\n}\n\n',
        'resource "terraform_data" "noted" {\n  input = var.note\n}\n\n',
        'resource "terraform_data" "marked" {\n  input = fileexists("${path.module}/marker-${var.captf_object.name}")\n}\n\n',
        'resource "terraform_data" "check" {\n  lifecycle {\n    precondition {\n      condition     = var.fail != "yes"\n',
        '      error_message = "the test asked this plan to fail"\n    }\n  }\n}\n',
      ].join(""),
    });
    // The no-op machine module whose health a marker file sets.
    const machineDir = join(work, "machine");
    cpSync(noopModuleDirectory("machine"), machineDir, { recursive: true });
    const outputs = join(machineDir, "outputs.tf");
    const health = `"\${path.module}/../health-\${var.machine_name}"`;
    const original = readFileSync(outputs, "utf8");
    const edited = original.replace(
      "value = local.observed_health != null",
      `value = fileexists(${health}) ? jsondecode(file(${health})) : local.observed_health != null`,
    );
    if (edited === original) throw new Error("the no-op machine module's health output changed");
    writeFileSync(outputs, edited);
    executor = startJobExecutor({
      kubeconfigPath: plane.kubeconfigPath,
      namespace,
      modules: { [clusterImage]: moduleDir, [machineImage]: machineDir },
    });
  }, 180_000);

  afterAll(async () => {
    await receiverWatch?.stop();
    executor?.close();
    for (const response of receiver?.hanging ?? []) response.destroy();
    receiver?.server.close();
    for (const name of Object.values(receiverNames))
      await plane?.custom.deleteClusterCustomObject({ ...infra, plural: "terraformnotificationreceivers", name }).catch(() => undefined);
    rmSync(work, { recursive: true, force: true });
    if (moduleDir) rmSync(moduleDir, { recursive: true, force: true });
  });

  const runJobs = () => allJobsFinished(plane.batch, namespace, executor);
  const pass = async (adapter: KindAdapter<any>, name: string, ahead = 0) => {
    skew = ahead;
    try {
      return (await reconcileWorkspace(deps, adapter, namespace, name)).action;
    } finally {
      skew = 0;
    }
  };
  /** Passes, each followed by the Jobs it started, until nothing is due. */
  async function settle(adapter: KindAdapter<any>, name: string): Promise<void> {
    const actions: string[] = [];
    for (let round = 0; round < 10; round++) {
      actions.push(await pass(adapter, name));
      if (actions.at(-1) === "UpToDate") return;
      await runJobs();
    }
    throw new Error(`${name} did not settle: ${actions.join(" | ")}`);
  }
  const patchCluster = (name: string, body: Record<string, unknown>) =>
    plane.custom.patchNamespacedCustomObject({ ...infra, namespace, plural: "terraformclusters", name, body }, mergePatchOptions());
  /** `<reason> <object>` of each notification a path got, sorted. */
  const seen = (path: string, describe: (body: Payload) => string) =>
    receiver.received
      .filter((request) => request.path.startsWith(path))
      .map((request) => describe(JSON.parse(request.body) as Payload))
      .sort();

  it("each kind of notification once per transition, to the receivers that select it, signed; a receiver that is down " +
    "retries and gives up without holding a pass; no URL or key in a log or an event", async () => {
    // Provisioned objects: their first Ready is no notification.
    await createMachine(plane, namespace, "m", machineImage);
    await settle(machineAdapter, "m");
    for (const name of ["blocked", "failing", "drifting", "manual", "corrupt"]) {
      await createTerraformCluster(plane, namespace, name, {
        source: { image: clusterImage },
        ...(name === "drifting" ? { drift: { intervalSeconds: 60, action: "Report" } } : {}),
        ...(name === "manual" ? { applyPolicy: "Manual" } : {}),
      });
      await settle(clusterAdapter, name);
    }

    // Ready lost, then regained (the machine's health); a second pass over each reading notifies nothing more.
    writeFileSync(join(work, "health-m"), JSON.stringify({ state: "running", healthy: false, message: "disk failing", reasons: [] }));
    expect(await pass(machineAdapter, "m", 40 * 60_000)).toMatch(/^started drift/);
    await runJobs();
    await pass(machineAdapter, "m");
    await pass(machineAdapter, "m");
    rmSync(join(work, "health-m"));
    expect(await pass(machineAdapter, "m", 40 * 60_000)).toMatch(/^started drift/);
    await runJobs();
    await pass(machineAdapter, "m");
    await pass(machineAdapter, "m");

    // A destructive plan blocked; a Job failed; drift found; a plan awaiting approval; a state that cannot be read.
    await patchCluster("blocked", { spec: { variables: { generation: "2" } } });
    await patchCluster("failing", { spec: { variables: { fail: "yes" } } });
    await patchCluster("manual", { spec: { variables: { note: "approve me" } } });
    writeFileSync(join(moduleDir, "marker-drifting"), "");
    expect(await pass(clusterAdapter, "blocked")).toMatch(/^started apply/);
    expect(await pass(clusterAdapter, "failing")).toMatch(/^started apply/);
    expect(await pass(clusterAdapter, "manual")).toMatch(/^started plan/);
    expect(await pass(clusterAdapter, "drifting", 2 * 60_000)).toMatch(/^started drift/);
    await runJobs();
    const suffix = stateSecretSuffix({ role: "cluster", namespace, name: "corrupt" });
    const state = await plane.core.readNamespacedSecret({ name: stateSecretName(suffix), namespace });
    state.data!.tfstate = Buffer.from("not gzip").toString("base64");
    await plane.core.replaceNamespacedSecret({ name: stateSecretName(suffix), namespace, body: state });
    // Passes until each transition's event is recorded (a pass may still wait on a lease under load), then one more that finds
    // nothing new.
    const transitions: [string, string][] = [
      ["blocked", "DestructivePlanBlocked"],
      ["failing", "JobFailed"],
      ["manual", "PlanReady"],
      ["drifting", "DriftDetected"],
      ["corrupt", "StateUnreadable"],
    ];
    for (const [name, reason] of transitions) {
      await waitFor(
        async () => {
          await pass(clusterAdapter, name);
          return (await eventsApi.listNamespacedEvent({ namespace })).items.some(
            (event) => event.regarding?.name === name && event.reason === reason,
          )
            ? true
            : undefined;
        },
        120_000,
        `${reason} on ${name}`,
      );
      await pass(clusterAdapter, name);
    }

    // The pass that recorded ReadyLost did not wait for the hanging receiver, whose request is still open after it.
    // A receiver declared now takes the next event: the watch brings it, no list to wait for.
    await createReceiver(receiverNames.hang, { type: "slack", urlSecretRef: { name: "hook", namespace, key: "hang" } });
    await waitFor(async () => receiverWatch!.get(undefined, receiverNames.hang), 10_000, "the hanging receiver in the watch");
    writeFileSync(join(work, "health-m"), JSON.stringify({ state: "running", healthy: false, message: "again", reasons: [] }));
    expect(await pass(machineAdapter, "m", 40 * 60_000)).toMatch(/^started drift/);
    await runJobs();
    await pass(machineAdapter, "m");
    await waitFor(async () => (receiver.received.some((request) => request.path.startsWith("/hang")) ? true : undefined), 30_000);
    expect(receiver.hanging).toHaveLength(1);
    expect(receiver.hanging[0]!.writableEnded).toBe(false);
    for (const response of receiver.hanging) response.writeHead(204).end();
    await notifier.idle();

    const hook = receiver.received.filter((request) => request.path.startsWith("/hook/"));
    for (const request of hook) {
      const expected = `sha256=${createHmac("sha256", signingKey).update(request.body).digest("hex")}`;
      expect(request.headers["x-captf-signature"]).toBe(expected);
    }
    expect(seen("/hook/", (body) => `${body.reason} ${body.object.name}`)).toEqual([
      "DestructivePlanBlocked blocked",
      "DriftDetected drifting",
      "JobFailed failing",
      "PlanReady manual",
      "ReadyLost m",
      "ReadyLost m",
      "ReadyRegained m",
      "StateUnreadable corrupt",
    ]);
    expect(seen("/slack", (body) => body.text.split(":")[0] ?? "")).toEqual([
      "[Normal] ReadyRegained",
      "[Warning] ReadyLost",
      "[Warning] ReadyLost",
    ]);
    const cloudEvents = receiver.received.filter((request) => request.path === "/ce");
    expect(cloudEvents.map((request) => `${request.headers["ce-type"]} ${request.headers["ce-subject"]}`).sort()).toEqual([
      `io.captf.event.DriftDetected TerraformCluster/${namespace}/drifting`,
      `io.captf.event.PlanReady TerraformCluster/${namespace}/manual`,
    ]);
    expect(receiver.received.filter((request) => request.path === "/other")).toEqual([]);
    expect(await seriesValue(registry, "captf_notifications_total", { receiver: receiverNames.hook, result: "sent" })).toBe(8);
    expect(await seriesValue(registry, "captf_notifications_total", { receiver: receiverNames.down, result: "failed" })).toBe(8);
    expect(await seriesValue(registry, "captf_notifications_total", { receiver: receiverNames.hang, result: "sent" })).toBe(1);

    // The receiver that is down: each notification tried 3 times, then given up, logged by receiver and error code only.
    const failures = logs.filter((line) => line.includes("a notification was not delivered")).map((line) => JSON.parse(line) as unknown);
    expect(failures).toHaveLength(8);
    expect(failures[0]).toMatchObject({ receiver: receiverNames.down, result: "failed", error: "the request failed (ECONNREFUSED)" });
    // The receivers' status: the last delivery, and why the last one failed (no URL).
    const statusOf = async (name: string) =>
      (
        (await plane.custom.getClusterCustomObject({ ...infra, plural: "terraformnotificationreceivers", name })) as {
          status?: { lastSentTime?: string; lastFailure?: { result: string; reason: string; message: string } };
        }
      ).status;
    const downFailure = await waitFor(async () => (await statusOf(receiverNames.down))?.lastFailure, 10_000, "the down receiver's status");
    expect(downFailure).toEqual({
      time: expect.any(String),
      result: "failed",
      reason: "ReadyLost",
      message: "the request failed (ECONNREFUSED)",
    });
    expect(await statusOf(receiverNames.hook)).toEqual({ lastSentTime: expect.any(String) });
    const events = JSON.stringify((await eventsApi.listNamespacedEvent({ namespace })).items);
    const statuses = JSON.stringify(await Promise.all(Object.values(receiverNames).map(statusOf)));
    for (const canary of [signingKey, urlCanary]) {
      expect(statuses).not.toContain(canary);
      expect(logs.join("")).not.toContain(canary);
      expect(events).not.toContain(canary);
    }
  }, 600_000);
});
