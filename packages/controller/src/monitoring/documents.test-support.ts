// The files under config/monitoring/ as the tests read them back: the parts they read, typed.
import type { KubernetesObject } from "@kubernetes/client-node";

/** A panel of the Grafana dashboard; a row has no targets. */
export interface DashboardPanel {
  id: number;
  type: string;
  title: string;
  datasource?: unknown;
  gridPos: { x: number; w: number };
  targets?: { refId: string; expr: string }[];
}

/** The Grafana dashboard JSON. */
export interface DashboardDocument {
  panels: DashboardPanel[];
  templating: { list: { type: string; name: string; definition: string }[] };
}

/** An alerting rule as the Prometheus rule file holds it. */
export interface RuleDocument {
  alert: string;
  expr: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

/** The Prometheus rule file. */
export interface RuleFileDocument {
  groups: { name: string; rules: RuleDocument[] }[];
}

/** promtool's unit tests of the alerts. */
export interface AlertTestsDocument {
  tests: { alert_rule_test: { alertname: string; exp_alerts: unknown[] }[] }[];
}

/** The ServiceMonitor. */
export interface ServiceMonitorDocument extends KubernetesObject {
  spec: {
    selector: { matchLabels: Record<string, string> };
    endpoints: { port: string; scheme: string; path: string; tlsConfig: { serverName: string; ca: { secret: { name: string } } } }[];
    namespaceSelector: { matchNames: string[] };
  };
}
