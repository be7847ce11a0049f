/** The manager's one metrics registry (never prom-client's global one) with everything it serves. */
import { collectDefaultMetrics, Registry } from "prom-client";
import { CaptfMetrics, type BuildInfo } from "./captf-metrics.js";
import { RuntimeMetrics } from "./runtime-metrics.js";

export interface ManagerMetrics {
  registry: Registry;
  runtime: RuntimeMetrics;
  captf: CaptfMetrics;
}

export interface ManagerMetricsOptions {
  buildInfo?: BuildInfo;
  /** Node's `process_*` and `nodejs_*` metrics. Default true. */
  processMetrics?: boolean;
  now?: () => number;
}

export function createManagerMetrics(options: ManagerMetricsOptions = {}): ManagerMetrics {
  const registry = new Registry();
  if (options.processMetrics ?? true) collectDefaultMetrics({ register: registry });
  const runtime = new RuntimeMetrics(registry, options.now);
  const captf = new CaptfMetrics(registry);
  if (options.buildInfo) captf.setBuildInfo(options.buildInfo);
  return { registry, runtime, captf };
}
