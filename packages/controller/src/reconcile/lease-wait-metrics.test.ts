// captf_lease_waits_total for the cluster operation gate, as startOperation counts its waits: the leases are taken by
// acquireLease for a Job still running, as the pass that started it took them, and the act step of another object meets them.
import { describe, expect, it } from "@jest/globals";
import type { Role } from "@captf/contract";
import { labels } from "@captf/contract/api";
import type { V1Job, V1Lease } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { clusterAdapter } from "../kinds/adapters.js";
import { CaptfMetrics } from "../metrics/captf-metrics.js";
import { seriesValue } from "../metrics/series.test-support.js";
import { builtinTypes } from "../runtime/builtin-types.js";
import { FakeObjects } from "../runtime/fake-client.test-support.js";
import type { KindAdapter } from "./types.js";
import { phasePass, passNamespace } from "./phase-pass.test-support.js";
import { acquireLease, clusterLeaseName, runLeaseName } from "./run-lease.js";
import { startOperation } from "./start-operation.js";

const now = Date.parse("2026-12-07T10:00:00Z");
const clusterName = "c";

/** A Job that started a minute ago and runs still. */
const running = (name: string): V1Job => ({
  metadata: { name, namespace: passNamespace, uid: `uid-${name}`, labels: { [labels.op]: "apply" } },
  status: { startTime: new Date(now - 60_000), active: 1 },
});

/** The lease a running Job of another object took when its pass started it. */
async function heldBy(
  server: FakeObjects,
  lease: { kind: "run" | "cluster"; name: string; job: string; ownerKind: string },
): Promise<void> {
  server.seed(builtinTypes.job, passNamespace, running(lease.job) as Parameters<FakeObjects["seed"]>[2]);
  const taken = await acquireLease(
    { client: server.client },
    {
      kind: lease.kind,
      name: lease.name,
      namespace: passNamespace,
      holder: lease.job,
      op: "apply",
      owner: { kind: lease.ownerKind, name: lease.job.replace(/-apply-1$/, ""), clusterName },
      backstopSeconds: 3600,
      now: now - 60_000,
    },
  );
  expect(taken).toEqual({ acquired: true });
}

/** The act step of a restore of this object's kind; the wait it reports, the registry its counts went to, the leases left. */
async function startRestore<R extends Role>(server: FakeObjects, adapter?: KindAdapter<R>) {
  const registry = new Registry();
  const pass = phasePass<R>(server.client, new CaptfMetrics(registry), { now, clusterName, ...(adapter ? { adapter } : {}) });
  const outcome = await startOperation({
    ...pass,
    decision: { op: "restore", reason: "RestoreRequested" },
    run: { op: "restore", attempt: 1, inputsHash: "h2:none", image: "registry.example/m:v1", digestUnknown: false, tick: "9" },
    inputs: { kind: "none" },
    credentials: undefined,
    terraformCluster: undefined,
    restoreSet: undefined,
    jobPolicy: {},
    serviceAccountRefusal: undefined,
    forceUnlock: undefined,
    afterFailedApply: undefined,
    appliedInputsHash: undefined,
  });
  const leases = (await server.list(builtinTypes.lease, passNamespace)).items.map((lease) => (lease as V1Lease).metadata!.name!).sort();
  return { registry, reason: outcome.wait?.value.reason, leases };
}

describe("waits of the cluster operation gate", () => {
  it("a machine's restore waits while a cluster Job changes the cluster, giving its run lease back", async () => {
    const server = new FakeObjects();
    const clusterLease = clusterLeaseName(passNamespace, clusterName);
    await heldBy(server, { kind: "cluster", name: clusterLease, job: "c-apply-1", ownerKind: "TerraformCluster" });
    const { registry, reason, leases } = await startRestore(server);
    expect(reason).toBe("WaitingForClusterOperation");
    const behindCluster = { kind: "TerraformMachine", reason: "cluster_operation" };
    expect(await seriesValue(registry, "captf_lease_waits_total", behindCluster)).toBe(1);
    expect(await seriesValue(registry, "captf_lease_waits_total")).toBe(1);
    expect(leases).toEqual([clusterLease]);
  });

  it("a cluster's restore waits while machine Jobs write their state", async () => {
    const server = new FakeObjects();
    const machineLease = runLeaseName("machine-1-suffix");
    await heldBy(server, { kind: "run", name: machineLease, job: "machine-1-apply-1", ownerKind: "TerraformMachine" });
    const { registry, reason } = await startRestore(server, clusterAdapter);
    expect(reason).toBe("WaitingForMachineOperations");
    const behindMachines = { kind: "TerraformCluster", reason: "machine_operations" };
    expect(await seriesValue(registry, "captf_lease_waits_total", behindMachines)).toBe(1);
    expect(await seriesValue(registry, "captf_lease_waits_total")).toBe(1);
  });
});
