import { readFileSync, readdirSync } from "node:fs";
import { describe, expect, it } from "@jest/globals";
import { parse, parseAllDocuments } from "yaml";
import { installNames, installPath, renderInstallFiles, servingCertificateDnsNames, defaultInstallOptions } from "../install/manifests.js";
import { createManagerMetrics } from "../metrics/manager-metrics.js";
import { alertRules, renderAlertTable, runbookUrl } from "./alerts.js";
import { alertTestsPath, monitoringPaths } from "./monitoring-files.js";
import type { V1ConfigMap, V1Service } from "@kubernetes/client-node";
import type { AlertTestsDocument, DashboardDocument, RuleFileDocument, ServiceMonitorDocument } from "./documents.test-support.js";
import { exportedSeriesNames, metricNames } from "./promql.test-support.js";

const packageFile = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), "utf8");
/** What the manager serves, read from its registry (process metrics included). */
const exported = exportedSeriesNames(createManagerMetrics().registry);

/** Every query of a dashboard: each panel's targets, and the variables' `label_values(metric, label)`. */
function dashboardQueries(dashboard: DashboardDocument): { where: string; names: string[] }[] {
  const panels = dashboard.panels.filter((panel) => panel.type !== "row");
  const targets = panels.flatMap((panel) =>
    panel.targets!.map((target) => ({ where: `panel "${panel.title}" ${target.refId}`, names: metricNames(target.expr) })),
  );
  const variables = dashboard.templating.list
    .filter((variable) => variable.type === "query")
    .map((variable) => {
      const match = /^label_values\((\w+),\s*\w+\)$/.exec(variable.definition);
      return { where: `variable ${variable.name}`, names: match ? [match[1]!] : [`unreadable query ${variable.definition}`] };
    });
  return [...targets, ...variables];
}

describe("metricNames", () => {
  it("reads metric names, not functions, keywords, label names, matchers, ranges or Grafana variables", () => {
    expect(
      metricNames('histogram_quantile(0.9, sum by (kind, op, le) (rate(captf_job_queue_seconds_bucket{op!="none"}[$__rate_interval])))'),
    ).toEqual(["captf_job_queue_seconds_bucket"]);
    expect(metricNames('time() - captf_last_success_timestamp_seconds{op=~"drift|refresh", namespace=~"$namespace"} > 6 * 3600')).toEqual([
      "captf_last_success_timestamp_seconds",
    ]);
    expect(
      metricNames(
        "sum by (controller) (controller_runtime_active_workers) / on (controller) sum without (name) " +
          "(controller_runtime_max_concurrent_reconciles) and bool up",
      ),
    ).toEqual(["controller_runtime_active_workers", "controller_runtime_max_concurrent_reconciles", "up"]);
  });
});

describe("the Grafana dashboard", () => {
  const dashboard = JSON.parse(packageFile(monitoringPaths.dashboard)) as DashboardDocument;

  it("queries only series the manager exports, in every panel and variable", () => {
    const queries = dashboardQueries(dashboard);
    expect(queries.length).toBeGreaterThan(30);
    const unknown = queries.flatMap(({ where, names }) =>
      names.length === 0 ? [`${where}: no metric`] : names.filter((name) => !exported.has(name)).map((name) => `${where}: ${name}`),
    );
    expect(unknown).toEqual([]);
  });

  it("shows every captf_* metric in some panel (add one to src/monitoring/dashboard.ts for a new metric)", () => {
    const shown = new Set(dashboardQueries(dashboard).flatMap(({ names }) => names.map((name) => name.replace(/_bucket$/, ""))));
    const captf = [...exported].filter((name) => name.startsWith("captf_") && !/_(bucket|sum|count)$/.test(name));
    expect(captf.filter((name) => !shown.has(name))).toEqual([]);
  });

  it("gives each panel a unique id and a place in the 24-column grid, reading the $datasource variable", () => {
    const panels = dashboard.panels;
    expect(new Set(panels.map((panel) => panel.id)).size).toBe(panels.length);
    for (const panel of panels) expect(panel.gridPos.x + panel.gridPos.w).toBeLessThanOrEqual(24);
    for (const panel of panels.filter((candidate) => candidate.type !== "row"))
      expect([panel.title, panel.datasource]).toEqual([panel.title, { type: "prometheus", uid: "${datasource}" }]);
  });

  it("is the same JSON in the ConfigMap for Grafana's sidecar", () => {
    const configMap = parse(packageFile(monitoringPaths.dashboardConfigMap)) as V1ConfigMap;
    expect(configMap.metadata?.labels?.grafana_dashboard).toBe("1");
    expect(Object.values(configMap.data ?? {})).toEqual([packageFile(monitoringPaths.dashboard)]);
  });
});

