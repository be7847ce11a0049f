// The admission server over real HTTPS on loopback: AdmissionReviews in, verdicts out, every
// malformed request answered (never a crash), facts looked up only where a validator needs them,
// the serving certificate reloaded when rotated on disk, no variable value in any log line.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { request } from "node:https";
import { connect } from "node:tls";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { pino } from "pino";
import type { KubernetesObject } from "@kubernetes/client-node";
import { groupVersion, kinds } from "@captf/contract/api";
import { clusterTemplate, identity, minimalCluster, minimalMachine } from "../api/examples.test-support.js";
import { generateServingCertificate, rotateInto, type ServingCertificate } from "./certificates.test-support.js";
import { webhookPath } from "./configuration.js";
import type { AdmissionFacts, AdmissionUserInfo } from "./facts.js";
import {
  decodeAdmissionReview,
  startAdmissionServer,
  WebhookCertificateError,
  type AdmissionResponse,
  type AdmissionServer,
} from "./server.js";
import { managerUsername } from "./admission.test-support.js";

type AnyObject = Record<string, unknown>;
/** An AdmissionReview as a test sends it, valid or not. */
type SentReview = { apiVersion: string; kind: string; request: AnyObject & { uid: string } };
/** The server's answer as a test reads it: a review's response, or whatever else it wrote. */
type AnswerBody = AnyObject & { response: AdmissionResponse };

/** Facts the tests steer; each call is recorded. */
function fakeFacts() {
  const calls: string[] = [];
  const state = {
    identityUsers: [] as { kind: string; namespace: string; name: string }[],
    secretAccessAllowed: true,
    machineLookupFails: false,
    lastSecretAccessUser: undefined as AdmissionUserInfo | undefined,
  };
  const facts: AdmissionFacts = {
    async machineDeletion(machine) {
      calls.push(`machineDeletion ${machine.metadata?.name}`);
      if (state.machineLookupFails) throw new Error("machines.cluster.x-k8s.io is forbidden");
      return { referencingMachines: [{ name: "m-0", deleting: false }], clusterPaused: false };
    },
    async identityUsers(name) {
      calls.push(`identityUsers ${name}`);
      return state.identityUsers;
    },
    async secretAccess(user, secret) {
      calls.push(`secretAccess ${secret.namespace}/${secret.name}`);
      state.lastSecretAccessUser = user;
      return { allowed: state.secretAccessAllowed };
    },
  };
  return { facts, calls, state };
}

let sequence = 0;
function review(kind: string, operation: string, object: unknown, oldObject?: unknown, extra: AnyObject = {}): SentReview {
  return {
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    request: {
      uid: `uid-${++sequence}`,
      kind: { group: "infrastructure.cluster.x-k8s.io", version: "v1alpha1", kind },
      resource: { group: "infrastructure.cluster.x-k8s.io", version: "v1alpha1", resource: `${kind.toLowerCase()}s` },
      operation,
      name: (object as KubernetesObject | null)?.metadata?.name ?? (oldObject as KubernetesObject | undefined)?.metadata?.name,
      namespace: "team-a",
      userInfo: { username: "alice", uid: "u-1", groups: ["system:authenticated", "team-a"], extra: { scopes: ["x"] } },
      object: object ?? null,
      oldObject: oldObject ?? null,
      dryRun: false,
      ...extra,
    },
  };
}

