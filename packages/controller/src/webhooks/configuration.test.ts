import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "@jest/globals";
import { stringify } from "yaml";
import { kinds, type Kind } from "@captf/contract/api";
import {
  buildValidatingWebhookConfiguration,
  renderWebhookTable,
  validatingWebhooks,
  webhookName,
  webhookPath,
  WebhookConfigurationError,
} from "./configuration.js";

// UPDATE_GOLDEN=1 rewrites testdata/webhooks/*.yaml from the current builder.
const update = process.env.UPDATE_GOLDEN === "1";
/** The cluster-scoped kinds: an administrator's identities, module policies and notification receivers. */
const clusterScoped: readonly Kind[] = [kinds.clusterIdentity, kinds.modulePolicy, kinds.notificationReceiver];
const golden = fileURLToPath(new URL("../../testdata/webhooks/validating-webhook-configuration.yaml", import.meta.url));

describe("buildValidatingWebhookConfiguration", () => {
  it("matches the golden manifest (in-cluster Service, CA injected by cert-manager)", () => {
    const yaml = stringify(
      buildValidatingWebhookConfiguration({
        service: { namespace: "captf-system", name: "captf-webhook-service" },
        injectCaFrom: "captf-system/captf-serving-cert",
      }),
    );
    if (update) {
      mkdirSync(dirname(golden), { recursive: true });
      writeFileSync(golden, yaml);
    }
    expect(yaml).toBe(readFileSync(golden, "utf8"));
  });

  it("covers the nine kinds, DELETE only where a validator judges it, and never the status subresource", () => {
    const configuration = buildValidatingWebhookConfiguration({ url: "https://127.0.0.1:9443", caBundle: "PEM" });
    const byName = Object.fromEntries(configuration.webhooks!.map((webhook) => [webhook.name, webhook]));
    expect(Object.keys(byName)).toHaveLength(9);
    for (const kind of Object.values(kinds)) {
      const webhook = byName[webhookName(kind)]!;
      const rule = webhook.rules![0]!;
      expect(rule.operations).toEqual(
        kind === kinds.machine || kind === kinds.clusterIdentity ? ["CREATE", "UPDATE", "DELETE"] : ["CREATE", "UPDATE"],
      );
      expect(rule.resources).toEqual([validatingWebhooks.find((w) => w.kind === kind)!.plural]);
      expect(rule.scope).toBe(clusterScoped.includes(kind) ? "Cluster" : "Namespaced");
      expect(webhook).toMatchObject({
        failurePolicy: "Fail",
        sideEffects: "None",
        matchPolicy: "Equivalent",
        admissionReviewVersions: ["v1"],
        timeoutSeconds: 10,
      });
      expect(webhook.clientConfig).toEqual({
        url: `https://127.0.0.1:9443${webhookPath(kind)}`,
        caBundle: Buffer.from("PEM").toString("base64"),
      });
    }
    expect(webhookPath(kinds.cluster)).toBe("/validate-infrastructure-cluster-x-k8s-io-v1alpha1-terraformcluster");
    expect(webhookName(kinds.machinePoolTemplate)).toBe("validation.terraformmachinepooltemplate.infrastructure.cluster.x-k8s.io");
  });

  it("narrows namespaced webhooks by namespace and every webhook by object labels when asked", () => {
    const configuration = buildValidatingWebhookConfiguration({
      url: "https://127.0.0.1:1",
      caBundle: "PEM",
      name: "test",
      namespaceSelector: { matchLabels: { a: "b" } },
      objectSelector: { matchLabels: { c: "d" } },
      timeoutSeconds: 5,
    });
    for (const webhook of configuration.webhooks!) {
      expect(webhook.namespaceSelector).toEqual(
        clusterScoped.some((kind) => webhook.name === webhookName(kind)) ? undefined : { matchLabels: { a: "b" } },
      );
      expect(webhook.objectSelector).toEqual({ matchLabels: { c: "d" } });
      expect(webhook.timeoutSeconds).toBe(5);
    }
  });

  it.each<[string, Parameters<typeof buildValidatingWebhookConfiguration>[0], string]>([
    ["neither service nor url", { caBundle: "PEM" } as never, "set exactly one of service"],
    [
      "both service and url",
      { caBundle: "PEM", url: "https://a", service: { namespace: "n", name: "s" } } as never,
      "set exactly one of service",
    ],
    ["a url with a path", { caBundle: "PEM", url: "https://a:1/validate" }, "without a path"],
    ["a plain-http url", { caBundle: "PEM", url: "http://a:1" }, "must be https://host[:port]"],
    ["no CA", { url: "https://a:1" }, "set caBundle"],
  ])("refuses %s", (_name, options, message) => {
    expect(() => buildValidatingWebhookConfiguration(options)).toThrow(WebhookConfigurationError);
    expect(() => buildValidatingWebhookConfiguration(options)).toThrow(message);
  });
});

describe("docs/webhooks.md", () => {
  it("carries the table of kinds, operations, paths and names", () => {
    const doc = readFileSync(new URL("../../../../docs/webhooks.md", import.meta.url), "utf8");
    expect(doc).toContain(renderWebhookTable());
  });
});
