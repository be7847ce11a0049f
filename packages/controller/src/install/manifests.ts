/**
 * The install manifests, rendered from code so that they follow the flags, the webhook paths, the
 * RBAC tables and the CRDs: one file per component under config/ and all of them, in apply
 * order, in config/install.yaml. `scripts/generate-install.mjs` writes what
 * {@link renderInstallFiles} returns; a test fails when the files on disk differ.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type {
  V1ClusterRole,
  V1ClusterRoleBinding,
  V1Deployment,
  V1Namespace,
  V1PodDisruptionBudget,
  V1Service,
  V1ServiceAccount,
  V1ValidatingAdmissionPolicy,
  V1ValidatingAdmissionPolicyBinding,
} from "@kubernetes/client-node";
import { stringify } from "yaml";
import { renderCrdFiles, type GeneratedFile } from "../api/crds.js";
import { buildMutatingWebhookConfiguration, buildValidatingWebhookConfiguration } from "../webhooks/configuration.js";
import { defaultManagerNamespace, managerServiceAccount, managerVersion } from "../manager-main.js";
import { renderMonitoringFiles, type MonitoringOptions } from "../monitoring/monitoring-files.js";
import {
  editPermissions,
  managerPermissions,
  planApproverPermissions,
  policyRules,
  runnerPermissions,
  viewPermissions,
  workspacePlurals,
} from "./permissions.js";
import { annotations, apiGroup } from "@captf/contract/api";

export interface InstallOptions {
  namespace: string;
  /** The manager image; also every Job's runner image (CAPTF_MANAGER_IMAGE). */
  image: string;
  /** The Deployment's replicas and its `--shards` (docs/scaling.md); default 1 each. A string is a clusterctl variable. */
  replicas?: number | string;
  shards?: number | string;
}

export const defaultManagerImage = `ghcr.io/captf-io/captf-controller:v${managerVersion}`;
export const defaultInstallOptions: InstallOptions = { namespace: defaultManagerNamespace, image: defaultManagerImage };

/** The names the manifests, the docs and the runbooks share. */
export const installNames = {
  deployment: "captf-controller-manager",
  serviceAccount: managerServiceAccount,
  managerRole: "captf-manager-role",
  managerRoleBinding: "captf-manager-rolebinding",
  runnerRole: "captf-runner",
  metricsReaderRole: "captf-metrics-reader",
  webhookService: "captf-webhook-service",
  metricsService: "captf-controller-manager-metrics-service",
  issuer: "captf-selfsigned-issuer",
  certificate: "captf-serving-cert",
  /** The kubernetes.io/tls Secret the Deployment mounts at the webhook cert dir (cert-manager writes it, or you do). */
  certificateSecret: "captf-webhook-service-cert",
  viewRole: "captf-view",
  editRole: "captf-edit",
  planApproverRole: "captf-plan-approver",
  podDisruptionBudget: "captf-controller-manager",
} as const;

export const ports = { webhook: 9443, health: 9440, metrics: 8443 } as const;
export const webhookCertDir = "/tmp/k8s-webhook-server/serving-certs";
/** The runtime user of the image and the Pod. */
export const managerUser = 65532;

const partOf = { "app.kubernetes.io/name": "captf", "app.kubernetes.io/part-of": "captf" };
const managerSelector = { "app.kubernetes.io/name": "captf", "app.kubernetes.io/component": "controller-manager" };

/** The manager's arguments in the shipped Deployment. */
export function deploymentArgs(options: Pick<InstallOptions, "shards"> = {}): string[] {
  return [
    "--leader-elect",
    `--shards=${options.shards ?? 1}`,
    `--health-addr=:${ports.health}`,
    `--diagnostics-address=:${ports.metrics}`,
    "--insecure-diagnostics=false",
    `--webhook-port=${ports.webhook}`,
    `--webhook-cert-dir=${webhookCertDir}`,
    "--logging-format=json",
  ];
}

export function namespaceObject(options: InstallOptions): V1Namespace {
  // The manager's Pod meets the restricted Pod Security Standard; enforce it.
  return {
    apiVersion: "v1",
    kind: "Namespace",
    metadata: {
      name: options.namespace,
      labels: { ...partOf, "pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest" },
    },
  };
}

