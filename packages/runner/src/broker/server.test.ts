import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "@jest/globals";
import type { EventRecorder } from "../events.js";
import { readBrokerEndpoint, waitForBroker } from "./connection.js";
import { brokerScope } from "./policy.js";
import { brokerWarmUpUserAgent, startBroker, type RunningBroker } from "./server.js";

// The broker against a stand-in API server on loopback: what reaches it, with which credential.
const object = {
  apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
  kind: "TerraformMachine",
  namespace: "team-a",
  name: "m-1",
  uid: "u-1",
};
const scope = brokerScope(object, "abc-m");
const state = scope.stateSecret;
const jobToken = "job-service-account-token";

/** What reached the stand-in, less the broker's own warm-up request. */
const forwarded = () => seen.filter((request) => request.userAgent !== brokerWarmUpUserAgent);

interface Seen {
  method: string;
  url: string;
  authorization: string | undefined;
  userAgent: string | undefined;
  body: string;
}

let dir: string;
let upstream: Server;
let upstreamUrl: string;
let seen: Seen[];
let events: { type: string; reason: string; note: string }[];
let broker: RunningBroker | undefined;
let logs: { level: string; message: string; fields?: Record<string, unknown> }[];

const recorder: EventRecorder = {
  emit(type, reason, _action, note) {
    void Promise.resolve(note).then((text) => events.push({ type, reason, note: text }));
  },
  async close() {},
};

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "broker-"));
  writeFileSync(join(dir, "token"), `${jobToken}\n`);
  seen = [];
  events = [];
  logs = [];
  upstream = createServer((request: IncomingMessage, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      seen.push({
        method: request.method!,
        url: request.url!,
        authorization: request.headers.authorization,
        userAgent: request.headers["user-agent"],
        body: Buffer.concat(chunks).toString("utf8"),
      });
      const items = [state, "demo-kubeconfig", `${state}-part-1`].map((name) => ({ metadata: { name }, data: { tfstate: "c2VjcmV0" } }));
      const body = request.url!.startsWith("/api/v1/namespaces/team-a/secrets?")
        ? { kind: "SecretList", items }
        : { kind: "Secret", metadata: { name: state } };
      response.writeHead(200, { "content-type": "application/json" });
      response.end(JSON.stringify(body));
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as { port: number }).port}`;
});

afterEach(async () => {
  await broker?.close();
  broker = undefined;
  await new Promise((resolve) => upstream.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

async function start(): Promise<{ server: string; token: string }> {
  broker = await startBroker({
    scope,
    dir: join(dir, "broker"),
    upstream: { server: upstreamUrl, tokenFile: join(dir, "token") },
    events: recorder,
    log: (level, message, fields) => logs.push({ level, message, ...(fields ? { fields } : {}) }),
  });
  const written = readBrokerEndpoint(join(dir, "broker"))!;
  return { server: written.endpoint.server, token: written.token };
}

/** A request as client-go sends it: to the kubeconfig's server URL, which carries the run's token as its path. */
async function call(server: string, method: string, path: string, body?: unknown) {
  const response = await fetch(`${server}${path}`, {
    method,
    headers: body ? { "content-type": "application/json" } : {},
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  // The few fields the tests read: an object's kind, a Status's message, a list's items.
  const answer = (await response.json()) as { kind?: string; message?: string; items?: { metadata: { name: string } }[] };
  return { status: response.status, body: answer };
}

describe("the state broker", () => {
  it("writes a kubeconfig naming its loopback port and a per-run token, readable by its owner and group only", async () => {
    const { server, token } = await start();
    expect(token).toMatch(/^[0-9a-f]{64}$/);
    expect(server).toBe(`http://127.0.0.1:${broker!.port}/${token}`);
    expect(statSync(join(dir, "broker", "kubeconfig")).mode & 0o777).toBe(0o440);
    const kubeconfig = readFileSync(join(dir, "broker", "kubeconfig"), "utf8");
    expect((JSON.parse(kubeconfig) as Record<string, unknown>)["current-context"]).toBe("captf");
    expect(kubeconfig).not.toContain(jobToken);
    await expect(waitForBroker(join(dir, "broker"), 1000)).resolves.toEqual({ endpoint: { server }, token });
  });

  it("forwards this object's state requests with the Job's token in place of the run's", async () => {
    const { server } = await start();
    const answer = await call(server, "GET", `/api/v1/namespaces/team-a/secrets/${state}`);
    expect(answer).toMatchObject({ status: 200, body: { kind: "Secret" } });
    expect(forwarded()).toEqual([
      expect.objectContaining({ method: "GET", url: `/api/v1/namespaces/team-a/secrets/${state}`, authorization: `Bearer ${jobToken}` }),
    ]);
    // Warmed up ahead through its own path (the same GET of the state Secret), with the Job's token, and not counted.
    for (let waited = 0; !seen.some((request) => request.userAgent === brokerWarmUpUserAgent) && waited < 5000; waited += 10)
      await new Promise((resolve) => setTimeout(resolve, 10));
    expect(seen.find((request) => request.userAgent === brokerWarmUpUserAgent)).toMatchObject({
      method: "GET",
      url: `/api/v1/namespaces/team-a/secrets/${state}`,
      authorization: `Bearer ${jobToken}`,
    });
    const created = await call(server, "POST", "/api/v1/namespaces/team-a/secrets", {
      kind: "Secret",
      metadata: { name: `${state}-part-1` },
    });
    expect(created.status).toBe(200);
    expect((JSON.parse(forwarded()[1]!.body) as { metadata: { name: string } }).metadata.name).toBe(`${state}-part-1`);
    // A request claiming to be the warm-up without the broker's own mark is the module's, and counted.
    const claimed = await fetch(`${server}/api/v1/namespaces/team-a/secrets/${state}`, {
      headers: { "x-captf-broker-warm-up": "0".repeat(32) },
    });
    expect(claimed.status).toBe(200);
    const summary = await broker!.close();
    broker = undefined;
    expect(summary).toMatchObject({ requests: 3, allowed: 3, refused: 0 });
  });

  it("narrows a label-selected list to this object's state Secrets", async () => {
    const { server } = await start();
    const answer = await call(server, "GET", "/api/v1/namespaces/team-a/secrets?labelSelector=tfstate%3Dtrue");
    expect(answer.body.items?.map((item) => item.metadata.name)).toEqual([state, `${state}-part-1`]);
    expect(forwarded()[0]!.url).toBe("/api/v1/namespaces/team-a/secrets?labelSelector=tfstate%3Dtrue%2CtfstateSecretSuffix%3Dabc-m");
  });

  it("refuses the rest with 403, never asks the API server, and reports the Job's first refusal as one event", async () => {
    const { server } = await start();
    const kubeconfig = await call(server, "GET", "/api/v1/namespaces/team-a/secrets/demo-kubeconfig");
    expect(kubeconfig).toMatchObject({ status: 403, body: { kind: "Status", reason: "Forbidden" } });
    expect(kubeconfig.body.message).toMatch(/demo-kubeconfig is not this object's state/);
    const overwrite = await call(server, "POST", "/api/v1/namespaces/team-a/secrets", {
      kind: "Secret",
      metadata: { name: "tfstate-default-other-m" },
    });
    expect(overwrite.status).toBe(403);
    const pod = await call(server, "POST", "/api/v1/namespaces/team-a/pods", { kind: "Pod", metadata: { name: "x" } });
    expect(pod.status).toBe(403);
    const otherEvent = await call(server, "POST", "/apis/events.k8s.io/v1/namespaces/team-a/events", {
      metadata: { name: "e" },
      regarding: { ...object, name: "m-2" },
    });
    expect(otherEvent.status).toBe(403);
    expect(forwarded()).toEqual([]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(events).toEqual([
      {
        type: "Warning",
        reason: "BrokerRefused",
        note: expect.stringMatching(/refused GET \/api\/v1\/namespaces\/team-a\/secrets\/demo-kubeconfig/),
      },
    ]);
    expect(logs.filter((line) => line.message === "request refused")).toHaveLength(4);
    const summary = await broker!.close();
    broker = undefined;
    expect(summary).toMatchObject({ requests: 4, allowed: 0, refused: 4, refusedByTarget: { other: 3, event: 1 } });
    expect(summary.refusals[0]).toMatchObject({ method: "GET", path: "/api/v1/namespaces/team-a/secrets/demo-kubeconfig" });
  });

  it("keeps a refused path short in its log and summary", async () => {
    const { server } = await start();
    expect((await call(server, "GET", `/api/v1/namespaces/team-a/secrets/${"x".repeat(1000)}`)).status).toBe(403);
    const logged = logs.find((line) => line.message === "request refused")!.fields!.path as string;
    expect(logged).toHaveLength(257);
    expect((await broker!.close()).refusals[0]!.path).toBe(logged);
    broker = undefined;
  });

  it("answers 401 to a request without this run's token, however allowed its path", async () => {
    const { token } = await start();
    const port = `http://127.0.0.1:${broker!.port}`;
    expect((await call(port, "GET", `/api/v1/namespaces/team-a/secrets/${state}`)).status).toBe(401);
    expect((await call(`${port}/${"0".repeat(64)}`, "GET", `/api/v1/namespaces/team-a/secrets/${state}`)).status).toBe(401);
    expect((await call(`${port}/${token.slice(0, 63)}`, "GET", `/api/v1/namespaces/team-a/secrets/${state}`)).status).toBe(401);
    const bearer = await fetch(`${port}/api/v1/namespaces/team-a/secrets/${state}`, { headers: { authorization: `Bearer ${token}` } });
    expect(bearer.status).toBe(401);
    expect(forwarded()).toEqual([]);
    // A guessed token never reaches the log.
    expect(JSON.stringify(logs)).not.toContain("0".repeat(64));
  });

  it("answers 502 with a clear message when the API server cannot be reached", async () => {
    const { server } = await start();
    await new Promise((resolve) => upstream.close(resolve));
    upstream.closeAllConnections();
    upstream = createServer();
    const answer = await call(server, "GET", `/api/v1/namespaces/team-a/secrets/${state}`);
    expect(answer.status).toBe(502);
    expect(answer.body.message).toMatch(/could not be reached/);
    await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
  });
});
