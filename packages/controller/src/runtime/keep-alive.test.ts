import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { generateServingCertificate } from "../webhooks/certificates.test-support.js";
import { withKeepAlive } from "./keep-alive.js";

// A TLS server standing in for the API server, counting connections: the point is how many
// handshakes the client makes, not what it is answered.
describe("withKeepAlive", () => {
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

  function kubeConfig(): KubeConfig {
    const config = new KubeConfig();
    config.loadFromOptions({
      clusters: [{ name: "c", server: url, caFile: join(dir, "ca.crt"), skipTLSVerify: false }],
      users: [{ name: "u", token: "t" }],
      contexts: [{ name: "x", cluster: "c", user: "u" }],
      currentContext: "x",
    });
    return config;
  }

  async function handshakesFor(config: KubeConfig, calls: number): Promise<number> {
    const before = connections;
    const core = config.makeApiClient(CoreV1Api);
    for (let call = 0; call < calls; call++) await core.listNamespace();
    return connections - before;
  }

  it("without it, client-node opens a TLS connection per request", async () => {
    expect(await handshakesFor(kubeConfig(), 5)).toBe(5);
  });

  it("with it, sequential requests share one kept-alive connection", async () => {
    expect(await handshakesFor(withKeepAlive(kubeConfig()), 5)).toBe(1);
  });
});