export function deploymentObject(options: InstallOptions): V1Deployment {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: installNames.deployment, namespace: options.namespace, labels: { ...partOf, ...managerSelector } },
    spec: {
      // A clusterctl variable stands in for the number until clusterctl substitutes it.
      replicas: (options.replicas ?? 1) as number,
      selector: { matchLabels: managerSelector },
      template: {
        metadata: { labels: { ...partOf, ...managerSelector }, annotations: { "kubectl.kubernetes.io/default-container": "manager" } },
        spec: {
          serviceAccountName: installNames.serviceAccount,
          // The manager drains for 20 s after SIGTERM; the preStop sleep lets endpoints drop it first.
          terminationGracePeriodSeconds: 30,
          securityContext: {
            runAsNonRoot: true,
            runAsUser: managerUser,
            runAsGroup: managerUser,
            seccompProfile: { type: "RuntimeDefault" },
          },
          containers: [
            {
              name: "manager",
              image: options.image,
              imagePullPolicy: "IfNotPresent",
              args: deploymentArgs(options),
              env: [
                { name: "POD_NAMESPACE", valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } } },
                { name: "SERVICE_ACCOUNT_NAME", valueFrom: { fieldRef: { fieldPath: "spec.serviceAccountName" } } },
                { name: "CAPTF_MANAGER_IMAGE", value: options.image },
              ],
              ports: [
                { name: "webhook-server", containerPort: ports.webhook, protocol: "TCP" },
                { name: "healthz", containerPort: ports.health, protocol: "TCP" },
                { name: "metrics", containerPort: ports.metrics, protocol: "TCP" },
              ],
              livenessProbe: { httpGet: { path: "/healthz", port: "healthz" }, initialDelaySeconds: 15, periodSeconds: 20 },
              readinessProbe: { httpGet: { path: "/readyz", port: "healthz" }, initialDelaySeconds: 5, periodSeconds: 10 },
              lifecycle: { preStop: { sleep: { seconds: 5 } } },
              resources: { requests: { cpu: "100m", memory: "256Mi" }, limits: { memory: "1Gi" } },
              securityContext: {
                allowPrivilegeEscalation: false,
                capabilities: { drop: ["ALL"] },
                readOnlyRootFilesystem: true,
                runAsNonRoot: true,
              },
              terminationMessagePolicy: "FallbackToLogsOnError",
              volumeMounts: [{ name: "cert", mountPath: webhookCertDir, readOnly: true }],
            },
          ],
          volumes: [{ name: "cert", secret: { secretName: installNames.certificateSecret } }],
          tolerations: [{ key: "node-role.kubernetes.io/control-plane", effect: "NoSchedule" }],
        },
      },
    },
  };
}

export function serviceAccountObject(options: InstallOptions): V1ServiceAccount {
  return {
    apiVersion: "v1",
    kind: "ServiceAccount",
    metadata: { name: installNames.serviceAccount, namespace: options.namespace, labels: partOf },
  };
}

function clusterRole(name: string, rules: V1ClusterRole["rules"]): V1ClusterRole {
  return { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: { name, labels: partOf }, rules };
}

export function rbacObjects(options: InstallOptions): {
  serviceAccount: V1ServiceAccount;
  managerRole: V1ClusterRole;
  managerRoleBinding: V1ClusterRoleBinding;
  runnerRole: V1ClusterRole;
  metricsReaderRole: V1ClusterRole;
} {
  return {
    serviceAccount: serviceAccountObject(options),
    managerRole: clusterRole(installNames.managerRole, policyRules(managerPermissions)),
    managerRoleBinding: {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: installNames.managerRoleBinding, labels: partOf },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: installNames.managerRole },
      subjects: [{ kind: "ServiceAccount", name: installNames.serviceAccount, namespace: options.namespace }],
    },
    runnerRole: clusterRole(installNames.runnerRole, policyRules(runnerPermissions)),
    // Bind it to whatever scrapes /metrics (Prometheus' ServiceAccount).
    metricsReaderRole: clusterRole(installNames.metricsReaderRole, [{ nonResourceURLs: ["/metrics"], verbs: ["get"] }]),
  };
}

const aggregateTo = (role: "view" | "edit" | "admin") => ({ [`rbac.authorization.k8s.io/aggregate-to-${role}`]: "true" });

/**
 * Roles for people: `captf-view` joins the built-in `view` role (the built-in `edit` and `admin`
 * include `view`), `captf-edit` joins `edit` and `admin`, and `captf-plan-approver` is bound on its own.
 */
export function userRoleObjects(): V1ClusterRole[] {
  const withLabels = (role: V1ClusterRole, labels: Record<string, string>): V1ClusterRole => ({
    ...role,
    metadata: { ...role.metadata, labels: { ...partOf, ...labels } },
  });
  return [
    withLabels(clusterRole(installNames.viewRole, policyRules(viewPermissions)), aggregateTo("view")),
    withLabels(clusterRole(installNames.editRole, policyRules(editPermissions)), { ...aggregateTo("edit"), ...aggregateTo("admin") }),
    clusterRole(installNames.planApproverRole, policyRules(planApproverPermissions)),
  ];
}

