// The shipped rules and the dashboard's queries under the real promtool (tools/install.sh --only promtool).
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, expect, it } from "@jest/globals";
import { parse, stringify } from "yaml";
import { describeWithTools, requireTool } from "@captf/testkit";
import { alertRules } from "./alerts.js";
import type { DashboardDocument, RuleFileDocument } from "./documents.test-support.js";
import { alertTestsPath, monitoringPaths } from "./monitoring-files.js";

const packagePath = (path: string) => fileURLToPath(new URL(`../../${path}`, import.meta.url));

describeWithTools(["promtool"], "the alerts and the dashboard under promtool", () => {
  const work = mkdtempSync(join(tmpdir(), "captf-promtool-"));
  afterAll(() => rmSync(work, { recursive: true, force: true }));
  const promtool = (...args: string[]) => {
    const run = spawnSync(requireTool("promtool"), args, { encoding: "utf8", timeout: 60_000 });
    return { status: run.status, output: `${run.stdout}${run.stderr}` };
  };

  it("check rules: the shipped rule file is valid, with every alert", () => {
    const run = promtool("check", "rules", packagePath(monitoringPaths.rules));
    expect(run).toEqual({ status: 0, output: expect.stringContaining(`SUCCESS: ${alertRules.length} rules found`) });
  });

  it("test rules: each alert fires on its synthetic series and stays quiet on the others", () => {
    const run = promtool("test", "rules", packagePath(alertTestsPath));
    expect(run).toEqual({ status: 0, output: expect.stringContaining("SUCCESS") });
  });

  it("test rules fails, naming each alert, when no alert can fire (the unit tests have teeth)", () => {
    const rules = parse(readFileSync(packagePath(monitoringPaths.rules), "utf8")) as RuleFileDocument;
    for (const rule of rules.groups[0]!.rules) rule.expr = "vector(1) < 0";
    writeFileSync(join(work, "alerts.rules.yaml"), stringify(rules));
    copyFileSync(packagePath(alertTestsPath), join(work, "alerts.test.yaml"));
    const run = promtool("test", "rules", join(work, "alerts.test.yaml"));
    expect(run.status).toBe(1);
    const named = alertRules.map((rule) => rule.alert).filter((alert) => run.output.includes(`alertname: ${alert}`));
    expect(named).toEqual(alertRules.map((rule) => rule.alert));
  });

  it("check rules accepts every query of the dashboard as PromQL", () => {
    const dashboard = JSON.parse(readFileSync(packagePath(monitoringPaths.dashboard), "utf8")) as DashboardDocument;
    const exprs = dashboard.panels.flatMap((panel) => (panel.targets ?? []).map((target) => target.expr));
    // Grafana's variables, as Grafana substitutes them before a query reaches Prometheus.
    const rules = exprs.map((expr, index) => ({
      record: `captf:dashboard_query:${index}`,
      expr: expr.replaceAll("$__rate_interval", "5m").replaceAll("$namespace", ".*"),
    }));
    const file = join(work, "dashboard.rules.yaml");
    writeFileSync(file, stringify({ groups: [{ name: "dashboard", rules }] }));
    expect(promtool("check", "rules", file)).toEqual({
      status: 0,
      output: expect.stringContaining(`SUCCESS: ${exprs.length} rules found`),
    });
  });
});
