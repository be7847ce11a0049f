/**
 * From parsed flags to a ready-to-run {@link Manager}: the logger, the kubeconfig and API client,
 * the metrics registry, leader election in the manager's namespace and secure metrics with the
 * webhook serving certificate. Controllers are added by the caller before `manager.run`.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { logLevelForVerbosity, type ManagerSettings } from "./flags.js";
import type { BuildInfo } from "./metrics/captf-metrics.js";
import { createManagerMetrics, type ManagerMetrics } from "./metrics/manager-metrics.js";
import { kubeMetricsAuthorizer } from "./runtime/http-endpoints.js";
import { KubeClient } from "./runtime/kube-client.js";
import { createLogger } from "./runtime/logging.js";
import { Manager } from "./runtime/manager.js";

/** Where a pod finds its own namespace. */
export const inClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

export interface BootstrapDependencies {
  buildInfo: BuildInfo;
  /** The `FLAG: --name="value"` lines from the flag parser, logged once at start. */
  flagLines?: readonly string[];
  /** Default: `--kubeconfig`, else $KUBECONFIG, else the in-cluster configuration. */
  kubeConfig?: KubeConfig;
  stdout?: { write(text: string): unknown };
  stderr?: { write(text: string): unknown };
  /** Default {@link inClusterNamespaceFile}. */
  namespaceFile?: string;
}

export interface BootstrappedManager {
  logger: Logger;
  kubeConfig: KubeConfig;
  client: KubeClient;
  metrics: ManagerMetrics;
  manager: Manager;
}

export function bootstrapManager(settings: ManagerSettings, dependencies: BootstrapDependencies): BootstrappedManager {
  const logger = createLogger({
    level: logLevelForVerbosity(settings.logging.verbosity),
    format: settings.logging.format,
    splitStream: settings.logging.splitStream,
    ...(dependencies.stdout ? { stdout: dependencies.stdout } : {}),
    ...(dependencies.stderr ? { stderr: dependencies.stderr } : {}),
  });
  for (const line of dependencies.flagLines ?? []) logger.info(line);
  const kubeConfig = dependencies.kubeConfig ?? loadKubeConfig(settings.kubeconfig);
  const metrics = createManagerMetrics({ buildInfo: dependencies.buildInfo });
  const server = kubeConfig.getCurrentCluster()?.server ?? "";
  const client = new KubeClient(kubeConfig, { metrics: metrics.runtime.kubeClientSink(hostOf(server)) });

  let leaderElection: ConstructorParameters<typeof Manager>[0]["leaderElection"];
  if (settings.leaderElection.enabled) {
    const namespace = settings.podNamespace ?? readNamespaceFile(dependencies.namespaceFile ?? inClusterNamespaceFile);
    if (!namespace) throw new Error("leader election needs the manager's namespace: set POD_NAMESPACE or run in a pod");
    leaderElection = {
      namespace,
      leaseDurationMillis: settings.leaderElection.leaseDurationMillis,
      renewDeadlineMillis: settings.leaderElection.renewDeadlineMillis,
      retryPeriodMillis: settings.leaderElection.retryPeriodMillis,
    };
  }

  const manager = new Manager({
    client,
    logger,
    metrics,
    syncPeriodMillis: settings.syncPeriodMillis,
    healthAddress: settings.healthAddr,
    metricsAddress: settings.diagnostics.address,
    ...(settings.namespace ? { namespace: settings.namespace } : {}),
    ...(leaderElection ? { leaderElection } : {}),
    ...(settings.diagnostics.insecure
      ? {}
      : {
          metricsSecure: {
            certFile: join(settings.webhook.certDir, settings.webhook.certName),
            keyFile: join(settings.webhook.certDir, settings.webhook.keyName),
            authorize: kubeMetricsAuthorizer(client),
            minVersion: settings.diagnostics.tlsMinVersion,
            ciphers: settings.diagnostics.tlsCipherSuites,
            curves: settings.diagnostics.tlsCurvePreferences,
          },
        }),
  });
  return { logger, kubeConfig, client, metrics, manager };
}

function loadKubeConfig(path: string): KubeConfig {
  const kubeConfig = new KubeConfig();
  if (path) kubeConfig.loadFromFile(path);
  else kubeConfig.loadFromDefault();
  return kubeConfig;
}

export function readNamespaceFile(path: string): string | undefined {
  return existsSync(path) ? readFileSync(path, "utf8").trim() || undefined : undefined;
}

function hostOf(server: string): string {
  try {
    return new URL(server).host;
  } catch {
    return server;
  }
}
