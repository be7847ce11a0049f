// The credentials phase: the resolver runs for a live object only (a deleting one makes them when its Job starts), and a Job policy's
// ServiceAccount other than captf-runner is read live and refuses Jobs until it is opted in.
import { describe, expect, it } from "@jest/globals";
import { labels } from "@captf/contract/api";
import { builtinTypes } from "../runtime/builtin-types.js";
import { FakeObjects } from "../runtime/fake-client.test-support.js";
import { passNamespace } from "./phase-pass.test-support.js";
import { reconcileCredentials } from "./phase-credentials.js";
import { reconcilePass } from "./reconcile-pass.test-support.js";
import type { CredentialsResolver, JobCredentials } from "./types.js";

const now = Date.parse("2026-12-07T10:00:00Z");
const allowed: JobCredentials = {
  conditions: [{ type: "IdentityAllowed", value: { status: "True", reason: "IdentityAllowed" } }],
  ready: true,
  secretName: "captf-credentials-m",
};

function resolverCounting(): { resolver: CredentialsResolver; calls: number[] } {
  const calls: number[] = [];
  return { calls, resolver: async () => (calls.push(1), allowed) };
}

describe("reconcileCredentials", () => {
  it("resolves a live object's credentials onto the pass and its conditions onto the status", async () => {
    const { resolver, calls } = resolverCounting();
    const pass = reconcilePass(new FakeObjects().client, { now });
    pass.deps.credentials = resolver;
    await reconcileCredentials(pass);
    expect(calls).toHaveLength(1);
    expect(pass.facts.credentials).toEqual(allowed);
    expect(pass.scope.credentials).toEqual(allowed.conditions);
  });

  it.each([
    ["deleting", { deleting: true }],
    ["paused", { paused: true }],
  ])("makes none while %s", async (_what, scope) => {
    const { resolver, calls } = resolverCounting();
    const pass = reconcilePass(new FakeObjects().client, { now, scope });
    pass.deps.credentials = resolver;
    await reconcileCredentials(pass);
    expect(calls).toHaveLength(0);
    expect(pass.facts.credentials).toBeUndefined();
  });

  it("refuses a ServiceAccount not opted in, and accepts it once labelled", async () => {
    const server = new FakeObjects();
    server.seed(builtinTypes.serviceAccount, passNamespace, { metadata: { name: "custom" } });
    const pass = reconcilePass(server.client, { now, facts: { jobPolicy: { serviceAccountName: "custom" } } });
    await reconcileCredentials(pass);
    expect(pass.facts.serviceAccountRefusal).toMatchObject({ status: "False", reason: "ServiceAccountNotOptedIn" });
    expect(pass.scope.serviceAccount).toEqual(pass.facts.serviceAccountRefusal);

    server.seed(builtinTypes.serviceAccount, passNamespace, {
      metadata: { name: "custom", labels: { [labels.runnerServiceAccount]: "true" } },
    });
    const optedIn = reconcilePass(server.client, { now, facts: { jobPolicy: { serviceAccountName: "custom" } } });
    await reconcileCredentials(optedIn);
    expect(optedIn.facts.serviceAccountRefusal).toBeUndefined();
    expect(optedIn.scope.serviceAccount?.status).toBe("True");
  });
});
