import { existsSync, renameSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { pino } from "pino";
import { traceIdOfUid } from "@captf/contract/tracing";
import { noopModuleDirectory } from "@captf/module-noop";
import { describeWithTools, startCollector, waitFor, type CollectedSpan, type Collector } from "@captf/testkit";
import { defaultJobEnvironment } from "../jobs/build-job.js";
import { machineAdapter } from "../kinds/adapters.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import { KubeClient } from "../runtime/kube-client.js";
import { Manager } from "../runtime/manager.js";
import { startJobExecutor, type JobExecutor } from "../reconcile/job-executor.test-support.js";
import { createMachine, readMachine } from "../reconcile/machine-fixture.test-support.js";
import { preparePlane, planeReconcilerDeps, type PlaneClients } from "../reconcile/plane.test-support.js";
import { workspaceController } from "../reconcile/workspace-controller.js";
import { managerTracing, type ManagerTracing } from "./manager-tracing.js";

const image = "registry.invalid/captf/noop-machine:v1";
/** Values no span may carry: a credential the Job's env takes from a Secret, an input (bootstrap data), the state's key. */
const canaries = {
  credential: "canary-credential-5c1e9a7b2d04f6e3",
  input: "canary-input-8f3a61d0e4b97c25",
  stateKey: "canary-statekey-2b7d94e1c6a0f835",
};

/** TF_ENCRYPTION with one pbkdf2 passphrase. */
function tfEncryption(passphrase: string): string {
  return JSON.stringify({
    key_provider: { pbkdf2: { main: { passphrase } } },
    method: { aes_gcm: { main: { keys: "key_provider.pbkdf2.main" } } },
    state: { method: "method.aes_gcm.main" },
  });
}

// Issue 33 §1 on real components: the manager (informers, work queue, the TerraformMachine controller) on the real API server, the
// real runner bundle and OpenTofu running each Job, and a real OpenTelemetry Collector (tools/otelcol) receiving what they export.
describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager", "tofu", "otelcol"], "traces of a machine", () => {
  const namespace = `tracing-${Date.now().toString(36)}`;
  let plane: PlaneClients;
  let collector: Collector;
  let executor: JobExecutor;

  beforeAll(async () => {
    plane = await preparePlane(namespace);
    collector = await startCollector();
    executor = startJobExecutor({ kubeconfigPath: plane.kubeconfigPath, namespace, modules: { [image]: noopModuleDirectory("machine") } });
    await plane.core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: "creds" }, stringData: { token: canaries.credential } },
    });
    await plane.core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: "state-key" }, stringData: { TF_ENCRYPTION: tfEncryption(canaries.stateKey) } },
    });
  }, 180_000);
  afterAll(async () => {
    executor?.close();
    await collector?.stop();
  }, 60_000);

  /** A manager running the TerraformMachine controller (with `tracing`, as --tracing-otlp-endpoint wires it) until stopped. */
  function startManager(lease: string, tracing: ManagerTracing | undefined): { stop(): Promise<void> } {
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(plane.kubeconfigPath);
    const client = new KubeClient(kc);
    const manager = new Manager({
      client,
      logger: pino({ level: "warn" }),
      namespace,
      healthAddress: "127.0.0.1:0",
      metricsAddress: "127.0.0.1:0",
      leaderElection: { namespace, leaseName: lease, leaseDurationMillis: 6_000, renewDeadlineMillis: 5_000, retryPeriodMillis: 250 },
    });
    const { deps } = planeReconcilerDeps(plane, lease);
    const jobEnvironment = { ...defaultJobEnvironment, ...(tracing ? { tracing } : {}) };
    manager.addController(
      workspaceController(machineAdapter, { ...deps, jobEnvironment }, { concurrency: 1, manager, ...(tracing ? { tracing } : {}) }),
    );
    tracing?.watchJobs(manager.informer(builtinTypes.job));
    const stop = new AbortController();
    const running = manager.run(stop.signal);
    return {
      async stop() {
        stop.abort();
        await running;
        await tracing?.shutdown();
        client.close();
      },
    };
  }

  /** Runs the machine's Jobs as they come until it is provisioned; returns its uid. */
  async function provisioned(name: string): Promise<string> {
    const machine = await waitFor(
      async () => {
        await executor.runPending();
        const object = (await readMachine(plane, namespace, name)) as { metadata: { uid: string }; status?: { ready?: boolean } } & {
          status?: { initialization?: { provisioned?: boolean } };
        };
        return object.status?.initialization?.provisioned ? object : undefined;
      },
      180_000,
      `${name} provisioned`,
    );
    return machine.metadata.uid;
  }

  const sourceEnv = async (name: string) => {
    const jobs = (await plane.batch.listNamespacedJob({ namespace })).items.filter(
      (job) => job.metadata?.ownerReferences?.[0]?.name === name,
    );
    return jobs.flatMap((job) => job.spec!.template.spec!.containers.find((container) => container.name === "source")!.env ?? []);
  };

  it("exports nothing with tracing off: the Jobs carry no trace context, and the runner runs without the SDK's file", async () => {
    // The bundle's SDK file moved away: a run that loaded it would fail.
    const sdk = join(executor.bundle, "runner-tracing.cjs");
    expect(existsSync(sdk)).toBe(true);
    renameSync(sdk, `${sdk}.aside`);
    const manager = startManager("captf-untraced", managerTracing({ otlpEndpoint: "" }, {}));
    try {
      await createMachine(plane, namespace, "untraced", image);
      await provisioned("untraced");
    } finally {
      await manager.stop();
      renameSync(`${sdk}.aside`, sdk);
    }
    expect((await sourceEnv("untraced")).map((entry) => entry.name)).not.toEqual(
      expect.arrayContaining([expect.stringMatching(/^(TRACEPARENT|OTEL_)/)]),
    );
    expect(collector.spans()).toEqual([]);
  }, 300_000);

  describe("with tracing on", () => {
    let uid: string;
    let spans: CollectedSpan[];
    let text: string;

    beforeAll(async () => {
      await createMachine(plane, namespace, "traced", image, {
        machineSpec: {
          stateEncryption: { secretRef: { name: "state-key" } },
          jobs: { env: [{ name: "CLOUD_API_TOKEN", valueFrom: { secretKeyRef: { name: "creds", key: "token" } } }] },
        },
      });
      await plane.core.replaceNamespacedSecret({
        name: "traced-bootstrap",
        namespace,
        body: { metadata: { name: "traced-bootstrap" }, stringData: { value: `#cloud-config\n# ${canaries.input}\n` } },
      });
      const manager = startManager("captf-traced", managerTracing({ otlpEndpoint: collector.endpoint }, {}));
      try {
        uid = await provisioned("traced");
        // The apply Job's span is recorded when the pass after it bookkeeps it.
        await waitFor(
          async () => (collector.spans().some((span) => span.name === "job apply") ? true : undefined),
          60_000,
          "the Job's span",
        );
      } finally {
        await manager.stop();
      }
      spans = collector.spans();
      text = collector.text();
    }, 300_000);

    it("gives the machine one trace, its uid, with spans from the manager, the runner and OpenTofu", () => {
      const traceId = traceIdOfUid(uid);
      expect(traceId).toBe(uid.replace(/-/g, ""));
      const trace = spans.filter((span) => span.traceId === traceId);
      // Every span about an object is in its object's trace (the manager also passes over the untraced machine, in its own trace).
      const about = spans.filter((span) => span.attributes["captf.object.uid"] !== undefined);
      expect(about.filter((span) => span.traceId !== traceIdOfUid(span.attributes["captf.object.uid"]!))).toEqual([]);
      expect(new Set(spans.map((span) => span.traceId))).toEqual(new Set(about.map((span) => span.traceId)));
      expect(new Set(trace.map((span) => span.service))).toEqual(new Set(["captf-manager", "captf-runner", "OpenTofu CLI"]));

      const passes = trace.filter((span) => span.name === "reconcile TerraformMachine");
      expect(passes.length).toBeGreaterThanOrEqual(2);
      expect(passes).toContainEqual(
        expect.objectContaining({
          parentSpanId: "",
          attributes: expect.objectContaining({
            "captf.object.name": "traced",
            "captf.pass.operation": "apply",
            "captf.pass.decision": expect.any(String),
          }) as unknown,
        }),
      );
      const job = trace.find((span) => span.name === "job apply")!;
      expect(job).toMatchObject({ service: "captf-manager", attributes: { "captf.job.op": "apply", "captf.job.finished": "Complete" } });
      const run = trace.find((span) => span.name === "run apply")!;
      expect(run).toMatchObject({ service: "captf-runner", parentSpanId: job.spanId, attributes: { "captf.result": "succeeded" } });
      const steps = trace.filter((span) => span.parentSpanId === run.spanId);
      expect(steps.map((span) => span.name)).toEqual(expect.arrayContaining(["step init", "step apply"]));
      // OpenTofu's own root spans hang under the runner's step spans.
      const tofu = trace.filter((span) => span.service === "OpenTofu CLI");
      const stepIds = new Set(steps.map((span) => span.spanId));
      expect(tofu.filter((span) => stepIds.has(span.parentSpanId)).length).toBeGreaterThan(0);
    });

    it("puts no secret in any span: credentials, inputs and the state's key are in none", () => {
      expect(text.length).toBeGreaterThan(0);
      for (const canary of Object.values(canaries)) expect(text).not.toContain(canary);
    });
  });
});
