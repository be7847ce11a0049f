// kubectl captf against the real kube-apiserver: captf's CRDs (the generated files the manager
// ships), objects and statuses written through them, Jobs, events and a pod's log through the
// pod log API. The CLI runs in-process through main() with a kubeconfig file of two contexts:
// the plane's admin and an impersonated approver. No manager runs: the statuses are written here.
// The pod log API needs a kubelet: a Node whose endpoint is a loopback HTTPS server serving the
// kubelet's /containerLogs path stands in for one (the testkit's chroot kubelet serves no API).
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { describeWithTools, generateServingCertificate, sharedControlPlane, waitFor } from "@captf/testkit";
import { annotations, apiGroup, eventReporters, groupVersion, kinds, labels } from "@captf/contract/api";
import { main } from "./cli.js";
import { resourceOf } from "./objects.js";
import type { ClusterTree } from "./describe.js";

type AnyObject = Record<string, any>;
/** An object as the API server answers: its metadata, the rest as it came. */
type StoredObject = { metadata: { name: string; annotations?: Record<string, string> }; [field: string]: unknown };

const crdDir = new URL("../../controller/config/crd/", import.meta.url).pathname;

async function installCrds(extensions: k8s.ApiextensionsV1Api): Promise<void> {
  for (const file of readdirSync(crdDir).filter((name) => name.endsWith(".yaml"))) {
    const body = k8s.loadYaml<k8s.V1CustomResourceDefinition>(readFileSync(join(crdDir, file), "utf8"));
    // Another suite of this run may have installed them already, from the same sources.
    await extensions
      .createCustomResourceDefinition({ body })
      .catch((error: unknown) => (error instanceof k8s.ApiException && error.code === 409 ? undefined : Promise.reject(error)));
    await waitFor(
      async () => {
        const crd = await extensions.readCustomResourceDefinition({ name: body.metadata!.name! });
        return crd.status?.conditions?.some((condition) => condition.type === "Established" && condition.status === "True")
          ? true
          : undefined;
      },
      30_000,
      `CRD ${body.metadata!.name!} Established`,
    );
  }
}

function condition(type: string, status: string, reason: string, message = ""): AnyObject {
  return { type, status, reason, message, lastTransitionTime: "2026-12-01T10:00:00Z" };
}

describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager"], "kubectl captf against the real API server", () => {
  const suffix = Date.now().toString(36);
  const namespace = `plugin-${suffix}`;
  const cluster = `demo-${suffix}`;
  const identityName = `plugin-${suffix}`;
  const approver = `approver-${suffix}`;
  const nodeName = `plugin-logs-${suffix}`;
  const clusterJob = `c-${cluster}-apply-a2`;
  const runnerLog = "runner: init\nrunner: apply: 1 added\n";
  let kubeConfig: k8s.KubeConfig;
  let objects: k8s.CustomObjectsApi;
  let core: k8s.CoreV1Api;
  let dir: string;
  let kubeconfigPath: string;
  let kubelet: Server;
  const kubeletRequests: string[] = [];

  /** Runs the CLI with the suite's kubeconfig; stdout, stderr and the exit code. */
  async function run(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    let stdout = "";
    let stderr = "";
    const code = await main(argv, {
      stdout: { write: (text: string) => (stdout += text) },
      stderr: { write: (text: string) => (stderr += text) },
      env: { KUBECONFIG: kubeconfigPath },
    });
    return { code, stdout, stderr };
  }

  const create = (kind: string, body: AnyObject) =>
    objects.createNamespacedCustomObject({ ...resourceOf(kind), namespace, body }) as Promise<AnyObject>;
  const read = (kind: string, name: string) =>
    objects.getNamespacedCustomObject({ ...resourceOf(kind), namespace, name }) as Promise<StoredObject>;
  async function writeStatus(kind: string, name: string, status: AnyObject): Promise<AnyObject> {
    const current = await read(kind, name);
    return (await objects.replaceNamespacedCustomObjectStatus({
      ...resourceOf(kind),
      namespace,
      name,
      body: { ...current, status },
    })) as AnyObject;
  }
  const clusterLabels = { [labels.clusterName]: cluster };

  beforeAll(async () => {
    const plane = sharedControlPlane();
    kubeConfig = new k8s.KubeConfig();
    kubeConfig.loadFromFile(plane.kubeconfigPath);
    objects = kubeConfig.makeApiClient(k8s.CustomObjectsApi);
    core = kubeConfig.makeApiClient(k8s.CoreV1Api);
    const rbac = kubeConfig.makeApiClient(k8s.RbacAuthorizationV1Api);
    await installCrds(kubeConfig.makeApiClient(k8s.ApiextensionsV1Api));
    await core.createNamespace({ body: { metadata: { name: namespace } } });

    // The kubeconfig the CLI reads: the admin's context (namespace from the context) and an approver who may read and annotate here.
    dir = mkdtempSync(join(tmpdir(), "kubectl-captf-it-"));
    kubeconfigPath = join(dir, "kubeconfig");
    writeFileSync(
      kubeconfigPath,
      k8s.dumpYaml({
        apiVersion: "v1",
        kind: "Config",
        clusters: [{ name: "plane", cluster: { server: plane.server, "certificate-authority": plane.caFile } }],
        users: [
          { name: "admin", user: { token: plane.token } },
          { name: "approver", user: { token: plane.token, as: approver } },
        ],
        contexts: [
          { name: "admin", context: { cluster: "plane", user: "admin", namespace } },
          { name: "approver", context: { cluster: "plane", user: "approver", namespace } },
        ],
        "current-context": "admin",
      }),
    );
    await rbac.createNamespacedRole({
      namespace,
      body: {
        metadata: { name: approver },
        rules: [
          { apiGroups: [apiGroup], resources: ["terraformclusters"], verbs: ["get", "patch"] },
          { apiGroups: ["events.k8s.io"], resources: ["events"], verbs: ["create"] },
        ],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name: approver },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: approver },
        subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: approver }],
      },
    });

    // The cluster's objects, with statuses as the manager writes them.
    await objects.createClusterCustomObject({
      ...resourceOf(kinds.clusterIdentity),
      body: {
        apiVersion: groupVersion,
        kind: kinds.clusterIdentity,
        metadata: { name: identityName },
        spec: { type: "Secret", secretRef: { name: "aws", namespace: "captf-system" } },
      },
    });
    await objects.replaceClusterCustomObjectStatus({
      ...resourceOf(kinds.clusterIdentity),
      name: identityName,
      body: {
        ...((await objects.getClusterCustomObject({ ...resourceOf(kinds.clusterIdentity), name: identityName })) as StoredObject),
        status: { conditions: [condition("Ready", "True", "SecretFound")] },
      },
    });
    await create(kinds.cluster, {
      apiVersion: groupVersion,
      kind: kinds.cluster,
      metadata: { name: cluster, labels: clusterLabels },
      spec: { source: { image: "registry.invalid/noop-cluster:v1" }, identityRef: { name: identityName }, applyPolicy: "Manual" },
    });
    await writeStatus(kinds.cluster, cluster, {
      conditions: [
        condition("ApplyJobSucceeded", "Unknown", "PlanAwaitingApproval", "plan p1:aaa waits for approval"),
        condition("Ready", "False", "NotReady", "ApplyJobSucceeded is Unknown"),
      ],
      activeJob: { name: clusterJob, operation: "apply", attempt: 2, startTime: "2026-12-01T10:00:00Z" },
      lastRun: { job: `c-${cluster}-plan-a1`, operation: "plan", steps: [{ name: "plan", exitCode: 0 }] },
      plan: {
        inputsHash: "h2:abc",
        job: `c-${cluster}-plan-a1`,
        planHash: "p1:aaa",
        add: 1,
        change: 0,
        destroy: 1,
        import: 1,
        resources: ["null_resource.a (create)", "null_resource.b (delete)", "null_resource.c (import)"],
      },
      stateBackups: [{ serial: 3, takenAt: "2026-12-01T09:00:00Z", bytes: 512 }],
    });
    await create(kinds.machine, {
      apiVersion: groupVersion,
      kind: kinds.machine,
      metadata: { name: `${cluster}-md-0-a`, labels: clusterLabels },
      spec: { source: { image: "registry.invalid/noop-machine:v1" } },
    });
    await writeStatus(kinds.machine, `${cluster}-md-0-a`, {
      conditions: [
        condition("ApplyJobSucceeded", "False", "ApplyFailed", "apply failed at step apply"),
        condition("Ready", "False", "NotReady"),
      ],
      lastRun: {
        job: `m-${cluster}-md-0-a-apply-a1`,
        operation: "apply",
        error: { kind: "step", step: "apply", summary: "Error: quota exceeded" },
      },
    });
    await create(kinds.machinePool, {
      apiVersion: groupVersion,
      kind: kinds.machinePool,
      metadata: { name: `${cluster}-mp-0`, labels: clusterLabels },
      spec: { source: { image: "registry.invalid/noop-machinepool:v1" } },
    });
    await writeStatus(kinds.machinePool, `${cluster}-mp-0`, { conditions: [condition("Ready", "True", "Ready")] });
    // An object of another cluster, which the tree must leave out.
    await create(kinds.machine, {
      apiVersion: groupVersion,
      kind: kinds.machine,
      metadata: { name: `other-${suffix}`, labels: { [labels.clusterName]: `other-${suffix}` } },
      spec: { source: { image: "registry.invalid/noop-machine:v1" } },
    });

    // The cluster's running Job (suspended, so the Job controller starts no pod of its own) and its pod on the stand-in node.
    await kubeConfig.makeApiClient(k8s.BatchV1Api).createNamespacedJob({
      namespace,
      body: {
        metadata: {
          name: clusterJob,
          labels: { [labels.ownerKind]: kinds.cluster, [labels.ownerName]: cluster, [labels.op]: "apply", [labels.attempt]: "2" },
        },
        spec: {
          suspend: true,
          template: { spec: { restartPolicy: "Never", containers: [{ name: "source", image: "registry.invalid/noop-cluster:v1" }] } },
        },
      },
    });
    const serving = generateServingCertificate(join(dir, "kubelet"));
    kubelet = createServer({ cert: readFileSync(serving.certFile), key: readFileSync(serving.keyFile) }, (request, response) => {
      kubeletRequests.push(request.url ?? "");
      const wanted = new URL(request.url ?? "/", "https://kubelet").pathname === `/containerLogs/${namespace}/${clusterJob}-x1y2z/source`;
      response.writeHead(wanted ? 200 : 404, { "Content-Type": "text/plain" });
      response.end(wanted ? runnerLog : "not found");
    });
    await new Promise<void>((resolve) => kubelet.listen(0, "127.0.0.1", resolve));
    await core.createNode({ body: { metadata: { name: nodeName } } });
    const node = await core.readNode({ name: nodeName });
    // Unconditional (no resourceVersion): kube-controller-manager's node controllers may write the Node meanwhile.
    await core.replaceNodeStatus({
      name: nodeName,
      body: {
        ...node,
        metadata: { ...node.metadata, resourceVersion: undefined },
        status: {
          addresses: [{ type: "InternalIP", address: "127.0.0.1" }],
          daemonEndpoints: { kubeletEndpoint: { Port: (kubelet.address() as AddressInfo).port } },
        },
      },
    });
    await core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name: `${clusterJob}-x1y2z`, labels: { "batch.kubernetes.io/job-name": clusterJob } },
        spec: {
          nodeName,
          restartPolicy: "Never",
          initContainers: [{ name: "runner", image: "registry.invalid/captf-controller:v1" }],
          containers: [{ name: "source", image: "registry.invalid/noop-cluster:v1" }],
        },
      },
    });
  }, 120_000);

  afterAll(async () => {
    await core?.deleteNamespace({ name: namespace }).catch(() => undefined);
    await core?.deleteNode({ name: nodeName }).catch(() => undefined);
    await objects?.deleteClusterCustomObject({ ...resourceOf(kinds.clusterIdentity), name: identityName }).catch(() => undefined);
    await new Promise((resolve) => (kubelet ? kubelet.close(resolve) : resolve(undefined)));
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  describe("describe cluster", () => {
    it("prints the tree of the cluster's objects with Ready first, the active Job and the last runs", async () => {
      const { code, stdout, stderr } = await run("describe", "cluster", cluster);
      expect(stderr).toBe("");
      expect(code).toBe(0);
      const lines = stdout.split("\n");
      expect(lines[0]).toBe(`Cluster ${namespace}/${cluster}`);
      expect(lines[1]).toBe(`TerraformCluster/${cluster}`);
      expect(lines[2]).toMatch(/^│ {2}Ready {14}False {4}NotReady \(\d+[smhd]\) {2}ApplyJobSucceeded is Unknown$/);
      expect(stdout).toContain(`│  active Job: ${clusterJob} (apply, attempt 2, started `);
      expect(stdout).toContain(`│  last run: plan succeeded (Job c-${cluster}-plan-a1)`);
      expect(stdout).toContain(`├─ TerraformClusterIdentity/${identityName}\n│     Ready  True     SecretFound`);
      expect(stdout).toContain(`├─ TerraformMachinePool/${cluster}-mp-0\n`);
      expect(stdout).toContain(`└─ TerraformMachine/${cluster}-md-0-a\n`);
      expect(stdout).toContain(`last run: apply failed (step at apply) (Job m-${cluster}-md-0-a-apply-a1): Error: quota exceeded`);
      expect(stdout).not.toContain(`other-${suffix}`);
    });

    it("gives the same tree as JSON, with the Job the API lists as running", async () => {
      const { code, stdout } = await run("describe", "cluster", cluster, "-o", "json");
      expect(code).toBe(0);
      const tree = JSON.parse(stdout) as ClusterTree;
      expect(tree).toMatchObject({ cluster, namespace, root: { kind: kinds.cluster, name: cluster } });
      expect(tree.root.conditions.map((c) => c.type)).toEqual(["Ready", "ApplyJobSucceeded"]);
      expect(tree.root.runningJobs).toEqual([expect.objectContaining({ name: clusterJob, operation: "apply", attempt: 2, running: true })]);
      expect(tree.root.children.map((child) => `${child.kind}/${child.name}`)).toEqual([
        `${kinds.clusterIdentity}/${identityName}`,
        `${kinds.machinePool}/${cluster}-mp-0`,
        `${kinds.machine}/${cluster}-md-0-a`,
      ]);
    });

    it("says when the cluster has no TerraformCluster", async () => {
      const { code, stderr } = await run("describe", "cluster", `missing-${suffix}`);
      expect(code).toBe(1);
      expect(stderr).toBe(`kubectl captf: TerraformCluster ${namespace}/missing-${suffix} not found\n`);
    });
  });

  describe("plan", () => {
    it("shows the pending plan, its counts and entries, and the command that approves it", async () => {
      const { code, stdout } = await run("plan", "show", `terraformcluster/${cluster}`);
      expect(code).toBe(0);
      expect(stdout).toContain(`TerraformCluster ${namespace}/${cluster}: plan p1:aaa\n  add 1, change 0, destroy 1, import 1\n`);
      expect(stdout).toContain("    null_resource.b (delete)\n");
      expect(stdout).toContain(`approve it: kubectl captf plan approve terraformcluster/${cluster} --hash p1:aaa\n`);
      const asJson = JSON.parse((await run("plan", "show", `TerraformClusters/${cluster}`, "-o", "json")).stdout) as AnyObject;
      expect(asJson).toMatchObject({
        plan: { planHash: "p1:aaa", destroy: 1, resources: expect.arrayContaining(["null_resource.a (create)"]) },
        approvedPlan: null,
      });
    });

    it("refuses a kind without plans", async () => {
      const { code, stderr } = await run("plan", "show", `terraformmachine/${cluster}-md-0-a`);
      expect(code).toBe(1);
      expect(stderr).toContain("has no plans: only a TerraformCluster with applyPolicy Manual waits for approval");
    });

    it("refuses to approve a plan other than the one shown, and approves the shown one as the context's user, with an event", async () => {
      const refused = await run("--context", "approver", "plan", "approve", `terraformcluster/${cluster}`, "--hash", "p1:old");
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain("changed since it was shown: it is now p1:aaa (add 1, change 0, destroy 1, import 1), not p1:old");
      expect((await read(kinds.cluster, cluster)).metadata.annotations?.[annotations.approvePlan]).toBeUndefined();

      // RBAC bindings reach the authorizer's cache shortly after they are written.
      const approved = await waitFor(
        async () => {
          const attempt = await run(
            "--context",
            "approver",
            "plan",
            "approve",
            `terraformcluster/${cluster}`,
            "--hash",
            "p1:aaa",
            "-o",
            "json",
          );
          return attempt.stderr.includes("forbidden") ? undefined : attempt;
        },
        30_000,
        "the approver's RBAC in effect",
      );
      expect(approved.stderr).toBe("");
      expect(JSON.parse(approved.stdout)).toMatchObject({ planHash: "p1:aaa", written: true, event: true });
      expect((await read(kinds.cluster, cluster)).metadata.annotations?.[annotations.approvePlan]).toBe("p1:aaa");
      const events = await kubeConfig.makeApiClient(k8s.EventsV1Api).listNamespacedEvent({ namespace });
      expect(
        events.items.filter((event) => event.reportingController === eventReporters.plugin && event.reason === "PlanApprovalRequested"),
      ).toEqual([
        expect.objectContaining({
          type: "Normal",
          note: `plan p1:aaa approved by ${approver} with kubectl captf`,
          regarding: expect.objectContaining({ kind: kinds.cluster, name: cluster }),
        }),
      ]);

      const again = await run("plan", "approve", `terraformcluster/${cluster}`);
      expect(again).toEqual({
        code: 0,
        stdout: `plan p1:aaa of TerraformCluster ${namespace}/${cluster} is approved already\n`,
        stderr: "",
      });
      expect((await run("plan", "show", `terraformcluster/${cluster}`)).stdout).toContain(
        "approved: the manager applies it if it plans the same again",
      );
    });
  });

  describe("restore", () => {
    it("refuses a serial without a backup and requests a listed one", async () => {
      const refused = await run("restore", `terraformcluster/${cluster}`, "--serial", "4");
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(`has no backup of serial 4 in status.stateBackups (it lists 3)`);
      const requested = await run("restore", `terraformcluster/${cluster}`, "--serial", "3");
      expect(requested).toEqual({
        code: 0,
        stdout: `restore of serial 3 requested on TerraformCluster ${namespace}/${cluster}: watch RestoreJobSucceeded\n`,
        stderr: "",
      });
      expect((await read(kinds.cluster, cluster)).metadata.annotations?.[annotations.restoreState]).toBe("3");
    });

    it("with -o json prints the request as JSON: written with its event, in place already, and a refusal on stderr only", async () => {
      const pool = `${cluster}-mp-0`;
      await writeStatus(kinds.machinePool, pool, {
        conditions: [condition("Ready", "True", "Ready")],
        stateBackups: [{ serial: 5, takenAt: "2026-12-01T09:00:00Z", bytes: 256 }],
      });
      const requested = await run("restore", `terraformmachinepool/${pool}`, "--serial", "5", "-o", "json");
      expect([requested.code, requested.stderr]).toEqual([0, ""]);
      expect(JSON.parse(requested.stdout)).toEqual({
        object: { kind: kinds.machinePool, namespace, name: pool },
        serial: 5,
        written: true,
        event: true,
        watch: "RestoreJobSucceeded",
      });
      expect((await read(kinds.machinePool, pool)).metadata.annotations?.[annotations.restoreState]).toBe("5");
      const events = await kubeConfig.makeApiClient(k8s.EventsV1Api).listNamespacedEvent({ namespace });
      expect(
        events.items.filter(
          (event) =>
            event.reportingController === eventReporters.plugin &&
            event.reason === "StateRestoreRequested" &&
            event.regarding?.name === pool,
        ),
      ).toEqual([
        expect.objectContaining({
          type: "Normal",
          action: "Restore",
          note: expect.stringMatching(/^restore of state serial 5 requested by \S+ with kubectl captf$/),
          regarding: expect.objectContaining({ kind: kinds.machinePool }),
        }),
      ]);

      // Asked again: in place already, so nothing written and no second event.
      const again = await run("restore", `terraformmachinepool/${pool}`, "--serial", "5", "-o", "json");
      expect([again.code, again.stderr, JSON.parse(again.stdout)]).toEqual([
        0,
        "",
        {
          object: { kind: kinds.machinePool, namespace, name: pool },
          serial: 5,
          written: false,
          event: false,
          watch: "RestoreJobSucceeded",
        },
      ]);
      expect(await run("restore", `terraformmachinepool/${pool}`, "--serial", "4", "-o", "json")).toEqual({
        code: 1,
        stdout: "",
        stderr: `kubectl captf: TerraformMachinePool ${namespace}/${pool} has no backup of serial 4 in status.stateBackups (it lists 5)\n`,
      });
      const after = await kubeConfig.makeApiClient(k8s.EventsV1Api).listNamespacedEvent({ namespace });
      expect(after.items.filter((event) => event.reason === "StateRestoreRequested" && event.regarding?.name === pool)).toHaveLength(1);
    });
  });

  describe("logs", () => {
    it("prints the runner log of the newest Job's pod through the pod log API", async () => {
      const { code, stdout, stderr } = await run("logs", `terraformcluster/${cluster}`);
      expect(stderr).toBe("");
      expect(code).toBe(0);
      expect(stdout).toBe(runnerLog);
      expect(kubeletRequests.at(-1)).toMatch(new RegExp(`^/containerLogs/${namespace}/${clusterJob}-x1y2z/source`));
      expect(JSON.parse((await run("logs", `terraformcluster/${cluster}`, "-o", "json")).stdout)).toEqual({
        job: clusterJob,
        operation: "apply",
        attempt: 2,
        pod: `${clusterJob}-x1y2z`,
        log: runnerLog,
      });
    });

    it("says when the object has no Job", async () => {
      const { code, stderr } = await run("logs", `terraformmachinepool/${cluster}-mp-0`);
      expect(code).toBe(1);
      expect(stderr).toContain(`TerraformMachinePool ${namespace}/${cluster}-mp-0 has no Job`);
    });
  });
});
