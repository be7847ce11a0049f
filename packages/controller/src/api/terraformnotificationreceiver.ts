/**
 * TerraformNotificationReceiver: cluster-scoped, owned by an administrator: where the manager sends the events that need a
 * person (a plan awaiting approval, drift found, Ready lost, ...), as a signed webhook, a Slack-compatible message or a
 * CloudEvent, for the namespaces, kinds and event reasons it selects.
 */
import { Type, type Static } from "@sinclair/typebox";
import { kinds, managerEventReasons } from "@captf/contract/api";
import { LabelSelectorSchema } from "./kubernetes-types.js";
import { ageColumn, kindSchema, type KindDefinition } from "./resource.js";
import { cel, described, dnsLabelPattern, dnsSubdomainPattern, setList, StringEnum, Timestamp } from "./schema.js";

/** The event reasons a receiver gets when it names none: what needs a person. */
export const defaultNotificationReasons = [
  "PlanReady",
  "PlanChanged",
  "DestructivePlanBlocked",
  "DriftDetected",
  "JobFailed",
  "ReadyLost",
  "ReadyRegained",
  "StateUnreadable",
] as const satisfies readonly (keyof typeof managerEventReasons)[];

/** The kinds whose events a receiver may select. */
export const notifiedKinds = [kinds.cluster, kinds.machine, kinds.machinePool, kinds.machineTemplate, kinds.clusterIdentity] as const;

export const receiverTypes = ["webhook", "slack", "cloudevents"] as const;
export type ReceiverType = (typeof receiverTypes)[number];

function secretKeyRef(what: string, defaultKey: string) {
  return Type.Object(
    {
      name: Type.String({ description: "Name of the Secret.", minLength: 1, maxLength: 253, pattern: dnsSubdomainPattern }),
      namespace: Type.String({
        description: "Namespace of the Secret; the manager reads it there.",
        minLength: 1,
        maxLength: 63,
        pattern: dnsLabelPattern,
      }),
      key: Type.Optional(
        Type.String({ description: `Data key holding ${what}; default ${defaultKey}.`, minLength: 1, maxLength: 253, default: defaultKey }),
      ),
    },
    { description: `A Secret holding ${what}, read by the manager at each delivery (a rotated value is used at once); never logged.` },
  );
}

export const TerraformNotificationReceiverSpecSchema = Type.Object(
  {
    type: StringEnum(receiverTypes, {
      description:
        "webhook: a JSON POST signed with HMAC-SHA256 over the body (header X-Captf-Signature: sha256=<hex>); slack: a " +
        "Slack-compatible incoming webhook message ({text}); cloudevents: a CloudEvent 1.0 over HTTP (see cloudEvents.mode).",
    }),
    url: Type.Optional(
      Type.String({
        description: "Where to POST, inline (http or https). Use urlSecretRef when the URL carries a token (a Slack webhook's does).",
        minLength: 1,
        maxLength: 2048,
        pattern: "^https?://",
      }),
    ),
    urlSecretRef: Type.Optional(secretKeyRef("the URL", "url")),
    signingSecretRef: Type.Optional(secretKeyRef("the HMAC-SHA256 key of the webhook's signature", "secret")),
    cloudEvents: Type.Optional(
      Type.Object(
        {
          mode: Type.Optional(
            StringEnum(["binary", "structured"] as const, {
              description: "binary: attributes as ce-* headers, the data as the body; structured: one application/cloudevents+json body.",
              default: "binary",
            }),
          ),
        },
        { description: "CloudEvents delivery settings (type cloudevents)." },
      ),
    ),
    namespaceSelector: Type.Optional(
      described(
        LabelSelectorSchema,
        "Namespaces whose objects' events are sent, by their labels; unset or {} selects every namespace. Events of " +
          "cluster-scoped objects (an identity's) are sent only when it is unset.",
      ),
    ),
    kinds: Type.Optional(
      Type.Array(StringEnum(notifiedKinds), {
        description: "Kinds whose events are sent; unset selects every kind.",
        maxItems: notifiedKinds.length,
        ...setList,
      }),
    ),
    reasons: Type.Optional(
      Type.Array(StringEnum(Object.keys(managerEventReasons) as (keyof typeof managerEventReasons)[]), {
        description: `Event reasons sent (docs/events.md); unset sends what needs a person: ${defaultNotificationReasons.join(", ")}.`,
        minItems: 1,
        maxItems: 128,
        ...setList,
      }),
    ),
  },
  {
    description: "Desired state of a TerraformNotificationReceiver. Every field is mutable; a change applies to the next event.",
    ...cel(
      { rule: "has(self.url) != has(self.urlSecretRef)", message: "set exactly one of url and urlSecretRef" },
      { rule: "self.type != 'webhook' || has(self.signingSecretRef)", message: "a webhook receiver needs signingSecretRef" },
    ),
  },
);
export type TerraformNotificationReceiverSpec = Static<typeof TerraformNotificationReceiverSpecSchema>;

export const TerraformNotificationReceiverStatusSchema = Type.Object(
  {
    lastSentTime: Type.Optional(Timestamp({ description: "When a notification was last delivered (written at most once a minute)." })),
    lastFailure: Type.Optional(
      Type.Object(
        {
          time: Timestamp({ description: "When it happened." }),
          result: StringEnum(["failed", "dropped"] as const, {
            description: "failed: given up after the retries, or refused for good; dropped: the manager's queue was full.",
          }),
          reason: Type.String({ description: "The event reason of the notification." }),
          message: Type.String({
            description: "Why: the HTTP status, the socket error's code, or the Secret that could not be read; never the URL or key.",
            maxLength: 1024,
          }),
        },
        { description: "The last notification that was not delivered." },
      ),
    ),
  },
  { description: "What the manager observed of its deliveries to this receiver." },
);
export type TerraformNotificationReceiverStatus = Static<typeof TerraformNotificationReceiverStatusSchema>;

export const TerraformNotificationReceiverSchema = kindSchema(
  "TerraformNotificationReceiver sends the manager's events that need a person (a plan awaiting approval, a destructive plan " +
    "blocked, drift found, a Job failed, Ready lost and regained, state unreadable) to a webhook, a Slack-compatible incoming " +
    "webhook or a CloudEvents endpoint, filtered by namespace, kind and event reason. Delivery never holds up a reconcile.",
  TerraformNotificationReceiverSpecSchema,
  TerraformNotificationReceiverStatusSchema,
);
export type TerraformNotificationReceiver = Static<typeof TerraformNotificationReceiverSchema>;

export const terraformNotificationReceiverDefinition: KindDefinition<typeof TerraformNotificationReceiverSchema> = {
  kind: kinds.notificationReceiver,
  plural: "terraformnotificationreceivers",
  singular: "terraformnotificationreceiver",
  shortNames: [],
  scope: "Cluster",
  description: TerraformNotificationReceiverSchema.description!,
  notes: [
    "Cluster-scoped, for cluster administrators: captf-edit does not include it.",
    "One notification per event the manager records (once per transition, never per pass); see docs/notifications.md.",
  ],
  schema: TerraformNotificationReceiverSchema,
  statusSubresource: true,
  printerColumns: [
    { name: "Type", type: "string", jsonPath: ".spec.type", description: "webhook, slack or cloudevents" },
    { name: "Last Sent", type: "date", jsonPath: ".status.lastSentTime", description: "When a notification was last delivered" },
    { name: "Last Failure", type: "string", jsonPath: ".status.lastFailure.message", description: "Why the last one was not" },
    ageColumn,
  ],
};
