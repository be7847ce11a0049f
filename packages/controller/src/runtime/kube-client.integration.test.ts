// The one client's writes on a real API server, where client-node's typed APIs used to do them:
// delete preconditions and propagation, strategic vs JSON merge patches of ownerReferences, the
// status subresource, MicroTime, and the errors the predicates read.
import { afterAll, beforeAll, expect, it, jest } from "@jest/globals";
import { describeWithTools } from "@captf/testkit";
import { isAlreadyExists, isConflict, isNotFound, KubeApiError } from "./api-errors.js";
import { builtinTypes } from "./builtin-types.js";
import { KubeClient, microTime, type KubeObject } from "./kube-client.js";
import { createTestNamespace, planeKubeConfig } from "./runtime.test-support.js";

jest.setTimeout(30_000);

type Owned = KubeObject & { data?: Record<string, string> };

describeWithTools(["etcd", "kube-apiserver"], "the API client on a real API server", () => {
  let client: KubeClient;
  let namespace: string;
  const configMap = (name: string): Owned => ({ metadata: { name }, data: { key: "value" } });

  beforeAll(async () => {
    client = new KubeClient(planeKubeConfig());
    namespace = await createTestNamespace(client, "kube-client");
  });

  afterAll(async () => {
    await client.delete(builtinTypes.namespace, undefined, namespace).catch(() => undefined);
    client.close();
  });

  it("deletes with preconditions only the object read: a changed one stays (409 Conflict), the one read goes", async () => {
    const created = await client.create<Owned>(builtinTypes.configMap, namespace, configMap("preconditioned"));
    const changed = await client.patch<Owned>(builtinTypes.configMap, namespace, "preconditioned", { data: { key: "changed" } });
    const stale = { uid: created.metadata?.uid, resourceVersion: created.metadata?.resourceVersion };
    const refused = await client
      .delete(builtinTypes.configMap, namespace, "preconditioned", { preconditions: stale })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(KubeApiError);
    expect(isConflict(refused)).toBe(true);
    expect((await client.get<Owned>(builtinTypes.configMap, namespace, "preconditioned")).data).toEqual({ key: "changed" });
    await client.delete(builtinTypes.configMap, namespace, "preconditioned", {
      preconditions: { uid: changed.metadata?.uid, resourceVersion: changed.metadata?.resourceVersion },
    });
    expect(isNotFound(await client.get(builtinTypes.configMap, namespace, "preconditioned").catch((error: unknown) => error))).toBe(true);
  });

  it("deletes a Job with propagationPolicy Background: its Pods go with it, where the default orphans them", async () => {
    const job = (name: string) => ({
      metadata: { name },
      spec: { template: { spec: { restartPolicy: "Never", containers: [{ name: "c", image: "registry.invalid/none:v1" }] } } },
    });
    type Deleted = KubeObject & { metadata?: { finalizers?: string[] } };
    await client.create(builtinTypes.job, namespace, job("orphaning"));
    await client.create(builtinTypes.job, namespace, job("propagated"));
    // batch/v1 Jobs default to orphaning their Pods: the server marks the Job with the orphan finalizer.
    expect((await client.delete<Deleted>(builtinTypes.job, namespace, "orphaning")).metadata?.finalizers).toContain("orphan");
    expect(
      (await client.delete<Deleted>(builtinTypes.job, namespace, "propagated", { propagationPolicy: "Background" })).metadata?.finalizers ??
        [],
    ).not.toContain("orphan");
  });

  it("merges ownerReferences by uid with a strategic patch ($setElementOrder), and replaces them with a JSON merge patch", async () => {
    // Owners that exist: a garbage collector would delete an object whose owners are all gone.
    const owners = new Map<string, string>();
    for (const name of ["a", "b", "c", "d"])
      owners.set(name, (await client.create(builtinTypes.configMap, namespace, configMap(`owner-${name}`))).metadata!.uid!);
    const reference = (name: string) => ({ apiVersion: "v1", kind: "ConfigMap", name: `owner-${name}`, uid: owners.get(name)! });
    const ownerNames = (object: Owned) => object.metadata?.ownerReferences?.map((owner) => owner.name).sort();
    await client.create(builtinTypes.configMap, namespace, {
      ...configMap("owned"),
      metadata: { name: "owned", ownerReferences: [reference("a")] },
    });
    // Another writer added b since a was read: a strategic patch planned on the read list keeps it.
    await client.patch(
      builtinTypes.configMap,
      namespace,
      "owned",
      { metadata: { ownerReferences: [reference("a"), reference("b")] } },
      "merge",
    );
    const strategic = await client.patch<Owned>(
      builtinTypes.configMap,
      namespace,
      "owned",
      {
        metadata: {
          "$setElementOrder/ownerReferences": [{ uid: owners.get("a") }, { uid: owners.get("c") }],
          ownerReferences: [reference("c")],
        },
      },
      "strategic",
    );
    expect(ownerNames(strategic)).toEqual(["owner-a", "owner-b", "owner-c"]);
    const merged = await client.patch<Owned>(
      builtinTypes.configMap,
      namespace,
      "owned",
      { metadata: { ownerReferences: [reference("d")] } },
      "merge",
    );
    expect(ownerNames(merged)).toEqual(["owner-d"]);
  });

  it("tells AlreadyExists from a stale replace (both 409), and NotFound", async () => {
    await client.create(builtinTypes.configMap, namespace, configMap("twice"));
    const again = await client.create(builtinTypes.configMap, namespace, configMap("twice")).catch((error: unknown) => error);
    expect([isConflict(again), isAlreadyExists(again)]).toEqual([true, true]);
    const stale = await client
      .replace(builtinTypes.configMap, namespace, "twice", { ...configMap("twice"), metadata: { name: "twice", resourceVersion: "1" } })
      .catch((error: unknown) => error);
    expect([isConflict(stale), isAlreadyExists(stale)]).toEqual([true, false]);
    expect(isNotFound(await client.patch(builtinTypes.configMap, namespace, "absent", { data: {} }).catch((error: unknown) => error))).toBe(
      true,
    );
  });

  it(
    "writes an Event whose eventTime is a MicroTime string, which the server keeps to the microsecond; a JSON Date's text it " + "refuses",
    async () => {
      const at = Date.UTC(2026, 11, 5, 7, 0, 0, 123);
      const event = (name: string, eventTime: string) => ({
        apiVersion: "events.k8s.io/v1",
        kind: "Event",
        metadata: { name },
        eventTime,
        reportingController: "captf.io/test",
        reportingInstance: "test",
        action: "Test",
        reason: "Tested",
        type: "Normal",
        regarding: { apiVersion: "v1", kind: "ConfigMap", namespace, name: "any" },
      });
      expect((await client.create(builtinTypes.event, namespace, event("micro", microTime(at)))).eventTime).toBe(
        "2026-12-05T07:00:00.123000Z",
      );
      const millis = await client
        .create(builtinTypes.event, namespace, event("millis", new Date(at).toISOString()))
        .catch((error: unknown) => error);
      expect(millis).toBeInstanceOf(KubeApiError);
    },
  );

  it("patches a status through the status subresource, which ignores the rest of the patch", async () => {
    type Namespace = KubeObject & { spec?: { finalizers?: string[] }; status?: { conditions?: { type: string }[] } };
    const condition = {
      type: "NamespaceDeletionDiscoveryFailure",
      status: "False",
      reason: "Tested",
      message: "set by a test",
      lastTransitionTime: "2026-12-05T07:00:00Z",
    };
    const patched = await client.patchStatus<Namespace>(builtinTypes.namespace, undefined, namespace, {
      spec: { finalizers: [] },
      status: { conditions: [condition] },
    });
    expect(patched.status?.conditions?.map((written) => written.type)).toEqual(["NamespaceDeletionDiscoveryFailure"]);
    expect(patched.spec?.finalizers).toEqual(["kubernetes"]);
  });
});
