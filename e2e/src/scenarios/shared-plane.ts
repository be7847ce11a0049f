// The one management plane every scenario of the suite runs on, with what the scenarios share:
// the demo's canary secrets, API clients, and waits that print the demo's progress when they time
// out. scenarios.test.ts starts it before the first scenario and stops it after the last.
import { randomBytes } from "node:crypto";
import * as k8s from "@kubernetes/client-node";
import { startCollector, waitFor, type Collector } from "@captf/testkit";
import { demoClusterName, demoNamespace, type DemoSecrets } from "../demo-objects.js";
import { startManagementPlane, type ManagementPlane } from "../management-plane.js";
import type { CustomObject, CustomObjectList } from "../objects.js";
import { formatProgress, listCaptfJobs, readProgress } from "../progress.js";

/** Cluster API's and captf's custom resources in the demo's namespace, for the custom objects API. */
export const capi = { group: "cluster.x-k8s.io", version: "v1beta2", namespace: demoNamespace };
export const infra = { group: "infrastructure.cluster.x-k8s.io", version: "v1alpha1", namespace: demoNamespace };
/** Each test's own timeout: a scenario waits on real Jobs, Cluster API's controllers and the kubelet. */
export const scenarioTimeout = 600_000;
export const mergePatch = k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch);

/** A scenario registers its tests (`it`, in order) on the shared plane; scenarios.test.ts calls each once. */
export type Scenario = (shared: SharedPlane) => void;

/** The shared plane. Its members are arrow functions, so a test may destructure what it uses. */
export class SharedPlane {
  /** What the plane logged, timestamped; a wait that times out prints its end. */
  readonly planeLog: string[] = [];
  /** Values put in the demo's Secrets that must appear nowhere else (no-secret-leaks.ts looks). */
  readonly secrets: DemoSecrets = {
    credential: `canary-credential-${randomBytes(8).toString("hex")}`,
    variable: `canary-variable-${randomBytes(8).toString("hex")}`,
    bootstrap: `canary-bootstrap-${randomBytes(8).toString("hex")}`,
  };
  /** The OpenTelemetry Collector the manager and its Jobs send traces to (docs/tracing.md). */
  collector: Collector | undefined;
  private started: ManagementPlane | undefined;
  private clients: { custom: k8s.CustomObjectsApi; core: k8s.CoreV1Api; batch: k8s.BatchV1Api; events: k8s.EventsV1Api } | undefined;

  readonly start = async (): Promise<void> => {
    this.collector = await startCollector();
    const plane = await startManagementPlane({
      log: (line) => this.planeLog.push(`${new Date().toISOString()} ${line}`),
      managerArgs: [`--tracing-otlp-endpoint=${this.collector.endpoint}`],
    });
    this.started = plane;
    this.clients = {
      custom: plane.kubeConfig.makeApiClient(k8s.CustomObjectsApi),
      core: plane.kubeConfig.makeApiClient(k8s.CoreV1Api),
      batch: plane.kubeConfig.makeApiClient(k8s.BatchV1Api),
      events: plane.kubeConfig.makeApiClient(k8s.EventsV1Api),
    };
  };

  readonly stop = async (): Promise<void> => {
    await this.started?.stop();
    await this.collector?.stop();
  };

  get plane(): ManagementPlane {
    if (!this.started) throw new Error("the shared plane is not started: scenarios run inside scenarios.test.ts, after its beforeAll");
    return this.started;
  }
  get custom(): k8s.CustomObjectsApi {
    return this.startedClients().custom;
  }
  get core(): k8s.CoreV1Api {
    return this.startedClients().core;
  }
  get batch(): k8s.BatchV1Api {
    return this.startedClients().batch;
  }
  get events(): k8s.EventsV1Api {
    return this.startedClients().events;
  }

  /** Every object of the demo cluster with its phase, conditions not True yet and active Job. */
  readonly progressTable = async () => formatProgress((await readProgress(this.plane.kubeConfig, demoNamespace, demoClusterName)).rows);

  /**
   * Waits until Cluster API reports the whole demo Ready and `extra` holds; on a timeout, throws with the progress table and
   * the plane's and manager's last lines.
   */
  readonly waitReady = async (what: string, extra: () => Promise<boolean> = async () => true, timeoutMillis = 300_000) => {
    await waitFor(
      async () => ((await readProgress(this.plane.kubeConfig, demoNamespace, demoClusterName)).ready && (await extra()) ? true : undefined),
      timeoutMillis,
      `${what}\n${await this.progressTable()}`,
    ).catch(async (error) => {
      throw new Error(
        `${(error as Error).message}\nnow:\n${await this.progressTable()}\nplane:\n${this.planeLog.slice(-40).join("\n")}\n` +
          `manager:\n${(await this.plane.managerLog()).split("\n").slice(-40).join("\n")}`,
      );
    });
  };

  /** captf's Jobs in the demo's namespace. */
  readonly captfJobs = () => listCaptfJobs(this.plane.kubeConfig, demoNamespace);

  /** The objects of one plural of `api` in the demo's namespace, as `T` (src/objects.ts: Machine, TerraformObject, ...). */
  readonly list = async <T extends CustomObject = CustomObject>(api: typeof capi, plural: string) =>
    ((await this.custom.listNamespacedCustomObject({ ...api, plural })) as CustomObjectList<T>).items;

  /** A TerraformMachineTemplate whose template's spec is `spec` over the no-op machine image. */
  readonly machineTemplate = (name: string, spec: Record<string, unknown> = {}) =>
    ({
      apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
      kind: "TerraformMachineTemplate",
      metadata: { name, namespace: demoNamespace },
      spec: { template: { spec: { source: { image: this.plane.images.modules.machine }, ...spec } } },
    }) as k8s.KubernetesObject;

  /**
   * A MachineDeployment of one machine of the demo cluster over the TerraformMachineTemplate of its name; its Machines are
   * labelled with its name.
   */
  readonly machineDeployment = (name: string) => {
    const selector = { matchLabels: { "cluster.x-k8s.io/deployment-name": name } };
    const template = {
      metadata: { labels: selector.matchLabels },
      spec: {
        clusterName: demoClusterName,
        version: "v1.36.4",
        bootstrap: { dataSecretName: "demo-bootstrap" },
        infrastructureRef: { apiGroup: infra.group, kind: "TerraformMachineTemplate", name },
      },
    };
    return {
      apiVersion: "cluster.x-k8s.io/v1beta2",
      kind: "MachineDeployment",
      metadata: { name, namespace: demoNamespace },
      spec: { clusterName: demoClusterName, replicas: 1, selector, template },
    } as k8s.KubernetesObject;
  };

  private startedClients() {
    if (!this.clients) throw new Error("the shared plane is not started: scenarios run inside scenarios.test.ts, after its beforeAll");
    return this.clients;
  }
}
