// The TerraformMachineTemplate controller against the real API server and real OCI registries:
// images built with umoci, pushed with skopeo to Debian's docker-registry (anonymous) or served by
// an in-process registry that demands a bearer token (private). The controller runs as a user bound
// to the manager's shipped ClusterRole, so every read and write it makes is one the RBAC allows.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { apiGroup, apiVersion, conditionReasons } from "@captf/contract/api";
import {
  addIndex,
  buildImage,
  describeWithTools,
  pushImage,
  sharedControlPlane,
  startLocalRegistry,
  startTokenRegistry,
  type LocalRegistry,
} from "@captf/testkit";
import { impersonatingConfig } from "../api/crds.test-support.js";
import type { TerraformMachineTemplate } from "../api/templates.js";
import { kubeEventRecorder } from "../events/event-recorder.js";
import { managerPermissions, policyRules } from "../install/permissions.js";
import { CaptfMetrics } from "../metrics/captf-metrics.js";
import { seriesValue } from "../metrics/series.test-support.js";
import { preparePlane, type PlaneClients } from "../reconcile/plane.test-support.js";
import { KubeClient } from "../runtime/kube-client.js";
import { captureLogs } from "../runtime/runtime.test-support.js";
import { ociArchitecture } from "./inspect-image.js";
import { machineTemplateController } from "./template-controller.js";

