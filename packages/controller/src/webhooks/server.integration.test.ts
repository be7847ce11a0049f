// The admission server behind the real kube-apiserver's admission chain: the configuration built
// by buildValidatingWebhookConfiguration is registered with a URL on loopback and a CA made here,
// and writes through the API server are admitted or refused with the validators' reasons. Facts
// come from the live API (SubjectAccessReview as the requester, identity users by list).
// The webhooks only match objects labelled for this suite, so suites sharing the plane are untouched.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { clusterApiCrdPaths, describeWithTools, sharedControlPlane } from "@captf/testkit";
import { apiGroup, apiVersion } from "@captf/contract/api";
import { clusterTemplate, identity, minimalCluster, minimalMachine } from "../api/examples.test-support.js";
import type { TerraformCluster } from "../api/terraformcluster.js";
import { installCrds, namespaced, planeClients, rejection, waitFor, type PlaneClients } from "../api/crds.test-support.js";
import { startLoopbackAdmissionServer } from "./admission-server.test-support.js";
import { buildValidatingWebhookConfiguration } from "./configuration.js";
import { clusterApiCoordinates } from "./facts.js";
import type { AdmissionServer } from "./server.js";

/** The real Cluster API CRDs (the TerraformMachine webhook reads Machines), created unless another suite did. */
async function installClusterApiCrds(extensions: k8s.ApiextensionsV1Api): Promise<void> {
  for (const path of clusterApiCrdPaths()) {
    const body = k8s.loadYaml<k8s.V1CustomResourceDefinition>(readFileSync(path, "utf8"));
    await extensions
      .createCustomResourceDefinition({ body })
      .catch((error: unknown) => (error instanceof k8s.ApiException && error.code === 409 ? undefined : Promise.reject(error)));
    await waitFor(`CRD ${body.metadata!.name!} Established`, async () => {
      const crd = await extensions.readCustomResourceDefinition({ name: body.metadata!.name! });
      return crd.status?.conditions?.some((condition) => condition.type === "Established" && condition.status === "True")
        ? true
        : undefined;
    });
  }
}

describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager", "go"], "the admission server behind the real API server", () => {
  const suffix = Date.now().toString(36);
  const namespace = `webhooks-${suffix}`;
  const selectorLabel = "captf.io/webhook-test";
  const configurationName = `captf-webhook-test-${suffix}`;
  const outsider = `outsider-${suffix}`;
  let clients: PlaneClients;
  let admissionRegistration: k8s.AdmissionregistrationV1Api;
  let rbac: k8s.RbacAuthorizationV1Api;
  let server: AdmissionServer;
  let dir: string;
  let sequence = 0;
  const uniqueName = (base: string) => `${base}-${(++sequence).toString(36)}`;
  const identities: string[] = [];

  /** Every object of this suite carries the label the webhooks select on. */
  function labelled<T extends k8s.KubernetesObject>(object: T): T {
    object.metadata = { ...object.metadata, labels: { ...object.metadata?.labels, [selectorLabel]: suffix } };
    return object;
  }
  const create = <T extends k8s.KubernetesObject>(plural: string, body: T) =>
    clients.objects.createNamespacedCustomObject({ ...namespaced(plural, namespace), body }) as Promise<T>;
  const remove = (plural: string, name: string) => clients.objects.deleteNamespacedCustomObject({ ...namespaced(plural, namespace), name });
  const identityCoordinates = { group: apiGroup, version: apiVersion, plural: "terraformclusteridentities" };
  const createIdentity = (objects: k8s.CustomObjectsApi, body: k8s.KubernetesObject) => {
    identities.push(body.metadata!.name!);
    return objects.createClusterCustomObject({ ...identityCoordinates, body }) as Promise<k8s.KubernetesObject>;
  };
  const deleteIdentity = (name: string) => clients.objects.deleteClusterCustomObject({ ...identityCoordinates, name });

  /** A cluster with a reserved variable name and a TF_ variable in its Job environment: only the webhook refuses these. */
  function refusedCluster(): TerraformCluster {
    const cluster = labelled(minimalCluster(uniqueName("refused")));
    cluster.spec.variables = { captf_cluster_name: "mine", region: "eu-west-1" };
    cluster.spec.jobs = { env: [{ name: "TF_LOG", value: "TRACE" }] };
    return cluster;
  }

  beforeAll(async () => {
    clients = planeClients();
    admissionRegistration = clients.kubeConfig.makeApiClient(k8s.AdmissionregistrationV1Api);
    rbac = clients.kubeConfig.makeApiClient(k8s.RbacAuthorizationV1Api);
    await installCrds(clients.extensions);
    await installClusterApiCrds(clients.extensions);
    await clients.core.createNamespace({ body: { metadata: { name: namespace } } });

    dir = mkdtempSync(join(tmpdir(), "captf-webhook-it-"));
    const started = await startLoopbackAdmissionServer(clients.kubeConfig, dir);
    server = started.server;
    const configuration = buildValidatingWebhookConfiguration({
      name: configurationName,
      url: started.url,
      caBundle: started.caPem,
      namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": namespace } },
      objectSelector: { matchLabels: { [selectorLabel]: suffix } },
    });
    await admissionRegistration.createValidatingWebhookConfiguration({ body: configuration });

    // The API server picks up a new configuration within a second or so: write a known-bad object until it is refused.
    await waitFor(
      "the webhook configuration in effect",
      async () => {
        const body = refusedCluster();
        try {
          await create("terraformclusters", body);
        } catch (error) {
          if (error instanceof k8s.ApiException && String(error.body).includes("denied the request")) return true;
          throw error;
        }
        await remove("terraformclusters", body.metadata!.name!);
        return undefined;
      },
      30_000,
    );
  });

  afterAll(async () => {
    await admissionRegistration?.deleteValidatingWebhookConfiguration({ name: configurationName }).catch(() => undefined);
    for (const name of identities) await deleteIdentity(name).catch(() => undefined);
    await rbac?.deleteClusterRoleBinding({ name: outsider }).catch(() => undefined);
    await rbac?.deleteClusterRole({ name: outsider }).catch(() => undefined);
    await clients?.core.deleteNamespace({ name: namespace }).catch(() => undefined);
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("admits a valid TerraformCluster", async () => {
    const body = labelled(minimalCluster(uniqueName("valid")));
    const created = await create("terraformclusters", body);
    expect(created.spec).toEqual(body.spec);
  });

  it("refuses a TerraformCluster the validator rejects, with every reason in the API error", async () => {
    const { code, message } = await rejection(create("terraformclusters", refusedCluster()));
    expect(code).toBe(422);
    expect(message).toContain('admission webhook "validation.terraformcluster.infrastructure.cluster.x-k8s.io" denied the request');
    expect(message).toContain('spec.jobs.env[0].name: "TF_LOG" is reserved: the runner owns every TF_* variable');
    expect(message).toContain('spec.variables: variable name "captf_cluster_name" is reserved');
    expect(message).not.toContain("mine");
  });

  it("refuses an UPDATE of a template's spec, and admits one of its metadata", async () => {
    const stored = await create("terraformclustertemplates", labelled(clusterTemplate(uniqueName("tpl"))));
    const changed = structuredClone(stored);
    changed.spec.template.spec.source.image = "ghcr.io/captf-io/module-images/noop-cluster:v0.2.0-opentofu";
    const replace = (body: k8s.KubernetesObject) =>
      clients.objects.replaceNamespacedCustomObject({
        ...namespaced("terraformclustertemplates", namespace),
        name: body.metadata!.name!,
        body,
      });
    const { code, message } = await rejection(replace(changed));
    expect(code).toBe(422);
    expect(message).toContain("TerraformClusterTemplate spec.template.spec is immutable; create a new TerraformClusterTemplate");
    stored.metadata!.annotations = { "example.com/owner": "platform" };
    await replace(stored);
  });

  it("refuses deleting an identity while a TerraformCluster uses it, and admits it once unused", async () => {
    const name = uniqueName(`aws-${suffix}`);
    await createIdentity(clients.objects, labelled(identity(name)));
    const userName = uniqueName("user");
    const user = labelled(minimalCluster(userName));
    user.spec.identityRef = { name };
    await create("terraformclusters", user);

    const { code, message } = await rejection(deleteIdentity(name));
    expect(code).toBe(403);
    expect(message).toContain(`TerraformClusterIdentity ${name} is used by TerraformCluster ${namespace}/${userName}`);

    await remove("terraformclusters", userName);
    await deleteIdentity(name);
  });

  it("refuses deleting a TerraformMachine a live Machine references, and admits it once the Machine is gone", async () => {
    const name = uniqueName("tm");
    await create("terraformmachines", labelled(minimalMachine(name)));
    const machines = { ...clusterApiCoordinates, plural: "machines", namespace };
    const machineName = uniqueName("machine");
    await clients.objects.createNamespacedCustomObject({
      ...machines,
      body: {
        apiVersion: `${clusterApiCoordinates.group}/${clusterApiCoordinates.version}`,
        kind: "Machine",
        metadata: { name: machineName },
        spec: {
          clusterName: "demo",
          bootstrap: { dataSecretName: "demo-bootstrap" },
          infrastructureRef: { apiGroup, kind: "TerraformMachine", name },
        },
      },
    });

    const { code, message } = await rejection(remove("terraformmachines", name));
    expect(code).toBe(403);
    expect(message).toContain(
      `TerraformMachine ${name} is the infrastructure of Machine ${machineName}, which is not being deleted; delete the Machine instead`,
    );

    // No Cluster API controller runs here, so the Machine carries no finalizer and goes at once.
    await clients.objects.deleteNamespacedCustomObject({ ...machines, name: machineName });
    await remove("terraformmachines", name);
  });

  it("refuses an identity whose author may not read its Secret, asking as that author", async () => {
    // The outsider may create identities (RBAC passes) but not read Secrets (the SubjectAccessReview fails).
    await rbac.createClusterRole({
      body: {
        metadata: { name: outsider },
        rules: [{ apiGroups: [apiGroup], resources: ["terraformclusteridentities"], verbs: ["create"] }],
      },
    });
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name: outsider },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: outsider },
        subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: outsider }],
      },
    });
    const plane = sharedControlPlane();
    const asOutsider = new k8s.KubeConfig();
    asOutsider.loadFromOptions({
      clusters: [{ name: "plane", server: plane.server, caFile: plane.caFile }],
      users: [{ name: "outsider", token: plane.token, impersonateUser: outsider }],
      contexts: [{ name: "outsider", cluster: "plane", user: "outsider" }],
      currentContext: "outsider",
    });
    const objects = asOutsider.makeApiClient(k8s.CustomObjectsApi);
    const body = labelled(identity(uniqueName(`stolen-${suffix}`)));
    // RBAC bindings reach the authorizer's cache shortly after they are written.
    const { code, message } = await waitFor("the outsider's RBAC in effect", async () => {
      const refused = await rejection(createIdentity(objects, structuredClone(body)));
      return refused.code === 403 && refused.message.includes("cannot create resource") ? undefined : refused;
    });
    expect(code).toBe(422);
    expect(message).toContain(
      `user "${outsider}" may not get Secret captf-system/aws: an identity may only expose a Secret its author can read`,
    );
  });
});
