import type { Registry } from "prom-client";

/**
 * One series as a registry exposes it to Prometheus, by its exposed metric name: the sum of the samples
 * whose labels include `labels` (0 when none). `part` reads a histogram's `_count` or `_sum` series.
 */
export async function seriesValue(
  registry: Registry,
  metric: string,
  labels: Record<string, string> = {},
  part?: "count" | "sum",
): Promise<number> {
  const found = registry.getSingleMetric(metric);
  if (!found) throw new Error(`the registry has no metric ${metric}`);
  const series = part ? `${metric}_${part}` : metric;
  return (await found.get()).values
    .filter((sample) => ((sample as { metricName?: string }).metricName ?? metric) === series)
    .filter((sample) => Object.entries(labels).every(([key, value]) => String(sample.labels[key]) === value))
    .reduce((sum, sample) => sum + sample.value, 0);
}
