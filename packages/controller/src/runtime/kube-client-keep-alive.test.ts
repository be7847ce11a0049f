import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { KubeConfig } from "@kubernetes/client-node";
import { generateServingCertificate } from "../webhooks/certificates.test-support.js";
import { builtinTypes } from "./builtin-types.js";
import { KubeClient } from "./kube-client.js";

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
    const config = new KubeConfig();
    config.loadFromOptions({
      clusters: [{ name: "c", server: url, caFile: join(dir, "ca.crt"), skipTLSVerify: false }],
      users: [{ name: "u", token: "t" }],
      contexts: [{ name: "x", cluster: "c", user: "u" }],
      currentContext: "x",
    });
    const client = new KubeClient(config);
    const before = connections;
    try {
      for (let call = 0; call < 5; call++) expect((await client.list(builtinTypes.namespace, undefined)).items).toEqual([]);
      expect(connections - before).toBe(1);
    } finally {
      client.close();
    }
  });
});
