import { afterAll, beforeAll, expect, it } from "@jest/globals";
import { cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { noopModuleDirectory } from "@captf/module-noop";
import { stateLockLeaseName, stateSecretName, stateSecretSuffix } from "@captf/render";
import { describeWithTools, waitFor } from "@captf/testkit";
import { Registry } from "prom-client";
import { machineAdapter } from "../kinds/adapters.js";
import { CaptfMetrics } from "../metrics/captf-metrics.js";
import { seriesValue, seriesValues } from "../metrics/series.test-support.js";
import { startJobExecutor, type JobExecutor } from "./job-executor.test-support.js";
import { createMachine, readMachine } from "./machine-fixture.test-support.js";
import { allJobsFinished, planeReconcilerDeps, preparePlane, type PlaneClients } from "./plane.test-support.js";
import { reconcileWorkspace, type ReconcilerDeps } from "./workspace-reconciler.js";

const machineImage = "registry.invalid/captf/curious-machine:v1";

// Module code that asks the state broker for what is not its object's: the real broker refuses it,
// posts one BrokerRefused event, and the manager counts the Job's refusals when it records the Job.
describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager", "tofu"], "refusals of the state broker", () => {
  const namespace = `broker-refusals-${Date.now().toString(36)}`;
  const work = mkdtempSync(join(tmpdir(), "captf-broker-refusals-"));
  let plane: PlaneClients;
  let executor: JobExecutor;
  let deps: ReconcilerDeps;
  let eventsApi: ReturnType<typeof planeReconcilerDeps>["eventsApi"];
  const registry = new Registry();
  const metrics = new CaptfMetrics(registry);

  beforeAll(async () => {
    // The no-op machine, and an apply-time program that asks the broker, through its kubeconfig, for what is not its run's.
    const machineDir = join(work, "machine");
    cpSync(noopModuleDirectory("machine"), machineDir, { recursive: true });
    // Each request aimed at something else: another Secret, its own state and lock with verbs no backend uses, the events.
    const suffix = stateSecretSuffix({ role: "machine", namespace, name: "m" });
    const requests = [
      ["GET", `/api/v1/namespaces/${namespace}/secrets/someone-elses`],
      ["DELETE", `/api/v1/namespaces/${namespace}/secrets/${stateSecretName(suffix)}`],
      ["DELETE", `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/${stateLockLeaseName(suffix)}`],
      ["GET", `/apis/events.k8s.io/v1/namespaces/${namespace}/events`],
    ];
    writeFileSync(
      join(machineDir, "curious.cjs"),
      // local-exec passes its command as one argument after the interpreter's.
      'const [kubeconfig] = process.argv[2].split(" ");\n' +
        'const { server } = JSON.parse(require("node:fs").readFileSync(kubeconfig, "utf8")).clusters[0].cluster;\n' +
        `const requests = ${JSON.stringify(requests)};\n` +
        "(async () => {\n" +
        "  for (const [method, path] of requests) if ((await fetch(server + path, { method })).status !== 403) process.exit(1);\n" +
        "})();\n",
    );
    // The Job's runner runs steps in <work>/work/root; the executor lays the broker's directory beside <work>/work.
    writeFileSync(
      join(machineDir, "curious.tf"),
      'resource "terraform_data" "curious" {\n  provisioner "local-exec" {\n    interpreter = ["node", ' +
        '"${path.module}/curious.cjs"]\n    command     = "${path.cwd}/../../broker/kubeconfig ${var.captf_object.namespace}"\n  }\n}\n',
    );
    plane = await preparePlane(namespace);
    const planeDeps = planeReconcilerDeps(plane, "broker-refusals-test");
    eventsApi = planeDeps.eventsApi;
    deps = { ...planeDeps.deps, metrics };
    executor = startJobExecutor({ kubeconfigPath: plane.kubeconfigPath, namespace, modules: { [machineImage]: machineDir } });
  }, 120_000);
  afterAll(() => {
    executor?.close();
    rmSync(work, { recursive: true, force: true });
  });

  it("refuses module code what is not its state run's, reports the first refusal on the object, counts each by target", async () => {
    await createMachine(plane, namespace, "m", machineImage);
    for (let pass = 0; pass < 8; pass++) {
      if ((await reconcileWorkspace(deps, machineAdapter, namespace, "m")).action === "UpToDate") break;
      await executor.runPending();
      await allJobsFinished(plane.batch, namespace);
    }
    // The module's program saw the 403 (else its apply, and the machine, would have failed).
    expect((await readMachine(plane, namespace, "m")).status?.conditions?.find((c) => c.type === "Ready")).toMatchObject({
      status: "True",
    });
    const refusals = await waitFor(
      async () => {
        const found = (await eventsApi.listNamespacedEvent({ namespace })).items.filter(
          (event) => event.regarding?.name === "m" && event.reason === "BrokerRefused",
        );
        return found.length > 0 ? found : undefined;
      },
      10_000,
      "a BrokerRefused event on m",
    );
    expect(refusals).toEqual([
      expect.objectContaining({
        type: "Warning",
        reportingController: "captf.io/runner",
        action: "Refuse",
        note: expect.stringMatching(
          /refused GET \/api\/v1\/namespaces\/.*\/secrets\/someone-elses: Secret someone-elses is not this object's state/,
        ),
      }),
    ]);
    // Counted by what each request was aimed at, as the broker classified it.
    const byTarget = [
      { kind: "TerraformMachine", target: "other", value: 1 },
      { kind: "TerraformMachine", target: "state", value: 1 },
      { kind: "TerraformMachine", target: "lock", value: 1 },
      { kind: "TerraformMachine", target: "event", value: 1 },
    ];
    expect(await seriesValues(registry, "captf_broker_refused_requests_total", {}, byTarget)).toEqual(byTarget);
    // Recorded once: another pass over the bookkept Job counts nothing again.
    await reconcileWorkspace(deps, machineAdapter, namespace, "m");
    expect(await seriesValue(registry, "captf_broker_refused_requests_total")).toBe(4);
  }, 180_000);
});
