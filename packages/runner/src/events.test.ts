import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { execFileSync } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runnerEventReasons } from "@captf/contract/api";
import { createEventRecorder, parseObjectReference, resolveInClusterEndpoint, type ObjectReference } from "./events.js";
import { startEventsServer } from "./events-server.test-support.js";

const regarding: ObjectReference = {
  apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
  kind: "TerraformCluster",
  namespace: "team-a",
  name: "prod",
  uid: "u-1",
};

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "runner-events-"));
  await writeFile(join(dir, "token"), "token-one\n");
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("parseObjectReference", () => {
  it("reads the last four fields from the right, so the apiVersion may hold a slash", () => {
    expect(parseObjectReference("infrastructure.cluster.x-k8s.io/v1alpha1/TerraformCluster/team-a/prod/u-1")).toEqual(regarding);
    expect(parseObjectReference("v1/ConfigMap/ns/name/uid").apiVersion).toBe("v1");
  });

  it.each(["v1/Kind/ns/name", "infrastructure.cluster.x-k8s.io/v1alpha1/TerraformCluster/team-a//u-1", ""])("rejects %j", (text) => {
    expect(() => parseObjectReference(text)).toThrow(/<apiVersion>\/<kind>\/<namespace>\/<name>\/<uid>/);
  });
});

describe("resolveInClusterEndpoint", () => {
  it("uses the in-cluster service address and the ServiceAccount files", async () => {
    await writeFile(join(dir, "ca.crt"), "not checked here");
    expect(
      resolveInClusterEndpoint({ serviceAccountDir: dir, env: { KUBERNETES_SERVICE_HOST: "fd00::1", KUBERNETES_SERVICE_PORT: "443" } }),
    ).toMatchObject({
      server: "https://[fd00::1]:443",
      tokenFile: join(dir, "token"),
    });
  });

  it("explains why events cannot be sent outside a cluster or without the CA", () => {
    expect(resolveInClusterEndpoint({ serviceAccountDir: dir, env: {} })).toMatch(/KUBERNETES_SERVICE_HOST\/PORT unset/);
    expect(
      resolveInClusterEndpoint({
        serviceAccountDir: join(dir, "none"),
        env: { KUBERNETES_SERVICE_HOST: "10.0.0.1", KUBERNETES_SERVICE_PORT: "443" },
      }),
    ).toMatch(/no cluster CA/);
  });
});