/** What a plan approver (who may `approve` but not `update`) may change: the approval and the webhook's record of it. */
const approverAnnotations = [annotations.approvePlan, annotations.planApprovedBy];
const orEmpty = (field: string, empty: "{}" | "[]") =>
  `(has(object.metadata.${field}) ? object.metadata.${field} : ${empty}) == (has(oldObject.metadata.${field}) ? ` +
  `oldObject.metadata.${field} : ${empty})`;

/**
 * The ValidatingAdmissionPolicy and its binding that keep a plan approver's writes to the approval:
 * an update by a requester who holds the custom verb `approve` (captf-plan-approver) and not `update`
 * on the object's kind is refused unless spec, labels, finalizers, owners and every other annotation stay.
 */
export function planApproverPolicyObjects(): [V1ValidatingAdmissionPolicy, V1ValidatingAdmissionPolicyBinding] {
  const may = (verb: string) =>
    `authorizer.group('${apiGroup}').resource(request.resource.resource).namespace(request.namespace).check('${verb}').allowed()`;
  const name = installNames.planApproverRole;
  return [
    {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingAdmissionPolicy",
      metadata: { name, labels: partOf },
      spec: {
        failurePolicy: "Fail",
        matchConstraints: {
          resourceRules: [{ apiGroups: [apiGroup], apiVersions: ["*"], operations: ["UPDATE"], resources: [...workspacePlurals] }],
        },
        matchConditions: [{ name: "approver-only", expression: `${may("approve")} && !${may("update")}` }],
        variables: [
          { name: "approval", expression: JSON.stringify(approverAnnotations).replaceAll('"', "'") },
          { name: "before", expression: "has(oldObject.metadata.annotations) ? oldObject.metadata.annotations : {}" },
          { name: "after", expression: "has(object.metadata.annotations) ? object.metadata.annotations : {}" },
        ],
        validations: [
          {
            expression: [
              "object.spec == oldObject.spec",
              orEmpty("labels", "{}"),
              orEmpty("finalizers", "[]"),
              orEmpty("ownerReferences", "[]"),
              "variables.after.all(k, k in variables.approval || (k in variables.before && variables.before[k] == variables.after[k]))",
              "variables.before.all(k, k in variables.approval || k in variables.after)",
            ].join(" && "),
            message: `a plan approver may only set ${annotations.approvePlan}`,
            reason: "Forbidden",
          },
        ],
      },
    },
    {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingAdmissionPolicyBinding",
      metadata: { name, labels: partOf },
      spec: { policyName: name, validationActions: ["Deny"] },
    },
  ];
}

/**
 * At most one manager Pod evicted at a time: with the shipped single replica a drain still evicts it
 * (the webhooks are down until it is rescheduled); with two replicas a standby keeps serving. A Pod
 * that is not Ready may always be evicted, so a crash-looping manager never blocks a drain.
 */
export function podDisruptionBudgetObject(options: InstallOptions): V1PodDisruptionBudget {
  return {
    apiVersion: "policy/v1",
    kind: "PodDisruptionBudget",
    metadata: { name: installNames.podDisruptionBudget, namespace: options.namespace, labels: partOf },
    spec: { maxUnavailable: 1, selector: { matchLabels: managerSelector }, unhealthyPodEvictionPolicy: "AlwaysAllow" },
  };
}

function service(options: InstallOptions, name: string, port: number, targetPort: string, labels: Record<string, string> = {}): V1Service {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, namespace: options.namespace, labels: { ...partOf, ...labels } },
    spec: { selector: managerSelector, ports: [{ name: "https", port, targetPort, protocol: "TCP" }] },
  };
}

export function webhookServiceObject(options: InstallOptions): V1Service {
  return service(options, installNames.webhookService, 443, "webhook-server");
}

export function metricsServiceObject(options: InstallOptions): V1Service {
  // Its own component label, so that the ServiceMonitor selects it and not the webhook Service.
  return service(options, installNames.metricsService, ports.metrics, "metrics", { "app.kubernetes.io/component": "metrics" });
}

/** The DNS names the serving certificate must carry: the webhook Service's and the metrics Service's. */
export function servingCertificateDnsNames(options: InstallOptions): string[] {
  return [installNames.webhookService, installNames.metricsService].flatMap((name) => [
    `${name}.${options.namespace}.svc`,
    `${name}.${options.namespace}.svc.cluster.local`,
  ]);
}

