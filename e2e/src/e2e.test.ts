// captf as a Cluster API infrastructure provider, end to end: Cluster API's own core manager drives
// it, captf runs as `clusterctl init` installs it from its clusterctl assets (config/install.yaml's
// objects: its Deployment, its ServiceAccount, its RBAC), and the user's objects come from
// e2e/manifests/demo. Scenarios run in order on one plane.
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { describeWithTools, waitFor } from "@captf/testkit";
import { annotations, labels } from "@captf/contract/api";
import { applyObjects } from "./apply.js";
import { clusterctlScenarios } from "./clusterctl-scenarios.test-support.js";
import { managerNamespace } from "./captf-install.js";
import { demoClusterName, demoNamespace, demoObjects, demoVariables, type DemoSecrets } from "./demo-objects.js";
import { startManagementPlane, type ManagementPlane } from "./management-plane.js";
import { formatProgress, listCaptfJobs, listEventsOfReason, readProgress } from "./progress.js";
import { startHoldServer } from "./hold-server.js";
import { startHealthServer } from "./health-server.js";
import { brokerRefusalsPerJob, describeAttempts, hostileLeftovers, isBoundaryAttempt, readHostileRecord, snapshotChanges, snapshotVictim, startReportServer, victimTargets } from "./hostile-module.js";

type AnyObject = Record<string, any>;

const capi = { group: "cluster.x-k8s.io", version: "v1beta2", namespace: demoNamespace };
const infra = { group: "infrastructure.cluster.x-k8s.io", version: "v1alpha1", namespace: demoNamespace };
const scenarioTimeout = 600_000;
const mergePatch = k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch);

