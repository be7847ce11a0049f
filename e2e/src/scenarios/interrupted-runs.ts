// Interruptions: a Job's Pod deleted mid-apply (held on the hold server, not raced) is reported
// JobInterrupted and applied again; the manager's Pod deleted while a Job runs loses no run.
import { expect, it } from "@jest/globals";
import { childCoverageMeasured, waitFor } from "@captf/testkit";
import { labels } from "@captf/contract/api";
import { applyObjects } from "../apply.js";
import { managerCoveredLines, managerNamespace } from "../captf-install.js";
import { demoNamespace } from "../demo-objects.js";
import { startHoldServer } from "../hold-server.js";
import { listEventsOfReason } from "../progress.js";
import type { Machine, TerraformObject } from "../objects.js";
import { capi, infra, mergePatch, scenarioTimeout, type Scenario } from "./shared-plane.js";

export const interruptedRuns: Scenario = (shared) => {
  it(
    "runs again an apply whose Pod is deleted mid-run, and loses nothing when the manager's Pod is deleted mid-run",
    async () => {
      const { plane, custom, core, list, captfJobs, waitReady, machineTemplate, machineDeployment } = shared;
      const scaleTo = (replicas: number) =>
        custom.patchNamespacedCustomObject(
          { ...capi, plural: "machinedeployments", name: "demo-md-0", body: { spec: { replicas } } },
          mergePatch,
        );
      const newMachine = async (known: Set<string>) =>
        (await list<TerraformObject>(infra, "terraformmachines")).find(
          (machine) => machine.metadata.name.startsWith("demo-md-0-") && !known.has(machine.metadata.name),
        );
      const applyPodOf = async (machine: string) =>
        (await core.listNamespacedPod({ namespace: demoNamespace })).items.find(
          (pod) =>
            pod.status?.phase === "Running" &&
            pod.metadata?.labels?.[labels.ownerName] === machine &&
            pod.metadata?.labels?.[labels.op] === "apply",
        );

      // A Job's Pod deleted while it applies: the runner is stopped from outside and the apply runs again.
      // The apply is held mid-run, not raced: its module waits on the hold server's URL (the no-op
      // machine's hold_apply_url), which answers once the runner has logged the Pod's SIGTERM.
      const hold = await startHoldServer();
      try {
        await applyObjects(plane.applier, [
          machineTemplate("demo-md-hold", { variables: { hold_apply_url: hold.url } }),
          machineDeployment("demo-md-hold"),
        ]);
        const holdMachines = async () =>
          (await list<TerraformObject>(infra, "terraformmachines")).filter((machine) => machine.metadata.name.startsWith("demo-md-hold-"));
        const interruptedMachine = (await waitFor(async () => (await holdMachines())[0], 120_000, "the held TerraformMachine")).metadata
          .name;
        await waitFor(
          async () => (hold.requests > 0 ? true : undefined),
          180_000,
          `${interruptedMachine}'s apply waiting on the hold server`,
        );
        const pod = await waitFor(() => applyPodOf(interruptedMachine), 60_000, `the apply Pod of ${interruptedMachine} running`);
        const interruptedJob = pod.metadata!.labels!["job-name"]!;
        await core.deleteNamespacedPod({ namespace: demoNamespace, name: pod.metadata!.name! });
        const runnerLog = () => plane.kubelet.containerLog(demoNamespace, pod.metadata!.name!, "source");
        await waitFor(
          async () => (runnerLog().includes("received SIGTERM") ? true : undefined),
          60_000,
          `the runner of ${interruptedJob} stopping on its Pod's deletion`,
        );
        hold.release();
        await waitReady("the held machine after the interrupted apply", async () =>
          (await list<Machine>(capi, "machines")).some(
            (machine) => machine.metadata.labels?.["cluster.x-k8s.io/deployment-name"] === "demo-md-hold",
          ),
        );
        // The deleted Pod's Job did not succeed; a later apply Job did.
        const applies = (await captfJobs()).filter(
          (job) => job.metadata!.labels![labels.ownerName] === interruptedMachine && job.metadata!.labels![labels.op] === "apply",
        );
        expect(applies.find((job) => job.metadata!.name === interruptedJob)?.status?.succeeded ?? 0).toBe(0);
        expect(applies.filter((job) => job.metadata!.name !== interruptedJob && job.status?.succeeded === 1)).toHaveLength(1);
        // The documented outcome: an interruption from outside (JobInterrupted, retried without backoff), not a failure.
        const about = (reason: string) =>
          listEventsOfReason(plane.kubeConfig, demoNamespace, reason).then((events) =>
            events.filter((event) => event.involvedObject.name === interruptedMachine && event.message?.includes(interruptedJob)),
          );
        expect(await about("JobInterrupted")).toHaveLength(1);
        expect(await about("JobFailed")).toHaveLength(0);
        // Its destroy reads the released URL too: the server stays up until the machine is gone.
        await custom.deleteNamespacedCustomObject({ ...capi, plural: "machinedeployments", name: "demo-md-hold" });
        await waitFor(async () => ((await holdMachines()).length === 0 ? true : undefined), 180_000, "demo-md-hold's machines gone");
      } finally {
        hold.release();
        await hold.close();
      }

      // The manager's Pod deleted while a machine's Job runs: its Deployment replaces it; one Job per run, none lost.
      const mdMachines = async () =>
        (await list<TerraformObject>(infra, "terraformmachines")).filter((machine) => machine.metadata.name.startsWith("demo-md-0-"));
      const before = await mdMachines();
      const known = new Set(before.map((machine) => machine.metadata.name));
      const managerPods = async () => (await core.listNamespacedPod({ namespace: managerNamespace })).items;
      const firstManager = (await managerPods())[0]!.metadata!.name!;
      await scaleTo(before.length + 1);
      const added = (await waitFor(() => newMachine(known), 120_000, "a new demo-md-0 TerraformMachine")).metadata.name;
      await waitFor(
        async () =>
          (await list<TerraformObject>(infra, "terraformmachines")).find((machine) => machine.metadata.name === added)?.status?.activeJob
            ? true
            : undefined,
        120_000,
        `${added}'s apply Job started`,
      );
      await core.deleteNamespacedPod({ namespace: managerNamespace, name: firstManager });
      await waitFor(
        async () =>
          (await managerPods()).some((candidate) => candidate.metadata!.name !== firstManager && candidate.status?.phase === "Running")
            ? true
            : undefined,
        180_000,
        "a new manager Pod running",
      );
      // Under the test command's coverage, the deleted manager ended by SIGTERM and wrote the lines it ran (docs/testing.md#coverage).
      if (childCoverageMeasured()) {
        await waitFor(
          async () => ((await managerPods()).some((pod) => pod.metadata!.name === firstManager) ? undefined : true),
          60_000,
          "the deleted manager Pod gone",
        );
        expect((await managerCoveredLines())?.get("reconcile/workspace-controller.ts")).toBeGreaterThan(0);
      }
      await waitReady(
        `${before.length + 1} demo-md-0 machines after the manager's replacement`,
        async () =>
          (await list<Machine>(capi, "machines")).filter(
            (machine) => machine.metadata.labels?.["cluster.x-k8s.io/deployment-name"] === "demo-md-0",
          ).length ===
          before.length + 1,
      );
      const addedApplies = (await captfJobs()).filter(
        (job) => job.metadata!.labels![labels.ownerName] === added && job.metadata!.labels![labels.op] === "apply",
      );
      expect(addedApplies).toHaveLength(1);
      expect(addedApplies[0]!.status?.succeeded).toBe(1);
      await scaleTo(before.length);
      await waitReady(`back to ${before.length} demo-md-0 machines`, async () => (await mdMachines()).length === before.length);
    },
    scenarioTimeout,
  );
};
