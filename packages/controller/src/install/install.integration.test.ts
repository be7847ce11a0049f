// config/install.yaml on the real API server, and the manager running with exactly its RBAC:
// the Namespace, ServiceAccount, ClusterRoles, binding and Services are applied for real (server-side
// apply); the CRDs, the Deployment and the webhook configuration as a server-side dry run, so the
// shared plane keeps the CRDs other suites installed and no webhook refuses their writes; a Pod of
// the Deployment's template is dry-run created in the namespace, which enforces the restricted
// Pod Security Standard. Then the manager bundle runs with a token of its ServiceAccount (the
// TokenRequest API) and takes a TerraformMachine to its first Job without one Forbidden: on the way
// it mirrors the identity's Secret and binds the runner's ServiceAccount in the namespace.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { describeWithTools, sharedControlPlane, waitFor, writeKubeconfig } from "@captf/testkit";
import { apiGroup, apiVersion } from "@captf/contract/api";
import { rejection } from "../api/crds.test-support.js";
import { buildManagerBundle, httpsRequest, killManagerProcess, startManagerProcess, type ManagerProcess } from "../manager-process.test-support.js";
import { preparePlane, type PlaneClients } from "../reconcile/plane.test-support.js";
import { mergePatchOptions } from "../reconcile/workspace-reconciler.js";
import { installNames } from "./manifests.js";

type AnyObject = Record<string, any>;

const installFile = new URL("../../config/install.yaml", import.meta.url);
const managerNamespace = "captf-system";
const managerUser = `system:serviceaccount:${managerNamespace}:${installNames.serviceAccount}`;
/** Applied as a dry run only: shared with other suites, or effective for the whole plane. */
const dryRunKinds = new Set(["CustomResourceDefinition", "Deployment", "ValidatingWebhookConfiguration"]);

describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager"], "the install manifests on the real API server", () => {
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

  beforeAll(async () => {
    plane = await preparePlane(workload);
    kubeConfig = new k8s.KubeConfig();
    kubeConfig.loadFromFile(plane.kubeconfigPath);
    objectApi = k8s.KubernetesObjectApi.makeApiClient(kubeConfig);
    bundle = buildManagerBundle(join(work, "bundle"));
  }, 60_000);

  afterAll(async () => {
    await killManagerProcess(manager);
    // The manager is gone: take its finalizers off so the namespace can go.
    for (const plural of ["terraformmachines", "terraformclusters"]) {
      const list = (await plane?.custom.listNamespacedCustomObject({ group: apiGroup, version: apiVersion, namespace: workload, plural }).catch(() => ({ items: [] }))) as { items: AnyObject[] };
      for (const item of list.items) {
        await plane.custom.patchNamespacedCustomObject({ group: apiGroup, version: apiVersion, namespace: workload, plural, name: item.metadata.name, body: { metadata: { finalizers: null } } }, mergePatchOptions()).catch(() => undefined);
      }
    }
    await plane?.core.deleteNamespace({ name: workload }).catch(() => undefined);
    await plane?.custom.deleteClusterCustomObject({ group: apiGroup, version: apiVersion, plural: "terraformclusteridentities", name: identityName }).catch(() => undefined);
    for (const object of applied.filter((candidate) => candidate.metadata?.namespace === undefined).reverse()) await objectApi.delete(object).catch(() => undefined);
    rmSync(work, { recursive: true, force: true });
  });

  it("applies: RBAC and Services for real, the CRDs, the Deployment and the webhook configuration as a dry run, the Pod within the restricted standard", async () => {
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
    expect(applied.map((object) => object.kind)).toEqual(["Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ClusterRole", "ClusterRole", "Service", "Service"]);

    const deployment = objects.find((object) => object.kind === "Deployment") as k8s.V1Deployment;
    const template = deployment.spec!.template;
    const pod = await plane.core.createNamespacedPod({ namespace: managerNamespace, dryRun: "All", body: { metadata: { name: "captf-controller-manager-dry-run", labels: template.metadata!.labels! }, spec: template.spec! } });
    expect(pod.spec!.containers[0]!.securityContext!.readOnlyRootFilesystem).toBe(true);
    const privileged = { ...template.spec!, containers: template.spec!.containers.map((container) => ({ ...container, securityContext: { ...container.securityContext, allowPrivilegeEscalation: true } })) };
    const refused = await rejection(plane.core.createNamespacedPod({ namespace: managerNamespace, dryRun: "All", body: { metadata: { name: "captf-privileged-dry-run" }, spec: privileged } }));
    expect(refused).toEqual({ code: 403, message: expect.stringContaining('violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false') });
  }, 60_000);

  it("runs the manager with its ServiceAccount's token: it leads, mirrors credentials, binds the runner, starts a TerraformMachine's first Job, serves metrics, never forbidden", async () => {
    const controlPlane = sharedControlPlane();
    const authorization = kubeConfig.makeApiClient(k8s.AuthorizationV1Api);
    // RBAC objects reach the authorizer's cache shortly after they are written.
    await waitFor(async () => {
      const review = await authorization.createSubjectAccessReview({
        body: { spec: { user: managerUser, groups: ["system:serviceaccounts", `system:serviceaccounts:${managerNamespace}`, "system:authenticated"], resourceAttributes: { namespace: workload, verb: "create", group: "batch", resource: "jobs" } } },
      });
      return review.status?.allowed ? true : undefined;
    }, 30_000, "the manager's ClusterRoleBinding in effect");
    const token = await plane.core.createNamespacedServiceAccountToken({ namespace: managerNamespace, name: installNames.serviceAccount, body: { spec: { audiences: [], expirationSeconds: 3600 } } });
    const kubeconfigPath = join(work, "manager.kubeconfig");
    writeKubeconfig(kubeconfigPath, { server: controlPlane.server, caFile: controlPlane.caFile, token: token.status!.token });

    await createMachineFixture(plane, workload, identityName);
    manager = await startManagerProcess({
      bundle,
      kubeconfigPath,
      dir: work,
      args: [`--namespace=${workload}`, "--leader-elect", "--leader-elect-retry-period=250ms"],
      env: { POD_NAMESPACE: managerNamespace, SERVICE_ACCOUNT_NAME: installNames.serviceAccount, CAPTF_MANAGER_IMAGE: "registry.invalid/captf-controller:test" },
    });
    const running = manager;

    const lease = await waitFor(async () => {
      const found = await plane.coordination.readNamespacedLease({ namespace: managerNamespace, name: "controller-leader-election-captf" }).catch(() => undefined);
      return found?.spec?.holderIdentity ? found : undefined;
    }, 30_000, `the leader Lease in ${managerNamespace} (manager output:\n${running.output()})`);
    expect(lease.spec!.holderIdentity).toMatch(/.+/);

    const object = await waitFor(async () => {
      const current = (await plane.custom.getNamespacedCustomObject({ group: apiGroup, version: apiVersion, namespace: workload, plural: "terraformmachines", name: "m-0" })) as AnyObject;
      return current.status?.activeJob?.name ? current : undefined;
    }, 60_000, `the TerraformMachine's first Job (manager output:\n${running.output()})`);
    expect(object.status.conditions).toContainEqual(expect.objectContaining({ type: "DependenciesReady", status: "True" }));
    expect(object.status.conditions).toContainEqual(expect.objectContaining({ type: "IdentityAllowed", status: "True" }));
    const job = await plane.batch.readNamespacedJob({ namespace: workload, name: object.status.activeJob.name });
    expect(job.spec!.template.spec!.initContainers![0]!.image).toBe("registry.invalid/captf-controller:test");
    expect(job.spec!.template.spec!.serviceAccountName).toBe("captf-runner");
    await plane.core.readNamespacedSecret({ namespace: workload, name: `captf-creds-${identityName}` });
    await plane.core.readNamespacedServiceAccount({ namespace: workload, name: "captf-runner" });
    const binding = await kubeConfig.makeApiClient(k8s.RbacAuthorizationV1Api).readNamespacedRoleBinding({ namespace: workload, name: "captf-runner" });
    expect(binding.roleRef).toEqual({ apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: installNames.runnerRole });

    // A scrape makes the manager ask a TokenReview and a SubjectAccessReview, as its ServiceAccount.
    const metrics = await httpsRequest(`https://127.0.0.1:${running.ports.metrics}/metrics`, readFileSync(running.certificate.caFile, "utf8"), { token: controlPlane.token });
    expect(metrics.status).toBe(200);
    // The reconcile pass reports what it decided, and the Job cache what runs.
    expect(metrics.body).toContain('captf_jobs_active{kind="TerraformMachine",op="apply"} 1');
    expect(metrics.body).toMatch(/captf_reconcile_op_decisions_total\{kind="TerraformMachine",op="apply",reason="NoState"\} [1-9]/);

    running.child.kill("SIGTERM");
    expect(await running.exited).toEqual({ code: 0, signal: null });
    const forbidden = running.records().filter((record) => /forbidden|\b403\b/i.test(JSON.stringify(record)));
    expect(forbidden).toEqual([]);
  }, 120_000);
});