describe("the admission server", () => {
  let dir: string;
  let certificate: ServingCertificate;
  let server: AdmissionServer;
  const logs: string[] = [];
  const { facts, calls, state } = fakeFacts();

  function post(
    path: string,
    body: unknown,
    options: { ca?: string; headers?: Record<string, string>; method?: string } = {},
  ): Promise<{ status: number; body: AnswerBody }> {
    const text = typeof body === "string" ? body : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = request(
        {
          host: "127.0.0.1",
          port: server.port,
          path,
          method: options.method ?? "POST",
          ca: options.ca ?? certificate.caPem,
          headers: { "Content-Type": "application/json", ...options.headers },
        },
        (response) => {
          let answer = "";
          response.on("data", (chunk: Buffer) => (answer += chunk.toString()));
          response.on("end", () =>
            resolve({ status: response.statusCode ?? 0, body: answer ? (JSON.parse(answer) as AnswerBody) : ({} as AnswerBody) }),
          );
        },
      );
      req.on("error", reject);
      req.end(options.method === "GET" ? undefined : text);
    });
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "captf-webhook-"));
    certificate = generateServingCertificate(join(dir, "serving"));
    const logger = pino({ level: "debug" }, { write: (line: string) => void logs.push(line) });
    server = await startAdmissionServer({
      port: 0,
      host: "127.0.0.1",
      certFile: certificate.certFile,
      keyFile: certificate.keyFile,
      logger,
      managerUsername,
      facts,
      maxBodyBytes: 64 * 1024,
      certificatePollMillis: 200,
    });
  });

  afterAll(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  describe("answers AdmissionReviews", () => {
    it("admits a valid TerraformCluster with the request's uid", async () => {
      const body = review(kinds.cluster, "CREATE", minimalCluster("ok"));
      const answer = await post(`${webhookPath(kinds.cluster)}?timeout=10s`, body);
      expect(answer).toEqual({
        status: 200,
        body: { apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", response: { uid: body.request.uid, allowed: true } },
      });
    });

    it("refuses what the validator refuses, every reason in the message, as Invalid (422)", async () => {
      const cluster = minimalCluster("bad");
      cluster.spec.variables = { captf_cluster_name: "x", region: "eu" };
      cluster.spec.jobs = { env: [{ name: "TF_LOG", value: "TRACE" }] };
      const answer = await post(webhookPath(kinds.cluster), review(kinds.cluster, "CREATE", cluster));
      expect(answer.status).toBe(200);
      expect(answer.body.response).toMatchObject({ allowed: false, status: { code: 422, reason: "Invalid" } });
      expect(answer.body.response.status!.message).toContain('spec.jobs.env[0].name: "TF_LOG" is reserved');
      expect(answer.body.response.status!.message).toContain('variable name "captf_cluster_name" is reserved');
      expect(answer.body.response.status!.message.split("; ").length).toBeGreaterThanOrEqual(2);
    });

    it("judges an UPDATE against the old object and passes warnings on", async () => {
      const stored = clusterTemplate("tpl");
      const changed = structuredClone(stored);
      changed.spec.template.spec.source.image = "ghcr.io/captf-io/module-images/noop-cluster:v0.2.0";
      const refused = await post(webhookPath(kinds.clusterTemplate), review(kinds.clusterTemplate, "UPDATE", changed, stored));
      expect(refused.body.response.status!.message).toContain("TerraformClusterTemplate spec.template.spec is immutable");

      delete (stored.spec.template.spec as AnyObject).identityRef;
      const relabelled = structuredClone(stored);
      relabelled.metadata = { ...relabelled.metadata, labels: { team: "a" } };
      const admitted = await post(webhookPath(kinds.clusterTemplate), review(kinds.clusterTemplate, "UPDATE", relabelled, stored));
      expect(admitted.body.response).toMatchObject({ allowed: true, warnings: [expect.stringContaining("sets no identityRef")] });
    });

    it("tells the validator who asks and whether it is a dry run: only the manager sets a providerID", async () => {
      const stored = minimalMachine("m");
      const withId = structuredClone(stored);
      withId.spec.providerID = "aws:///eu-west-1a/i-0abc";
      const byUser = await post(webhookPath(kinds.machine), review(kinds.machine, "UPDATE", withId, stored));
      expect(byUser.body.response.status!.message).toContain("spec.providerID may only be set by the captf manager");
      const byManager = await post(
        webhookPath(kinds.machine),
        review(kinds.machine, "UPDATE", withId, stored, { userInfo: { username: managerUsername } }),
      );
      expect(byManager.body.response.allowed).toBe(true);
    });

    it("asks a SubjectAccessReview as the requester before admitting an identity, only when it needs one", async () => {
      calls.length = 0;
      state.secretAccessAllowed = false;
      const denied = await post(webhookPath(kinds.clusterIdentity), review(kinds.clusterIdentity, "CREATE", identity("aws")));
      expect(denied.body.response.status!.message).toContain('user "alice" may not get Secret captf-system/aws');
      expect(state.lastSecretAccessUser).toEqual({
        username: "alice",
        uid: "u-1",
        groups: ["system:authenticated", "team-a"],
        extra: { scopes: ["x"] },
      });
      state.secretAccessAllowed = true;
      expect(
        (await post(webhookPath(kinds.clusterIdentity), review(kinds.clusterIdentity, "CREATE", identity("aws")))).body.response.allowed,
      ).toBe(true);
      const relabelled = identity("aws");
      relabelled.metadata = { ...relabelled.metadata, labels: { tier: "prod" } };
      state.secretAccessAllowed = false;
      expect(
        (await post(webhookPath(kinds.clusterIdentity), review(kinds.clusterIdentity, "UPDATE", relabelled, identity("aws")))).body.response
          .allowed,
      ).toBe(true);
      expect(calls).toEqual(["secretAccess captf-system/aws", "secretAccess captf-system/aws"]);
      state.secretAccessAllowed = true;
    });

    it("refuses deleting an identity in use as Forbidden (403), from the stored object", async () => {
      state.identityUsers = [{ kind: kinds.cluster, namespace: "team-a", name: "prod" }];
      const answer = await post(webhookPath(kinds.clusterIdentity), review(kinds.clusterIdentity, "DELETE", null, identity("aws")));
      expect(answer.body.response).toMatchObject({
        allowed: false,
        status: { code: 403, reason: "Forbidden", message: expect.stringContaining("is used by TerraformCluster team-a/prod") },
      });
      state.identityUsers = [];
      expect(
        (await post(webhookPath(kinds.clusterIdentity), review(kinds.clusterIdentity, "DELETE", null, identity("aws")))).body.response
          .allowed,
      ).toBe(true);
    });

    it("refuses deleting a TerraformMachine under a live Machine, and admits it with a warning when the lookup fails", async () => {
      const refused = await post(webhookPath(kinds.machine), review(kinds.machine, "DELETE", null, minimalMachine("m")));
      expect(refused.body.response.status!.message).toContain("is the infrastructure of Machine m-0");
      state.machineLookupFails = true;
      const admitted = await post(webhookPath(kinds.machine), review(kinds.machine, "DELETE", null, minimalMachine("m")));
      expect(admitted.body.response).toMatchObject({
        allowed: true,
        warnings: [expect.stringContaining("machines.cluster.x-k8s.io is forbidden")],
      });
      state.machineLookupFails = false;
    });

    it("admits deletions of kinds without a deletion rule, and status writes, without looking anything up", async () => {
      calls.length = 0;
      expect(
        (await post(webhookPath(kinds.cluster), review(kinds.cluster, "DELETE", null, minimalCluster("c")))).body.response.allowed,
      ).toBe(true);
      const bad = minimalCluster("c");
      bad.spec.variables = { captf_x: 1 };
      expect(
        (await post(webhookPath(kinds.cluster), review(kinds.cluster, "UPDATE", bad, bad, { subResource: "status" }))).body.response
          .allowed,
      ).toBe(true);
      expect(calls).toEqual([]);
    });
  });

  describe("answers every malformed request and keeps serving", () => {
    it.each<[string, () => Promise<{ status: number; body: AnyObject }>, number, string]>([
      [
        "an unknown path",
        () => post("/validate-terraformcluster", review(kinds.cluster, "CREATE", minimalCluster())),
        404,
        "no webhook at /validate-terraformcluster",
      ],
      ["a GET", () => post(webhookPath(kinds.cluster), "", { method: "GET" }), 405, "POST an AdmissionReview"],
      ["a body that is not JSON", () => post(webhookPath(kinds.cluster), "{not json"), 400, "the body is not JSON"],
      [
        "a v1beta1 review",
        () =>
          post(webhookPath(kinds.cluster), {
            ...review(kinds.cluster, "CREATE", minimalCluster()),
            apiVersion: "admission.k8s.io/v1beta1",
          }),
        400,
        'admissionReviewVersions: ["v1"]',
      ],
      [
        "a review without a uid",
        () => post(webhookPath(kinds.cluster), { ...review(kinds.cluster, "CREATE", minimalCluster()), request: { operation: "CREATE" } }),
        400,
        "request.uid must be a non-empty string",
      ],
      [
        "a text body",
        () => post(webhookPath(kinds.cluster), "x", { headers: { "Content-Type": "text/plain" } }),
        415,
        "send application/json",
      ],
      [
        "a body over the limit",
        () => post(webhookPath(kinds.cluster), review(kinds.cluster, "CREATE", { ...minimalCluster(), padding: "x".repeat(70 * 1024) })),
        413,
        "exceeds 65536 bytes",
      ],
    ])("%s", async (_name, send, status, message) => {
      const answer = await send();
      expect(answer.status).toBe(status);
      expect(answer.body.response).toMatchObject({ allowed: false, status: { code: status, message: expect.stringContaining(message) } });
      expect((await post(webhookPath(kinds.cluster), review(kinds.cluster, "CREATE", minimalCluster()))).body.response.allowed).toBe(true);
    });

    it.each<[string, SentReview, string]>([
      [
        "a review of another kind than the path's",
        review(kinds.machine, "CREATE", minimalMachine()),
        "this webhook validates TerraformCluster.infrastructure.cluster.x-k8s.io, the request is for TerraformMachine",
      ],
      ["a CREATE without an object", review(kinds.cluster, "CREATE", null), "request.object is missing"],
      ["an UPDATE without the old object", review(kinds.cluster, "UPDATE", minimalCluster()), "request.oldObject is missing"],
      [
        "an object without a spec",
        review(kinds.cluster, "CREATE", { apiVersion: groupVersion, kind: kinds.cluster, metadata: { name: "x" } }),
        "request.object.spec must be an object",
      ],
      ["a CONNECT", review(kinds.cluster, "CONNECT", minimalCluster()), "operation CONNECT is not validated"],
    ])("denies %s with code 400 and the reason", async (_name, body, message) => {
      const answer = await post(webhookPath(kinds.cluster), body);
      expect(answer.status).toBe(200);
      expect(answer.body.response).toEqual({
        uid: body.request.uid,
        allowed: false,
        status: { code: 400, reason: "BadRequest", message: expect.stringContaining(message) },
      });
    });

    it("turns a validator that throws on an object the schema would never admit into a 500 denial", async () => {
      const cluster = minimalCluster("odd");
      (cluster.spec as AnyObject).variablesFrom = "not-a-list";
      const answer = await post(webhookPath(kinds.cluster), review(kinds.cluster, "CREATE", cluster));
      expect(answer.body.response).toMatchObject({
        allowed: false,
        status: { code: 500, reason: "InternalError", message: expect.stringContaining("the TerraformCluster validator failed") },
      });
      expect((await post(webhookPath(kinds.cluster), review(kinds.cluster, "CREATE", minimalCluster()))).body.response.allowed).toBe(true);
    });
  });

  it("logs each review with uid, kind, operation, user and reasons, never a variable value", async () => {
    const cluster = minimalCluster("secretive");
    cluster.spec.variables = { captf_token: "s3cret-value-1", password: "s3cret-value-2" };
    const body = review(kinds.cluster, "CREATE", cluster);
    await post(webhookPath(kinds.cluster), body);
    const line = logs.map((entry) => JSON.parse(entry) as AnyObject).find((entry) => entry.uid === body.request.uid);
    expect(line).toMatchObject({
      msg: "denied",
      kind: kinds.cluster,
      operation: "CREATE",
      user: "alice",
      namespace: "team-a",
      name: "secretive",
      code: 422,
    });
    expect(line?.reasons).toContain("captf_token");
    expect(logs.join("\n")).not.toContain("s3cret-value");
  });

  it("serves a rotated certificate to new connections without a restart", async () => {
    const next = generateServingCertificate(join(dir, "next"));
    expect(next.fingerprint256).not.toBe(certificate.fingerprint256);
    rotateInto(next, certificate);
    const deadline = Date.now() + 10_000;
    let served = "";
    while (Date.now() < deadline) {
      served = await peerFingerprint(server.port);
      if (served === next.fingerprint256) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(served).toBe(next.fingerprint256);
    expect(await server.reloadCertificate()).toBe(false);
    const answer = await post(webhookPath(kinds.cluster), review(kinds.cluster, "CREATE", minimalCluster()), { ca: next.caPem });
    expect(answer.body.response.allowed).toBe(true);
    expect(logs.some((entry) => entry.includes("serving certificate reloaded"))).toBe(true);
  });
});

function peerFingerprint(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port, rejectUnauthorized: false }, () => {
      const fingerprint = socket.getPeerX509Certificate()?.fingerprint256 ?? "";
      socket.end();
      resolve(fingerprint);
    });
    socket.on("error", reject);
  });
}

