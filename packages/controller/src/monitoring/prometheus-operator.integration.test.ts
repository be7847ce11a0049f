// The operator's pack against the Prometheus operator's own CRDs (tools/install.sh --only
// prometheus-crds) on the test API server: config/monitoring's PrometheusRule and ServiceMonitor,
// and config/clusterctl/monitoring.yaml rendered by the real `clusterctl generate yaml` for another
// namespace, are server-side applied field by field (an unknown field fails the apply).
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { parseAllDocuments } from "yaml";
import { describeWithTools, requireTool, sharedControlPlane, waitFor } from "@captf/testkit";
import { defaultInstallOptions, monitoringOptions } from "../install/manifests.js";
import type { ServiceMonitorDocument } from "./documents.test-support.js";
import { monitoringObjects, monitoringPaths } from "./monitoring-files.js";

/** An object of config/monitoring/ as applied: a test compares its spec (or a ConfigMap's data). */
type Applied = k8s.KubernetesObject & { spec?: unknown; data?: unknown };
const packagePath = (path: string) => fileURLToPath(new URL(`../../${path}`, import.meta.url));
const fieldManager = "captf-monitoring-test";

describeWithTools(
  ["etcd", "kube-apiserver", "clusterctl", "prometheusrule-crd", "servicemonitor-crd"],
  "the monitoring objects under the Prometheus operator's CRDs",
  () => {
    const namespace = `monitoring-${Date.now().toString(36)}`;
    let kubeConfig: k8s.KubeConfig;
    let objects: k8s.KubernetesObjectApi;
    const apply = (object: k8s.KubernetesObject, dryRun?: "All") =>
      objects.patch(object, undefined, dryRun, fieldManager, true, k8s.PatchStrategy.ServerSideApply);

    beforeAll(async () => {
      kubeConfig = new k8s.KubeConfig();
      kubeConfig.loadFromFile(sharedControlPlane().kubeconfigPath);
      objects = k8s.KubernetesObjectApi.makeApiClient(kubeConfig);
      const extensions = kubeConfig.makeApiClient(k8s.ApiextensionsV1Api);
      for (const tool of ["prometheusrule-crd", "servicemonitor-crd"] as const) {
        const crd = k8s.loadYaml<k8s.V1CustomResourceDefinition>(readFileSync(requireTool(tool), "utf8"));
        await apply(crd);
        await waitFor(
          async () =>
            (await extensions.readCustomResourceDefinition({ name: crd.metadata!.name! })).status?.conditions?.some(
              (c) => c.type === "Established" && c.status === "True",
            )
              ? true
              : undefined,
          30_000,
          `${crd.metadata!.name} established`,
        );
      }
      await kubeConfig.makeApiClient(k8s.CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
    }, 60_000);

    afterAll(async () => {
      await kubeConfig
        ?.makeApiClient(k8s.CoreV1Api)
        .deleteNamespace({ name: namespace })
        .catch(() => undefined);
    });

    it("accepts config/monitoring's PrometheusRule and ServiceMonitor as shipped (a dry run, in this suite's namespace)", async () => {
      for (const path of [monitoringPaths.prometheusRule, monitoringPaths.serviceMonitor]) {
        const object = k8s.loadYaml<Applied>(readFileSync(packagePath(path), "utf8"));
        object.metadata!.namespace = namespace;
        const applied = (await apply(object, "All")) as Applied;
        expect([path, applied.spec]).toEqual([path, object.spec]);
      }
    });

    it("refuses a field the operator's schema does not declare (the check has teeth)", async () => {
      const serviceMonitor = k8s.loadYaml<ServiceMonitorDocument>(readFileSync(packagePath(monitoringPaths.serviceMonitor), "utf8"));
      serviceMonitor.metadata!.namespace = namespace;
      const tlsConfig = serviceMonitor.spec.endpoints[0]!.tlsConfig;
      (tlsConfig as Record<string, unknown>).serverNam = tlsConfig.serverName;
      const error = await apply(serviceMonitor).then(
        () => undefined,
        (failure: { code?: number; body?: string }) => failure,
      );
      expect({ code: error?.code, body: error?.body }).toEqual({ code: expect.any(Number), body: expect.stringContaining("serverNam") });
    });

    it("renders config/clusterctl/monitoring.yaml for the install namespace with clusterctl, and the objects apply there", async () => {
      const rendered = execFileSync(
        requireTool("clusterctl"),
        ["generate", "yaml", "--from", packagePath("config/clusterctl/monitoring.yaml")],
        {
          encoding: "utf8",
          env: { ...process.env, CAPTF_NAMESPACE: namespace, HOME: process.env.HOME ?? "/tmp" },
        },
      );
      const documents = parseAllDocuments(rendered).map((document) => document.toJS() as Applied);
      expect(documents).toEqual(monitoringObjects(monitoringOptions({ ...defaultInstallOptions, namespace })));
      for (const object of documents) {
        const applied = (await apply(object)) as Applied;
        expect([object.kind, applied.metadata!.namespace, applied.spec ?? applied.data]).toEqual([
          object.kind,
          namespace,
          object.spec ?? object.data,
        ]);
      }
      const serviceMonitor = documents.find((object) => object.kind === "ServiceMonitor")! as ServiceMonitorDocument;
      expect(serviceMonitor.spec.namespaceSelector.matchNames).toEqual([namespace]);
      expect(serviceMonitor.spec.endpoints[0]!.tlsConfig.serverName).toMatch(new RegExp(`\\.${namespace}\\.svc$`));
    });
  },
);
