// A hostile module (packages/module-hostile) attacks a demo machine at every step of its own apply
// and destroy: every attempt is refused through the state broker, nothing of the victim changes,
// its own apply succeeds, and the manager records the refusals and not the forged result.
import { expect, it } from "@jest/globals";
import { waitFor } from "@captf/testkit";
import { applyObjects } from "../apply.js";
import { demoClusterName, demoNamespace } from "../demo-objects.js";
import {
  brokerRefusalsPerJob,
  describeAttempts,
  hostileLeftovers,
  isBoundaryAttempt,
  readHostileRecord,
  snapshotChanges,
  snapshotVictim,
  startReportServer,
  victimTargets,
} from "../hostile-module.js";
import type { Machine, TerraformObject } from "../objects.js";
import { capi, infra, scenarioTimeout, type Scenario } from "./shared-plane.js";

export const hostileModuleContained: Scenario = (shared) => {
  it(
    "keeps a hostile module's code from every Kubernetes credential and everything of another object, and its own apply still succeeds",
    async () => {
      const { plane, custom, list, progressTable, machineTemplate, machineDeployment } = shared;
      // The hostile machine (packages/module-hostile, OpenTofu) attacks at every step of its apply and destroy a
      // victim: a demo-md-0 machine, its state, lock and run Secret, the cluster's kubeconfig and CA, the credential mirror.
      const victim = (await list<TerraformObject>(infra, "terraformmachines")).find((machine) =>
        machine.metadata.name.startsWith("demo-md-0-"),
      )!.metadata.name;
      const targets = await victimTargets(plane.kubeConfig, demoNamespace, demoClusterName, victim);
      expect(targets.credentialMirror).toBeDefined();
      const before = await snapshotVictim(plane.kubeConfig, targets);
      const reports = await startReportServer();
      const refusedCounted = async () =>
        sumOfSeries(await plane.managerMetrics(), "captf_broker_refused_requests_total", 'kind="TerraformMachine"');
      const countedBefore = await refusedCounted();
      // Every finding is gathered and the destroy still runs: one failure must not hide the others.
      const problems: string[] = [];
      try {
        const variables = { hostile_targets: JSON.stringify(targets), report_url: reports.url };
        await applyObjects(plane.applier, [
          machineTemplate("demo-md-hostile", { source: { image: plane.images.hostileMachine }, variables }),
          machineDeployment("demo-md-hostile"),
        ]);
        const hostileMachines = async () =>
          (await list<TerraformObject>(infra, "terraformmachines")).filter((machine) =>
            machine.metadata.name.startsWith("demo-md-hostile-"),
          );
        // Its own Machine Ready as Cluster API reports it (Running, Ready, a nodeRef): the attacks never fail its run.
        await waitFor(
          async () => {
            const machine = (await list<Machine>(capi, "machines")).find(
              (candidate) => candidate.metadata.labels?.["cluster.x-k8s.io/deployment-name"] === "demo-md-hostile",
            );
            const ready =
              machine?.status?.phase === "Running" &&
              machine.status?.nodeRef?.name &&
              (machine.status?.conditions ?? []).some((condition) => condition.type === "Ready" && condition.status === "True");
            return ready ? true : undefined;
          },
          300_000,
          `the hostile Machine Ready\n${await progressTable()}`,
        );
        const hostile = (await hostileMachines())[0]!.metadata.name;
        const record = await readHostileRecord(plane.kubeConfig, demoNamespace, hostile);
        expect(record.jobs.filter((job) => job.op === "apply" && job.succeeded)).toHaveLength(1);
        // The forged result (attack.cjs writes it during apply and again over the runner's own) must not be what the manager recorded.
        if (record.forgedRecorded || record.forgedTerminationMessages.length > 0) {
          problems.push(
            `the hostile module's forged result was recorded: status.lastRun ${JSON.stringify(record.lastRun)}; ` +
              `forged termination messages of ${record.forgedTerminationMessages.join(", ") || "no Pod"}`,
          );
        }
        const refusalsAtApply = await brokerRefusalsPerJob(plane.kubeConfig, demoNamespace, hostile);
        expect(refusalsAtApply).toEqual(Object.fromEntries(record.jobs.map((job) => [job.name, 1])));
        // The manager counted the apply's refusals (the broker's summary) and said so in its log.
        await waitFor(
          async () => ((await refusedCounted()) > countedBefore ? true : undefined),
          60_000,
          "captf_broker_refused_requests_total counting the hostile apply's refusals",
        );
        expect(await plane.managerLog()).toContain("the Job's state broker refused requests of module code");

        await custom.deleteNamespacedCustomObject({ ...capi, plural: "machinedeployments", name: "demo-md-hostile" });
        await waitFor(
          async () => ((await hostileMachines()).length === 0 ? true : undefined),
          300_000,
          "the hostile machine destroyed and gone",
        );
        await custom.deleteNamespacedCustomObject({ ...infra, plural: "terraformmachinetemplates", name: "demo-md-hostile" });
        // One BrokerRefused event per Job: the apply's, and now the destroy's.
        const refusals = await brokerRefusalsPerJob(plane.kubeConfig, demoNamespace, hostile);
        expect(Object.values(refusals)).toEqual(
          Object.keys(refusalsAtApply)
            .concat("destroy")
            .map(() => 1),
        );
        expect(Object.keys(refusals)).toEqual(expect.arrayContaining(Object.keys(refusalsAtApply)));

        const phases = await waitFor(
          async () => {
            const seen = new Set(reports.reports.map((report) => report.phase));
            return ["init", "validate", "apply", "provisioner-apply", "destroy", "provisioner-destroy"].every((phase) => seen.has(phase))
              ? [...seen]
              : undefined;
          },
          30_000,
          `reports of every phase (so far: ${reports.reports.map((report) => report.phase).join(", ")})`,
        );
        expect(phases.length).toBeGreaterThanOrEqual(6);
        const attempts = reports.reports.flatMap((report) => report.attempts);
        const boundary = attempts.filter(isBoundaryAttempt);
        expect(boundary.length).toBeGreaterThan(100);
        const notRefused = boundary.filter((attempt) => attempt.outcome !== "refused");
        if (notRefused.length > 0)
          problems.push(`${notRefused.length} of ${boundary.length} attempts were not refused:\n${describeAttempts(notRefused)}`);
        // The refusals came through a live broker: the hostile object's own state answered it at every phase.
        // Not `version`: the runner starts `version -json` while it still waits for the broker (it waits only before its first step).
        const served = reports.reports.filter((report) => report.phase !== "version");
        const controls = served.flatMap((report) => report.attempts).filter((attempt) => attempt.control);
        expect({ controls: controls.length, succeeded: controls.filter((attempt) => attempt.outcome === "succeeded").length }).toEqual({
          controls: served.length,
          succeeded: served.length,
        });
        expect(new Set(boundary.map((attempt) => attempt.via))).toEqual(new Set(["filesystem", "environment", "direct", "broker"]));

        const changes = snapshotChanges(before, await snapshotVictim(plane.kubeConfig, targets));
        if (changes.length > 0) problems.push(`the victim changed: ${changes.join("; ")}`);
        const leftovers = await hostileLeftovers(plane.kubeConfig, demoNamespace);
        if (leftovers.length > 0) problems.push(`the attacks created ${leftovers.join(", ")}`);
      } finally {
        await reports.close();
      }
      expect(problems).toEqual([]);
    },
    scenarioTimeout,
  );
};

/** The sum of a metric's series whose labels include `label` (Prometheus text format). */
function sumOfSeries(metrics: string, name: string, label: string): number {
  return metrics
    .split("\n")
    .filter((line) => line.startsWith(`${name}{`) && line.includes(label))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(" ") + 1)), 0);
}