describe("the alerts", () => {
  const ruleFile = parse(packageFile(monitoringPaths.rules)) as RuleFileDocument;
  const rules = ruleFile.groups.flatMap((group) => group.rules);

  it("read only series the manager exports", () => {
    const unknown = rules.flatMap((rule) =>
      metricNames(rule.expr)
        .filter((name) => !exported.has(name))
        .map((name) => `${rule.alert}: ${name}`),
    );
    expect(unknown).toEqual([]);
  });

  it("are the PrometheusRule's groups too", () => {
    const prometheusRule = parse(packageFile(monitoringPaths.prometheusRule)) as { kind: string; spec: unknown };
    expect(prometheusRule.kind).toBe("PrometheusRule");
    expect(prometheusRule.spec).toEqual(ruleFile);
  });

  it("each link a runbook: their own page docs/runbooks/<alert>.md, no page without an alert, and docs/metrics.md's alert table", () => {
    const docs = new URL("../../../../docs/", import.meta.url);
    const pages = readdirSync(new URL("runbooks/", docs)).filter((name) => name !== "index.md");
    expect(pages.sort()).toEqual(alertRules.map((rule) => `${rule.alert}.md`).sort());
    for (const rule of alertRules) {
      const page = readFileSync(new URL(`runbooks/${rule.alert}.md`, docs), "utf8");
      expect([rule.alert, page.split("\n")[0]]).toEqual([rule.alert, `# ${rule.alert}`]);
    }
    for (const rule of rules) {
      expect(rule.annotations.runbook_url).toBe(runbookUrl(rule.alert));
      expect(rule.annotations.runbook_url).toMatch(new RegExp(`/docs/runbooks/${rule.alert}\\.md$`));
      expect(Object.keys(rule.annotations).sort()).toEqual(["description", "runbook_url", "summary"]);
      expect(["critical", "warning", "info"]).toContain(rule.labels.severity);
    }
    expect(readFileSync(new URL("metrics.md", docs), "utf8")).toContain(renderAlertTable());
  });

  it("are each tested firing and not firing in the promtool tests", () => {
    const tests = (parse(packageFile(alertTestsPath)) as AlertTestsDocument).tests.flatMap((test) => test.alert_rule_test);
    const coverage = alertRules.map((rule) => {
      const cases = tests.filter((test) => test.alertname === rule.alert);
      return {
        alert: rule.alert,
        fires: cases.some((test) => test.exp_alerts.length > 0),
        quiet: cases.some((test) => test.exp_alerts.length === 0),
      };
    });
    expect(coverage.filter((entry) => !entry.fires || !entry.quiet)).toEqual([]);
  });
});

describe("the ServiceMonitor", () => {
  it("selects the metrics Service and no other Service of install.yaml, on its port, trusting the certificate that names it", () => {
    const serviceMonitor = parse(packageFile(monitoringPaths.serviceMonitor)) as ServiceMonitorDocument;
    const install = renderInstallFiles().find((file) => file.path === installPath)!;
    const services = parseAllDocuments(install.content)
      .map((document) => document.toJS() as V1Service)
      .filter((object) => object.kind === "Service");
    const selector = serviceMonitor.spec.selector.matchLabels;
    const selected = services.filter((service) =>
      Object.entries(selector).every(([key, value]) => service.metadata!.labels?.[key] === value),
    );
    expect(selected.map((service) => service.metadata!.name)).toEqual([installNames.metricsService]);
    const endpoint = serviceMonitor.spec.endpoints[0]!;
    expect(selected[0]!.spec!.ports!.map((port) => port.name)).toContain(endpoint.port);
    expect(endpoint).toMatchObject({ scheme: "https", path: "/metrics" });
    expect(servingCertificateDnsNames(defaultInstallOptions)).toContain(endpoint.tlsConfig.serverName);
    expect(endpoint.tlsConfig.ca.secret.name).toBe(installNames.certificateSecret);
    expect(serviceMonitor.spec.namespaceSelector.matchNames).toEqual([defaultInstallOptions.namespace]);
  });
});
