// A management plane on this machine, as a user would have one: etcd, kube-apiserver and
// kube-controller-manager (the testkit's), Cluster API's core manager, the stand-ins for a control
// plane provider and for kubelets joining, a loopback registry holding captf's images, the chroot
// kubelet that runs Pods, and captf installed by `clusterctl init` from its shipped clusterctl
// assets (the objects of config/install.yaml, labelled for clusterctl). Nothing on captf's path
// holds admin credentials: its manager runs as its Deployment's ServiceAccount, its Jobs as the
// runner ServiceAccount it binds.
import { get as httpsGet } from "node:https";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { availableParallelism, freemem, tmpdir } from "node:os";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import {
  childCoverageMeasured,
  parallelPodsFor,
  podCoverageDirectory,
  startChrootKubelet,
  startControlPlane,
  startLocalRegistry,
  waitFor,
  type ChrootKubelet,
  type ControlPlane,
  type LocalRegistry,
} from "@captf/testkit/plane";
import { applyObjects, errorText, makeApplier, replaceObjects, type Applier } from "./apply.js";
import { buildAndPushImages, installObjects, managerNamespace, type CaptfImages, type CaptfInstall } from "./captf-install.js";
import { startClusterApi, type ClusterApiManager } from "./cluster-api.js";
import { certManagerStandInCrds, clusterctlInit, writeClusterctlRepository, type ClusterctlRepository } from "./clusterctl.js";
import { standInControlPlaneCrd, startStandIns, type StandIns } from "./stand-ins.js";

export interface ManagementPlane {
  readonly kubeconfigPath: string;
  readonly kubeConfig: k8s.KubeConfig;
  readonly applier: Applier;
  readonly images: CaptfImages;
  readonly install: CaptfInstall;
  readonly kubelet: ChrootKubelet;
  readonly standIns: StandIns;
  readonly clusterApi: ClusterApiManager;
  /** The local provider repository and clusterctl config the plane was initialized from. */
  readonly clusterctlRepository: ClusterctlRepository;
  readonly workDir: string;
  /** Seconds each step of the start took, in order. */
  readonly startSteps: readonly { step: string; seconds: number }[];
  /** What every manager Pod of the plane wrote (all its restarts), as the chroot kubelet captured it. */
  managerLog(): Promise<string>;
  /** The manager's /metrics text, scraped as Prometheus would with the plane's admin token. */
  managerMetrics(): Promise<string>;
  stop(): Promise<void>;
}

export interface ManagementPlaneOptions {
  log?: (line: string) => void;
  /** Job Pods the chroot kubelet runs at once (the manager's own Pod takes none). Default: from this machine's cores and free memory. */
  maxParallelPods?: number;
  /** Flags added to the manager's (after the shipped ones and the plane's ports: a repeated flag's last value wins). */
  managerArgs?: readonly string[];
}

