// The fuzzed-admission drill (bench/drills/fuzz-admission.mjs) at a test's size: 300 generated
// TerraformCluster, TerraformMachine and TerraformMachinePool objects (from the CRDs' schemas,
// pushed toward the edges) created with dryRun through the real API server and captf's webhooks,
// with a fixed seed. The API server's schema validation and the documented rules (restated in the
// drill, not taken from the validators) are the oracle: see bench/lib/admission-objects.mjs.
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import fc from "fast-check";
import { pino } from "pino";
import { inputNames, type Role } from "@captf/contract";
import { apiGroup, apiVersion, groupVersion } from "@captf/contract/api";
import { describeWithTools, freeLoopbackPort } from "@captf/testkit";
import { renderCrd } from "../api/crds.js";
import { installCrds, planeClients } from "../api/crds.test-support.js";
import { minimalCluster } from "../api/examples.test-support.js";
import { kindDefinitions } from "../api/kinds.js";
import { KubeClient } from "../runtime/kube-client.js";
import { generateServingCertificate } from "./certificates.test-support.js";
import { buildValidatingWebhookConfiguration } from "./configuration.js";
import { kubernetesAdmissionFacts } from "./facts.js";
import { startAdmissionServer } from "./server.js";

const benchLib = (file: string) => fileURLToPath(new URL(`../../../../bench/lib/${file}`, import.meta.url));
const roles: Record<string, Role> = { TerraformCluster: "cluster", TerraformMachine: "machine", TerraformMachinePool: "machinepool" };

type Chain = { dryRunCreate: (kind: string, body: unknown) => Promise<unknown>; metadata: unknown; stop: () => Promise<void> };

describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager", "go"], "fuzzed objects through the real admission chain", () => {
  let chain: Chain;
  const kinds = Object.fromEntries(
    kindDefinitions
      .filter((definition) => definition.kind in roles)
      .map((definition) => {
        const crd = renderCrd(definition) as { spec: { versions: { schema: { openAPIV3Schema: { properties: { spec: unknown } } } }[] } };
        const role = roles[definition.kind]!;
        return [
          definition.kind,
          {
            role,
            plural: definition.plural,
            specSchema: crd.spec.versions[0]!.schema.openAPIV3Schema.properties.spec,
            contractInputs: inputNames(role),
          },
        ];
      }),
  );

  beforeAll(async () => {
    const clients = planeClients();
    await installCrds(clients.extensions);
    const { startAdmissionChain } = (await import(benchLib("admission-chain.mjs"))) as {
      startAdmissionChain: (options: unknown) => Promise<Chain>;
    };
    const probe = minimalCluster();
    probe.spec.jobs = { env: [{ name: "TF_LOG", value: "TRACE" }] };
    chain = await startAdmissionChain({
      k8s,
      KubeClient,
      kubeConfig: clients.kubeConfig,
      webhooks: { startAdmissionServer, buildValidatingWebhookConfiguration, kubernetesAdmissionFacts },
      generateServingCertificate,
      freeLoopbackPort,
      logger: pino({ level: process.env.CAPTF_TEST_LOG_LEVEL ?? "silent" }),
      group: apiGroup,
      version: apiVersion,
      plurals: Object.fromEntries(Object.entries(kinds).map(([kind, { plural }]) => [kind, plural])),
      probe,
    });
  }, 120_000);

  afterAll(async () => {
    await chain?.stop();
  });

  it("never crashes the webhook; refuses every invalid object with a field path and admits every valid one", async () => {
    const { admissionProperty } = (await import(benchLib("admission-objects.mjs"))) as {
      admissionProperty: (fc: unknown, options: unknown) => fc.IAsyncProperty<unknown>;
    };
    const property = admissionProperty(fc, { kinds, dryRunCreate: chain.dryRunCreate, apiVersion: groupVersion, metadata: chain.metadata });
    await fc.assert(property, { numRuns: 300, seed: 1717 });
  }, 300_000);
});
