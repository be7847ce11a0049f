// The approver webhook behind the real kube-apiserver: the MutatingWebhookConfiguration built by
// buildMutatingWebhookConfiguration is registered with a URL on loopback, and plan approvals
// written through the API server by two users (the plane's admin and an impersonated one) carry
// the approval's author in captf.io/plan-approved-by, which no writer can forge.
// The webhook only matches objects labelled for this suite, so suites sharing the plane are untouched.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { describeWithTools, sharedControlPlane } from "@captf/testkit";
import { annotations, apiGroup } from "@captf/contract/api";
import { minimalCluster } from "../api/examples.test-support.js";
import type { TerraformCluster } from "../api/terraformcluster.js";
import { installCrds, namespaced, planeClients, waitFor, type PlaneClients } from "../api/crds.test-support.js";
import { startLoopbackAdmissionServer } from "./admission-server.test-support.js";
import { buildMutatingWebhookConfiguration } from "./configuration.js";
import type { AdmissionServer } from "./server.js";

describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager"], "the plan approver webhook behind the real API server", () => {
  const suffix = Date.now().toString(36);
  const namespace = `approver-${suffix}`;
  const selectorLabel = "captf.io/approver-test";
  const configurationName = `captf-approver-test-${suffix}`;
  const approver = `approver-${suffix}`;
  const clusters = namespaced("terraformclusters", namespace);
  const mergePatch = k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch);
  let clients: PlaneClients;
  let asApprover: k8s.CustomObjectsApi;
  let admissionRegistration: k8s.AdmissionregistrationV1Api;
  let rbac: k8s.RbacAuthorizationV1Api;
  let server: AdmissionServer;
  let dir: string;
  let adminName: string;
  let sequence = 0;

  function labelledCluster(base: string): TerraformCluster {
    const cluster = minimalCluster(`${base}-${(++sequence).toString(36)}`);
    cluster.metadata!.labels = { [selectorLabel]: suffix };
    return cluster;
  }
  const annotate = (objects: k8s.CustomObjectsApi, name: string, values: Record<string, string | null>) =>
    objects.patchNamespacedCustomObject(
      { ...clusters, name, body: { metadata: { annotations: values } } },
      mergePatch,
    ) as Promise<k8s.KubernetesObject>;

  beforeAll(async () => {
    clients = planeClients();
    admissionRegistration = clients.kubeConfig.makeApiClient(k8s.AdmissionregistrationV1Api);
    rbac = clients.kubeConfig.makeApiClient(k8s.RbacAuthorizationV1Api);
    await installCrds(clients.extensions);
    await clients.core.createNamespace({ body: { metadata: { name: namespace } } });
    const review = await clients.kubeConfig
      .makeApiClient(k8s.AuthenticationV1Api)
      .createSelfSubjectReview({ body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" } });
    adminName = review.status!.userInfo!.username!;

    // A second user, impersonated with the admin's token, who may only patch TerraformClusters here.
    await rbac.createNamespacedRole({
      namespace,
      body: { metadata: { name: approver }, rules: [{ apiGroups: [apiGroup], resources: ["terraformclusters"], verbs: ["get", "patch"] }] },
    });
    await rbac.createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name: approver },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: approver },
        subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: approver }],
      },
    });
    const plane = sharedControlPlane();
    const approverConfig = new k8s.KubeConfig();
    approverConfig.loadFromOptions({
      clusters: [{ name: "plane", server: plane.server, caFile: plane.caFile }],
      users: [{ name: "approver", token: plane.token, impersonateUser: approver }],
      contexts: [{ name: "approver", cluster: "plane", user: "approver" }],
      currentContext: "approver",
    });
    asApprover = approverConfig.makeApiClient(k8s.CustomObjectsApi);

    dir = mkdtempSync(join(tmpdir(), "captf-approver-it-"));
    const started = await startLoopbackAdmissionServer(clients.kubeConfig, dir);
    server = started.server;
    await admissionRegistration.createMutatingWebhookConfiguration({
      body: buildMutatingWebhookConfiguration({
        name: configurationName,
        url: started.url,
        caBundle: started.caPem,
        namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": namespace } },
        objectSelector: { matchLabels: { [selectorLabel]: suffix } },
      }),
    });
    // The API server picks up a new configuration within a second or so: create approved clusters until one comes back recorded.
    await waitFor(
      "the mutating webhook configuration in effect",
      async () => {
        const body = labelledCluster("probe");
        body.metadata!.annotations = { [annotations.approvePlan]: "p1:probe" };
        const created = (await clients.objects.createNamespacedCustomObject({ ...clusters, body })) as k8s.KubernetesObject;
        return created.metadata!.annotations?.[annotations.planApprovedBy] === adminName ? true : undefined;
      },
      30_000,
    );
  }, 120_000);

  afterAll(async () => {
    await admissionRegistration?.deleteMutatingWebhookConfiguration({ name: configurationName }).catch(() => undefined);
    await clients?.core.deleteNamespace({ name: namespace }).catch(() => undefined);
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it("records the author of each approval, keeps the record against forgery, and drops it with the approval", async () => {
    const body = labelledCluster("approved");
    await clients.objects.createNamespacedCustomObject({ ...clusters, body });
    const name = body.metadata!.name!;
    const approvedBy = (object: k8s.KubernetesObject) => object.metadata!.annotations?.[annotations.planApprovedBy];

    // RBAC bindings reach the authorizer's cache shortly after they are written.
    const approved = await waitFor("the approver's RBAC in effect", () =>
      annotate(asApprover, name, { [annotations.approvePlan]: "p1:first" }).catch((error: unknown) =>
        error instanceof k8s.ApiException && error.code === 403 ? undefined : Promise.reject(error),
      ),
    );
    expect(approvedBy(approved)).toBe(approver);

    // Claiming the approval for someone else, without approving anything new, gets the record back.
    expect(approvedBy(await annotate(asApprover, name, { [annotations.planApprovedBy]: "someone-else" }))).toBe(approver);
    expect(approvedBy(await annotate(clients.objects, name, { [annotations.planApprovedBy]: null }))).toBe(approver);

    // A new approval is its author's; removing the approval removes the record.
    expect(
      approvedBy(await annotate(clients.objects, name, { [annotations.approvePlan]: "p1:second", [annotations.planApprovedBy]: approver })),
    ).toBe(adminName);
    const withdrawn = await annotate(clients.objects, name, { [annotations.approvePlan]: null });
    expect(withdrawn.metadata!.annotations?.[annotations.approvePlan]).toBeUndefined();
    expect(approvedBy(withdrawn)).toBeUndefined();
  }, 60_000);
});