/** An identity, a Cluster API Cluster with an externally managed TerraformCluster, and a Machine whose TerraformMachine has all it needs to start an apply. */
async function createMachineFixture(plane: PlaneClients, namespace: string, identity: string): Promise<void> {
  const capi = { group: "cluster.x-k8s.io", version: "v1beta2", namespace };
  const infrastructure = { group: apiGroup, version: apiVersion, namespace };
  await plane.core.createNamespacedSecret({ namespace, body: { metadata: { name: "cloud-creds" }, stringData: { CLOUD_TOKEN: "not-a-real-token" } } });
  await plane.custom.createClusterCustomObject({
    group: apiGroup,
    version: apiVersion,
    plural: "terraformclusteridentities",
    body: { apiVersion: `${apiGroup}/${apiVersion}`, kind: "TerraformClusterIdentity", metadata: { name: identity }, spec: { secretRef: { name: "cloud-creds", namespace }, allowedNamespaces: { list: [namespace] } } },
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
    body: { apiVersion: "cluster.x-k8s.io/v1beta2", kind: "Cluster", metadata: { name: "ext" }, spec: { infrastructureRef: { apiGroup, kind: "TerraformCluster", name: "ext" } } },
  });
  await plane.core.createNamespacedSecret({ namespace, body: { metadata: { name: "m-0-bootstrap" }, stringData: { value: "#cloud-config\n" } } });
  const machine = (await plane.custom.createNamespacedCustomObject({
    ...capi,
    plural: "machines",
    body: {
      apiVersion: "cluster.x-k8s.io/v1beta2",
      kind: "Machine",
      metadata: { name: "m-0", labels: { "cluster.x-k8s.io/cluster-name": "ext" } },
      spec: { clusterName: "ext", bootstrap: { dataSecretName: "m-0-bootstrap" }, infrastructureRef: { apiGroup, kind: "TerraformMachine", name: "m-0" } },
    },
  })) as { metadata: { uid: string } };
  await plane.custom.createNamespacedCustomObject({
    ...infrastructure,
    plural: "terraformmachines",
    body: {
      apiVersion: `${apiGroup}/${apiVersion}`,
      kind: "TerraformMachine",
      metadata: { name: "m-0", ownerReferences: [{ apiVersion: "cluster.x-k8s.io/v1beta2", kind: "Machine", name: "m-0", uid: machine.metadata.uid, controller: true }] },
      spec: { source: { image: "registry.invalid/noop-machine:v1" } },
    },
  });
}
