// The drift phase: the drift policy and finding (events and metrics of the newest check), and a machine's health sampling interval.
import { effectiveRemediation, type StoredRemediation } from "../kinds/machine-remediation.js";
import type { MetricKind } from "../metrics/captf-metrics.js";
import { next, type Phase } from "./types.js";
import { observeDrift } from "./workspace-phases.js";

export const reconcileDrift: Phase = async (pass) => {
  const { deps, adapter, object, namespace, name, facts } = pass;
  facts.drift = observeDrift(pass, facts.jobs, facts.toMark, facts.terraformCluster);
  deps.metrics?.objectStatus(adapter.kind as MetricKind, namespace, name, { drift: facts.drift.detected ? 1 : 0 });
  // Machines that may ask for remediation sample their health on its own interval.
  const remediation =
    adapter.role === "machine"
      ? effectiveRemediation(object.spec.remediation as StoredRemediation | undefined, facts.terraformCluster?.spec?.defaults?.remediation)
      : undefined;
  facts.healthCheckIntervalSeconds =
    remediation?.annotateMachine && facts.wasProvisioned ? remediation.healthCheckIntervalSeconds : undefined;
  return next;
};
