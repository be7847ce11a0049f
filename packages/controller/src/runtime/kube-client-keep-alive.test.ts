import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import type { ServerResponse } from "node:http";
import { createServer, type Server } from "node:https";
import type { Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "@jest/globals";
import { KubeConfig } from "@kubernetes/client-node";
import { generateServingCertificate } from "../webhooks/certificates.test-support.js";
import { builtinTypes } from "./builtin-types.js";
import { KubeClient, type KubeObject } from "./kube-client.js";

// A TLS server standing in for the API server, counting connections: the point is how many
// handshakes the manager's one client makes (a handshake per request was about half the
// manager's CPU at 1,000 machines), not what it is answered.
describe("KubeClient's keep-alive", () => {
  const dir = mkdtempSync(join(tmpdir(), "captf-keep-alive-"));
  let server: Server;
  let connections = 0;
  let url = "";

  beforeAll(async () => {
    const certificate = generateServingCertificate(dir);
    server = createServer({ cert: readFileSync(certificate.certFile), key: readFileSync(certificate.keyFile) }, (_request, response) => {
      response.writeHead(200, { "Content-Type": "application/json" });
      response.end(JSON.stringify({ apiVersion: "v1", kind: "NamespaceList", metadata: {}, items: [] }));
    });
    server.on("secureConnection", () => connections++);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `https://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  it("sends sequential requests over one kept-alive TLS connection", async () => {
    const client = new KubeClient(kubeConfigFor(url, join(dir, "ca.crt")));
    const before = connections;
    try {
      for (let call = 0; call < 5; call++) expect((await client.list(builtinTypes.namespace, undefined)).items).toEqual([]);
      expect(connections - before).toBe(1);
    } finally {
      client.close();
    }
  });
});

// A TLS server standing in for the API server that can close a kept-alive connection the moment
// the client reuses it (it reads the request, then drops the connection unanswered): the race a
// server's or a proxy's idle timeout makes with a client reusing its connection.
describe("KubeClient on a kept-alive connection the server closes", () => {
  const dir = mkdtempSync(join(tmpdir(), "captf-stale-connection-"));
  let server: Server;
  let url = "";
  const served = new WeakMap<Socket, number>();
  const sockets: Socket[] = [];
  let requests: string[] = [];
  let dropReused = false;
  let closeAfterAnswer = false;

  beforeAll(async () => {
    const certificate = generateServingCertificate(dir);
    server = createServer({ cert: readFileSync(certificate.certFile), key: readFileSync(certificate.keyFile) }, (request, response) => {
      requests.push(request.method ?? "");
      const socket = request.socket;
      const count = served.get(socket) ?? 0;
      served.set(socket, count + 1);
      if (dropReused && count > 0) {
        dropReused = false;
        socket.destroy();
        return;
      }
      if (request.url?.includes("watch=true")) return void streamWatch(response);
      response.writeHead(200, { "Content-Type": "application/json" });
      response.end(JSON.stringify({ apiVersion: "v1", kind: "Secret", metadata: { name: "s", namespace: "n" } }));
      // An idle timeout of the server's own, shorter than the client's and announced by no header.
      if (closeAfterAnswer) response.on("finish", () => setTimeout(() => socket.destroy(), 50));
    });
    // No idle timeout on the server's side: a connection closes only when the client closes it.
    server.keepAliveTimeout = 0;
    server.on("secureConnection", (socket: Socket) => sockets.push(socket));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `https://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  beforeEach(() => {
    requests = [];
    dropReused = false;
    closeAfterAnswer = false;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  // Two events with a pause between them longer than the client's idle timeout.
  function streamWatch(response: ServerResponse): void {
    response.writeHead(200, { "Content-Type": "application/json" });
    const event = (name: string) => `${JSON.stringify({ type: "ADDED", object: { metadata: { name } } })}\n`;
    response.write(event("first"));
    setTimeout(() => response.end(event("second")), 600);
  }

  function client(idleConnectionMillis?: number): KubeClient {
    const config = kubeConfigFor(url, join(dir, "ca.crt"));
    return new KubeClient(config, idleConnectionMillis === undefined ? {} : { idleConnectionMillis });
  }

  const secret = (resourceVersion?: string): KubeObject => ({
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "s", namespace: "n", ...(resourceVersion ? { resourceVersion } : {}) },
  });

  it.each([
    ["GET", (c: KubeClient) => c.get(builtinTypes.secret, "n", "s")],
    ["PUT", (c: KubeClient) => c.replace(builtinTypes.secret, "n", "s", secret("7"))],
    ["DELETE", (c: KubeClient) => c.delete(builtinTypes.secret, "n", "s", { preconditions: { uid: "u-1" } })],
  ])("sends a %s the server dropped on a reused connection once more, on a new connection", async (method, call) => {
    const kube = client();
    const before = sockets.length;
    try {
      await kube.get(builtinTypes.secret, "n", "s");
      dropReused = true;
      await expect(call(kube)).resolves.toBeDefined();
      expect(requests).toEqual(["GET", method, method]);
      expect(sockets.length - before).toBe(2);
    } finally {
      kube.close();
    }
  });

  it.each([
    ["POST", (c: KubeClient) => c.create(builtinTypes.secret, "n", secret())],
    ["PATCH", (c: KubeClient) => c.patch(builtinTypes.secret, "n", "s", { data: {} })],
    ["PUT without a resourceVersion", (c: KubeClient) => c.replace(builtinTypes.secret, "n", "s", secret())],
    ["DELETE without preconditions", (c: KubeClient) => c.delete(builtinTypes.secret, "n", "s")],
  ])("never sends a %s twice: the dropped connection's error reaches the caller", async (_what, call) => {
    const kube = client();
    try {
      await kube.get(builtinTypes.secret, "n", "s");
      dropReused = true;
      await expect(call(kube)).rejects.toMatchObject({ code: "ECONNRESET" });
      expect(requests).toHaveLength(2);
    } finally {
      kube.close();
    }
  });

  // docs/reliability.md's drill: a long synchronous step kept the client from seeing the server
  // close its idle connection, and the next GET was written into it.
  it("sends a GET once more when the server closed the connection while the client's event loop was blocked", async () => {
    const kube = client();
    try {
      closeAfterAnswer = true;
      await kube.get(builtinTypes.secret, "n", "s");
      closeAfterAnswer = false;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 500);
      await expect(kube.get(builtinTypes.secret, "n", "s")).resolves.toMatchObject({ kind: "Secret" });
    } finally {
      kube.close();
    }
  });

  it("closes a connection left unused for its idle timeout, and the next request opens a new one", async () => {
    const kube = client(200);
    try {
      await kube.get(builtinTypes.secret, "n", "s");
      const used = sockets.at(-1)!;
      // The server never closes it (keepAliveTimeout 0): only the client's idle timeout can.
      if (!used.destroyed) await new Promise((resolve) => used.once("close", resolve));
      const before = sockets.length;
      await kube.get(builtinTypes.secret, "n", "s");
      expect(sockets.length - before).toBe(1);
    } finally {
      kube.close();
    }
  });

  it("keeps a watch open through a pause longer than the idle timeout", async () => {
    const kube = client(200);
    const names: (string | undefined)[] = [];
    try {
      await kube.watch("/api/v1/namespaces/n/secrets", {}, (event) => names.push(event.object.metadata?.name));
      expect(names).toEqual(["first", "second"]);
    } finally {
      kube.close();
    }
  });
});

/** A kubeconfig for the local TLS server at `url`, trusting `caFile`. */
function kubeConfigFor(url: string, caFile: string): KubeConfig {
  const config = new KubeConfig();
  config.loadFromOptions({
    clusters: [{ name: "c", server: url, caFile, skipTLSVerify: false }],
    users: [{ name: "u", token: "t" }],
    contexts: [{ name: "x", cluster: "c", user: "u" }],
    currentContext: "x",
  });
  return config;
}