describeWithTools(
  ["etcd", "kube-apiserver", "kube-controller-manager", "tofu", "capi-manager", "clusterctl", "go", "umoci", "skopeo", "docker-registry"],
  "captf under Cluster API, installed from its manifests",
  () => {
    const secrets: DemoSecrets = {
      credential: `canary-credential-${randomBytes(8).toString("hex")}`,
      variable: `canary-variable-${randomBytes(8).toString("hex")}`,
      bootstrap: `canary-bootstrap-${randomBytes(8).toString("hex")}`,
    };
    const planeLog: string[] = [];
    let plane: ManagementPlane;
    let custom: k8s.CustomObjectsApi;
    let core: k8s.CoreV1Api;
    let batch: k8s.BatchV1Api;
    let events: k8s.EventsV1Api;

    const progressTable = async () => formatProgress((await readProgress(plane.kubeConfig, demoNamespace, demoClusterName)).rows);
    const waitReady = async (what: string, extra: () => Promise<boolean> = async () => true, timeoutMillis = 300_000) => {
      await waitFor(async () => ((await readProgress(plane.kubeConfig, demoNamespace, demoClusterName)).ready && (await extra()) ? true : undefined), timeoutMillis, `${what}\n${await progressTable()}`).catch(async (error) => {
        throw new Error(`${(error as Error).message}\nnow:\n${await progressTable()}\nplane:\n${planeLog.slice(-40).join("\n")}\nmanager:\n${(await plane.managerLog()).split("\n").slice(-40).join("\n")}`);
      });
    };
    const captfJobs = () => listCaptfJobs(plane.kubeConfig, demoNamespace);
    const list = async (api: typeof capi, plural: string) => ((await custom.listNamespacedCustomObject({ ...api, plural })) as { items: AnyObject[] }).items;
    /** A TerraformMachineTemplate whose template's spec is `spec` over the no-op machine image. */
    const machineTemplate = (name: string, spec: AnyObject = {}) =>
      ({ apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1", kind: "TerraformMachineTemplate", metadata: { name, namespace: demoNamespace }, spec: { template: { spec: { source: { image: plane.images.modules.machine }, ...spec } } } }) as k8s.KubernetesObject;
    /** A MachineDeployment of one machine of the demo cluster over the TerraformMachineTemplate of its name; its Machines are labelled with its name. */
    const machineDeployment = (name: string) => {
      const selector = { matchLabels: { "cluster.x-k8s.io/deployment-name": name } };
      const template = { metadata: { labels: selector.matchLabels }, spec: { clusterName: demoClusterName, version: "v1.36.4", bootstrap: { dataSecretName: "demo-bootstrap" }, infrastructureRef: { apiGroup: infra.group, kind: "TerraformMachineTemplate", name } } };
      return { apiVersion: "cluster.x-k8s.io/v1beta2", kind: "MachineDeployment", metadata: { name, namespace: demoNamespace }, spec: { clusterName: demoClusterName, replicas: 1, selector, template } } as k8s.KubernetesObject;
    };

    beforeAll(async () => {
      plane = await startManagementPlane({ log: (line) => planeLog.push(`${new Date().toISOString()} ${line}`) });
      custom = plane.kubeConfig.makeApiClient(k8s.CustomObjectsApi);
      core = plane.kubeConfig.makeApiClient(k8s.CoreV1Api);
      batch = plane.kubeConfig.makeApiClient(k8s.BatchV1Api);
      events = plane.kubeConfig.makeApiClient(k8s.EventsV1Api);
    }, 900_000);

    afterAll(async () => {
      await plane?.stop();
    }, 120_000);

    it("brings the demo up to Cluster API's own readiness, one Job per object", async () => {
      const started = Date.now();
      await applyObjects(plane.applier, demoObjects(demoVariables(plane.images, secrets)));
      await waitReady("the demo Ready as Cluster API reports it");
      const seconds = (Date.now() - started) / 1000;
      planeLog.push(`demo ready in ${seconds.toFixed(1)} s`);

      const cluster = (await custom.getNamespacedCustomObject({ ...capi, plural: "clusters", name: demoClusterName })) as AnyObject;
      expect(cluster.status.initialization).toMatchObject({ infrastructureProvisioned: true, controlPlaneInitialized: true });
      expect(cluster.spec.controlPlaneEndpoint).toEqual({ host: "noop-demo.invalid", port: 6443 });
      const machines = await list(capi, "machines");
      expect(machines).toHaveLength(3);
      for (const machine of machines) {
        expect(machine.spec.providerID).toMatch(new RegExp(`^noop:///${demoNamespace}/demo-md-0-`));
        expect(machine.status.nodeRef.name).toBeTruthy();
      }
      const pool = (await custom.getNamespacedCustomObject({ ...capi, plural: "machinepools", name: "demo-mp-0" })) as AnyObject;
      expect(pool.spec.providerIDList).toHaveLength(3);
      expect(pool.status.readyReplicas).toBe(3);

      // One apply per object, plus at most the cluster's re-apply once its control plane is
      // initialized; no refresh: every apply's own reading is definite (the pool's lists all its members).
      // Per object: each machine and the pool exactly one apply (the pool's cluster failure domains come
      // from the cluster's state with its exports, so they no longer arrive a pass later), the cluster at most two.
      const jobs = await captfJobs();
      const perObject = new Map<string, string[]>();
      for (const job of jobs) {
        const key = `${job.metadata!.labels![labels.ownerKind]}/${job.metadata!.labels![labels.ownerName]}`;
        perObject.set(key, [...(perObject.get(key) ?? []), job.metadata!.labels![labels.op]!]);
      }
      // On a failure, each Job's op, outcome and inputs hash say why an object ran more than once.
      const breakdown = JSON.stringify(jobs.map((job) => `${job.metadata!.labels![labels.ownerName]}:${job.metadata!.labels![labels.op]}:${job.status?.succeeded ? "ok" : "failed"}:${job.metadata!.annotations?.[annotations.inputsHash]?.slice(0, 12) ?? "-"}`));
      const applies = (key: string) => (perObject.get(key) ?? []).filter((op) => op === "apply").length;
      for (const machine of await list(infra, "terraformmachines")) expect({ breakdown, applies: applies(`TerraformMachine/${machine.metadata.name}`) }).toEqual({ breakdown, applies: 1 });
      expect([1, 2]).toContain(applies(`TerraformCluster/${demoClusterName}`));
      expect({ breakdown, applies: applies("TerraformMachinePool/demo-mp-0") }).toEqual({ breakdown, applies: 1 });
      expect(jobs.filter((job) => job.metadata!.labels![labels.op] !== "apply").map((job) => `${job.metadata!.labels![labels.ownerKind]}:${job.metadata!.labels![labels.op]}`)).toEqual([]);
      // The manager ran with its own ServiceAccount and was never refused.
      const managerPod = (await core.listNamespacedPod({ namespace: managerNamespace })).items[0]!;
      expect(managerPod.spec!.serviceAccountName).toBe("captf-controller-manager");
      expect(await plane.managerLog()).not.toMatch(/forbidden/i);
    }, scenarioTimeout);

    it("scales a MachineDeployment 3 → 5 → 2, a MachinePool 3 → 1, and autoscales the pool with its replicas written back", async () => {
      const scale = (plural: string, name: string, replicas: number) => custom.patchNamespacedCustomObject({ ...capi, plural, name, body: { spec: { replicas } } }, mergePatch);
      await scale("machinedeployments", "demo-md-0", 5);
      await waitReady("5 machines", async () => (await list(capi, "machines")).length === 5);
      expect(await list(infra, "terraformmachines")).toHaveLength(5);

      await scale("machinedeployments", "demo-md-0", 2);
      await waitReady("2 machines", async () => (await list(capi, "machines")).length === 2 && (await list(infra, "terraformmachines")).length === 2);
      // The three removed machines were destroyed (their Jobs went with them: the events stay).
      const remaining = new Set((await list(infra, "terraformmachines")).map((machine) => machine.metadata.name as string));
      const destroyed = (await events.listNamespacedEvent({ namespace: demoNamespace })).items.filter((event) => event.reason === "Destroyed" && event.regarding?.kind === "TerraformMachine" && !remaining.has(event.regarding.name!));
      expect(new Set(destroyed.map((event) => event.regarding!.name)).size).toBe(3);

      await scale("machinepools", "demo-mp-0", 1);
      await waitReady("a pool of 1", async () => {
        const pool = (await custom.getNamespacedCustomObject({ ...capi, plural: "machinepools", name: "demo-mp-0" })) as AnyObject;
        return pool.spec.providerIDList?.length === 1 && pool.status?.readyReplicas === 1;
      });

      // Autoscaling: with the autoscaler's bounds on the MachinePool the module owns the count (the
      // no-op group clamps its 1 member into [2, 5]) and captf writes it back to the MachinePool.
      await custom.patchNamespacedCustomObject(
        { ...capi, plural: "machinepools", name: "demo-mp-0", body: { metadata: { annotations: { [annotations.autoscalerMinSize]: "2", [annotations.autoscalerMaxSize]: "5" } } } },
        mergePatch,
      );
      await waitReady("the autoscaled pool written back to 2", async () => {
        const pool = (await custom.getNamespacedCustomObject({ ...capi, plural: "machinepools", name: "demo-mp-0" })) as AnyObject;
        return pool.metadata.annotations?.[annotations.replicasManagedBy] === "captf" && pool.spec.replicas === 2 && pool.status?.readyReplicas === 2;
      });
      const terraformPool = (await custom.getNamespacedCustomObject({ ...infra, plural: "terraformmachinepools", name: "demo-mp-0" })) as AnyObject;
      expect(terraformPool.status.conditions.find((condition: AnyObject) => condition.type === "AutoscalingActive")).toMatchObject({ status: "True" });
    }, scenarioTimeout);

    it("rolls the MachineDeployment to a new version with new TerraformMachines", async () => {
      const before = new Set((await list(infra, "terraformmachines")).map((machine) => machine.metadata.name as string));
      await custom.patchNamespacedCustomObject({ ...capi, plural: "machinedeployments", name: "demo-md-0", body: { spec: { template: { spec: { version: "v1.36.4" } } } } }, mergePatch);
      await waitReady("the roll to v1.36.4", async () => {
        const machines = await list(capi, "machines");
        return machines.length === 2 && machines.every((machine) => machine.spec.version === "v1.36.4");
      });
      const after = (await list(infra, "terraformmachines")).map((machine) => machine.metadata.name as string);
      expect(after).toHaveLength(2);
      for (const name of after) expect(before.has(name)).toBe(false);
    }, scenarioTimeout);

    it("holds a cluster input change under applyPolicy Manual until its plan is approved", async () => {
      const clusterJobs = async (op: string) => (await captfJobs()).filter((job) => job.metadata!.labels![labels.ownerKind] === "TerraformCluster" && job.metadata!.labels![labels.op] === op).length;
      const appliesBefore = await clusterJobs("apply");
      await custom.patchNamespacedCustomObject({ ...infra, plural: "terraformclusters", name: demoClusterName, body: { spec: { applyPolicy: "Manual", variables: { notes: "resized by the e2e" } } } }, mergePatch);
      const planned = await waitFor(async () => {
        const cluster = (await custom.getNamespacedCustomObject({ ...infra, plural: "terraformclusters", name: demoClusterName })) as AnyObject;
        const waiting = (cluster.status?.conditions ?? []).some((condition: AnyObject) => condition.type === "ApplyJobSucceeded" && condition.reason === "PlanAwaitingApproval");
        return waiting && cluster.status?.plan?.planHash ? cluster : undefined;
      }, 180_000, "the plan shown in status.plan, awaiting approval");
      expect(planned.status.plan.planHash).toMatch(/^p1:[0-9a-f]{64}$/);
      expect(JSON.stringify(planned.status.plan)).toMatch(/terraform_data\.load_balancer/);
      expect(await clusterJobs("apply")).toBe(appliesBefore);

      await custom.patchNamespacedCustomObject({ ...infra, plural: "terraformclusters", name: demoClusterName, body: { metadata: { annotations: { "captf.io/approve-plan": planned.status.plan.planHash } } } }, mergePatch);
      await waitFor(async () => {
        const cluster = (await custom.getNamespacedCustomObject({ ...infra, plural: "terraformclusters", name: demoClusterName })) as AnyObject;
        const applied = !cluster.status?.plan && !cluster.metadata.annotations?.["captf.io/approve-plan"] && (cluster.status?.conditions ?? []).some((condition: AnyObject) => condition.type === "Ready" && condition.status === "True");
        return applied ? true : undefined;
      }, 180_000, "the approved plan applied, status.plan and the approval cleared");
      expect(await clusterJobs("apply")).toBe(appliesBefore + 1);
      await waitReady("the demo Ready after the approved apply");
    }, scenarioTimeout);

    it("reports a module whose apply fails, and recovers when the MachineDeployment rolls to a fixed template", async () => {
      // The module declares no such variable: its Job fails as any broken module's would.
      await applyObjects(plane.applier, [machineTemplate("demo-md-fail", { variables: { no_such_variable: "x" } }), machineDeployment("demo-md-fail")]);
      const failed = await waitFor(async () => {
        const machine = (await list(infra, "terraformmachines")).find((candidate) => candidate.metadata.name.startsWith("demo-md-fail-"));
        const condition = machine?.status?.conditions?.find((candidate: AnyObject) => candidate.type === "ApplyJobSucceeded");
        return machine && condition?.status === "False" ? { machine, condition } : undefined;
      }, 240_000, "the failing machine's ApplyJobSucceeded=False");
      expect(failed.condition.reason).toBe("ApplyFailed");
      expect(failed.condition.message).toMatch(/no_such_variable/);
      expect(failed.machine.status.conditions.find((condition: AnyObject) => condition.type === "Ready").status).toBe("False");

      await applyObjects(plane.applier, [machineTemplate("demo-md-fail-fixed")]);
      await custom.patchNamespacedCustomObject({ ...capi, plural: "machinedeployments", name: "demo-md-fail", body: { spec: { template: { spec: { infrastructureRef: { name: "demo-md-fail-fixed" } } } } } }, mergePatch);
      await waitReady("the fixed machine Ready, the broken one gone", async () => {
        const machines = (await list(infra, "terraformmachines")).filter((candidate) => candidate.metadata.name.startsWith("demo-md-fail-"));
        return machines.length === 1 && machines[0]!.metadata.name !== failed.machine.metadata.name;
      });
      await custom.deleteNamespacedCustomObject({ ...capi, plural: "machinedeployments", name: "demo-md-fail" });
      await waitFor(async () => ((await list(capi, "machines")).some((machine) => machine.metadata.name.startsWith("demo-md-fail-")) ? undefined : true), 180_000, "demo-md-fail's machines gone");
    }, scenarioTimeout);

    it("reports a module image that cannot be pulled as ImagePullFailed, and recovers when the template names one that can", async () => {
      const missing = plane.images.modules.machine.replace(/:[^:/]+$/, ":does-not-exist");
      await applyObjects(plane.applier, [machineTemplate("demo-md-noimage", { source: { image: missing } }), machineDeployment("demo-md-noimage")]);
      const noImageMachines = async () => (await list(infra, "terraformmachines")).filter((machine) => machine.metadata.name.startsWith("demo-md-noimage-"));
      const failed = await waitFor(async () => {
        const machine = (await noImageMachines())[0];
        const condition = machine?.status?.conditions?.find((candidate: AnyObject) => candidate.type === "ApplyJobSucceeded");
        return machine && condition?.reason === "ImagePullFailed" ? { machine, condition } : undefined;
      }, 360_000, "ApplyJobSucceeded=False/ImagePullFailed on the machine whose image does not exist");
      expect(failed.condition.status).toBe("False");
      expect(failed.condition.message).toContain("does-not-exist");

      await applyObjects(plane.applier, [machineTemplate("demo-md-noimage-fixed")]);
      await custom.patchNamespacedCustomObject({ ...capi, plural: "machinedeployments", name: "demo-md-noimage", body: { spec: { template: { spec: { infrastructureRef: { name: "demo-md-noimage-fixed" } } } } } }, mergePatch);
      await waitReady("the machine of the fixed template Ready, the one without an image gone", async () => {
        const machines = await noImageMachines();
        return machines.length === 1 && machines[0]!.metadata.name !== failed.machine.metadata.name;
      });
      await custom.deleteNamespacedCustomObject({ ...capi, plural: "machinedeployments", name: "demo-md-noimage" });
      await waitFor(async () => ((await noImageMachines()).length === 0 ? true : undefined), 180_000, "demo-md-noimage's machines gone");
    }, scenarioTimeout);

    it("runs again an apply whose Pod is deleted mid-run, and loses nothing when the manager's Pod is deleted mid-run", async () => {
      const scaleTo = (replicas: number) => custom.patchNamespacedCustomObject({ ...capi, plural: "machinedeployments", name: "demo-md-0", body: { spec: { replicas } } }, mergePatch);
      const newMachine = async (known: Set<string>) => (await list(infra, "terraformmachines")).find((machine) => machine.metadata.name.startsWith("demo-md-0-") && !known.has(machine.metadata.name));
      const applyPodOf = async (machine: string) =>
        (await core.listNamespacedPod({ namespace: demoNamespace })).items.find((pod) => pod.status?.phase === "Running" && pod.metadata?.labels?.[labels.ownerName] === machine && pod.metadata?.labels?.[labels.op] === "apply");

      // A Job's Pod deleted while it applies: the runner is stopped from outside and the apply runs again.
      // The apply is held mid-run, not raced: its module waits on the hold server's URL (the no-op
      // machine's hold_apply_url), which answers once the runner has logged the Pod's SIGTERM.
      const hold = await startHoldServer();
      try {
        await applyObjects(plane.applier, [machineTemplate("demo-md-hold", { variables: { hold_apply_url: hold.url } }), machineDeployment("demo-md-hold")]);
        const holdMachines = async () => (await list(infra, "terraformmachines")).filter((machine) => machine.metadata.name.startsWith("demo-md-hold-"));
        const interruptedMachine = (await waitFor(async () => (await holdMachines())[0], 120_000, "the held TerraformMachine")).metadata.name as string;
        await waitFor(async () => (hold.requests > 0 ? true : undefined), 180_000, `${interruptedMachine}'s apply waiting on the hold server`);
        const pod = await waitFor(() => applyPodOf(interruptedMachine), 60_000, `the apply Pod of ${interruptedMachine} running`);
        const interruptedJob = pod.metadata!.labels!["job-name"]!;
        await core.deleteNamespacedPod({ namespace: demoNamespace, name: pod.metadata!.name! });
        const runnerLog = () => plane.kubelet.containerLog(demoNamespace, pod.metadata!.name!, "source");
        await waitFor(async () => (runnerLog().includes("received SIGTERM") ? true : undefined), 60_000, `the runner of ${interruptedJob} stopping on its Pod's deletion`);
        hold.release();
        await waitReady("the held machine after the interrupted apply", async () => (await list(capi, "machines")).some((machine) => machine.metadata.labels?.["cluster.x-k8s.io/deployment-name"] === "demo-md-hold"));
        // The deleted Pod's Job did not succeed; a later apply Job did.
        const applies = (await captfJobs()).filter((job) => job.metadata!.labels![labels.ownerName] === interruptedMachine && job.metadata!.labels![labels.op] === "apply");
        expect(applies.find((job) => job.metadata!.name === interruptedJob)?.status?.succeeded ?? 0).toBe(0);
        expect(applies.filter((job) => job.metadata!.name !== interruptedJob && job.status?.succeeded === 1)).toHaveLength(1);
        // The documented outcome: an interruption from outside (JobInterrupted, retried without backoff), not a failure.
        const about = (reason: string) => listEventsOfReason(plane.kubeConfig, demoNamespace, reason).then((events) => events.filter((event) => event.involvedObject.name === interruptedMachine && event.message?.includes(interruptedJob)));
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
      const mdMachines = async () => (await list(infra, "terraformmachines")).filter((machine) => machine.metadata.name.startsWith("demo-md-0-"));
      const before = await mdMachines();
      const known = new Set(before.map((machine) => machine.metadata.name as string));
      const managerPods = async () => (await core.listNamespacedPod({ namespace: managerNamespace })).items;
      const firstManager = (await managerPods())[0]!.metadata!.name!;
      await scaleTo(before.length + 1);
      const added = (await waitFor(() => newMachine(known), 120_000, "a new demo-md-0 TerraformMachine")).metadata.name as string;
      await waitFor(async () => ((await list(infra, "terraformmachines")).find((machine) => machine.metadata.name === added)?.status?.activeJob ? true : undefined), 120_000, `${added}'s apply Job started`);
      await core.deleteNamespacedPod({ namespace: managerNamespace, name: firstManager });
      await waitFor(async () => ((await managerPods()).some((candidate) => candidate.metadata!.name !== firstManager && candidate.status?.phase === "Running") ? true : undefined), 180_000, "a new manager Pod running");
      await waitReady(`${before.length + 1} demo-md-0 machines after the manager's replacement`, async () => (await list(capi, "machines")).filter((machine) => machine.metadata.labels?.["cluster.x-k8s.io/deployment-name"] === "demo-md-0").length === before.length + 1);
      const addedApplies = (await captfJobs()).filter((job) => job.metadata!.labels![labels.ownerName] === added && job.metadata!.labels![labels.op] === "apply");
      expect(addedApplies).toHaveLength(1);
      expect(addedApplies[0]!.status?.succeeded).toBe(1);
      await scaleTo(before.length);
      await waitReady(`back to ${before.length} demo-md-0 machines`, async () => (await mdMachines()).length === before.length);
    }, scenarioTimeout);

    it("remediates a machine its module reports unhealthy, through Cluster API's MachineHealthCheck, and a replacement comes up", async () => {
      const selector = { matchLabels: { "cluster.x-k8s.io/deployment-name": "demo-md-health" } };
      const health = await startHealthServer();
      try {
        await applyObjects(plane.applier, [
          machineTemplate("demo-md-health", { variables: { health_state_url: health.url }, remediation: { annotateMachine: true, unhealthyThreshold: 1, healthCheckIntervalSeconds: 60 } }),
          machineDeployment("demo-md-health"),
          { apiVersion: "cluster.x-k8s.io/v1beta2", kind: "MachineHealthCheck", metadata: { name: "demo-md-health", namespace: demoNamespace }, spec: { clusterName: demoClusterName, selector } } as unknown as k8s.KubernetesObject,
        ]);
        const healthMachines = async () => (await list(infra, "terraformmachines")).filter((machine) => machine.metadata.name.startsWith("demo-md-health-"));
        await waitReady("the health machine Ready", async () => (await healthMachines()).length === 1);
        const victim = (await healthMachines())[0]!.metadata.name as string;

        // What the module observes of its instance from now on: unhealthy (see the no-op machine's health_state_url).
        health.set(victim, { state: "running", healthy: false, message: "the e2e broke this instance", reasons: ["E2EBroken"] });
        let annotated = false;
        await waitFor(async () => {
          const machine = (await list(capi, "machines")).find((candidate) => candidate.spec.infrastructureRef.name === victim);
          if (machine?.metadata.annotations?.["cluster.x-k8s.io/remediate-machine"] !== undefined) annotated = true;
          const replacements = (await healthMachines()).filter((candidate) => candidate.metadata.name !== victim);
          return !machine && replacements.length === 1 ? true : undefined;
        }, 300_000, `${victim} remediated and replaced`);
        await waitReady("the replacement Ready", async () => (await healthMachines()).length === 1);
        expect(annotated || (await events.listNamespacedEvent({ namespace: demoNamespace })).items.some((event) => event.regarding?.name === victim && /remediat/i.test(event.reason ?? ""))).toBe(true);

        await custom.deleteNamespacedCustomObject({ ...capi, plural: "machinehealthchecks", name: "demo-md-health" });
        await custom.deleteNamespacedCustomObject({ ...capi, plural: "machinedeployments", name: "demo-md-health" });
        await waitFor(async () => ((await healthMachines()).length === 0 ? true : undefined), 180_000, "demo-md-health's machines gone");
      } finally {
        await health.close();
      }
    }, scenarioTimeout);

    it("lets no secret value reach a log, an event, a status, a Job or a termination message", async () => {
      const haystacks: [string, string][] = [];
      haystacks.push(["manager log", await plane.managerLog()]);
      for (const file of readdirSync(join(plane.kubelet.workDir, "logs"))) haystacks.push([`container log ${file}`, readFileSync(join(plane.kubelet.workDir, "logs", file), "utf8")]);
      haystacks.push(["events", JSON.stringify((await core.listEventForAllNamespaces()).items)]);
      haystacks.push(["events.k8s.io", JSON.stringify(await plane.kubeConfig.makeApiClient(k8s.EventsV1Api).listEventForAllNamespaces())]);
      haystacks.push(["Jobs", JSON.stringify((await batch.listJobForAllNamespaces()).items)]);
      haystacks.push(["Pods", JSON.stringify((await core.listPodForAllNamespaces()).items)]);
      for (const plural of ["terraformclusters", "terraformmachines", "terraformmachinepools"]) haystacks.push([plural, JSON.stringify(await list(infra, plural))]);
      haystacks.push(["terraformclusteridentities", JSON.stringify(await custom.listClusterCustomObject({ group: infra.group, version: infra.version, plural: "terraformclusteridentities" }))]);
      expect(haystacks.length).toBeGreaterThan(8);
      for (const [where, text] of haystacks) {
        for (const [name, value] of Object.entries(secrets)) {
          if (text.includes(value) || text.includes(Buffer.from(value).toString("base64"))) throw new Error(`the ${name} canary appears in ${where}`);
        }
      }
      // The canaries are really in play: each sits in the Secret it was put in.
      const mirror = (await core.listNamespacedSecret({ namespace: demoNamespace, labelSelector: labels.mirrored })).items;
      expect(mirror.map((secret) => Buffer.from(secret.data?.NOOP_API_TOKEN ?? "", "base64").toString())).toContain(secrets.credential);
    }, scenarioTimeout);

    // clusterctl generate, describe and move (on their own namespaces).
    clusterctlScenarios(() => ({ plane, planeLog }));

    it("keeps a hostile module's code from every Kubernetes credential and everything of another object, and its own apply still succeeds", async () => {
      // The hostile machine (packages/module-hostile, OpenTofu) attacks at every step of its apply and destroy a
      // victim: a demo-md-0 machine, its state, lock and run Secret, the cluster's kubeconfig and CA, the credential mirror.
      const victim = (await list(infra, "terraformmachines")).find((machine) => machine.metadata.name.startsWith("demo-md-0-"))!.metadata.name as string;
      const targets = await victimTargets(plane.kubeConfig, demoNamespace, demoClusterName, victim);
      expect(targets.credentialMirror).toBeDefined();
      const before = await snapshotVictim(plane.kubeConfig, targets);
      const reports = await startReportServer();
      const refusedCounted = async () => sumOfSeries(await plane.managerMetrics(), "captf_broker_refused_requests_total", 'kind="TerraformMachine"');
      const countedBefore = await refusedCounted();
      // Every finding is gathered and the destroy still runs: one failure must not hide the others.
      const problems: string[] = [];
      try {
        const variables = { hostile_targets: JSON.stringify(targets), report_url: reports.url };
        await applyObjects(plane.applier, [machineTemplate("demo-md-hostile", { source: { image: plane.images.hostileMachine }, variables }), machineDeployment("demo-md-hostile")]);
        const hostileMachines = async () => (await list(infra, "terraformmachines")).filter((machine) => machine.metadata.name.startsWith("demo-md-hostile-"));
        // Its own Machine Ready as Cluster API reports it (Running, Ready, a nodeRef): the attacks never fail its run.
        await waitFor(async () => {
          const machine = (await list(capi, "machines")).find((candidate) => candidate.metadata.labels?.["cluster.x-k8s.io/deployment-name"] === "demo-md-hostile");
          const ready = machine?.status?.phase === "Running" && machine.status?.nodeRef?.name && (machine.status?.conditions ?? []).some((condition: AnyObject) => condition.type === "Ready" && condition.status === "True");
          return ready ? true : undefined;
        }, 300_000, `the hostile Machine Ready\n${await progressTable()}`);
        const hostile = (await hostileMachines())[0]!.metadata.name as string;
        const record = await readHostileRecord(plane.kubeConfig, demoNamespace, hostile);
        expect(record.jobs.filter((job) => job.op === "apply" && job.succeeded)).toHaveLength(1);
        // The forged result (attack.cjs writes it during apply and again over the runner's own) must not be what the manager recorded.
        if (record.forgedRecorded || record.forgedTerminationMessages.length > 0) {
          problems.push(`the hostile module's forged result was recorded: status.lastRun ${JSON.stringify(record.lastRun)}; forged termination messages of ${record.forgedTerminationMessages.join(", ") || "no Pod"}`);
        }
        const refusalsAtApply = await brokerRefusalsPerJob(plane.kubeConfig, demoNamespace, hostile);
        expect(refusalsAtApply).toEqual(Object.fromEntries(record.jobs.map((job) => [job.name, 1])));
        // The manager counted the apply's refusals (the broker's summary) and said so in its log.
        await waitFor(async () => ((await refusedCounted()) > countedBefore ? true : undefined), 60_000, "captf_broker_refused_requests_total counting the hostile apply's refusals");
        expect(await plane.managerLog()).toContain("the Job's state broker refused requests of module code");

        await custom.deleteNamespacedCustomObject({ ...capi, plural: "machinedeployments", name: "demo-md-hostile" });
        await waitFor(async () => ((await hostileMachines()).length === 0 ? true : undefined), 300_000, "the hostile machine destroyed and gone");
        await custom.deleteNamespacedCustomObject({ ...infra, plural: "terraformmachinetemplates", name: "demo-md-hostile" });
        // One BrokerRefused event per Job: the apply's, and now the destroy's.
        const refusals = await brokerRefusalsPerJob(plane.kubeConfig, demoNamespace, hostile);
        expect(Object.values(refusals)).toEqual(Object.keys(refusalsAtApply).concat("destroy").map(() => 1));
        expect(Object.keys(refusals)).toEqual(expect.arrayContaining(Object.keys(refusalsAtApply)));

        const phases = await waitFor(async () => {
          const seen = new Set(reports.reports.map((report) => report.phase));
          return ["init", "validate", "apply", "provisioner-apply", "destroy", "provisioner-destroy"].every((phase) => seen.has(phase)) ? [...seen] : undefined;
        }, 30_000, `reports of every phase (so far: ${reports.reports.map((report) => report.phase).join(", ")})`);
        expect(phases.length).toBeGreaterThanOrEqual(6);
        const attempts = reports.reports.flatMap((report) => report.attempts);
        const boundary = attempts.filter(isBoundaryAttempt);
        expect(boundary.length).toBeGreaterThan(100);
        const notRefused = boundary.filter((attempt) => attempt.outcome !== "refused");
        if (notRefused.length > 0) problems.push(`${notRefused.length} of ${boundary.length} attempts were not refused:\n${describeAttempts(notRefused)}`);
        // The refusals came through a live broker: the hostile object's own state answered it at every phase.
        // Not `version`: the runner starts `version -json` while it still waits for the broker (it waits only before its first step).
        const served = reports.reports.filter((report) => report.phase !== "version");
        const controls = served.flatMap((report) => report.attempts).filter((attempt) => attempt.control);
        expect({ controls: controls.length, succeeded: controls.filter((attempt) => attempt.outcome === "succeeded").length }).toEqual({ controls: served.length, succeeded: served.length });
        expect(new Set(boundary.map((attempt) => attempt.via))).toEqual(new Set(["filesystem", "environment", "direct", "broker"]));

        const changes = snapshotChanges(before, await snapshotVictim(plane.kubeConfig, targets));
        if (changes.length > 0) problems.push(`the victim changed: ${changes.join("; ")}`);
        const leftovers = await hostileLeftovers(plane.kubeConfig, demoNamespace);
        if (leftovers.length > 0) problems.push(`the attacks created ${leftovers.join(", ")}`);
      } finally {
        await reports.close();
      }
      expect(problems).toEqual([]);
    }, scenarioTimeout);

    it("removes everything of captf when the Cluster is deleted", async () => {
      await custom.deleteNamespacedCustomObject({ ...capi, plural: "clusters", name: demoClusterName });
      await waitFor(async () => ((await list(capi, "clusters")).length === 0 ? true : undefined), 300_000, `the Cluster gone\n${await progressTable()}`).catch(async (error) => {
        throw new Error(`${(error as Error).message}\nnow:\n${await progressTable()}\nmanager:\n${(await plane.managerLog()).split("\n").slice(-30).join("\n")}`);
      });
      for (const plural of ["terraformclusters", "terraformmachines", "terraformmachinepools"]) expect(await list(infra, plural)).toEqual([]);
      for (const plural of ["machines", "machinepools", "machinedeployments", "machinesets"]) expect(await list(capi, plural)).toEqual([]);
      // Jobs and their Pods go with their owners (garbage collection), state and leases with the destroy.
      await waitFor(async () => ((await captfJobs()).length === 0 ? true : undefined), 120_000, "captf Jobs garbage-collected");
      const coordination = plane.kubeConfig.makeApiClient(k8s.CoordinationV1Api);
      const rbac = plane.kubeConfig.makeApiClient(k8s.RbacAuthorizationV1Api);
      const findLeftovers = async () => {
        const found: string[] = [];
        for (const secret of (await core.listNamespacedSecret({ namespace: demoNamespace })).items) {
          const name = secret.metadata!.name!;
          if (name.startsWith("tfstate-") || name.startsWith("captf-") || secret.metadata!.labels?.[labels.managed]) found.push(`Secret/${name}`);
        }
        for (const lease of (await coordination.listNamespacedLease({ namespace: demoNamespace })).items) found.push(`Lease/${lease.metadata!.name}`);
        for (const binding of (await rbac.listNamespacedRoleBinding({ namespace: demoNamespace })).items) if (binding.metadata!.name!.startsWith("captf")) found.push(`RoleBinding/${binding.metadata!.name}`);
        return found;
      };
      // The namespace sweep runs right after the last finalizer goes, beside Cluster API's own deletion: give it a minute.
      let leftovers = await findLeftovers();
      for (const deadline = Date.now() + 60_000; leftovers.length > 0 && Date.now() < deadline; leftovers = await findLeftovers()) await new Promise((resolve) => setTimeout(resolve, 1000));
      if (leftovers.length > 0) throw new Error(`left behind: ${leftovers.join(", ")}\nmanager:\n${(await plane.managerLog()).split("\n").filter((line) => /sweep|RoleBinding|finalizer/i.test(line)).slice(-30).join("\n")}`);
      // Every write of the whole run (scaling, rolls, remediation, write-back, Pod and Job deletes, destroys, the
      // sweep, identity status) went through the shipped ServiceAccount's RBAC, every manager Pod's log included.
      const refused = (await plane.managerLog()).split("\n").filter((line) => /forbidden/i.test(line));
      expect(refused).toEqual([]);
    }, scenarioTimeout);
  },
);

/** The sum of a metric's series whose labels include `label` (Prometheus text format). */
function sumOfSeries(metrics: string, name: string, label: string): number {
  return metrics
    .split("\n")
    .filter((line) => line.startsWith(`${name}{`) && line.includes(label))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(" ") + 1)), 0);
}
