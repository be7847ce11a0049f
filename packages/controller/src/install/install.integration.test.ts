// config/install.yaml on the real API server, and the manager running with exactly its RBAC:
// the Namespace, ServiceAccount, ClusterRoles, binding and Services are applied for real (server-side
// apply); the CRDs, the Deployment and the webhook configuration as a server-side dry run, so the
// shared plane keeps the CRDs other suites installed and no webhook refuses their writes; a Pod of
// the Deployment's template is dry-run created in the namespace, which enforces the restricted
// Pod Security Standard. Then the manager bundle runs with a token of its ServiceAccount (the
// TokenRequest API) and takes a TerraformMachine to its first Job without one Forbidden: on the way
// it mirrors the identity's Secret and binds the runner's ServiceAccount in the namespace. The Jobs
// then run (the real runner and the no-op modules), so the manager also makes the writes that follow
// an apply: it asks Cluster API to replace the unhealthy Machine, and writes an autoscaled pool's
// replicas back to its MachinePool.
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { noopModuleDirectory } from "@captf/module-noop";
import { describeWithTools, sharedControlPlane, waitFor, writeKubeconfig } from "@captf/testkit";
import { apiGroup, apiVersion, eventReporters } from "@captf/contract/api";
import { rejection } from "../api/crds.test-support.js";
import {
  buildManagerBundle,
  httpsRequest,
  killManagerProcess,
  startManagerProcess,
  type ManagerProcess,
} from "../manager-process.test-support.js";
import { startJobExecutor, type JobExecutor } from "../reconcile/job-executor.test-support.js";
import { preparePlane, type PlaneClients, mergePatchOptions } from "../reconcile/plane.test-support.js";
import { deploymentObject, installNames, podDisruptionBudgetObject } from "./manifests.js";
import type { TerraformMachine } from "../api/terraformmachine.js";
import type { CapiObject, ReadBack } from "../reconcile/read-back.test-support.js";

const installFile = new URL("../../config/install.yaml", import.meta.url);
const managerNamespace = "captf-system";
const managerUser = `system:serviceaccount:${managerNamespace}:${installNames.serviceAccount}`;
/** Applied as a dry run only: shared with other suites, or effective for the whole plane. */
const dryRunKinds = new Set(["CustomResourceDefinition", "Deployment", "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"]);
const machineImage = "registry.invalid/noop-machine:v1";
const poolImage = "registry.invalid/noop-machinepool:v1";

describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager", "tofu"], "the install manifests on the real API server", () => {
  const workload = `install-${Date.now().toString(36)}`;
  const identityName = workload;
  const work = mkdtempSync(join(tmpdir(), "captf-install-"));
  const objects = k8s.loadAllYaml(readFileSync(installFile, "utf8")) as k8s.KubernetesObject[];
  const applied: k8s.KubernetesObject[] = [];
  let plane: PlaneClients;
  let kubeConfig: k8s.KubeConfig;
  let objectApi: k8s.KubernetesObjectApi;
  let bundle: string;
  let manager: ManagerProcess | undefined;
  let executor: JobExecutor;

  beforeAll(async () => {
    plane = await preparePlane(workload);
    kubeConfig = new k8s.KubeConfig();
    kubeConfig.loadFromFile(plane.kubeconfigPath);
    objectApi = k8s.KubernetesObjectApi.makeApiClient(kubeConfig);
    bundle = buildManagerBundle(join(work, "bundle"));
    // The no-op machine module, reporting its instance running but unhealthy.
    const unhealthyMachine = join(work, "unhealthy-machine");
    cpSync(noopModuleDirectory("machine"), unhealthyMachine, { recursive: true });
    const outputs = join(unhealthyMachine, "outputs.tf");
    writeFileSync(outputs, readFileSync(outputs, "utf8").replace("healthy = true", "healthy = false"));
    executor = startJobExecutor({
      kubeconfigPath: plane.kubeconfigPath,
      namespace: workload,
      modules: { [machineImage]: unhealthyMachine, [poolImage]: noopModuleDirectory("machinepool") },
    });
  }, 120_000);

  afterAll(async () => {
    await killManagerProcess(manager);
    executor?.close();
    // The manager is gone: take its finalizers off so the namespace can go.
    for (const plural of ["terraformmachines", "terraformmachinepools", "terraformclusters"]) {
      const list = (await plane?.custom
        .listNamespacedCustomObject({ group: apiGroup, version: apiVersion, namespace: workload, plural })
        .catch(() => ({ items: [] }))) as { items: CapiObject[] };
      for (const item of list.items) {
        await plane.custom
          .patchNamespacedCustomObject(
            {
              group: apiGroup,
              version: apiVersion,
              namespace: workload,
              plural,
              name: item.metadata.name!,
              body: { metadata: { finalizers: null } },
            },
            mergePatchOptions(),
          )
          .catch(() => undefined);
      }
    }
    await plane?.core.deleteNamespace({ name: workload }).catch(() => undefined);
    await plane?.custom
      .deleteClusterCustomObject({ group: apiGroup, version: apiVersion, plural: "terraformclusteridentities", name: identityName })
      .catch(() => undefined);
    for (const object of applied.filter((candidate) => candidate.metadata?.namespace === undefined).reverse())
      await objectApi.delete(object).catch(() => undefined);
    rmSync(work, { recursive: true, force: true });
  }, 60_000);

  it("applies: RBAC and Services for real, the CRDs, the Deployment and the webhook configuration as a dry run, the Pod within " +
    "the restricted standard", async () => {
    const skipped: string[] = [];
    for (const object of objects) {
      const name = `${object.kind}/${object.metadata!.name}`;
      // cert-manager is not installed here.
      if (object.apiVersion!.startsWith("cert-manager.io/")) {
        skipped.push(name);
        continue;
      }
      const dryRun = dryRunKinds.has(object.kind!) ? "All" : undefined;
      await objectApi.patch(object, undefined, dryRun, "captf-install-test", true, k8s.PatchStrategy.ServerSideApply);
      if (!dryRun) applied.push(object);
    }
    expect(skipped).toEqual([`Issuer/${installNames.issuer}`, `Certificate/${installNames.certificate}`]);
    expect(applied.map((object) => object.kind)).toEqual([
      "Namespace",
      "ServiceAccount",
      "ClusterRole",
      "ClusterRoleBinding",
      "ClusterRole",
      "ClusterRole",
      "ClusterRole",
      "ClusterRole",
      "ClusterRole",
      "ValidatingAdmissionPolicy",
      "ValidatingAdmissionPolicyBinding",
      "Service",
      "Service",
      "PodDisruptionBudget",
    ]);

    const deployment = objects.find((object) => object.kind === "Deployment") as k8s.V1Deployment;
    const template = deployment.spec!.template;
    const pod = await plane.core.createNamespacedPod({
      namespace: managerNamespace,
      dryRun: "All",
      body: { metadata: { name: "captf-controller-manager-dry-run", labels: template.metadata!.labels! }, spec: template.spec! },
    });
    expect(pod.spec!.containers[0]!.securityContext!.readOnlyRootFilesystem).toBe(true);
    const privileged = {
      ...template.spec!,
      containers: template.spec!.containers.map((container) => ({
        ...container,
        securityContext: { ...container.securityContext, allowPrivilegeEscalation: true },
      })),
    };
    const refused = await rejection(
      plane.core.createNamespacedPod({
        namespace: managerNamespace,
        dryRun: "All",
        body: { metadata: { name: "captf-privileged-dry-run" }, spec: privileged },
      }),
    );
    expect(refused).toEqual({
      code: 403,
      message: expect.stringContaining('violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false'),
    });
  }, 60_000);

  it("runs the manager with its ServiceAccount's token: it leads, mirrors credentials, binds the runner, starts a " +
    "TerraformMachine's first Job, serves metrics, requests remediation, writes pool replicas back, never forbidden", async () => {
    const controlPlane = sharedControlPlane();
    const authorization = kubeConfig.makeApiClient(k8s.AuthorizationV1Api);
    // RBAC objects reach the authorizer's cache shortly after they are written.
    await waitFor(
      async () => {
        const review = await authorization.createSubjectAccessReview({
          body: {
            spec: {
              user: managerUser,
              groups: ["system:serviceaccounts", `system:serviceaccounts:${managerNamespace}`, "system:authenticated"],
              resourceAttributes: { namespace: workload, verb: "create", group: "batch", resource: "jobs" },
            },
          },
        });
        return review.status?.allowed ? true : undefined;
      },
      30_000,
      "the manager's ClusterRoleBinding in effect",
    );
    const token = await plane.core.createNamespacedServiceAccountToken({
      namespace: managerNamespace,
      name: installNames.serviceAccount,
      body: { spec: { audiences: [], expirationSeconds: 3600 } },
    });
    const kubeconfigPath = join(work, "manager.kubeconfig");
    writeKubeconfig(kubeconfigPath, { server: controlPlane.server, caFile: controlPlane.caFile, token: token.status!.token });

    await createMachineFixture(plane, workload, identityName);
    await createPoolFixture(plane, workload);
    manager = await startManagerProcess({
      bundle,
      kubeconfigPath,
      dir: work,
      args: [`--namespace=${workload}`, "--leader-elect", "--leader-elect-retry-period=250ms"],
      env: {
        POD_NAMESPACE: managerNamespace,
        SERVICE_ACCOUNT_NAME: installNames.serviceAccount,
        CAPTF_MANAGER_IMAGE: "registry.invalid/captf-controller:test",
      },
    });
    const running = manager;

    const lease = await waitFor(
      async () => {
        const found = await plane.coordination
          .readNamespacedLease({ namespace: managerNamespace, name: "controller-leader-election-captf" })
          .catch(() => undefined);
        return found?.spec?.holderIdentity ? found : undefined;
      },
      30_000,
      `the leader Lease in ${managerNamespace} (manager output:\n${running.output()})`,
    );
    expect(lease.spec!.holderIdentity).toMatch(/.+/);

    const object = await waitFor(
      async () => {
        const current = (await plane.custom.getNamespacedCustomObject({
          group: apiGroup,
          version: apiVersion,
          namespace: workload,
          plural: "terraformmachines",
          name: "m-0",
        })) as ReadBack<TerraformMachine>;
        return current.status?.activeJob?.name ? current : undefined;
      },
      60_000,
      `the TerraformMachine's first Job (manager output:\n${running.output()})`,
    );
    expect(object.status.conditions).toContainEqual(expect.objectContaining({ type: "DependenciesReady", status: "True" }));
    expect(object.status.conditions).toContainEqual(expect.objectContaining({ type: "IdentityAllowed", status: "True" }));
    const job = await plane.batch.readNamespacedJob({ namespace: workload, name: object.status.activeJob!.name });
    expect(job.spec!.template.spec!.initContainers![0]!.image).toBe("registry.invalid/captf-controller:test");
    expect(job.spec!.template.spec!.serviceAccountName).toBe("captf-runner");
    await plane.core.readNamespacedSecret({ namespace: workload, name: `captf-creds-${identityName}` });
    await plane.core.readNamespacedServiceAccount({ namespace: workload, name: "captf-runner" });
    const binding = await kubeConfig
      .makeApiClient(k8s.RbacAuthorizationV1Api)
      .readNamespacedRoleBinding({ namespace: workload, name: "captf-runner" });
    expect(binding.roleRef).toEqual({ apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: installNames.runnerRole });

    // A scrape makes the manager ask a TokenReview and a SubjectAccessReview, as its ServiceAccount.
    const metrics = await httpsRequest(
      `https://127.0.0.1:${running.ports.metrics}/metrics`,
      readFileSync(running.certificate.caFile, "utf8"),
      { token: controlPlane.token },
    );
    expect(metrics.status).toBe(200);
    // The reconcile pass reports what it decided, and the Job cache what runs.
    expect(metrics.body).toContain('captf_jobs_active{kind="TerraformMachine",op="apply"} 1');
    expect(metrics.body).toMatch(/captf_reconcile_op_decisions_total\{kind="TerraformMachine",op="apply",reason="NoState"\} [1-9]/);

    // The applies run: the Machine's instance reads unhealthy (threshold 1), the pool observes its clamped count.
    const machines = { group: "cluster.x-k8s.io", version: "v1beta2", namespace: workload, plural: "machines", name: "m-0" };
    const machinePools = { group: "cluster.x-k8s.io", version: "v1beta2", namespace: workload, plural: "machinepools", name: "mp-0" };
    const written = await waitFor(
      async () => {
        await executor.runPending();
        const machine = (await plane.custom.getNamespacedCustomObject(machines)) as CapiObject;
        const machinePool = (await plane.custom.getNamespacedCustomObject(machinePools)) as CapiObject;
        const requested = machine.metadata.annotations?.["cluster.x-k8s.io/remediate-machine"] !== undefined;
        const claimed =
          machinePool.metadata.annotations?.["cluster.x-k8s.io/replicas-managed-by"] === "captf" && machinePool.spec.replicas === 5;
        return requested && claimed ? { machine, machinePool } : undefined;
      },
      150_000,
      `the remediation request and the replicas write-back (manager output:\n${running.output()})`,
    );
    expect(written.machine.metadata.annotations).toMatchObject({
      "cluster.x-k8s.io/remediate-machine": "",
      "captf.io/remediation-requested": "InstanceUnhealthy",
    });
    expect(written.machinePool.spec.replicas).toBe(5);

    running.child.kill("SIGTERM");
    expect(await running.exited).toEqual({ code: 0, signal: null });
    const forbidden = running.records().filter((record) => /forbidden|\b403\b/i.test(JSON.stringify(record)));
    expect(forbidden).toEqual([]);
  }, 300_000);

  it("lets a user bound to the built-in view role read captf objects and not write them, edit write them, and a plan approver " +
    "only approve", async () => {
    const authorization = kubeConfig.makeApiClient(k8s.AuthorizationV1Api);
    const viewer = await clientBoundTo(plane, kubeConfig, workload, "view", join(work, "viewer.kubeconfig"));
    const editor = await clientBoundTo(plane, kubeConfig, workload, "edit", join(work, "editor.kubeconfig"));
    const approver = await clientBoundTo(plane, kubeConfig, workload, installNames.planApproverRole, join(work, "approver.kubeconfig"));
    // The aggregation controller copies captf-view and captf-edit into view and edit, and the authorizer's cache follows.
    for (const [user, verb] of [
      [viewer.user, "list"],
      [editor.user, "create"],
    ] as const) {
      await waitFor(
        async () => {
          const review = await authorization.createSubjectAccessReview({
            body: {
              spec: {
                user,
                groups: ["system:serviceaccounts", "system:authenticated"],
                resourceAttributes: { namespace: workload, verb, group: apiGroup, resource: "terraformmachines" },
              },
            },
          });
          return review.status?.allowed ? true : undefined;
        },
        30_000,
        `${verb} terraformmachines for ${user} through the aggregated role`,
      );
    }
    // admin aggregates captf-edit directly (aggregate-to-admin).
    const rbac = kubeConfig.makeApiClient(k8s.RbacAuthorizationV1Api);
    await waitFor(
      async () =>
        ((await rbac.readClusterRole({ name: "admin" })).rules ?? []).some(
          (rule) => rule.apiGroups?.includes(apiGroup) && rule.verbs.includes("deletecollection"),
        ) || undefined,
      30_000,
      "captf-edit in admin",
    );
    const machine = { group: apiGroup, version: apiVersion, namespace: workload, plural: "terraformmachines", name: "m-0" };
    const label = (value: string) => ({ metadata: { labels: { "team.example/owner": value } } });
    const approval = { metadata: { annotations: { "captf.io/approve-plan": "p1:0000" } } };
    const copy = (object: k8s.KubernetesObject & { spec?: unknown }) => ({
      apiVersion: object.apiVersion,
      kind: object.kind,
      metadata: { name: "m-copy" },
      spec: object.spec,
    });

    // view: reads captf objects and their status, writes nothing, reads no Secret.
    const seen = (await viewer.custom.getNamespacedCustomObject(machine)) as ReadBack<TerraformMachine>;
    expect(seen.status?.conditions?.length).toBeGreaterThan(0);
    const listed = (await viewer.custom.listNamespacedCustomObject({ ...machine, plural: "terraformclusters" })) as { items: CapiObject[] };
    expect(listed.items.map((item) => item.metadata.name)).toEqual(["ext"]);
    expect(
      (await rejection(viewer.custom.patchNamespacedCustomObject({ ...machine, body: label("viewer") }, mergePatchOptions()))).code,
    ).toBe(403);
    expect((await rejection(viewer.custom.patchNamespacedCustomObject({ ...machine, body: approval }, mergePatchOptions()))).code).toBe(
      403,
    );
    expect((await rejection(viewer.custom.createNamespacedCustomObject({ ...machine, body: copy(seen) }))).code).toBe(403);
    expect((await rejection(viewer.custom.deleteNamespacedCustomObject(machine))).code).toBe(403);
    expect((await rejection(viewer.core.listNamespacedSecret({ namespace: workload }))).code).toBe(403);

    // edit: writes the objects, not their status.
    await editor.custom.patchNamespacedCustomObject({ ...machine, body: label("editor") }, mergePatchOptions());
    expect(
      (
        await rejection(
          editor.custom.patchNamespacedCustomObjectStatus({ ...machine, body: { status: { ready: true } } }, mergePatchOptions()),
        )
      ).code,
    ).toBe(403);

    // plan approver: reads and approves the three kinds that run plans; creates, deletes and reads Secrets not.
    await approver.custom.patchNamespacedCustomObject({ ...machine, body: approval }, mergePatchOptions());
    const approved = (await approver.custom.getNamespacedCustomObject(machine)) as CapiObject;
    expect(approved.metadata.annotations!["captf.io/approve-plan"]).toBe("p1:0000");
    // ... and records the approval as kubectl captf plan approve does: an events.k8s.io event regarding the object.
    const event = await approver.events.createNamespacedEvent({
      namespace: workload,
      body: {
        metadata: { name: `m-0.approval`, namespace: workload },
        eventTime: new k8s.V1MicroTime(Date.now()),
        reportingController: eventReporters.plugin,
        reportingInstance: eventReporters.plugin,
        action: "Approve",
        reason: "PlanApprovalRequested",
        type: "Normal",
        note: "approved plan p1:0000",
        regarding: {
          apiVersion: `${apiGroup}/${apiVersion}`,
          kind: "TerraformMachine",
          namespace: workload,
          name: "m-0",
          uid: approved.metadata.uid,
        },
      },
    });
    expect(event.reason).toBe("PlanApprovalRequested");
    // ... and changes nothing else: the policy captf-plan-approver refuses a label, a finalizer, another annotation, the spec.
    let attempt = 0;
    // Each attempt a new value: one the API server took before it loaded the policy is no change the next time.
    const refusal = await waitFor(
      () =>
        rejection(
          approver.custom.patchNamespacedCustomObject({ ...machine, body: label(`approver-${++attempt}`) }, mergePatchOptions()),
        ).catch(() => undefined),
      30_000,
      "the approver's label refused once the policy is loaded",
    );
    expect(refusal).toEqual({ code: 403, message: expect.stringContaining("a plan approver may only set captf.io/approve-plan") });
    // A TerraformMachine's spec is immutable for everyone; a TerraformCluster's variables are not, but for the approver.
    const cluster = { ...machine, plural: "terraformclusters", name: "ext" };
    for (const [target, body] of [
      [machine, { metadata: { finalizers: ["example.com/keep"] } }],
      [machine, { metadata: { annotations: { "team.example/note": "x" } } }],
      [cluster, { spec: { variables: { note: "approver" } } }],
    ] as const) {
      expect([body, await rejection(approver.custom.patchNamespacedCustomObject({ ...target, body }, mergePatchOptions()))]).toEqual([
        body,
        { code: 403, message: expect.stringContaining("denied request: a plan approver may only set captf.io/approve-plan") },
      ]);
    }
    await approver.custom.patchNamespacedCustomObject(
      { ...machine, body: { metadata: { annotations: { "captf.io/approve-plan": "p2:0000" } } } },
      mergePatchOptions(),
    );
    expect((await rejection(approver.custom.createNamespacedCustomObject({ ...machine, body: copy(seen) }))).code).toBe(403);
    expect((await rejection(approver.custom.deleteNamespacedCustomObject(machine))).code).toBe(403);
    expect((await rejection(approver.custom.listNamespacedCustomObject({ ...machine, plural: "terraformmachinetemplates" }))).code).toBe(
      403,
    );
    expect((await rejection(approver.core.listNamespacedSecret({ namespace: workload }))).code).toBe(403);
  }, 60_000);

  it("keeps one of two Ready manager Pods through evictions with the shipped PodDisruptionBudget", async () => {
    // The shipped Deployment (2 replicas) and budget, rendered for the test namespace; no kubelet runs
    // them, so the test marks the ReplicaSet's Pods Running and Ready the way a kubelet would.
    const options = { namespace: workload, image: "registry.invalid/captf-controller:test" };
    const deployment = deploymentObject(options);
    deployment.spec!.replicas = 2;
    const apps = kubeConfig.makeApiClient(k8s.AppsV1Api);
    const policy = kubeConfig.makeApiClient(k8s.PolicyV1Api);
    await apps.createNamespacedDeployment({ namespace: workload, body: deployment });
    await policy.createNamespacedPodDisruptionBudget({ namespace: workload, body: podDisruptionBudgetObject(options) });
    const selector = Object.entries(deployment.spec!.selector.matchLabels!)
      .map(([key, value]) => `${key}=${value}`)
      .join(",");
    const managerPods = async () =>
      (await plane.core.listNamespacedPod({ namespace: workload, labelSelector: selector })).items.filter(
        (pod) => !pod.metadata!.deletionTimestamp,
      );
    const pods = await waitFor(
      async () => ((await managerPods()).length === 2 ? managerPods() : undefined),
      30_000,
      "the Deployment's two Pods",
    );
    const now = new Date();
    for (const pod of pods) {
      await plane.core.replaceNamespacedPodStatus({
        namespace: workload,
        name: pod.metadata!.name!,
        body: {
          ...pod,
          status: { phase: "Running", startTime: now, conditions: [{ type: "Ready", status: "True", lastTransitionTime: now }] },
        },
      });
    }
    await waitFor(
      async () =>
        (await policy.readNamespacedPodDisruptionBudget({ namespace: workload, name: installNames.podDisruptionBudget })).status
          ?.disruptionsAllowed === 1
          ? true
          : undefined,
      30_000,
      "disruptionsAllowed 1",
    );
    const evict = (name: string) =>
      plane.core.createNamespacedPodEviction({ namespace: workload, name, body: { metadata: { name, namespace: workload } } });
    await evict(pods[0]!.metadata!.name!);
    // The ReplicaSet's replacement is not Ready: the last Ready Pod stays.
    await waitFor(
      async () =>
        (await policy.readNamespacedPodDisruptionBudget({ namespace: workload, name: installNames.podDisruptionBudget })).status
          ?.disruptionsAllowed === 0
          ? true
          : undefined,
      30_000,
      "disruptionsAllowed 0",
    );
    expect(await rejection(evict(pods[1]!.metadata!.name!))).toEqual({ code: 429, message: expect.stringContaining("disruption budget") });
    await apps.deleteNamespacedDeployment({ namespace: workload, name: deployment.metadata!.name! });
  }, 60_000);
});

