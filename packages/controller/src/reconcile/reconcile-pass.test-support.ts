// A whole pass for the phases' unit tests: phasePass's object, events and metrics, with the pass client over the test's client,
// the facts as gatherScope leaves them before any phase (the test sets those the phase reads) and an empty outcome.
import type { Role } from "@captf/contract";
import { labels } from "@captf/contract/api";
import type { V1Job } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { CaptfMetrics } from "../metrics/captf-metrics.js";
import type { KubeApi } from "../runtime/kube-client.js";
import { passClient } from "../runtime/pass-client.js";
import { initialFacts } from "./pass-scope.js";
import { passNamespace, passOwner, phasePass, type PhasePass, type PhasePassOptions } from "./phase-pass.test-support.js";
import type { PassFacts, ReconcilePass } from "./types.js";

export type TestPass = ReconcilePass & PhasePass<Role> & { registry: Registry };

export function reconcilePass<R extends Role = "machine">(
  client: KubeApi,
  options: PhasePassOptions<R> & { facts?: Partial<PassFacts> },
): TestPass {
  const registry = new Registry();
  const base = phasePass<R>(client, new CaptfMetrics(registry), options);
  const facts = {
    ...initialFacts({
      observedInputs: undefined,
      capiCluster: undefined,
      terraformCluster: undefined,
      wasProvisioned: false,
      jobPolicy: {},
    }),
    ...options.facts,
  };
  return { ...(base as unknown as PhasePass<Role>), reads: passClient({ client }), facts, outcome: {}, registry };
}

/** A Job of the pass's machine as captf creates it: running, or finished Complete or Failed at `finishedAt`. */
export function machineJob(name: string, op: string, finished?: { condition: "Complete" | "Failed"; at: number }): V1Job {
  return {
    metadata: {
      name,
      namespace: passNamespace,
      uid: `uid-${name}`,
      creationTimestamp: new Date(Date.parse("2026-12-07T09:00:00Z")),
      labels: { [labels.ownerKind]: passOwner.kind, [labels.ownerName]: passOwner.name, [labels.op]: op, [labels.attempt]: "1" },
      ownerReferences: [{ apiVersion: "v1", kind: passOwner.kind, name: passOwner.name, uid: passOwner.uid, controller: true }],
    },
    status: finished
      ? {
          startTime: new Date(finished.at - 60_000),
          conditions: [{ type: finished.condition, status: "True", lastTransitionTime: new Date(finished.at) }],
        }
      : { startTime: new Date(Date.parse("2026-12-07T09:00:00Z")), active: 1 },
  } as V1Job;
}
