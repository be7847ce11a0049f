// captf_identity_denied_total by reason: the credentials resolver the reconciler is given decides IdentityAllowed from the
// identities, namespaces and Secrets the API server holds, and the reconciler counts a denial under identityDeniedReason's
// label (reconcileWorkspace, once per transition, which lifecycle.integration.test.ts proves on a real API server).
import { describe, expect, it } from "@jest/globals";
import { Registry } from "prom-client";
import { CaptfMetrics } from "../metrics/captf-metrics.js";
import { seriesValue } from "../metrics/series.test-support.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import { FakeObjects } from "../runtime/fake-client.test-support.js";
import type { WorkspaceObject } from "../reconcile/types.js";
import { identityResourceType } from "./ensure-credentials.js";
import { identityCredentials, identityDeniedReason } from "./job-credentials.js";

const namespace = "team-a";

/** An API server with one identity, `aws`, that lets only team-b use the Secret it names. */
function server(): FakeObjects {
  return new FakeObjects()
    .seed(identityResourceType, "", {
      metadata: { name: "aws" },
      spec: { secretRef: { name: "aws-creds", namespace: "captf-system" }, allowedNamespaces: { list: ["team-b"] } },
    })
    .seed(builtinTypes.secret, "captf-system", { metadata: { name: "aws-creds" }, data: { KEY: "Y2FuYXJ5" } })
    .seed(builtinTypes.namespace, "", { metadata: { name: namespace } });
}

const machine = (identityRef: WorkspaceObject["spec"]["identityRef"]): WorkspaceObject => ({
  metadata: { name: "m", namespace, uid: "uid-m" },
  spec: { source: { image: "registry.example/m:v1" }, identityRef },
});

type Denial = [what: string, identityRef: WorkspaceObject["spec"]["identityRef"], condition: string, labels: { reason: string }];

describe("identity denials", () => {
  it.each<Denial>([
    ["an identity that does not allow the object's namespace", { name: "aws" }, "NamespaceNotAllowed", { reason: "namespace" }],
    ["an identity that does not exist", { name: "gcp" }, "IdentityNotFound", { reason: "notfound" }],
    ["a Secret of the namespace that does not exist", { name: "local-creds", kind: "Secret" }, "SecretNotFound", { reason: "notfound" }],
  ] as Denial[])("%s", async (_what, identityRef, condition, labels) => {
    const registry = new Registry();
    const metrics = new CaptfMetrics(registry);
    const credentials = await identityCredentials({ client: server().client })({
      role: "machine",
      object: machine(identityRef),
      terraformCluster: undefined,
    });
    const allowed = credentials.conditions.find(({ type }) => type === "IdentityAllowed")?.value;
    expect(allowed).toMatchObject({ status: "False", reason: condition });
    expect(credentials.ready).toBe(false);
    // As reconcileWorkspace counts the IdentityAllowed=False it reports.
    const denied = identityDeniedReason(allowed!.reason);
    if (denied) metrics.identityDenied.inc({ reason: denied });
    expect(await seriesValue(registry, "captf_identity_denied_total", labels)).toBe(1);
    expect(await seriesValue(registry, "captf_identity_denied_total")).toBe(1);
  });
});
