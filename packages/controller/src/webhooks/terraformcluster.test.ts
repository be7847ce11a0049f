import { describe, expect, it } from "@jest/globals";
import { fullCluster, minimalCluster } from "../api/examples.test-support.js";
import type { TerraformCluster } from "../api/terraformcluster.js";
import { asUser, reasonsOf } from "./admission.test-support.js";
import { validateTerraformCluster } from "./terraformcluster.js";

function updated(change: (cluster: TerraformCluster) => void, from = fullCluster()): [TerraformCluster, TerraformCluster] {
  const next = structuredClone(from);
  change(next);
  return [from, next];
}

describe("validateTerraformCluster", () => {
  it("admits a minimal and a full cluster", () => {
    expect(validateTerraformCluster(undefined, minimalCluster(), asUser())).toEqual({ allowed: true });
    expect(validateTerraformCluster(undefined, fullCluster(), asUser())).toEqual({ allowed: true });
  });

  it.each<[string, (cluster: TerraformCluster) => void, string]>([
    [
      "no identityRef",
      (c) => delete c.spec.identityRef,
      "spec.identityRef.name is required: a TerraformCluster uses only its own identity",
    ],
    ["an invalid image", (c) => (c.spec.source.image = "ghcr.io/a b"), 'spec.source.image: "ghcr.io/a b" is not a valid image reference'],
    [
      "a half-set endpoint",
      (c) => (c.spec.controlPlaneEndpoint = { port: 6443 }),
      "spec.controlPlaneEndpoint: set host and port together, or neither",
    ],
    [
      "a cluster contract input as a variable",
      (c) => (c.spec.variables = { kubernetes_version: "v1.34.0" }),
      'spec.variables: variable name "kubernetes_version" is reserved: it is a cluster contract input',
    ],
    [
      "a weak spec.jobs",
      (c) => (c.spec.jobs = { securityContext: { privileged: true } }),
      "spec.jobs.securityContext.privileged: true is not allowed",
    ],
    [
      "an inconsistent spec.defaults.jobs",
      (c) => (c.spec.defaults = { jobs: { lockTimeoutSeconds: 4000 } }),
      "spec.defaults.jobs.lockTimeoutSeconds: 4000 must be less than the built-in deadline",
    ],
    [
      "TF_ in spec.defaults.jobs.env",
      (c) => (c.spec.defaults = { jobs: { env: [{ name: "TF_CLI_CONFIG_FILE", value: "/x" }] } }),
      'spec.defaults.jobs.env[0].name: "TF_CLI_CONFIG_FILE" is reserved',
    ],
  ])("refuses a new cluster with %s", (_name, change, reason) => {
    const cluster = minimalCluster();
    change(cluster);
    expect(reasonsOf(validateTerraformCluster(undefined, cluster, asUser()))).toEqual([expect.stringContaining(reason)]);
  });

  it.each<[string, (cluster: TerraformCluster) => void]>([
    ["the host changed", (c) => (c.spec.controlPlaneEndpoint!.host = "other.example.com")],
    ["the port changed", (c) => (c.spec.controlPlaneEndpoint!.port = 443)],
    ["the endpoint removed", (c) => delete c.spec.controlPlaneEndpoint],
  ])("refuses an endpoint update once it has a host: %s", (_name, change) => {
    const [before, after] = updated(change);
    expect(reasonsOf(validateTerraformCluster(before, after, asUser()))).toEqual([
      "spec.controlPlaneEndpoint is immutable once it has a host (demo-api.example.com:6443): every Machine and kubeconfig " +
        "points at it; create a new cluster to use another endpoint",
    ]);
  });

  it("lets a stored endpoint without a port be completed, and an unset one be set", () => {
    const halfSet = minimalCluster();
    halfSet.spec.controlPlaneEndpoint = { host: "api.example.com" };
    const [before, completed] = updated((c) => (c.spec.controlPlaneEndpoint!.port = 6443), halfSet);
    expect(validateTerraformCluster(before, completed, asUser()).allowed).toBe(true);
    const [unset, set] = updated((c) => (c.spec.controlPlaneEndpoint = { host: "a.example.com", port: 6443 }), minimalCluster());
    expect(validateTerraformCluster(unset, set, asUser()).allowed).toBe(true);
  });

  it("leaves every other field mutable", () => {
    const [before, after] = updated((c) => {
      c.spec.source.image = "ghcr.io/captf-io/module-images/noop-cluster:v0.2.0";
      c.spec.identityRef = { name: "gcp" };
      c.spec.variables = { region: "us-east-1" };
      c.spec.variablesFrom = [{ configMapRef: { name: "other" } }];
      c.spec.applyPolicy = "Automatic";
      c.spec.jobs = { activeDeadlineSeconds: 900 };
    });
    expect(validateTerraformCluster(before, after, asUser())).toEqual({ allowed: true });
  });

  it("does not check the policies of a cluster being deleted, so its finalizer can be removed", () => {
    const stored = fullCluster();
    stored.spec.jobs = { lockTimeoutSeconds: 4000 };
    const [before, after] = updated((c) => {
      c.metadata!.deletionTimestamp = new Date("2026-10-02T00:00:00Z");
      c.metadata!.finalizers = [];
      c.spec.jobs = { lockTimeoutSeconds: 4001 };
    }, stored);
    expect(validateTerraformCluster(before, after, asUser()).allowed).toBe(true);
  });

  it("reports every violation at once", () => {
    const cluster = minimalCluster();
    delete cluster.spec.identityRef;
    cluster.spec.source.image = "ghcr.io/UPPER/case";
    cluster.spec.variables = { captf_x: 1, count: 2 };
    expect(reasonsOf(validateTerraformCluster(undefined, cluster, asUser()))).toHaveLength(4);
  });
});