describe("createEventRecorder", () => {
  it("POSTs events.k8s.io/v1 Events about the object, in order, with the token read for each", async () => {
    const server = await startEventsServer();
    const logs: string[] = [];
    const recorder = createEventRecorder({
      endpoint: { server: server.url, tokenFile: join(dir, "token") },
      regarding,
      jobName: "prod-apply-3",
      instance: "prod-apply-3-abcde",
      log: (message) => logs.push(message),
    });
    let release!: (note: string) => void;
    recorder.emit("Normal", "RunStarted", "apply", new Promise<string>((resolve) => (release = resolve)));
    recorder.emit("Normal", "StepStarted", "init", "step init started");
    await new Promise((resolve) => setTimeout(resolve, 50));
    await writeFile(join(dir, "token"), "token-two\n");
    release("apply started: image m:1, runtime 1.12.6");
    recorder.emit("Warning", "StepFailed", "x".repeat(300), "n".repeat(2000));
    await recorder.close();
    await server.close();

    expect(logs).toEqual([]);
    expect(server.requests.map((request) => request.body.reason)).toEqual(["RunStarted", "StepStarted", "StepFailed"]);
    const [first, , failed] = server.requests;
    expect(first!.method).toBe("POST");
    expect(first!.path).toBe("/apis/events.k8s.io/v1/namespaces/team-a/events");
    expect(first!.authorization).toBe("Bearer token-two");
    expect(first!.body).toMatchObject({
      apiVersion: "events.k8s.io/v1",
      kind: "Event",
      metadata: { namespace: "team-a" },
      reportingController: "captf.io/runner",
      reportingInstance: "prod-apply-3-abcde",
      action: "apply",
      reason: "RunStarted",
      regarding,
      related: { apiVersion: "batch/v1", kind: "Job", namespace: "team-a", name: "prod-apply-3" },
      note: "apply started: image m:1, runtime 1.12.6",
      type: "Normal",
    });
    expect(first!.body.metadata.name).toMatch(/^prod\.[0-9a-f]+$/);
    expect(first!.body.eventTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    expect(new Set(server.requests.map((request) => request.body.metadata.name)).size).toBe(3);
    expect(failed!.body.action).toHaveLength(128);
    expect(failed!.body.note).toHaveLength(1024);
    expect(failed!.body.type).toBe("Warning");
  });

  it("gives up after three consecutive failures, each bounded by the timeout, and never throws", async () => {
    const server = await startEventsServer({ answer: (index) => (index === 0 ? 500 : index === 1 ? 201 : "hang") });
    const logs: string[] = [];
    const recorder = createEventRecorder({
      endpoint: { server: server.url },
      regarding,
      instance: "pod",
      timeoutMs: 100,
      log: (message) => logs.push(message),
    });
    const started = Date.now();
    for (const reason of runnerEventReasons) recorder.emit("Normal", reason, "apply", "note");
    await recorder.close();
    await server.close();

    // 500, 201, then three hung POSTs; the last two reasons are never sent.
    expect(server.requests).toHaveLength(5);
    expect(Date.now() - started).toBeLessThan(2000);
    expect(logs).toEqual([
      "sending event RunStarted failed; the run continues: the API server answered 500 Internal Server Error",
      "events failed 3 times in a row; no more events are sent this run",
    ]);
  });

  it("closes a connection left unused for its idle timeout, so the next event goes out on a new one", async () => {
    // The server never closes a connection (keepAliveTimeout 0): only the recorder's idle timeout can.
    const server = await startEventsServer({ keepAliveTimeoutMillis: 0 });
    const logs: string[] = [];
    const recorder = createEventRecorder({
      endpoint: { server: server.url },
      regarding,
      instance: "pod",
      idleConnectionMillis: 200,
      log: (message) => logs.push(message),
    });
    recorder.emit("Normal", "RunStarted", "apply", "apply started");
    while (server.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    const first = server.connections[0]!;
    if (!first.destroyed) await new Promise((resolve) => first.once("close", resolve));
    recorder.emit("Normal", "RunFinished", "apply", "apply succeeded in 1s");
    await recorder.close();
    await server.close();
    expect(logs).toEqual([]);
    expect(server.requests.map((request) => request.body.reason)).toEqual(["RunStarted", "RunFinished"]);
    expect(server.connections).toHaveLength(2);
  });

  it("reaches an API server over TLS with the cluster CA", async () => {
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=127.0.0.1",
        "-addext",
        "subjectAltName=IP:127.0.0.1",
        "-keyout",
        join(dir, "tls.key"),
        "-out",
        join(dir, "ca.crt"),
      ],
      { stdio: "ignore" },
    );
    const tls = { key: await readFile(join(dir, "tls.key"), "utf8"), cert: await readFile(join(dir, "ca.crt"), "utf8") };
    const server = await startEventsServer({ tls });
    const endpoint = resolveInClusterEndpoint({ server: server.url, serviceAccountDir: dir, env: {} });
    if (typeof endpoint === "string") throw new Error(endpoint);
    const logs: string[] = [];
    const recorder = createEventRecorder({ endpoint, regarding, instance: "pod", log: (message) => logs.push(message) });
    recorder.emit("Normal", "RunFinished", "apply", "apply succeeded in 1s");
    await recorder.close();
    await server.close();
    expect(logs).toEqual([]);
    expect(server.requests.map((request) => request.body.reason)).toEqual(["RunFinished"]);
  });
});
