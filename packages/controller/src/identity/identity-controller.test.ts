import { describe, expect, it } from "@jest/globals";
import { pino } from "pino";
import { ReadCache } from "../runtime/read-cache.js";
import { fakeClient } from "../runtime/fake-client.test-support.js";
import { identityController, identityResourceType, sourceOwnerReferences } from "./identity-controller.js";

describe("identityController", () => {
  const controller = identityController({ client: fakeClient({}) });

  it("reconciles the cluster-scoped TerraformClusterIdentity, skipping its own status writes", () => {
    expect(controller).toMatchObject({ name: "terraformclusteridentity", kind: "TerraformClusterIdentity", concurrency: 1 });
    const [self] = controller.watches;
    expect(self?.type).toMatchObject({ plural: "terraformclusteridentities", namespaced: false });
    const identity = { metadata: { name: "aws", generation: 1, labels: {} } };
    expect(self?.map(identity, "add")).toEqual(["aws"]);
    expect(self?.predicate?.(identity, "update", { metadata: { name: "aws", generation: 1, labels: {} } })).toBe(false);
    expect(self?.predicate?.(identity, "update", { metadata: { name: "aws", generation: 0, labels: {} } })).toBe(true);
  });

  it("wakes the identity a mirror Secret names, watching only labelled mirrors", () => {
    const mirrors = controller.watches[1]!;
    expect(mirrors.type).toMatchObject({ plural: "secrets", group: "" });
    expect(mirrors.labelSelector).toBe("captf.io/mirrored=true,captf.io/managed=true");
    expect(
      mirrors.map({ metadata: { namespace: "team-a", name: "captf-creds-aws", annotations: { "captf.io/identity": "aws" } } }, "delete"),
    ).toEqual(["aws"]);
    expect(mirrors.map({ metadata: { namespace: "team-a", name: "captf-creds-x" } }, "add")).toEqual([]);
  });
});

describe("identityController with the manager's caches", () => {
  it("reads the identity from the cache and the mirrors from the mirror watch's cache: only the source Secret is read live", async () => {
    const identity = {
      metadata: { name: "aws", resourceVersion: "3" },
      spec: { secretRef: { name: "creds", namespace: "captf-system" }, allowedNamespaces: { list: ["team-a"] } },
    };
    const informer = {
      hasSynced: () => true,
      resourceVersion: "3",
      get: (key: string | undefined, name?: string) => ((name ?? key) === "aws" ? identity : undefined),
      list: () => [],
    };
    const live = { get: async () => Promise.reject(new Error("read live")), list: async () => Promise.reject(new Error("listed live")) };
    const reads = new ReadCache(live).add(identityResourceType, { informer });
    // Only these two answer: a live read of the identity or a live list of the mirrors fails the pass.
    const client = fakeClient({
      "get secrets": async () => ({ data: { KEY: "dg==" } }),
      "patchStatus terraformclusteridentities": async () => ({}),
    });
    const mirror = { metadata: { namespace: "team-a", name: "captf-creds-aws", annotations: { "captf.io/identity": "aws" } } };
    const controller = identityController({ client }, { cache: { reads, mirrors: () => [mirror] }, now: () => 0 });
    const context = {
      namespace: undefined,
      name: "aws",
      reconcileId: "r",
      logger: pino({ level: "silent" }),
      signal: new AbortController().signal,
    };
    await controller.reconcile("aws", context);
    expect(client.calls).toEqual(["get secrets creds", "patchStatus terraformclusteridentities aws"]);
    expect(await controller.reconcile("gone", { ...context, name: "gone" })).toEqual({});
  });
});

describe("sourceOwnerReferences", () => {
  const identity = { metadata: { name: "aws", uid: "identity-uid" } };
  const ownedByIdentity = {
    apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
    kind: "TerraformClusterIdentity",
    name: "aws",
    uid: "identity-uid",
  };

  it("adds the identity beside the Secret's other owners, never as its controller", () => {
    const other = { apiVersion: "v1", kind: "ConfigMap", name: "keeper", uid: "other-uid", controller: true };
    expect(sourceOwnerReferences({ metadata: {} }, identity)).toEqual([ownedByIdentity]);
    expect(sourceOwnerReferences({ metadata: { ownerReferences: [other] } }, identity)).toEqual([other, ownedByIdentity]);
  });

  it("changes nothing once the identity owns it, or for an identity not stored yet", () => {
    expect(sourceOwnerReferences({ metadata: { ownerReferences: [ownedByIdentity] } }, identity)).toBeUndefined();
    expect(sourceOwnerReferences({ metadata: {} }, { metadata: { name: "aws" } })).toBeUndefined();
  });
});
