// Traces (issue 33 §1, docs/tracing.md): the plane's manager runs with --tracing-otlp-endpoint pointing at a real OpenTelemetry
// Collector (tools/otelcol); the bring-up gives each TerraformMachine one trace, its uid, with spans from the manager, the Job's
// runner and OpenTofu, and no span carries a canary.
import { expect, it } from "@jest/globals";
import { traceIdOfUid } from "@captf/contract/tracing";
import { waitFor } from "@captf/testkit";
import type { TerraformObject } from "../objects.js";
import { infra, scenarioTimeout, type Scenario } from "./shared-plane.js";

export const traces: Scenario = (shared) => {
  it(
    "gives each machine of the bring-up one trace with spans from the manager, its runners and OpenTofu, carrying no secret",
    async () => {
      const collector = shared.collector;
      expect(collector).toBeDefined();
      const machines = await shared.list<TerraformObject>(infra, "terraformmachines");
      expect(machines.length).toBeGreaterThan(0);
      const servicesOf = (uid: string) =>
        new Set(
          collector!
            .spans()
            .filter((span) => span.traceId === traceIdOfUid(uid))
            .map((span) => span.service),
        );
      for (const machine of machines) {
        const uid = machine.metadata!.uid!;
        await waitFor(
          async () => (["captf-manager", "captf-runner"].every((service) => servicesOf(uid).has(service)) ? true : undefined),
          60_000,
          `the manager's and the runner's spans of ${machine.metadata!.name}`,
        );
      }
      const spans = collector!.spans();
      // Every span about an object is in the trace of its uid.
      const about = spans.filter((span) => span.attributes["captf.object.uid"] !== undefined);
      expect(about.filter((span) => span.traceId !== traceIdOfUid(span.attributes["captf.object.uid"]!))).toEqual([]);
      // OpenTofu's own spans hang under the runner's step spans of some machine's trace.
      const machineTraces = new Set(machines.map((machine) => traceIdOfUid(machine.metadata!.uid!)));
      const steps = new Set(spans.filter((span) => span.name.startsWith("step ")).map((span) => span.spanId));
      expect(spans.some((span) => span.service === "OpenTofu CLI" && machineTraces.has(span.traceId) && steps.has(span.parentSpanId))).toBe(
        true,
      );
      const text = collector!.text();
      for (const [name, value] of Object.entries(shared.secrets) as [string, string][])
        if (text.includes(value)) throw new Error(`the ${name} canary appears in a span the collector received`);
    },
    scenarioTimeout,
  );
};
