// The real LifecycleClient (client-node's KubernetesObjectApi over a kubeconfig) against a real kube-apiserver: the
// five verbs the lifecycle driver uses, with the semantics the fake cluster of the unit tests gives them; and the
// objects `captf-module test` creates for each role, accepted by captf's and Cluster API's real CRDs (their schemas
// and CEL rules; no webhooks run here), with the patches its steps send.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import { loadYaml } from "@kubernetes/client-node";
import { roles } from "@captf/contract/roles";
import { clusterApiCrdPaths, describeWithTools, startControlPlane, type ControlPlane } from "@captf/testkit";
import { kubernetesClient, type KubeObject, type LifecycleClient, type ObjectRef } from "./client.js";
import { lifecycleObjects, subjectRef, type LifecycleOptions } from "./objects.js";

const captfCrd = (plural: string) =>
  fileURLToPath(new URL(`../../../controller/config/crd/infrastructure.cluster.x-k8s.io_${plural}.yaml`, import.meta.url));

describeWithTools(["etcd", "kube-apiserver", "go"], "the lifecycle's Kubernetes client", () => {
  let plane: ControlPlane;
  let client: LifecycleClient;
  const ref: ObjectRef = { apiVersion: "v1", kind: "ConfigMap", namespace: "default", name: "lifecycle-client" };

  beforeAll(async () => {
    plane = await startControlPlane({ controllerManager: false });
    client = kubernetesClient(plane.kubeconfigPath);
  }, 120_000);
  afterAll(async () => plane?.stop());

  async function installCrds(paths: readonly string[]): Promise<void> {
    const names: string[] = [];
    for (const path of paths) {
      const crd = loadYaml<KubeObject>(readFileSync(path, "utf8"));
      names.push(crd.metadata.name);
      await client.create(crd);
    }
    for (const name of names)
      for (let attempt = 0; ; attempt++) {
        const crd = await client.get({ apiVersion: "apiextensions.k8s.io/v1", kind: "CustomResourceDefinition", namespace: "", name });
        if (crd?.status?.conditions?.some((c) => c.type === "Established" && c.status === "True")) break;
        if (attempt > 100) throw new Error(`CRD ${name} not established`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
  }

  it("reads an absent object as undefined, creates, reads and lists it by label", async () => {
    expect(await client.get(ref)).toBeUndefined();
    await client.create({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: ref.name, namespace: ref.namespace, labels: { "app.kubernetes.io/created-by": "captf-module" } },
      data: { size: "small" },
    });
    expect(await client.get(ref)).toMatchObject({ metadata: { name: ref.name }, data: { size: "small" } });
    const listed = await client.list("v1", "ConfigMap", "default", "app.kubernetes.io/created-by=captf-module");
    expect(listed.map((o) => o.metadata.name)).toEqual([ref.name]);
    expect(await client.list("v1", "ConfigMap", "default", "app.kubernetes.io/created-by=other")).toEqual([]);
  });

  it("says what it could not create, with the API server's message", async () => {
    await expect(
      client.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: ref.name, namespace: "default" } }),
    ).rejects.toThrow(/^creating ConfigMap lifecycle-client: .*already exists \(HTTP 409\)$/);
  });

  it("merge-patches annotations and fields, null removing one, and keeps the object's name", async () => {
    await client.patch(ref, { metadata: { annotations: { "captf.io/restore-state": "4" } }, data: { size: "large" } });
    expect(await client.get(ref)).toMatchObject({ metadata: { annotations: { "captf.io/restore-state": "4" } }, data: { size: "large" } });
    await client.patch(ref, { metadata: { annotations: { "captf.io/restore-state": null } } });
    expect((await client.get(ref))?.metadata.annotations?.["captf.io/restore-state"]).toBeUndefined();
  });

  it("deletes, and deleting what is gone is not an error", async () => {
    await client.delete(ref);
    expect(await client.get(ref)).toBeUndefined();
    await expect(client.delete(ref)).resolves.toBeUndefined();
  });

  it.each(roles)("%s: the objects test creates pass the real CRDs, and so do its drift and restore patches", async (role) => {
    if (role === roles[0])
      await installCrds([
        captfCrd("terraformclusters"),
        captfCrd("terraformmachines"),
        captfCrd("terraformmachinepools"),
        ...clusterApiCrdPaths().filter((path) => /_(clusters|machines|machinepools)\.yaml$/.test(path)),
      ]);
    const options: LifecycleOptions = {
      role,
      namespace: "default",
      image: "127.0.0.1:5000/m@sha256:" + "a".repeat(64),
      name: `t-${role}`,
      ...(role === "cluster" ? { identity: "noop" } : { cluster: "dev" }),
      variables: { size: "small" },
      replicas: 1,
      driftIntervalSeconds: 60,
      stepTimeoutSeconds: 1,
      pollSeconds: 1,
    };
    for (const object of lifecycleObjects(options)) await client.create(object);
    const subject = subjectRef(options);
    expect(await client.get(subject)).toMatchObject({ spec: { source: { image: options.image }, variables: { size: "small" } } });
    await client.patch(subject, { spec: { drift: { intervalSeconds: 60 } } });
    await client.patch(subject, { metadata: { annotations: { "captf.io/restore-state": "3" } } });
    await client.patch(subject, { spec: { drift: null } });
    const read = await client.get(subject);
    expect(read?.spec?.drift).toBeUndefined();
    expect(read?.metadata.annotations?.["captf.io/restore-state"]).toBe("3");
  });
});