describeWithTools(
  ["etcd", "kube-apiserver", "kube-controller-manager", "umoci", "skopeo", "docker-registry"],
  "TerraformMachineTemplate capacity from real registries",
  () => {
    const run = Date.now().toString(36);
    const namespace = `tmpl-${run}`;
    const managerUser = `captf-manager-${run}`;
    const architecture = ociArchitecture();
    const otherArchitecture = architecture === "arm64" ? "amd64" : "arm64";
    const schema = JSON.stringify({
      type: "object",
      properties: { size: { type: "string" } },
      required: ["size"],
      additionalProperties: false,
    });
    const logs = captureLogs("info");
    let plane: PlaneClients;
    /** The manager's client, as the manager's shipped permissions allow. */
    let asManager: KubeClient;
    let events: k8s.EventsV1Api;
    let registry: LocalRegistry;
    let privateRegistry: { host: string; requests: string[]; stop: () => Promise<void> };
    let layout: string;
    let clock = Date.parse("2026-03-01T12:00:00Z");
    const metricsRegistry = new Registry();
    const metrics = new CaptfMetrics(metricsRegistry);

    const controller = (architectureOverride?: string) =>
      machineTemplateController(
        { client: asManager, events: kubeEventRecorder(asManager, { instance: "template-it", now: () => clock }), metrics },
        { now: () => clock, ...(architectureOverride ? { architecture: architectureOverride } : {}) },
      );
    const reconcile = (name: string, using = controller()) =>
      using.reconcile(`${namespace}/${name}`, {
        namespace,
        name,
        reconcileId: "test",
        logger: logs.logger,
        signal: new AbortController().signal,
      });

    beforeAll(async () => {
      plane = await preparePlane(namespace);
      const server = sharedControlPlane();
      const adminConfig = new k8s.KubeConfig();
      adminConfig.loadFromFile(server.kubeconfigPath);
      events = adminConfig.makeApiClient(k8s.EventsV1Api);
      const rbac = adminConfig.makeApiClient(k8s.RbacAuthorizationV1Api);
      // The manager's shipped rules, bound in this namespace to an impersonated user.
      await rbac.createClusterRole({ body: { metadata: { name: managerUser }, rules: policyRules(managerPermissions) } });
      await rbac.createNamespacedRoleBinding({
        namespace,
        body: {
          metadata: { name: managerUser },
          roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: managerUser },
          subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: managerUser }],
        },
      });
      const managerConfig = impersonatingConfig(managerUser);
      asManager = new KubeClient(managerConfig);

      layout = join(mkdtempSync(join(tmpdir(), "captf-template-images-")), "layout");
      const files = { "/captf/module/main.tf": "# a module\n" };
      buildImage(layout, "sized", {
        files,
        labels: {
          "io.captf.capacity": '{"cpu":"4","memory":"16Gi"}',
          "io.captf.node-info": '{"architecture":"amd64","operatingSystem":"linux"}',
          "io.captf.variables-schema": schema,
        },
      });
      buildImage(layout, "bad-label", { files, labels: { "io.captf.capacity": "cpu=4" } });
      buildImage(layout, `multi-${architecture}`, { files, architecture, labels: { "io.captf.capacity": '{"cpu":"2"}' } });
      buildImage(layout, `multi-${otherArchitecture}`, {
        files,
        architecture: otherArchitecture,
        labels: { "io.captf.capacity": '{"cpu":"64"}' },
      });
      // The index lists the other architecture first: picking the manager's is a choice, not the first entry.
      addIndex(layout, "multi", [
        { tag: `multi-${otherArchitecture}`, architecture: otherArchitecture },
        { tag: `multi-${architecture}`, architecture },
      ]);
      registry = await startLocalRegistry();
      for (const tag of ["sized", "bad-label", "multi"]) pushImage(layout, tag, `${registry.host}/captf/machine:${tag}`);
      privateRegistry = await startTokenRegistry(layout, "puller", "pull-password");
    }, 120_000);

    afterAll(async () => {
      await registry?.stop();
      await privateRegistry?.stop();
      if (layout) rmSync(join(layout, ".."), { recursive: true, force: true });
      const rbac = (() => {
        const config = new k8s.KubeConfig();
        config.loadFromFile(sharedControlPlane().kubeconfigPath);
        return config.makeApiClient(k8s.RbacAuthorizationV1Api);
      })();
      await rbac.deleteClusterRole({ name: managerUser }).catch(() => undefined);
      await plane?.core.deleteNamespace({ name: namespace }).catch(() => undefined);
    });

    const api = { group: apiGroup, version: apiVersion, plural: "terraformmachinetemplates", namespace };

    async function createTemplate(
      name: string,
      image: string,
      extra: { capacity?: Record<string, string>; jobs?: Record<string, unknown>; variables?: Record<string, unknown> } = {},
    ): Promise<void> {
      const spec = {
        source: { image },
        ...(extra.jobs ? { jobs: extra.jobs } : {}),
        ...(extra.variables ? { variables: extra.variables } : {}),
      };
      await plane.custom.createNamespacedCustomObject({
        ...api,
        body: {
          apiVersion: `${apiGroup}/${apiVersion}`,
          kind: "TerraformMachineTemplate",
          metadata: { name },
          spec: { template: { spec }, ...(extra.capacity ? { capacity: extra.capacity } : {}) },
        },
      });
    }

    const read = async (name: string) => (await plane.custom.getNamespacedCustomObject({ ...api, name })) as TerraformMachineTemplate;
    const conditionOf = (template: TerraformMachineTemplate, type: string) =>
      template.status?.conditions?.find((condition) => condition.type === type);
    const eventsOf = async (name: string) =>
      (await events.listNamespacedEvent({ namespace })).items
        .filter((event) => event.regarding?.name === name)
        .map((event) => ({ reason: event.reason, type: event.type, note: event.note }));

    function expectAllowedReasons(template: TerraformMachineTemplate): void {
      for (const condition of template.status?.conditions ?? [])
        expect(conditionReasons[condition.type as "CapacityResolved"][condition.status]).toContain(condition.reason);
    }

    it(
      "fills capacity, nodeInfo and capacitySource from the image's labels, records CapacityResolved once, and validates the " +
        "variables against the image's schema",
      async () => {
        const image = `${registry.host}/captf/machine:sized`;
        await createTemplate("sized", image, { variables: { size: "m5.large" } });
        expect(await reconcile("sized")).toEqual({});
        const template = await read("sized");
        expect(template.status).toMatchObject({
          capacity: { cpu: "4", memory: "16Gi" },
          nodeInfo: { architecture: "amd64", operatingSystem: "linux" },
          capacitySource: { source: "Image", image },
        });
        expect(conditionOf(template, "CapacityResolved")).toMatchObject({ status: "True", reason: "CapacityResolved" });
        expect(conditionOf(template, "VariablesValid")).toMatchObject({ status: "True", reason: "VariablesValid" });
        expectAllowedReasons(template);
        // Resolved: a second pass reads no image and writes nothing.
        expect(await reconcile("sized")).toEqual({});
        expect((await read("sized")).metadata?.resourceVersion).toBe(template.metadata?.resourceVersion);
        expect(await eventsOf("sized")).toEqual([
          { reason: "CapacityResolved", type: "Normal", note: `cpu=4, memory=16Gi from the image ${image}` },
        ]);
      },
    );

    it("rejects variables the image's schema does not allow, naming the variable and never its value", async () => {
      await createTemplate("wrong-variables", `${registry.host}/captf/machine:sized`, { variables: { sise: "canary-value-1234" } });
      await reconcile("wrong-variables");
      const condition = conditionOf(await read("wrong-variables"), "VariablesValid");
      expect(condition).toMatchObject({ status: "False", reason: "VariablesRejected" });
      expect(condition?.message).toContain("sise is not allowed here");
      expect(condition?.message).toContain("size is required but missing");
      expect(JSON.stringify((await read("wrong-variables")).status)).not.toContain("canary-value-1234");
    });

    it("lets spec.capacity win, and goes back to the label once spec.capacity is removed", async () => {
      const image = `${registry.host}/captf/machine:sized`;
      await createTemplate("override", image, { capacity: { cpu: "16" } });
      await reconcile("override");
      expect((await read("override")).status).toMatchObject({
        capacity: { cpu: "16" },
        nodeInfo: { architecture: "amd64" },
        capacitySource: { source: "Spec", image },
      });
      expect((await read("override")).status?.capacity).toEqual({ cpu: "16" });
      await plane.custom.patchNamespacedCustomObject(
        { ...api, name: "override", body: [{ op: "remove", path: "/spec/capacity" }] },
        k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.JsonPatch),
      );
      await reconcile("override");
      const back = await read("override");
      expect(back.status?.capacity).toEqual({ cpu: "4", memory: "16Gi" });
      expect(back.status?.capacitySource).toEqual({ source: "Image", image });
      expect((await eventsOf("override")).map((event) => event.note)).toEqual([
        "cpu=16 from spec.capacity",
        `cpu=4, memory=16Gi from the image ${image}`,
      ]);
    });

    it("reads the manager's architecture from an index, and the first linux image for an architecture the index lacks", async () => {
      await createTemplate("multi", `${registry.host}/captf/machine:multi`);
      await reconcile("multi");
      expect((await read("multi")).status?.capacity).toEqual({ cpu: "2" });
      await createTemplate("multi-s390x", `${registry.host}/captf/machine:multi`);
      await reconcile("multi-s390x", controller("s390x"));
      expect((await read("multi-s390x")).status?.capacity).toEqual({ cpu: "64" });
    });

    it(
      "gives ImageInspectFailed for a missing image, retries after 30 s doubling, records the event once and counts every " + "failure",
      async () => {
        const image = `${registry.host}/captf/machine:absent`;
        await createTemplate("absent", image);
        const using = controller();
        const before = await seriesValue(metricsRegistry, "captf_image_inspect_errors_total", { reason: "not_found" });
        expect(await reconcile("absent", using)).toEqual({ requeueAfterMillis: 30_000 });
        const template = await read("absent");
        expect(conditionOf(template, "CapacityResolved")).toMatchObject({
          status: "False",
          reason: "ImageInspectFailed",
          message: expect.stringContaining("answered 404"),
        });
        expect(conditionOf(template, "VariablesValid")).toMatchObject({ status: "Unknown", reason: "VariablesSchemaUnavailable" });
        expectAllowedReasons(template);
        // Woken early (a resync): no registry request, the rest of the back-off.
        clock += 10_000;
        expect(await reconcile("absent", using)).toEqual({ requeueAfterMillis: 20_000 });
        expect(await seriesValue(metricsRegistry, "captf_image_inspect_errors_total", { reason: "not_found" })).toBe(before + 1);
        clock += 20_000;
        expect(await reconcile("absent", using)).toEqual({ requeueAfterMillis: 60_000 });
        clock += 60_000;
        expect(await reconcile("absent", using)).toEqual({ requeueAfterMillis: 120_000 });
        expect(await seriesValue(metricsRegistry, "captf_image_inspect_errors_total", { reason: "not_found" })).toBe(before + 3);
        expect(await eventsOf("absent")).toEqual([
          { reason: "ImageInspectFailed", type: "Warning", note: expect.stringContaining(`reading the config of ${image} failed`) },
        ]);
      },
    );

    it("gives CapacityLabelInvalid for an unparsable label and does not read the same image again", async () => {
      const image = `${registry.host}/captf/machine:bad-label`;
      await createTemplate("bad-label", image);
      const before = await seriesValue(metricsRegistry, "captf_image_inspect_errors_total", { reason: "label_invalid" });
      expect(await reconcile("bad-label")).toEqual({});
      const template = await read("bad-label");
      expect(conditionOf(template, "CapacityResolved")).toMatchObject({
        status: "False",
        reason: "CapacityLabelInvalid",
        message: expect.stringContaining("io.captf.capacity is not a JSON object"),
      });
      expect(template.status?.capacitySource).toEqual({ source: "Image", image });
      expect(template.status?.capacity).toBeUndefined();
      expect(await seriesValue(metricsRegistry, "captf_image_inspect_errors_total", { reason: "label_invalid" })).toBe(before + 1);
      // No retry: the next pass changes nothing and records nothing.
      expect(await reconcile("bad-label")).toEqual({});
      expect((await read("bad-label")).metadata?.resourceVersion).toBe(template.metadata?.resourceVersion);
      expect(await eventsOf("bad-label")).toEqual([
        { reason: "ImageInspectFailed", type: "Warning", note: expect.stringContaining("io.captf.capacity is not a JSON object") },
      ]);
    });

    it("reads a private image with the credentials of the template's imagePullSecrets", async () => {
      const image = `${privateRegistry.host}/noop/machine:sized`;
      await createTemplate("private-anonymous", image);
      await reconcile("private-anonymous");
      expect(conditionOf(await read("private-anonymous"), "CapacityResolved")).toMatchObject({
        status: "False",
        reason: "ImageInspectFailed",
        message: expect.stringContaining(`the token service ${privateRegistry.host} answered 401`),
      });

      const auth = Buffer.from("puller:pull-password").toString("base64");
      await plane.core.createNamespacedSecret({
        namespace,
        body: {
          metadata: { name: "pull" },
          type: "kubernetes.io/dockerconfigjson",
          stringData: { ".dockerconfigjson": JSON.stringify({ auths: { [privateRegistry.host]: { auth } } }) },
        },
      });
      await createTemplate("private", image, { jobs: { imagePullSecrets: [{ name: "missing" }, { name: "pull" }] } });
      await reconcile("private");
      const template = await read("private");
      expect(template.status?.capacity).toEqual({ cpu: "4", memory: "16Gi" });
      expect(conditionOf(template, "CapacityResolved")).toMatchObject({ status: "True", reason: "CapacityResolved" });
      expect(JSON.stringify(template)).not.toContain("pull-password");
      expect(logs.lines.map((line) => JSON.stringify(line)).join("\n")).not.toContain("pull-password");
    });
  },
);