/** cert-manager's self-signed Issuer and the Certificate it writes into the Secret the Deployment mounts. */
export function certManagerObjects(options: InstallOptions): Record<string, unknown>[] {
  return [
    {
      apiVersion: "cert-manager.io/v1",
      kind: "Issuer",
      metadata: { name: installNames.issuer, namespace: options.namespace, labels: partOf },
      spec: { selfSigned: {} },
    },
    {
      apiVersion: "cert-manager.io/v1",
      kind: "Certificate",
      metadata: { name: installNames.certificate, namespace: options.namespace, labels: partOf },
      spec: {
        dnsNames: servingCertificateDnsNames(options),
        issuerRef: { kind: "Issuer", name: installNames.issuer },
        secretName: installNames.certificateSecret,
      },
    },
  ];
}

export function validatingWebhookConfigurationObject(options: InstallOptions) {
  return buildValidatingWebhookConfiguration({
    service: { namespace: options.namespace, name: installNames.webhookService },
    injectCaFrom: `${options.namespace}/${installNames.certificate}`,
  });
}

export function mutatingWebhookConfigurationObject(options: InstallOptions) {
  return buildMutatingWebhookConfiguration({
    service: { namespace: options.namespace, name: installNames.webhookService },
    injectCaFrom: `${options.namespace}/${installNames.certificate}`,
  });
}

const header =
  "# Generated from packages/controller/src/install by scripts/generate-install.mjs. Do not edit: run `pnpm --filter " +
  "@captf/controller gen`.\n";

function yamlDocuments(objects: readonly unknown[]): string {
  return objects.map((object) => stringify(object, { lineWidth: 0 })).join("---\n");
}

/** config/install.yaml: every object in apply order (namespace, CRDs, RBAC, Services, Deployment and its budget, certificate, webhooks). */
export const installPath = "config/install.yaml";

/** The monitoring objects' options for an install: its namespace, metrics Service and serving certificate. */
export function monitoringOptions(options: InstallOptions): MonitoringOptions {
  return {
    namespace: options.namespace,
    metricsService: metricsServiceObject(options),
    servingCertificateSecret: installNames.certificateSecret,
  };
}

/** The component files under config/, config/install.yaml and the opt-in config/monitoring files, paths relative to the package root. */
export function renderInstallFiles(options: InstallOptions = defaultInstallOptions): GeneratedFile[] {
  const rbac = rbacObjects(options);
  const components: GeneratedFile[] = [
    { path: "config/manager/namespace.yaml", content: yamlDocuments([namespaceObject(options)]) },
    { path: "config/rbac/service_account.yaml", content: yamlDocuments([rbac.serviceAccount]) },
    { path: "config/rbac/role.yaml", content: yamlDocuments([rbac.managerRole]) },
    { path: "config/rbac/role_binding.yaml", content: yamlDocuments([rbac.managerRoleBinding]) },
    { path: "config/rbac/runner_role.yaml", content: yamlDocuments([rbac.runnerRole]) },
    { path: "config/rbac/metrics_reader_role.yaml", content: yamlDocuments([rbac.metricsReaderRole]) },
    { path: "config/rbac/user_roles.yaml", content: yamlDocuments(userRoleObjects()) },
    { path: "config/rbac/plan_approver_policy.yaml", content: yamlDocuments(planApproverPolicyObjects()) },
    { path: "config/webhook/service.yaml", content: yamlDocuments([webhookServiceObject(options)]) },
    { path: "config/manager/metrics_service.yaml", content: yamlDocuments([metricsServiceObject(options)]) },
    { path: "config/manager/manager.yaml", content: yamlDocuments([deploymentObject(options)]) },
    { path: "config/manager/pdb.yaml", content: yamlDocuments([podDisruptionBudgetObject(options)]) },
    { path: "config/certmanager/certificate.yaml", content: yamlDocuments(certManagerObjects(options)) },
    {
      path: "config/webhook/manifests.yaml",
      content: yamlDocuments([validatingWebhookConfigurationObject(options), mutatingWebhookConfigurationObject(options)]),
    },
  ];
  const [namespace, ...rest] = components;
  const ordered = [namespace!.content, ...renderCrdFiles().map((file) => file.content), ...rest.map((file) => file.content)];
  const monitoring = renderMonitoringFiles(monitoringOptions(options));
  return [
    ...components.map((file) => ({ path: file.path, content: header + file.content })),
    { path: installPath, content: header + ordered.join("---\n") },
    ...monitoring,
  ];
}

/** Install files whose content on disk differs from the rendering, or which are missing. */
export function staleInstallFiles(packageRoot: string): string[] {
  return renderInstallFiles()
    .filter((file) => {
      const target = join(packageRoot, file.path);
      return !existsSync(target) || readFileSync(target, "utf8") !== file.content;
    })
    .map((file) => file.path);
}
