import { beforeAll, expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { stateLockLeaseName } from "@captf/render";
import { describeWithTools, sharedControlPlane } from "@captf/testkit";
import { KubeClient } from "../runtime/kube-client.js";
import { deleteFreeStateLock } from "./state-lock.js";

// The lock Lease of a state that is gone, on the real API server: deleted when free, kept when held.
describeWithTools(["etcd", "kube-apiserver"], "deleting the state lock Lease", () => {
  const namespace = `state-lock-${Date.now().toString(36)}`;
  let coordination: k8s.CoordinationV1Api;
  let client: KubeClient;

  beforeAll(async () => {
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(sharedControlPlane().kubeconfigPath);
    coordination = kc.makeApiClient(k8s.CoordinationV1Api);
    client = new KubeClient(kc);
    await kc.makeApiClient(k8s.CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
  });

  const createLock = (suffix: string, holderIdentity?: string) =>
    coordination.createNamespacedLease({
      namespace,
      body: { metadata: { name: stateLockLeaseName(suffix), labels: { tfstate: "true" } }, spec: holderIdentity ? { holderIdentity } : {} },
    });
  const names = async () => (await coordination.listNamespacedLease({ namespace })).items.map((lease) => lease.metadata!.name);

  it("deletes a free lock and counts an absent one as gone", async () => {
    await createLock("free-m");
    expect(await deleteFreeStateLock(client, namespace, "free-m")).toEqual({ removed: true });
    expect(await names()).not.toContain(stateLockLeaseName("free-m"));
    expect(await deleteFreeStateLock(client, namespace, "never-m")).toEqual({ removed: true });
  });

  it("keeps a lock someone holds and names the holder", async () => {
    await createLock("held-m", "alice@laptop");
    expect(await deleteFreeStateLock(client, namespace, "held-m")).toEqual({ removed: false, holder: "alice@laptop" });
    expect(await names()).toContain(stateLockLeaseName("held-m"));
  });

  it("deletes a lock held by the object's own dead runner when told its ID, and only that one", async () => {
    await createLock("stale-m", "lock-7");
    expect(await deleteFreeStateLock(client, namespace, "stale-m", "lock-8")).toEqual({ removed: false, holder: "lock-7" });
    expect(await deleteFreeStateLock(client, namespace, "stale-m", "lock-7")).toEqual({ removed: true });
    expect(await names()).not.toContain(stateLockLeaseName("stale-m"));
  });
});
