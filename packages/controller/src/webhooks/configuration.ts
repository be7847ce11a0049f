/**
 * The validating webhooks as the API server sees them: one per kind, at the path the admission
 * server serves it, and the ValidatingWebhookConfiguration that registers them (pure; the
 * shipped manifest and the integration test both build theirs here), plus the one mutating
 * webhook, which records a plan's approver. Every webhook `failurePolicy: Fail` and
 * `sideEffects: None`; the status subresource is not covered.
 */
import type {
  V1LabelSelector,
  V1MutatingWebhookConfiguration,
  V1ValidatingWebhook,
  V1ValidatingWebhookConfiguration,
} from "@kubernetes/client-node";
import { apiGroup, apiVersion, kinds, type Kind } from "@captf/contract/api";
import { kindDefinitions } from "../api/kinds.js";

export type AdmissionOperation = "CREATE" | "UPDATE" | "DELETE";

/** One kind's webhook. */
export interface ValidatingWebhookDefinition {
  kind: Kind;
  plural: string;
  scope: "Namespaced" | "Cluster";
  /** DELETE only where a validator judges deletions (the others always admit them). */
  operations: readonly AdmissionOperation[];
  /** URL path on the admission server. */
  path: string;
  /** Name of the webhook in the configuration; the API server quotes it in every denial. */
  name: string;
}

/** `/validate-infrastructure-cluster-x-k8s-io-v1alpha1-<kind>`, as controller-runtime names it. */
export function webhookPath(kind: Kind): string {
  return `/validate-${apiGroup.replaceAll(".", "-")}-${apiVersion}-${kind.toLowerCase()}`;
}

/** `validation.<kind>.infrastructure.cluster.x-k8s.io`. */
export function webhookName(kind: Kind): string {
  return `validation.${kind.toLowerCase()}.${apiGroup}`;
}

/** Kinds whose deletion a validator may refuse. */
const deletionValidatedKinds: readonly Kind[] = [kinds.machine, kinds.clusterIdentity];

/** Every kind's webhook, in the order of the API reference. */
export const validatingWebhooks: readonly ValidatingWebhookDefinition[] = kindDefinitions.map((definition) => ({
  kind: definition.kind,
  plural: definition.plural,
  scope: definition.scope,
  operations: deletionValidatedKinds.includes(definition.kind) ? ["CREATE", "UPDATE", "DELETE"] : ["CREATE", "UPDATE"],
  path: webhookPath(definition.kind),
  name: webhookName(definition.kind),
}));

export const defaultWebhookConfigurationName = "captf-validating-webhook-configuration";
/** Seconds the API server waits for an answer; the facts lookups (SubjectAccessReview, lists) fit well inside. */
export const defaultWebhookTimeoutSeconds = 10;

/** The in-cluster Service in front of the manager's webhook port. */
export interface WebhookService {
  namespace: string;
  name: string;
  /** The Service's port; 443 when unset. */
  port?: number;
}

export type WebhookEndpoint =
  | { service: WebhookService; url?: never }
  /** Base URL of the server (`https://host:port`); each webhook appends its path. */
  | { url: string; service?: never };

export type WebhookConfigurationOptions = WebhookEndpoint & {
  /** PEM of the CA that signed the serving certificate. Omit it when cert-manager injects it (see injectCaFrom). */
  caBundle?: string;
  /** `<namespace>/<Certificate>` for cert-manager's CA injector (annotation cert-manager.io/inject-ca-from). */
  injectCaFrom?: string;
  name?: string;
  timeoutSeconds?: number;
  /** Narrows the namespaced kinds' webhooks (cluster-scoped identities ignore it). */
  namespaceSelector?: V1LabelSelector;
  /** Narrows every webhook to objects with these labels (on DELETE, the stored object's). */
  objectSelector?: V1LabelSelector;
};

export class WebhookConfigurationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "WebhookConfigurationError";
  }
}

/** The mutating webhook: only the approver record of a TerraformCluster's plan approval (./approver.ts). */
export const approverWebhook = {
  kind: kinds.cluster,
  plural: "terraformclusters",
  scope: "Namespaced",
  operations: ["CREATE", "UPDATE"],
  path: `/mutate-${apiGroup.replaceAll(".", "-")}-${apiVersion}-terraformcluster`,
  name: `approver.terraformcluster.${apiGroup}`,
} as const satisfies ValidatingWebhookDefinition;

