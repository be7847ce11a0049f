import { copyFile, mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { describeWithTools, sharedControlPlane } from "@captf/testkit";
import { RunnerFixture } from "./runner-fixture.test-support.js";

// Runner events land on the real API server as events.k8s.io/v1 Events about the owning object.
describeWithTools(["tofu", "etcd", "kube-apiserver", "kube-controller-manager"], "runner events on the real API server", () => {
  const namespace = `events-${Date.now().toString(36)}`;
  let fixture: RunnerFixture;
  let events: k8s.EventsV1Api;
  let serviceAccountDir: string;
  let uid: string;

  beforeAll(async () => {
    const plane = sharedControlPlane();
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(plane.kubeconfigPath);
    const core = kc.makeApiClient(k8s.CoreV1Api);
    events = kc.makeApiClient(k8s.EventsV1Api);
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    // Any object can be "regarding"; a ConfigMap stands in for the Terraform* object here.
    uid = (await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: "m-0" } } })).metadata!.uid!;
    fixture = await RunnerFixture.create("module", { variables: { name: { type: "string" } }, outputs: ["provider_id"] });
    await fixture.setInputs({ name: "evented" });
    serviceAccountDir = join(fixture.base, "serviceaccount");
    await mkdir(serviceAccountDir, { recursive: true });
    await writeFile(join(serviceAccountDir, "token"), plane.token);
    await copyFile(plane.caFile, join(serviceAccountDir, "ca.crt"));
  });
  afterAll(async () => fixture?.remove());

  it("reports the run's stages as Events regarding the object, related to the Job", async () => {
    const run = await fixture.run("apply", {
      args: [
        `--event-object=v1/ConfigMap/${namespace}/m-0/${uid}`,
        "--job-name=captf-m-m-0-apply-a1-abcdef",
        `--events-server=${sharedControlPlane().server}`,
        `--service-account-dir=${serviceAccountDir}`,
      ],
      env: { POD_NAME: "captf-m-m-0-apply-a1-abcdef-x7k2p" },
    });
    expect(run.result.error).toBeNull();
    const list = await events.listNamespacedEvent({ namespace });
    const reasons = list.items.map((event) => event.reason);
    expect(reasons).toEqual(expect.arrayContaining(["RunStarted", "StepStarted", "StepSucceeded", "ResourcesChanged", "RunFinished"]));
    for (const event of list.items) {
      expect(event.reportingController).toBe("captf.io/runner");
      expect(event.reportingInstance).toBe("captf-m-m-0-apply-a1-abcdef-x7k2p");
      expect(event.regarding).toMatchObject({ kind: "ConfigMap", name: "m-0", uid });
      expect(event.related).toMatchObject({ kind: "Job", name: "captf-m-m-0-apply-a1-abcdef" });
    }
  }, 60_000);
});
