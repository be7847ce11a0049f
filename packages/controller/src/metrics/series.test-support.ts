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

/**
 * Each row's series (`common` with the row's labels, its `value` left out) as the registry exposes it: the rows with the
 * values read, for comparing with the rows expected.
 */
export async function seriesValues<Row extends { value: number }>(
  registry: Registry,
  metric: string,
  common: Record<string, string>,
  rows: readonly Row[],
  part?: "count" | "sum",
): Promise<Row[]> {
  return Promise.all(
    rows.map(async (row) => {
      const { value: _expected, ...labels } = row;
      return { ...row, value: await seriesValue(registry, metric, { ...common, ...(labels as Record<string, string>) }, part) };
    }),
  );
}
