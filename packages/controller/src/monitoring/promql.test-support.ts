// The metric names a PromQL expression reads, and the series names the manager's registry serves.
import type { Registry } from "prom-client";

/** Keywords and modifiers that look like names but are not metrics. */
const keywords = new Set([
  "by",
  "without",
  "on",
  "ignoring",
  "group_left",
  "group_right",
  "bool",
  "and",
  "or",
  "unless",
  "offset",
  "inf",
  "nan",
]);

/**
 * Metric names in an expression: identifiers that are not functions (followed by `(`), keywords,
 * label names of grouping clauses, label matchers, string literals, durations or Grafana variables.
 */
export function metricNames(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\$\{?\w+\}?/g, " ")
    .replace(/\{[^}]*\}/g, " ")
    .replace(/\[[^\]]*\]/g, " ")
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, " ");
  const names = new Set<string>();
  for (const match of stripped.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const word = match[0];
    const next = stripped.slice(match.index + word.length).trimStart();
    if (next.startsWith("(") || keywords.has(word.toLowerCase())) continue;
    names.add(word);
  }
  return [...names];
}

/** Every series name the registry serves: counters and gauges as named, histograms and summaries with their suffixes. */
export function exportedSeriesNames(registry: Registry): Set<string> {
  const names = new Set<string>();
  for (const metric of registry.getMetricsAsArray()) {
    const { name, type } = metric as unknown as { name: string; type: string };
    names.add(name);
    if (type === "histogram") for (const suffix of ["_bucket", "_sum", "_count"]) names.add(name + suffix);
    if (type === "summary") for (const suffix of ["_sum", "_count"]) names.add(name + suffix);
  }
  return names;
}