/**
 * A client acting as a new ServiceAccount of the namespace bound (RoleBinding) to a ClusterRole, with a token from the TokenRequest API.
 */
async function clientBoundTo(
  plane: PlaneClients,
  kubeConfig: k8s.KubeConfig,
  namespace: string,
  clusterRole: string,
  path: string,
): Promise<{ custom: k8s.CustomObjectsApi; core: k8s.CoreV1Api; events: k8s.EventsV1Api; user: string }> {
  const name = `as-${clusterRole}`;
  await plane.core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } });
  await kubeConfig.makeApiClient(k8s.RbacAuthorizationV1Api).createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: clusterRole },
      subjects: [{ kind: "ServiceAccount", name, namespace }],
    },
  });
  const token = await plane.core.createNamespacedServiceAccountToken({
    namespace,
    name,
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  const controlPlane = sharedControlPlane();
  writeKubeconfig(path, { server: controlPlane.server, caFile: controlPlane.caFile, token: token.status!.token });
  const config = new k8s.KubeConfig();
  config.loadFromFile(path);
  return {
    custom: config.makeApiClient(k8s.CustomObjectsApi),
    core: config.makeApiClient(k8s.CoreV1Api),
    events: config.makeApiClient(k8s.EventsV1Api),
    user: `system:serviceaccount:${namespace}:${name}`,
  };
}

/**
 * An identity, a Cluster API Cluster with an externally managed TerraformCluster, and a Machine whose TerraformMachine has all it needs to
 * start an apply.
 */
async function createMachineFixture(plane: PlaneClients, namespace: string, identity: string): Promise<void> {
  const capi = { group: "cluster.x-k8s.io", version: "v1beta2", namespace };
  const infrastructure = { group: apiGroup, version: apiVersion, namespace };
  await plane.core.createNamespacedSecret({
    namespace,
    body: { metadata: { name: "cloud-creds" }, stringData: { CLOUD_TOKEN: "not-a-real-token" } },
  });
  await plane.custom.createClusterCustomObject({
    group: apiGroup,
    version: apiVersion,
    plural: "terraformclusteridentities",
    body: {
      apiVersion: `${apiGroup}/${apiVersion}`,
      kind: "TerraformClusterIdentity",
      metadata: { name: identity },
      spec: { secretRef: { name: "cloud-creds", namespace }, allowedNamespaces: { list: [namespace] } },
    },
  });
  await plane.custom.createNamespacedCustomObject({
    ...infrastructure,
    plural: "terraformclusters",
    body: {
      apiVersion: `${apiGroup}/${apiVersion}`,
      kind: "TerraformCluster",
      metadata: { name: "ext", annotations: { "cluster.x-k8s.io/managed-by": "external" } },
      spec: { source: { image: "registry.invalid/unused:v1" }, identityRef: { name: identity } },
    },
  });
  await plane.custom.createNamespacedCustomObject({
    ...capi,
    plural: "clusters",
    body: {
      apiVersion: "cluster.x-k8s.io/v1beta2",
      kind: "Cluster",
      metadata: { name: "ext" },
      spec: { infrastructureRef: { apiGroup, kind: "TerraformCluster", name: "ext" } },
    },
  });
  await plane.core.createNamespacedSecret({
    namespace,
    body: { metadata: { name: "m-0-bootstrap" }, stringData: { value: "#cloud-config\n" } },
  });
  const machine = (await plane.custom.createNamespacedCustomObject({
    ...capi,
    plural: "machines",
    body: {
      apiVersion: "cluster.x-k8s.io/v1beta2",
      kind: "Machine",
      metadata: { name: "m-0", labels: { "cluster.x-k8s.io/cluster-name": "ext" } },
      spec: {
        clusterName: "ext",
        bootstrap: { dataSecretName: "m-0-bootstrap" },
        infrastructureRef: { apiGroup, kind: "TerraformMachine", name: "m-0" },
      },
    },
  })) as { metadata: { uid: string } };
  await plane.custom.createNamespacedCustomObject({
    ...infrastructure,
    plural: "terraformmachines",
    body: {
      apiVersion: `${apiGroup}/${apiVersion}`,
      kind: "TerraformMachine",
      metadata: {
        name: "m-0",
        ownerReferences: [
          { apiVersion: "cluster.x-k8s.io/v1beta2", kind: "Machine", name: "m-0", uid: machine.metadata.uid, controller: true },
        ],
      },
      spec: { source: { image: machineImage }, remediation: { annotateMachine: true, unhealthyThreshold: 1 } },
    },
  });
}

/** An autoscaled MachinePool (bounds 1..5, spec.replicas 7) of the same cluster and its TerraformMachinePool. */
async function createPoolFixture(plane: PlaneClients, namespace: string): Promise<void> {
  const capi = { group: "cluster.x-k8s.io", version: "v1beta2", namespace };
  await plane.core.createNamespacedSecret({
    namespace,
    body: { metadata: { name: "mp-0-bootstrap" }, stringData: { value: "#cloud-config\n" } },
  });
  const machinePool = (await plane.custom.createNamespacedCustomObject({
    ...capi,
    plural: "machinepools",
    body: {
      apiVersion: "cluster.x-k8s.io/v1beta2",
      kind: "MachinePool",
      metadata: {
        name: "mp-0",
        labels: { "cluster.x-k8s.io/cluster-name": "ext" },
        annotations: {
          "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size": "1",
          "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size": "5",
        },
      },
      spec: {
        clusterName: "ext",
        replicas: 7,
        template: {
          spec: {
            clusterName: "ext",
            version: "v1.36.2",
            bootstrap: { dataSecretName: "mp-0-bootstrap" },
            infrastructureRef: { apiGroup, kind: "TerraformMachinePool", name: "mp-0" },
          },
        },
      },
    },
  })) as { metadata: { uid: string } };
  await plane.custom.createNamespacedCustomObject({
    group: apiGroup,
    version: apiVersion,
    namespace,
    plural: "terraformmachinepools",
    body: {
      apiVersion: `${apiGroup}/${apiVersion}`,
      kind: "TerraformMachinePool",
      metadata: {
        name: "mp-0",
        labels: { "cluster.x-k8s.io/cluster-name": "ext" },
        ownerReferences: [
          { apiVersion: "cluster.x-k8s.io/v1beta2", kind: "MachinePool", name: "mp-0", uid: machinePool.metadata.uid, controller: true },
        ],
      },
      spec: { source: { image: poolImage } },
    },
  });
}