export async function startManagementPlane(options: ManagementPlaneOptions = {}): Promise<ManagementPlane> {
  const log = options.log ?? (() => undefined);
  if (process.getuid?.() !== 0) throw new Error("the management plane's chroot kubelet needs root");
  const workDir = mkdtempSync(join(tmpdir(), "captf-e2e-plane-"));
  const steps: { step: string; seconds: number }[] = [];
  const stops: (() => Promise<void>)[] = [];
  const timed = async <T>(step: string, run: () => Promise<T> | T): Promise<T> => {
    const started = Date.now();
    const value = await run();
    steps.push({ step, seconds: (Date.now() - started) / 1000 });
    log(`${step}: done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    return value;
  };
  const stop = async () => {
    for (const step of stops.reverse()) await step().catch((error) => log(`stopping: ${errorText(error)}`));
    rmSync(workDir, { recursive: true, force: true });
  };

  try {
    const controlPlane: ControlPlane = await timed("control plane (etcd, kube-apiserver, kube-controller-manager)", () =>
      startControlPlane(),
    );
    stops.push(() => controlPlane.stop());
    const kubeConfig = new k8s.KubeConfig();
    kubeConfig.loadFromFile(controlPlane.kubeconfigPath);
    const applier = makeApplier(kubeConfig);

    const registry: LocalRegistry = await timed("loopback registry", () => startLocalRegistry());
    stops.push(() => registry.stop());
    const images = await timed("images (captf-controller, no-op modules)", () => buildAndPushImages(registry, workDir, log));

    // clusterctl init installs Cluster API's CRDs (its stand-in providers) and captf's components.
    await applyObjects(applier, certManagerStandInCrds());
    const clusterctlRepository = writeClusterctlRepository(workDir);
    const install = await installObjects({ managerImage: images.manager, workDir, managerArgs: options.managerArgs });
    await timed("clusterctl init --infrastructure terraform", () =>
      clusterctlInit(clusterctlRepository, controlPlane.kubeconfigPath, images.manager),
    );

    const clusterApi = await timed("Cluster API core manager", () =>
      startClusterApi({ kubeconfigPath: controlPlane.kubeconfigPath, workDir, applier, log }),
    );
    stops.push(() => clusterApi.stop());

    await applyObjects(applier, standInControlPlaneCrd());
    const standIns = startStandIns({ kubeConfig, workloadKubeconfig: readFileSync(controlPlane.kubeconfigPath, "utf8"), log });
    stops.push(() => standIns.stop());

    await timed("captf's certificate, ports and webhook URLs on this plane", async () => {
      // The port change would roll the Deployment, whose old Pod (default ports) stays until the new one is
      // available: scale to none first, so the kubelet only ever sees Pods with this plane's ports.
      const deployment = install.objects.find((object) => object.kind === "Deployment") as k8s.V1Deployment;
      const webhooks = install.objects.filter((object) => object.kind!.endsWith("WebhookConfiguration"));
      await applyObjects(
        applier,
        install.objects
          .filter((object) => !webhooks.includes(object))
          .map((object) => (object === deployment ? { ...deployment, spec: { ...deployment.spec!, replicas: 0 } } : object)),
      );
      await replaceObjects(applier, webhooks);
      const core = kubeConfig.makeApiClient(k8s.CoreV1Api);
      await waitFor(
        async () => ((await core.listNamespacedPod({ namespace: managerNamespace })).items.length === 0 ? true : undefined),
        60_000,
        "the manager's first Pod gone",
      );
      await applyObjects(applier, [deployment]);
    });
    stops.push(async () => {
      for (const object of install.objects.filter(
        (candidate) => candidate.kind === "ValidatingWebhookConfiguration" || candidate.kind === "MutatingWebhookConfiguration",
      ))
        await applier.delete(object).catch(() => undefined);
    });

    const kubelet = await timed("chroot kubelet", () =>
      startChrootKubelet({
        kubeconfigPath: controlPlane.kubeconfigPath,
        nodeName: "e2e-kubelet",
        workDir: join(workDir, "kubelet"),
        maxParallel: options.maxParallelPods ?? parallelPodsFor(availableParallelism(), freemem()),
        log: (line) => log(`kubelet: ${line}`),
        coverageDirectory: podCoverageDirectory(),
      }),
    );
    stops.push(() => kubelet.stop()); // started last, stopped first: no Pod outlives the plane
    // The kubelet's stop kills what still runs, and a killed process writes no coverage: the manager goes first, by SIGTERM.
    if (childCoverageMeasured()) stops.push(() => stopManager(kubeConfig, log));
    const core = kubeConfig.makeApiClient(k8s.CoreV1Api);
    const managerPod = async () =>
      (
        await core.listNamespacedPod({ namespace: managerNamespace, labelSelector: "app.kubernetes.io/component=controller-manager" })
      ).items.find((pod) => pod.status?.phase === "Running");
    const managerPods = new Set<string>();
    const managerLog = async () => {
      for (const pod of (await core.listNamespacedPod({ namespace: managerNamespace })).items) managerPods.add(pod.metadata!.name!);
      return [...managerPods].map((pod) => kubelet.containerLog(managerNamespace, pod, "manager")).join("\n");
    };
    await timed("captf manager running and admitting", async () => {
      await waitFor(managerPod, 180_000, "the captf manager Pod running");
      // The manager leads and its webhook admits through the API server: a dry-run create is allowed.
      const custom = kubeConfig.makeApiClient(k8s.CustomObjectsApi);
      await waitFor(
        async () => {
          try {
            await custom.createNamespacedCustomObject({
              group: "infrastructure.cluster.x-k8s.io",
              version: "v1alpha1",
              namespace: "default",
              plural: "terraformmachines",
              dryRun: "All",
              body: {
                apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
                kind: "TerraformMachine",
                metadata: { name: "probe" },
                spec: { source: { image: images.modules.machine } },
              },
            });
            return true;
          } catch {
            return undefined;
          }
        },
        120_000,
        "captf's webhook admitting through the API server",
      );
    });

    return {
      kubeconfigPath: controlPlane.kubeconfigPath,
      kubeConfig,
      applier,
      images,
      install,
      kubelet,
      standIns,
      clusterApi,
      clusterctlRepository,
      workDir,
      startSteps: steps,
      managerLog,
      managerMetrics: () => scrapeMetrics(install.diagnosticsPort, controlPlane.token),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Scales the manager's Deployment to none and waits for its Pods to end (SIGTERM; the manager drains, exits and writes its coverage). */
async function stopManager(kubeConfig: k8s.KubeConfig, log: (line: string) => void): Promise<void> {
  const started = Date.now();
  const apps = kubeConfig.makeApiClient(k8s.AppsV1Api);
  const core = kubeConfig.makeApiClient(k8s.CoreV1Api);
  const selector = "app.kubernetes.io/component=controller-manager";
  for (const deployment of (await apps.listNamespacedDeployment({ namespace: managerNamespace, labelSelector: selector })).items)
    await apps.patchNamespacedDeployment(
      { name: deployment.metadata!.name!, namespace: managerNamespace, body: { spec: { replicas: 0 } } },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
    );
  await waitFor(
    async () =>
      (await core.listNamespacedPod({ namespace: managerNamespace, labelSelector: selector })).items.length === 0 ? true : undefined,
    60_000,
    "the manager's Pods ended",
  );
  log(`manager stopped (its coverage written) in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

/** GETs the manager's /metrics: its serving certificate is its own, self-signed, so it is not verified. */
function scrapeMetrics(port: number, token: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const request = httpsGet(
      { host: "127.0.0.1", port, path: "/metrics", headers: { authorization: `Bearer ${token}` }, rejectUnauthorized: false },
      (response) => {
        let body = "";
        response.setEncoding("utf8").on("data", (chunk: string) => (body += chunk));
        response.on("end", () =>
          response.statusCode === 200
            ? resolve(body)
            : reject(new Error(`/metrics answered ${response.statusCode}: ${body.slice(0, 200)}`)),
        );
      },
    );
    request.on("error", reject);
  });
}
