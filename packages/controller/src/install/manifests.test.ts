import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "@jest/globals";
import type { V1Deployment, V1PodDisruptionBudget, V1Service, V1ValidatingWebhookConfiguration } from "@kubernetes/client-node";
import type { ManifestObject } from "./clusterctl.js";
import { parse, parseAllDocuments } from "yaml";
import { renderCrdFiles } from "../api/crds.js";
import { parseManagerFlags } from "../flags.js";
import { webhookPath } from "../webhooks/configuration.js";
import { kinds } from "@captf/contract/api";
import {
  defaultInstallOptions,
  installNames,
  installPath,
  podDisruptionBudgetObject,
  renderInstallFiles,
  servingCertificateDnsNames,
  staleInstallFiles,
  userRoleObjects,
  webhookCertDir,
} from "./manifests.js";
import {
  editPermissions,
  managerPermissions,
  planApproverPermissions,
  renderPermissionTable,
  runnerPermissions,
  viewPermissions,
} from "./permissions.js";

const packageRoot = fileURLToPath(new URL("../../", import.meta.url));
type AnyObject = ManifestObject;
/** cert-manager's Certificate: the fields these tests read. */
type Certificate = ManifestObject & { spec: { secretName: string; dnsNames: string[] } };

function installObjects(options = defaultInstallOptions): AnyObject[] {
  const file = renderInstallFiles(options).find((candidate) => candidate.path === installPath)!;
  return parseAllDocuments(file.content).map((document) => document.toJS() as AnyObject);
}

const deploymentOf = (objects: AnyObject[]) => objects.find((object) => object.kind === "Deployment") as V1Deployment;

