/**
 * The operator's monitoring files under config/monitoring (opt-in: they need the Prometheus
 * operator's CRDs, or Grafana's dashboard sidecar): the PrometheusRule, the ServiceMonitor of the
 * metrics Service and the dashboard ConfigMap, each a Kubernetes object in config/monitoring/;
 * the plain rule file (for promtool and a Prometheus without the operator) under prometheus/ and
 * the dashboard JSON under grafana/, so that `kubectl apply -f config/monitoring/` applies only objects.
 */
import type { V1ConfigMap, V1Service } from "@kubernetes/client-node";
import { stringify } from "yaml";
import type { GeneratedFile } from "../api/crds.js";
import { alertRuleGroups, alertRuleName } from "./alerts.js";
import { dashboardJson, dashboardUid } from "./dashboard.js";

export interface MonitoringOptions {
  namespace: string;
  /** The Service in front of the manager's metrics port; the ServiceMonitor selects it by its labels. */
  metricsService: V1Service;
  /** The Secret holding the serving certificate's CA (`ca.crt`), which the metrics endpoint's certificate is signed by. */
  servingCertificateSecret: string;
}

export const monitoringPaths = {
  prometheusRule: "config/monitoring/prometheus-rule.yaml",
  serviceMonitor: "config/monitoring/service-monitor.yaml",
  dashboardConfigMap: "config/monitoring/grafana-dashboard.yaml",
  rules: "config/monitoring/prometheus/alerts.rules.yaml",
  dashboard: "config/monitoring/grafana/captf-manager.json",
} as const;
/** The promtool unit tests of the rules (hand-written, beside the rule file they load). */
export const alertTestsPath = "config/monitoring/prometheus/alerts.test.yaml";

const labels = { "app.kubernetes.io/name": "captf", "app.kubernetes.io/part-of": "captf" };

export function prometheusRuleObject(options: MonitoringOptions): Record<string, unknown> {
  return {
    apiVersion: "monitoring.coreos.com/v1",
    kind: "PrometheusRule",
    metadata: { name: alertRuleName, namespace: options.namespace, labels },
    spec: alertRuleGroups(),
  };
}

/**
 * Scrapes /metrics over HTTPS with Prometheus' ServiceAccount token (bind it to captf-metrics-reader), verifying the serving certificate.
 */
export function serviceMonitorObject(options: MonitoringOptions): Record<string, unknown> {
  const service = options.metricsService;
  const port = service.spec!.ports![0]!;
  return {
    apiVersion: "monitoring.coreos.com/v1",
    kind: "ServiceMonitor",
    metadata: { name: service.metadata!.name, namespace: options.namespace, labels },
    spec: {
      selector: { matchLabels: service.metadata!.labels },
      namespaceSelector: { matchNames: [options.namespace] },
      endpoints: [
        {
          port: port.name,
          scheme: "https",
          path: "/metrics",
          bearerTokenFile: "/var/run/secrets/kubernetes.io/serviceaccount/token",
          tlsConfig: {
            serverName: `${service.metadata!.name}.${options.namespace}.svc`,
            ca: { secret: { name: options.servingCertificateSecret, key: "ca.crt" } },
          },
        },
      ],
    },
  };
}

/** The dashboard for Grafana's sidecar, which loads ConfigMaps labelled grafana_dashboard=1. */
export function dashboardConfigMapObject(options: MonitoringOptions): V1ConfigMap {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: `captf-dashboard`, namespace: options.namespace, labels: { ...labels, grafana_dashboard: "1" } },
    data: { [`${dashboardUid}.json`]: dashboardText() },
  };
}

function dashboardText(): string {
  return `${JSON.stringify(dashboardJson(), null, 2)}\n`;
}

const header =
  "# Generated from packages/controller/src/monitoring by scripts/generate-install.mjs. Do not edit: run `pnpm --filter " +
  "@captf/controller gen`.\n";

/** The objects of config/monitoring: the PrometheusRule, the ServiceMonitor and the dashboard ConfigMap. */
export function monitoringObjects(options: MonitoringOptions): Record<string, unknown>[] {
  return [prometheusRuleObject(options), serviceMonitorObject(options), dashboardConfigMapObject(options) as Record<string, unknown>];
}

export function renderMonitoringFiles(options: MonitoringOptions): GeneratedFile[] {
  const yaml = (object: unknown) => header + stringify(object, { lineWidth: 0 });
  return [
    { path: monitoringPaths.prometheusRule, content: yaml(prometheusRuleObject(options)) },
    { path: monitoringPaths.serviceMonitor, content: yaml(serviceMonitorObject(options)) },
    { path: monitoringPaths.dashboardConfigMap, content: yaml(dashboardConfigMapObject(options)) },
    { path: monitoringPaths.rules, content: yaml(alertRuleGroups()) },
    { path: monitoringPaths.dashboard, content: dashboardText() },
  ];
}