export const defaultMutatingWebhookConfigurationName = "captf-mutating-webhook-configuration";

/** Where the API server calls a webhook: the Service (with its path) or the URL, and the CA. */
function clientConfigOf(options: WebhookConfigurationOptions, path: string) {
  const caBundle = options.caBundle === undefined ? {} : { caBundle: Buffer.from(options.caBundle).toString("base64") };
  return options.service
    ? {
        service: {
          namespace: options.service.namespace,
          name: options.service.name,
          path,
          ...(options.service.port === undefined ? {} : { port: options.service.port }),
        },
        ...caBundle,
      }
    : { url: `${options.url}${path}`, ...caBundle };
}

function checkWebhookOptions(options: WebhookConfigurationOptions): void {
  if ((options.service === undefined) === (options.url === undefined)) {
    throw new WebhookConfigurationError(
      "webhook configuration: set exactly one of service (in-cluster Service) and url (https://host:port)",
    );
  }
  if (options.url !== undefined && !/^https:\/\/[^/?#]+$/.test(options.url)) {
    throw new WebhookConfigurationError(
      `webhook configuration: url ${JSON.stringify(options.url)} must be https://host[:port] without a path; each webhook appends its own`,
    );
  }
  if (options.caBundle === undefined && options.injectCaFrom === undefined) {
    throw new WebhookConfigurationError(
      "webhook configuration: set caBundle (PEM of the serving certificate's CA) or injectCaFrom (<namespace>/<cert-manager Certificate>)",
    );
  }
}

/** A webhook's entry in either configuration: where it is called, what it matches, how it fails. */
function webhookEntry(options: WebhookConfigurationOptions, webhook: ValidatingWebhookDefinition): V1ValidatingWebhook {
  return {
    name: webhook.name,
    admissionReviewVersions: ["v1"],
    clientConfig: clientConfigOf(options, webhook.path),
    rules: [
      {
        apiGroups: [apiGroup],
        apiVersions: [apiVersion],
        operations: [...webhook.operations],
        resources: [webhook.plural],
        scope: webhook.scope,
      },
    ],
    failurePolicy: "Fail",
    matchPolicy: "Equivalent",
    sideEffects: "None",
    timeoutSeconds: options.timeoutSeconds ?? defaultWebhookTimeoutSeconds,
    ...(options.namespaceSelector && webhook.scope === "Namespaced" ? { namespaceSelector: options.namespaceSelector } : {}),
    ...(options.objectSelector ? { objectSelector: options.objectSelector } : {}),
  };
}

function configurationMetadata(options: WebhookConfigurationOptions, defaultName: string) {
  return {
    name: options.name ?? defaultName,
    ...(options.injectCaFrom ? { annotations: { "cert-manager.io/inject-ca-from": options.injectCaFrom } } : {}),
  };
}

export function buildValidatingWebhookConfiguration(options: WebhookConfigurationOptions): V1ValidatingWebhookConfiguration {
  checkWebhookOptions(options);
  return {
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: "ValidatingWebhookConfiguration",
    metadata: configurationMetadata(options, defaultWebhookConfigurationName),
    webhooks: validatingWebhooks.map((webhook) => webhookEntry(options, webhook)),
  };
}

/** The MutatingWebhookConfiguration of the approver webhook; `name` defaults to captf's own. Status writes are not covered. */
export function buildMutatingWebhookConfiguration(options: WebhookConfigurationOptions): V1MutatingWebhookConfiguration {
  checkWebhookOptions(options);
  return {
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: "MutatingWebhookConfiguration",
    metadata: configurationMetadata(options, defaultMutatingWebhookConfigurationName),
    // Another mutating webhook may rewrite the annotations after this one: run again if so.
    webhooks: [{ ...webhookEntry(options, approverWebhook), reinvocationPolicy: "IfNeeded" }],
  };
}

/** The Markdown table of kinds, operations, paths and names docs/webhooks.md carries (a test keeps it in step). */
export function renderWebhookTable(): string {
  const rows = validatingWebhooks.map(
    (webhook) => `| ${webhook.kind} | ${webhook.operations.join(", ")} | \`${webhook.path}\` | \`${webhook.name}\` |`,
  );
  return ["| Kind | Operations | Path | Webhook name |", "| --- | --- | --- | --- |", ...rows].join("\n");
}