describe("startAdmissionServer", () => {
  it("refuses to start without its certificate, naming the flags that place it", async () => {
    const { facts } = fakeFacts();
    const start = startAdmissionServer({
      port: 0,
      certFile: "/nonexistent/tls.crt",
      keyFile: "/nonexistent/tls.key",
      logger: pino({ level: "silent" }),
      managerUsername,
      facts,
    });
    await expect(start).rejects.toThrow(WebhookCertificateError);
    await expect(start).rejects.toThrow(/--webhook-cert-dir/);
  });

  it("stops accepting connections on close, letting a request in flight finish", async () => {
    const dir = mkdtempSync(join(tmpdir(), "captf-webhook-close-"));
    try {
      const certificate = generateServingCertificate(dir);
      let release: () => void = () => undefined;
      const { facts } = fakeFacts();
      const slowFacts: AdmissionFacts = { ...facts, identityUsers: () => new Promise((resolve) => (release = () => resolve([]))) };
      const server = await startAdmissionServer({
        port: 0,
        host: "127.0.0.1",
        certFile: certificate.certFile,
        keyFile: certificate.keyFile,
        logger: pino({ level: "silent" }),
        managerUsername,
        facts: slowFacts,
      });
      const inFlight = new Promise<number>((resolve, reject) => {
        const req = request(
          {
            host: "127.0.0.1",
            port: server.port,
            path: webhookPath(kinds.clusterIdentity),
            method: "POST",
            ca: certificate.caPem,
            headers: { "Content-Type": "application/json" },
          },
          (response) => {
            response.resume();
            response.on("end", () => resolve(response.statusCode ?? 0));
          },
        );
        req.on("error", reject);
        req.end(JSON.stringify(review(kinds.clusterIdentity, "DELETE", null, identity("slow"))));
      });
      await new Promise((resolve) => setTimeout(resolve, 200));
      const closeStarted = Date.now();
      const closed = server.close(5000);
      release();
      expect(await inFlight).toBe(200);
      await closed;
      // The answer ended its keep-alive connection: close() did not wait out its grace period.
      expect(Date.now() - closeStarted).toBeLessThan(2000);
      await expect(peerFingerprint(server.port)).rejects.toThrow(/ECONNREFUSED/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("decodeAdmissionReview", () => {
  it("reads the request, turning Kubernetes' null objects into absent ones", () => {
    const decoded = decodeAdmissionReview(review(kinds.cluster, "DELETE", null, minimalCluster()));
    expect("request" in decoded && decoded.request.object).toBeUndefined();
    expect("request" in decoded && decoded.request.oldObject).toEqual(minimalCluster());
  });

  it.each<[unknown, string]>([
    [[], "the body must be a JSON object"],
    [{ apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview" }, "request is missing"],
    [
      {
        apiVersion: "admission.k8s.io/v1",
        kind: "AdmissionReview",
        request: { uid: "u", kind: { group: "g", version: "v", kind: "K" }, operation: "PATCH" },
      },
      'request.operation "PATCH" must be CREATE, UPDATE, DELETE or CONNECT',
    ],
    [
      { apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", request: { uid: "u", operation: "CREATE" } },
      "request.kind must name the group, version and kind",
    ],
  ])("names what is wrong with %j", (body, problem) => {
    expect(decodeAdmissionReview(body)).toEqual({ problem: expect.stringContaining(problem) });
  });
});
