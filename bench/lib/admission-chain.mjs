// The real admission chain for the fuzzed-admission drill: captf's admission server on loopback,
// registered with the API server by buildValidatingWebhookConfiguration (CA made here), selecting
// only one namespace and a label, so suites sharing the plane are untouched. Objects are created
// with dryRun=All: the API server runs its CRD validation, then the webhooks, and stores nothing.
// Dependencies come in as arguments, so the drill (dist/) and the jest test (sources) share this.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * Starts the chain. `k8s`: @kubernetes/client-node; `KubeClient`: the controller's client (the
 * facts' lookups go through it); `kubeConfig` of the plane; `webhooks`:
 * startAdmissionServer, buildValidatingWebhookConfiguration, kubernetesAdmissionFacts;
 * `plurals`: kind → plural; `probe`: an object of one kind the webhooks refuse (to see the
 * configuration in effect).
 */
export async function startAdmissionChain({
  k8s,
  KubeClient,
  kubeConfig,
  webhooks,
  generateServingCertificate,
  freeLoopbackPort,
  logger,
  group,
  version,
  plurals,
  probe,
}) {
  const suffix = Date.now().toString(36);
  const namespace = `fuzz-admission-${suffix}`;
  const selector = { "captf.io/fuzz": suffix };
  const configurationName = `captf-fuzz-admission-${suffix}`;
  const core = kubeConfig.makeApiClient(k8s.CoreV1Api);
  const objects = kubeConfig.makeApiClient(k8s.CustomObjectsApi);
  const registrations = kubeConfig.makeApiClient(k8s.AdmissionregistrationV1Api);
  const dir = mkdtempSync(join(tmpdir(), "captf-fuzz-admission-"));
  const cleanups = [() => rmSync(dir, { recursive: true, force: true })];
  const stop = async () => {
    for (const cleanup of cleanups.reverse()) await Promise.resolve(cleanup()).catch(() => undefined);
  };
  try {
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    cleanups.push(() => core.deleteNamespace({ name: namespace }));
    const certificate = generateServingCertificate(dir, "127.0.0.1");
    const server = await webhooks.startAdmissionServer({
      port: await freeLoopbackPort(),
      host: "127.0.0.1",
      certFile: certificate.certFile,
      keyFile: certificate.keyFile,
      logger,
      managerUsername: "system:serviceaccount:captf-system:captf-controller-manager",
      facts: webhooks.kubernetesAdmissionFacts(new KubeClient(kubeConfig)),
    });
    cleanups.push(() => server.close());
    const configuration = webhooks.buildValidatingWebhookConfiguration({
      name: configurationName,
      url: `https://127.0.0.1:${server.port}`,
      caBundle: certificate.caPem,
      namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": namespace } },
      objectSelector: { matchLabels: selector },
    });
    await registrations.createValidatingWebhookConfiguration({ body: configuration });
    cleanups.push(() => registrations.deleteValidatingWebhookConfiguration({ name: configurationName }));

    const metadata = { name: "fuzzed", labels: selector };
    /** Creates with dryRun=All; { admitted: true } or the Status's code and message. */
    const dryRunCreate = async (kind, body) => {
      try {
        await objects.createNamespacedCustomObject({ group, version, plural: plurals[kind], namespace, body, dryRun: "All" });
        return { admitted: true };
      } catch (error) {
        if (!(error instanceof k8s.ApiException)) throw error;
        const status = typeof error.body === "string" ? safeJson(error.body) : error.body;
        return { code: error.code, message: String(status?.message ?? error.body ?? "") };
      }
    };
    // The API server picks up a new configuration within a second or so.
    const deadline = Date.now() + 30_000;
    for (;;) {
      const answer = await dryRunCreate(probe.kind, { ...probe, metadata });
      if (!answer.admitted && answer.message.includes("denied the request")) break;
      if (Date.now() > deadline) throw new Error(`the webhook configuration is not in effect after 30 s: ${JSON.stringify(answer)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return { dryRunCreate, metadata, namespace, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

function safeJson(text) {
  try {
    return JSON.parse(text);
  } catch {
    return { message: text };
  }
}