describe("the install manifests", () => {
  it("config/ matches src/install (run `pnpm --filter @captf/controller gen` when this fails)", () => {
    expect(staleInstallFiles(packageRoot)).toEqual([]);
  });

  it(
    "lists every object once in apply order: the namespace, the CRDs, RBAC, Services, the Deployment, the certificate, the " + "webhooks",
    () => {
      const objects = installObjects();
      expect(objects.map((object) => `${object.kind}/${object.metadata.name}`)).toEqual([
        "Namespace/captf-system",
        ...renderCrdFiles().map((file) => `CustomResourceDefinition/${(parse(file.content) as ManifestObject).metadata.name}`),
        "ServiceAccount/captf-controller-manager",
        "ClusterRole/captf-manager-role",
        "ClusterRoleBinding/captf-manager-rolebinding",
        "ClusterRole/captf-runner",
        "ClusterRole/captf-metrics-reader",
        "ClusterRole/captf-view",
        "ClusterRole/captf-edit",
        "ClusterRole/captf-plan-approver",
        "ValidatingAdmissionPolicy/captf-plan-approver",
        "ValidatingAdmissionPolicyBinding/captf-plan-approver",
        "Service/captf-webhook-service",
        "Service/captf-controller-manager-metrics-service",
        "Deployment/captf-controller-manager",
        "PodDisruptionBudget/captf-controller-manager",
        "Issuer/captf-selfsigned-issuer",
        "Certificate/captf-serving-cert",
        "ValidatingWebhookConfiguration/captf-validating-webhook-configuration",
        "MutatingWebhookConfiguration/captf-mutating-webhook-configuration",
      ]);
      for (const object of objects.filter((candidate) => candidate.metadata.namespace !== undefined))
        expect(object.metadata.namespace).toBe("captf-system");
    },
  );

  it("runs the Deployment's arguments and environment through the manager's own flag parser", async () => {
    const deployment = deploymentOf(installObjects());
    const container = deployment.spec!.template.spec!.containers[0]!;
    const env = Object.fromEntries(
      container.env!.map((variable) => [variable.name, variable.value ?? `<${variable.valueFrom!.fieldRef!.fieldPath}>`]),
    );
    expect(env).toEqual({
      POD_NAMESPACE: "<metadata.namespace>",
      SERVICE_ACCOUNT_NAME: "<spec.serviceAccountName>",
      CAPTF_MANAGER_IMAGE: container.image,
    });
    const parsed = await parseManagerFlags(container.args!, {
      ...env,
      POD_NAMESPACE: "captf-system",
      SERVICE_ACCOUNT_NAME: "captf-controller-manager",
    });
    if (parsed.kind !== "run") throw new Error(JSON.stringify(parsed));
    const settings = parsed.options;
    expect(settings.leaderElection.enabled).toBe(true);
    expect(settings.logging.format).toBe("json");
    expect(settings.runnerImage).toBe(container.image);
    expect(settings.diagnostics.insecure).toBe(false);
    expect(settings.managerUser).toBe("system:serviceaccount:captf-system:captf-controller-manager");
    const portOf = (name: string) => container.ports!.find((port) => port.name === name)!.containerPort;
    expect(settings.webhook.port).toBe(portOf("webhook-server"));
    expect(settings.healthAddr).toBe(`:${portOf("healthz")}`);
    expect(settings.diagnostics.address).toBe(`:${portOf("metrics")}`);
    expect(settings.webhook.certDir).toBe(webhookCertDir);
    expect(container.volumeMounts).toEqual([{ name: "cert", mountPath: webhookCertDir, readOnly: true }]);
    expect(deployment.spec!.template.spec!.volumes).toEqual([{ name: "cert", secret: { secretName: installNames.certificateSecret } }]);
    expect(container.livenessProbe!.httpGet).toEqual({ path: "/healthz", port: "healthz" });
    expect(container.readinessProbe!.httpGet).toEqual({ path: "/readyz", port: "healthz" });
  });

  it("runs the manager as 65532 without privileges, on a read-only root", () => {
    const spec = deploymentOf(installObjects()).spec!.template.spec!;
    expect(spec.serviceAccountName).toBe(installNames.serviceAccount);
    expect(spec.securityContext).toEqual({
      runAsNonRoot: true,
      runAsUser: 65532,
      runAsGroup: 65532,
      seccompProfile: { type: "RuntimeDefault" },
    });
    expect(spec.containers[0]!.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      capabilities: { drop: ["ALL"] },
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
    });
  });

  it(
    "points the webhooks at the Service in front of the webhook port, with cert-manager's CA for a certificate naming that " + "Service",
    () => {
      const objects = installObjects();
      const service = objects.find(
        (object) => object.kind === "Service" && object.metadata.name === installNames.webhookService,
      )! as V1Service;
      expect(service.spec!.ports).toEqual([{ name: "https", port: 443, targetPort: "webhook-server", protocol: "TCP" }]);
      expect(service.spec!.selector).toEqual(deploymentOf(objects).spec!.selector.matchLabels);
      const configuration = objects.find((object) => object.kind === "ValidatingWebhookConfiguration")! as V1ValidatingWebhookConfiguration;
      expect(configuration.metadata!.annotations).toEqual({ "cert-manager.io/inject-ca-from": `captf-system/${installNames.certificate}` });
      expect(configuration.webhooks).toHaveLength(9);
      expect(configuration.webhooks![0]!.clientConfig).toEqual({
        service: { namespace: "captf-system", name: installNames.webhookService, path: webhookPath(kinds.cluster) },
      });
      const certificate = objects.find((object) => object.kind === "Certificate")! as Certificate;
      expect(certificate.spec.secretName).toBe(installNames.certificateSecret);
      expect(certificate.spec.dnsNames).toContain(`${installNames.webhookService}.captf-system.svc`);
      expect(certificate.spec.dnsNames).toEqual(servingCertificateDnsNames(defaultInstallOptions));
      // The shipped webhook configuration is the one the webhook tests keep as a golden file.
      const golden = readFileSync(new URL("../../testdata/webhooks/validating-webhook-configuration.yaml", import.meta.url), "utf8");
      expect(configuration).toEqual(parse(golden));
    },
  );

  it("aggregates captf-view into view, captf-edit into edit and admin, and leaves captf-plan-approver to be bound on its own", () => {
    const roles = Object.fromEntries(userRoleObjects().map((role) => [role.metadata!.name!, role]));
    const aggregation = (name: string) =>
      Object.keys(roles[name]!.metadata!.labels!).filter((label) => label.startsWith("rbac.authorization.k8s.io/aggregate-to-"));
    expect(aggregation(installNames.viewRole)).toEqual(["rbac.authorization.k8s.io/aggregate-to-view"]);
    expect(aggregation(installNames.editRole)).toEqual([
      "rbac.authorization.k8s.io/aggregate-to-edit",
      "rbac.authorization.k8s.io/aggregate-to-admin",
    ]);
    expect(aggregation(installNames.planApproverRole)).toEqual([]);
    const verbs = (name: string) => new Set(roles[name]!.rules!.flatMap((rule) => rule.verbs));
    expect([...verbs(installNames.viewRole)]).toEqual(["get", "list", "watch"]);
    // The approver reads and patches the three kinds that run plans (approve: the policy keeps it to the approval), and records its
    // approval as an event.
    expect(roles[installNames.planApproverRole]!.rules!.map((rule) => [rule.resources, rule.verbs])).toEqual([
      [
        ["terraformclusters", "terraformmachines", "terraformmachinepools"],
        ["get", "list", "watch", "patch", "approve"],
      ],
      [["events"], ["create"]],
    ]);
    // Identities hold the keys to cloud credentials: cluster administrators' alone.
    expect(roles[installNames.editRole]!.rules!.flatMap((rule) => rule.resources)).not.toContain("terraformclusteridentities");
    // Nothing outside captf's API group, but the approver's event (pinned above).
    for (const [name, role] of Object.entries(roles)) {
      const rules = name === installNames.planApproverRole ? role.rules!.slice(0, 1) : role.rules!;
      expect([
        name,
        rules.every((rule) => rule.apiGroups!.length === 1 && rule.apiGroups![0] === "infrastructure.cluster.x-k8s.io"),
      ]).toEqual([name, true]);
    }
  });

  it("keeps at most one manager Pod away at a time with a PodDisruptionBudget that selects the Deployment's Pods", () => {
    const objects = installObjects();
    const budget = objects.find((object) => object.kind === "PodDisruptionBudget")! as V1PodDisruptionBudget;
    expect(budget).toEqual(podDisruptionBudgetObject(defaultInstallOptions));
    expect(budget.spec!.maxUnavailable).toBe(1);
    const podLabels = deploymentOf(objects).spec!.template.metadata!.labels!;
    expect(Object.entries(budget.spec!.selector!.matchLabels!).every(([key, value]) => podLabels[key] === value)).toBe(true);
    expect(budget.spec!.selector!.matchLabels).toEqual(deploymentOf(objects).spec!.selector.matchLabels);
  });

  it("renders another image into the Deployment and CAPTF_MANAGER_IMAGE, and another namespace everywhere", () => {
    const objects = installObjects({ namespace: "ops", image: "registry.example/captf-controller:dev" });
    const container = deploymentOf(objects).spec!.template.spec!.containers[0]!;
    expect(container.image).toBe("registry.example/captf-controller:dev");
    expect(container.env).toContainEqual({ name: "CAPTF_MANAGER_IMAGE", value: "registry.example/captf-controller:dev" });
    expect(objects[0]!.metadata.name).toBe("ops");
    expect(objects.filter((object) => object.metadata.namespace !== undefined).every((object) => object.metadata.namespace === "ops")).toBe(
      true,
    );
    expect(objects.find((object) => object.kind === "ClusterRoleBinding")!.subjects).toEqual([
      { kind: "ServiceAccount", name: "captf-controller-manager", namespace: "ops" },
    ]);
  });
});

describe("docs/installation.md", () => {
  const page = readFileSync(new URL("../../../../docs/installation.md", import.meta.url), "utf8");

  it("lists the manager's and the runner's permissions as the manifests grant them", () => {
    expect(page).toContain(renderPermissionTable(managerPermissions));
    expect(page).toContain(renderPermissionTable(runnerPermissions));
  });

  it("lists the permissions of the roles for people", () => {
    for (const permissions of [viewPermissions, editPermissions, planApproverPermissions])
      expect(page).toContain(renderPermissionTable(permissions));
  });

  it("names the Secret and the mount path the Deployment expects", () => {
    expect(page).toContain(`\`${installNames.certificateSecret}\``);
    expect(page).toContain(`\`${webhookCertDir}\``);
  });
});
