// The lifecycle report as text (one line a step, the failing ones with what they waited for and saw) and JUnit XML
// (a testsuite of one testcase a step, for CI).
import type { LifecycleReport, StepReport } from "./driver.js";

const marks = { passed: "ok  ", failed: "FAIL", "not-supported": "n/s ", skipped: "skip" } as const;

function conditionsLine(step: StepReport): string {
  return step.conditions.map((c) => `${c.type}=${c.status}/${c.reason ?? ""}`).join(", ");
}

export function lifecycleText(report: LifecycleReport): string {
  const lines = [`captf-module test: ${report.role} ${report.namespace}/${report.object} (${report.image})`];
  for (const step of report.steps) {
    lines.push(`${marks[step.outcome]} ${step.name.padEnd(13)} ${String(step.seconds).padStart(6)} s  ${step.title}`);
    if (step.outcome === "failed" || step.outcome === "not-supported" || step.outcome === "skipped") {
      if (step.message) lines.push(`       ${step.outcome === "failed" ? "" : `${step.outcome}: `}${step.message}`);
    }
    if (step.outcome === "failed" && step.conditions.length > 0) lines.push(`       conditions: ${conditionsLine(step)}`);
  }
  const count = (outcome: StepReport["outcome"]) => report.steps.filter((step) => step.outcome === outcome).length;
  lines.push(
    `${report.passed ? "passed" : "FAILED"} in ${report.seconds} s: ${count("passed")} passed, ${count("failed")} failed, ` +
      `${count("not-supported")} not supported, ${count("skipped")} skipped`,
  );
  return `${lines.join("\n")}\n`;
}

function xml(text: string): string {
  return (
    text
      .replace(/&/g, "&amp;")
      .replace(/</g, "&lt;")
      .replace(/>/g, "&gt;")
      .replace(/"/g, "&quot;")
      // Characters XML 1.0 cannot hold at all.
      .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, "")
  );
}

export function lifecycleJunit(report: LifecycleReport): string {
  const count = (outcome: StepReport["outcome"]) => report.steps.filter((step) => step.outcome === outcome).length;
  const suite = `captf-module test ${report.role}`;
  const lines = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="captf-module test" tests="${report.steps.length}" failures="${count("failed")}" time="${report.seconds}">`,
    `  <testsuite name="${xml(suite)}" tests="${report.steps.length}" failures="${count("failed")}" errors="0" ` +
      `skipped="${count("skipped") + count("not-supported")}" time="${report.seconds}">`,
    "    <properties>",
    `      <property name="image" value="${xml(report.image)}"/>`,
    `      <property name="object" value="${xml(`${report.namespace}/${report.object}`)}"/>`,
    "    </properties>",
  ];
  for (const step of report.steps) {
    lines.push(`    <testcase classname="${xml(`captf-module.${report.role}`)}" name="${xml(step.name)}" time="${step.seconds}">`);
    if (step.outcome === "failed") lines.push(`      <failure message="${xml(step.message ?? "failed")}" type="StepFailed"/>`);
    if (step.outcome === "skipped" || step.outcome === "not-supported")
      lines.push(`      <skipped message="${xml(`${step.outcome}: ${step.message ?? ""}`)}"/>`);
    const seen = Object.entries(step.conditionsSeen).map(([type, values]) => `${type}: ${values.join(" -> ")}`);
    const out = [step.title, ...(step.waitedFor ? [`waited for: ${step.waitedFor}`] : []), ...seen];
    lines.push(`      <system-out>${xml(out.join("\n"))}</system-out>`, "    </testcase>");
  }
  lines.push("  </testsuite>", "</testsuites>");
  return `${lines.join("\n")}\n`;
}
