#!/usr/bin/env node
// Drill: 10,000 generated TerraformCluster, TerraformMachine and TerraformMachinePool objects
// (from the CRDs' schemas, pushed toward the edges) created with dryRun through a real
// kube-apiserver with captf's CRDs and webhooks. The API server's own validation and the
// documented rules restated in admission-objects.mjs are the oracle. Starts its own plane.
// Run `npx tsc -b` first. Usage: node bench/drills/fuzz-admission.mjs [--runs N] [--seed S]
import { loadController, loadControllerFile, loadDependency, loadTestkit, requireBuilt } from "../lib/controller-packages.mjs";
import { startAdmissionChain } from "../lib/admission-chain.mjs";
import { admissionProperty } from "../lib/admission-objects.mjs";
import { drillOptions, fc, runProperty } from "../lib/run-property.mjs";

requireBuilt();
const k8s = await loadDependency("@kubernetes/client-node");
const { pino } = await loadDependency("pino");
const { inputNames } = await loadDependency("@captf/contract");
const { apiGroup, apiVersion, groupVersion } = await loadDependency("@captf/contract/api");
const { KubeClient, kindDefinitions, renderCrd } = await loadController();
const webhooks = await loadControllerFile("webhooks/index.js");
const { startControlPlane, freeLoopbackPort } = await loadTestkit();
const { generateServingCertificate } = await import(new URL("../../packages/testkit/dist/certificates.js", import.meta.url).href);

const options = drillOptions();
const roles = { TerraformCluster: "cluster", TerraformMachine: "machine", TerraformMachinePool: "machinepool" };
const definitions = kindDefinitions.filter((definition) => definition.kind in roles);
const kinds = Object.fromEntries(
  definitions.map((definition) => [
    definition.kind,
    {
      role: roles[definition.kind],
      specSchema: renderCrd(definition).spec.versions[0].schema.openAPIV3Schema.properties.spec,
      contractInputs: inputNames(roles[definition.kind]),
    },
  ]),
);

const started = performance.now();
const plane = await startControlPlane({ controllerManager: false });
let chain;
try {
  const kubeConfig = new k8s.KubeConfig();
  kubeConfig.loadFromFile(plane.kubeconfigPath);
  const extensions = kubeConfig.makeApiClient(k8s.ApiextensionsV1Api);
  for (const definition of definitions) {
    // Through loadYaml's JSON form, as the tests do: the typed client drops x-kubernetes-* keys otherwise.
    const body = k8s.loadYaml(JSON.stringify(renderCrd(definition)));
    await extensions.createCustomResourceDefinition({ body });
    for (;;) {
      const crd = await extensions.readCustomResourceDefinition({ name: body.metadata.name });
      if (crd.status?.conditions?.some((c) => c.type === "Established" && c.status === "True")) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  chain = await startAdmissionChain({
    k8s,
    KubeClient,
    kubeConfig,
    webhooks,
    generateServingCertificate,
    freeLoopbackPort,
    logger: pino({ level: "silent" }),
    group: apiGroup,
    version: apiVersion,
    plurals: Object.fromEntries(definitions.map((definition) => [definition.kind, definition.plural])),
    probe: {
      apiVersion: groupVersion,
      kind: "TerraformCluster",
      spec: { source: { image: "ghcr.io/x/y:v1" }, identityRef: { name: "aws" }, jobs: { env: [{ name: "TF_LOG", value: "x" }] } },
    },
  });
  console.log(`fuzz-admission: plane and webhooks up in ${((performance.now() - started) / 1000).toFixed(1)} s (${plane.server})`);
  const tally = new Map();
  const held = await runProperty(
    "admission chain (dryRun create)",
    admissionProperty(fc, { kinds, dryRunCreate: chain.dryRunCreate, apiVersion: groupVersion, metadata: chain.metadata }, tally),
    options,
    tally,
  );
  process.exitCode = held ? 0 : 1;
} finally {
  await chain?.stop();
  await plane.stop();
}
