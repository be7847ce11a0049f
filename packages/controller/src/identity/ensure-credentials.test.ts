import { describe, expect, it } from "@jest/globals";
import { ensureCredentials } from "./ensure-credentials.js";
import { ensureRunnerRbac } from "./runner-rbac.js";
import { apiError, fakeClient, type FakeCall } from "../runtime/fake-client.test-support.js";

// The paths a real API server rarely takes: reads and writes that fail. Happy paths and the
// server's own behaviour are in identity.integration.test.ts.

const user = { kind: "TerraformCluster", namespace: "team-a", name: "c", uid: "u", identity: "aws" };
const identity = {
  spec: { secretRef: { name: "aws-creds", namespace: "captf-system" }, allowedNamespaces: { selector: { matchLabels: { team: "a" } } } },
};

function stubs(overrides: {
  identity?: () => Promise<unknown>;
  namespace?: () => Promise<unknown>;
  secret?: (name: string) => Promise<unknown>;
  create?: () => Promise<unknown>;
  patch?: (call: FakeCall) => unknown;
}) {
  const client = fakeClient({
    "get terraformclusteridentities": overrides.identity ?? (async () => identity),
    "get namespaces": overrides.namespace ?? (async () => ({ metadata: { name: "team-a", labels: { team: "a" } } })),
    "get secrets": async ({ name }) =>
      overrides.secret
        ? overrides.secret(name!)
        : name === "aws-creds"
          ? { data: { KEY: Buffer.from("canary-value").toString("base64") } }
          : Promise.reject(apiError(404, "not found")),
    "create secrets": overrides.create ?? (async () => ({})),
    ...(overrides.patch ? { "patch secrets": overrides.patch } : {}),
  });
  return { client };
}

describe("ensureCredentials when the API fails", () => {
  it.each<[string, Parameters<typeof stubs>[0], string]>([
    [
      "the identity cannot be read",
      { identity: () => Promise.reject(apiError(500, "etcdserver: request timed out")) },
      "reading TerraformClusterIdentity aws failed: HTTP 500: etcdserver: request timed out",
    ],
    [
      "the namespace cannot be read",
      { namespace: () => Promise.reject(apiError(403, "namespaces is forbidden")) },
      "reading namespace team-a for TerraformClusterIdentity aws failed: HTTP 403: namespaces is forbidden",
    ],
    [
      "the source Secret cannot be read",
      { secret: () => Promise.reject(apiError(403, 'secrets "aws-creds" is forbidden')) },
      'reading Secret captf-system/aws-creds of TerraformClusterIdentity aws failed: HTTP 403: secrets "aws-creds" is forbidden',
    ],
  ])("%s: IdentityAllowed=Unknown/IdentityCheckFailed", async (_title, overrides, message) => {
    const outcome = await ensureCredentials(stubs(overrides), user);
    expect(outcome.identityAllowed).toEqual({ type: "IdentityAllowed", status: "Unknown", reason: "IdentityCheckFailed", message });
    expect(outcome.credentialsMirrored).toMatchObject({ status: "Unknown", reason: "MirrorPending" });
    expect(outcome.credentialsSecret).toBeUndefined();
  });

  it("denies a selector-allowed namespace that does not exist", async () => {
    const outcome = await ensureCredentials(stubs({ namespace: () => Promise.reject(apiError(404, "not found")) }), user);
    expect(outcome.identityAllowed).toMatchObject({
      status: "False",
      reason: "NamespaceNotAllowed",
      message: expect.stringContaining("namespace team-a does not exist"),
    });
  });

  it("a failed write of the mirror: CredentialsMirrored=False/MirrorFailed; a lost race: MirrorPending", async () => {
    const failed = await ensureCredentials(stubs({ create: () => Promise.reject(apiError(422, "Secret is invalid")) }), user);
    expect(failed.identityAllowed).toMatchObject({ status: "True", reason: "IdentityAllowed" });
    expect(failed.credentialsMirrored).toEqual({
      type: "CredentialsMirrored",
      status: "False",
      reason: "MirrorFailed",
      message: "writing Secret team-a/captf-creds-aws failed: HTTP 422: Secret is invalid",
    });
    const raced = await ensureCredentials(stubs({ create: () => Promise.reject(apiError(409, "already exists")) }), user);
    expect(raced.credentialsMirrored).toMatchObject({ status: "Unknown", reason: "MirrorPending" });
    // A lost race is retried at once (many users of one identity add their ownerReferences together), a failure later.
    expect(raced.lostRace).toBe(true);
    expect(failed.lostRace).toBeUndefined();
    expect(JSON.stringify([failed, raced])).not.toContain(Buffer.from("canary-value").toString("base64"));
  });
});

describe("ensureCredentials racing other users of the identity", () => {
  it("a create that lost to another user's reads the winner's mirror live and adds its ownerReference in the same pass", async () => {
    const data = { KEY: Buffer.from("canary-value").toString("base64") };
    const { credentialsHash } = await import("./credentials-mirror.js");
    const winner = {
      metadata: {
        name: "captf-creds-aws",
        namespace: "team-a",
        resourceVersion: "5",
        labels: { "captf.io/mirrored": "true", "captf.io/managed": "true" },
        annotations: { "captf.io/source-hash": credentialsHash(data), "captf.io/identity": "aws" },
        ownerReferences: [
          { apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1", kind: "TerraformCluster", name: "other", uid: "u-other" },
        ],
      },
      data,
    };
    let mirrorReads = 0;
    const patches: unknown[] = [];
    const patchTypes: unknown[] = [];
    const clients = stubs({
      secret: async (name) => (name === "aws-creds" ? { data } : mirrorReads++ === 0 ? Promise.reject(apiError(404, "not found")) : winner),
      create: () => Promise.reject(apiError(409, "already exists")),
      patch: ({ body, patchType }) => (patches.push(body), patchTypes.push(patchType)),
    });
    const outcome = await ensureCredentials(clients, user);
    expect(outcome.credentialsMirrored).toMatchObject({ status: "True", reason: "Mirrored" });
    expect(outcome.lostRace).toBeUndefined();
    expect(patches).toEqual([
      {
        metadata: {
          "$setElementOrder/ownerReferences": [{ uid: "u-other" }, { uid: "u" }],
          ownerReferences: [expect.objectContaining({ uid: "u", name: "c" })],
        },
      },
    ]);
    // A strategic merge: the ownerReferences merge by uid, a JSON merge patch would replace the list.
    expect(patchTypes).toEqual(["strategic"]);
  });
});

describe("ensureRunnerRbac when the API fails", () => {
  it("RunnerRBACReady=False/RBACFailed, never Unknown", async () => {
    const client = fakeClient({ "get serviceaccounts": async () => ({}), "get rolebindings": () => Promise.reject(apiError(500, "boom")) });
    expect(await ensureRunnerRbac({ client }, "team-a")).toEqual({
      type: "RunnerRBACReady",
      status: "False",
      reason: "RBACFailed",
      message: "RoleBinding team-a/captf-runner: HTTP 500: boom",
    });
    const denied = fakeClient({
      "get serviceaccounts": () => Promise.reject(apiError(403, "forbidden")),
      "get rolebindings": () => Promise.reject(apiError(500, "boom")),
    });
    expect(await ensureRunnerRbac({ client: denied }, "team-a")).toMatchObject({
      status: "False",
      reason: "RBACFailed",
      message: "ServiceAccount team-a/captf-runner: HTTP 403: forbidden",
    });
  });
});
