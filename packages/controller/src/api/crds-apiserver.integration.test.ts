// The generated CRDs on the real kube-apiserver: they install and become Established, store
// valid objects of every kind exactly as written, and reject what the schema and CEL rules forbid
// with the server's own messages.
import { beforeAll, describe, expect, it } from "@jest/globals";
import { describeWithTools } from "@captf/testkit";
import { apiGroup, apiVersion } from "@captf/contract/api";
import type { KubernetesObject } from "@kubernetes/client-node";
import type { Condition } from "../conditions/conditions.js";
import type { TerraformCluster } from "./terraformcluster.js";
import type { TerraformClusterIdentity } from "./terraformclusteridentity.js";
import {
  clusterTemplate,
  fullCluster,
  fullMachine,
  fullPool,
  identity,
  machineTemplate,
  minimalCluster,
  minimalMachine,
  minimalPool,
  poolTemplate,
} from "./examples.test-support.js";
import { getTable, installCrds, namespaced, planeClients, rejection, type PlaneClients } from "./crds.test-support.js";

/** An object whose fields a test sets freely, valid or not. */
type AnyObject = Record<string, unknown>;
/** What the API server stores: the kinds' own types when a test reads a field. */
type Stored = KubernetesObject & { spec?: unknown; status?: unknown };

describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager"], "the generated CRDs on a real API server", () => {
  let clients: PlaneClients;
  const namespace = `crds-${Date.now().toString(36)}`;
  let sequence = 0;
  const uniqueName = (base: string) => `${base}-${(++sequence).toString(36)}`;

  const create = <T extends Stored>(plural: string, body: T) =>
    clients.objects.createNamespacedCustomObject({ ...namespaced(plural, namespace), body }) as Promise<T>;
  const get = <T extends Stored>(plural: string, name: string) =>
    clients.objects.getNamespacedCustomObject({ ...namespaced(plural, namespace), name }) as Promise<T>;
  const replace = <T extends Stored>(plural: string, body: T) =>
    clients.objects.replaceNamespacedCustomObject({
      ...namespaced(plural, namespace),
      name: body.metadata!.name!,
      body,
    }) as Promise<T>;
  const replaceStatus = <T extends Stored>(plural: string, body: T) =>
    clients.objects.replaceNamespacedCustomObjectStatus({
      ...namespaced(plural, namespace),
      name: body.metadata!.name!,
      body,
    }) as Promise<T>;
  /** Creates `body`, then writes what `change` makes of the stored object. */
  async function update<T extends Stored>(plural: string, body: T, change: (stored: T) => void): Promise<T> {
    const stored = await create(plural, body);
    change(stored);
    return replace(plural, stored);
  }

  beforeAll(async () => {
    clients = planeClients();
    await installCrds(clients.extensions);
    await clients.core.createNamespace({ body: { metadata: { name: namespace } } });
  });

  describe("valid objects", () => {
    const cases: [string, string, () => Stored][] = [
      ["a minimal TerraformCluster", "terraformclusters", () => minimalCluster(uniqueName("min"))],
      ["a TerraformCluster setting every field", "terraformclusters", () => fullCluster(uniqueName("full"))],
      ["a minimal TerraformMachine", "terraformmachines", () => minimalMachine(uniqueName("min"))],
      ["a TerraformMachine setting every field", "terraformmachines", () => fullMachine(uniqueName("full"))],
      ["a minimal TerraformMachinePool", "terraformmachinepools", () => minimalPool(uniqueName("min"))],
      ["a TerraformMachinePool setting every field", "terraformmachinepools", () => fullPool(uniqueName("full"))],
      [
        "a TerraformClusterTemplate without identityRef",
        "terraformclustertemplates",
        () => withoutTemplateIdentity(clusterTemplate(uniqueName("tpl"))),
      ],
      ["a TerraformMachineTemplate", "terraformmachinetemplates", () => machineTemplate(uniqueName("tpl"))],
      ["a TerraformMachinePoolTemplate", "terraformmachinepooltemplates", () => poolTemplate(uniqueName("tpl"))],
    ];

    it.each(cases)("stores %s exactly as written: no defaults added, nothing pruned", async (_name, plural, build) => {
      const body = build();
      const created = await create(plural, body);
      expect(created.spec).toEqual(body.spec);
      expect((await get(plural, body.metadata!.name!)).spec).toEqual(body.spec);
    });

    it("stores a cluster-scoped TerraformClusterIdentity with selector {} (every namespace)", async () => {
      const body = identity(uniqueName("id"));
      body.spec.allowedNamespaces = { selector: {} };
      const created = (await clients.objects.createClusterCustomObject({
        group: apiGroup,
        version: apiVersion,
        plural: "terraformclusteridentities",
        body,
      })) as TerraformClusterIdentity;
      expect(created.spec).toEqual(body.spec);
      expect(created.metadata!.namespace).toBeUndefined();
    });

    it("keeps a full identity and writes status only through the status subresource", async () => {
      const body = identity(uniqueName("id"));
      const created = (await clients.objects.createClusterCustomObject({
        group: apiGroup,
        version: apiVersion,
        plural: "terraformclusteridentities",
        body,
      })) as TerraformClusterIdentity;
      expect(created.spec).toEqual(body.spec);
      created.status = { namespaces: ["team-a"], conditions: [readyCondition()] };
      const afterMainWrite = (await clients.objects.replaceClusterCustomObject({
        group: apiGroup,
        version: apiVersion,
        plural: "terraformclusteridentities",
        name: body.metadata!.name!,
        body: created,
      })) as TerraformClusterIdentity;
      expect(afterMainWrite.status).toBeUndefined();
      const withStatus = (await clients.objects.replaceClusterCustomObjectStatus({
        group: apiGroup,
        version: apiVersion,
        plural: "terraformclusteridentities",
        name: body.metadata!.name!,
        body: created,
      })) as TerraformClusterIdentity;
      expect(withStatus.status!.namespaces).toEqual(["team-a"]);
    });

    it("accepts a full status with every v1beta2 contract field on each Job-running kind", async () => {
      const cluster = await create("terraformclusters", fullCluster(uniqueName("status")));
      cluster.status = {
        conditions: [readyCondition()],
        initialization: { provisioned: true },
        observedGeneration: 1,
        failureDomains: [{ name: "eu-west-1a", controlPlane: true, attributes: { zone: "a" } }],
        exports: { schema: "captf.io/aws-cluster/v1", subnets: ["a", "b"], nested: { count: 2 } },
        plan: {
          inputsHash: "h2:abc",
          job: "demo-plan-a1",
          planHash: "p1:def",
          add: 1,
          change: 0,
          destroy: 0,
          outputChanges: 1,
          resources: ["aws_lb.api (update)"],
          truncated: false,
          createdAt: "2026-10-02T11:40:12Z",
        },
        stateBackups: [{ serial: 3, takenAt: "2026-10-02T11:40:12Z", bytes: 2048 }],
        pendingRefreshes: 2,
        lastRun: {
          job: "demo-apply-a1",
          operation: "apply",
          steps: [{ name: "init", exitCode: 0, durationMilliseconds: 1200 }],
          error: { kind: "step", step: "apply", summary: "apply failed" },
          drift: { add: 1, resources: ["aws_instance.a"] },
        },
        activeJob: { name: "demo-refresh-a2", operation: "refresh", attempt: 2, startTime: "2026-10-02T11:40:12Z" },
        source: { image: "ghcr.io/x/y:v1", imageDigest: "sha256:abc", runtimeVersion: "1.12.6" },
      };
      expect((await replaceStatus("terraformclusters", cluster)).status).toEqual(cluster.status);

      const machine = await create("terraformmachines", minimalMachine(uniqueName("status")));
      machine.status = {
        initialization: { provisioned: true },
        addresses: [{ type: "InternalIP", address: "10.0.0.4" }],
        failureDomain: "eu-west-1a",
        interruptible: false,
        unhealthySamples: 1,
      };
      expect((await replaceStatus("terraformmachines", machine)).status).toEqual(machine.status);

      const pool = await create("terraformmachinepools", minimalPool(uniqueName("status")));
      pool.status = {
        initialization: { provisioned: true },
        ready: true,
        replicas: 2,
        instances: [{ providerID: "aws:///a/i-1", state: "running", addresses: [{ type: "InternalDNS", address: "ip-10-0-0-1" }] }],
      };
      expect((await replaceStatus("terraformmachinepools", pool)).status).toEqual(pool.status);
    });

    it("serves the printer columns kubectl shows", async () => {
      const body = fullCluster(uniqueName("columns"));
      await create("terraformclusters", body);
      const table = await getTable(`/apis/${apiGroup}/${apiVersion}/namespaces/${namespace}/terraformclusters/${body.metadata!.name}`);
      expect(table.columnDefinitions.map((column) => column.name)).toEqual([
        "Name",
        "Cluster",
        "Ready",
        "Provisioned",
        "Endpoint",
        "Image",
        "InputsApplied",
        "Age",
      ]);
      expect(table.rows[0]?.cells.slice(0, 5)).toEqual([body.metadata!.name, body.metadata!.name, null, null, "demo-api.example.com"]);
    });
  });

  describe("rejections", () => {
    it("a TerraformCluster without identityRef", async () => {
      const body = minimalCluster(uniqueName("noid"));
      delete body.spec.identityRef;
      const { code, message } = await rejection(create("terraformclusters", body));
      expect(code).toBe(422);
      expect(message).toContain("spec.identityRef: Required value: spec.identityRef is required");
    });

    it("a controlPlaneEndpoint change once it has a host, while completing other fields stays allowed", async () => {
      const body = fullCluster(uniqueName("endpoint"));
      const { message } = await rejection(update("terraformclusters", body, (stored) => (stored.spec.controlPlaneEndpoint!.port = 443)));
      expect(message).toContain("spec.controlPlaneEndpoint: Invalid value: spec.controlPlaneEndpoint is immutable once it has a host");
      const stored = await get<TerraformCluster>("terraformclusters", body.metadata!.name!);
      stored.spec.applyPolicy = "Automatic";
      const updated = await replace("terraformclusters", stored);
      expect(updated.spec.applyPolicy).toBe("Automatic");
      delete updated.spec.controlPlaneEndpoint;
      expect((await rejection(replace("terraformclusters", updated))).message).toContain(
        "spec.controlPlaneEndpoint is immutable once it has a host",
      );
    });

    it("an endpoint host without a port", async () => {
      const body = minimalCluster(uniqueName("half"));
      body.spec.controlPlaneEndpoint = { host: "api.example.com" };
      expect((await rejection(create("terraformclusters", body))).message).toContain(
        "spec.controlPlaneEndpoint: Invalid value: host and port must be set together",
      );
    });

    it("an endpoint set later is accepted, then frozen", async () => {
      const body = minimalCluster(uniqueName("later"));
      const stored = await update(
        "terraformclusters",
        body,
        (object) => (object.spec.controlPlaneEndpoint = { host: "api.example.com", port: 6443 }),
      );
      stored.spec.controlPlaneEndpoint!.host = "other.example.com";
      expect((await rejection(replace("terraformclusters", stored))).message).toContain("spec.controlPlaneEndpoint is immutable");
    });

    it("an applyPolicy outside the enum", async () => {
      const body = minimalCluster(uniqueName("policy"));
      (body.spec as AnyObject).applyPolicy = "Sometimes";
      expect((await rejection(create("terraformclusters", body))).message).toContain(
        'spec.applyPolicy: Unsupported value: "Sometimes": supported values: "Automatic", "Manual"',
      );
    });

    it.each([
      ["source", (spec: AnyObject) => ((spec.source as AnyObject).image = "ghcr.io/other:v2"), "spec.source is immutable"],
      ["identityRef added", (spec: AnyObject) => (spec.identityRef = { name: "other" }), "spec.identityRef is immutable"],
      ["variables changed", (spec: AnyObject) => (spec.variables = { instance_type: "m6i.2xlarge" }), "spec.variables is immutable"],
      ["variablesFrom removed", (spec: AnyObject) => delete spec.variablesFrom, "spec.variablesFrom is immutable"],
    ])("a TerraformMachine's %s", async (_name, change, expected) => {
      const body = minimalMachine(uniqueName("immutable"));
      body.spec.variables = { instance_type: "m6i.xlarge" };
      body.spec.variablesFrom = [{ configMapRef: { name: "settings" } }];
      const { code, message } = await rejection(update("terraformmachines", body, (stored) => change(stored.spec)));
      expect(code).toBe(422);
      expect(message).toContain(expected);
    });

    it("accepts a TerraformMachine's variables reordered, and its jobs, drift and remediation changed", async () => {
      const body = minimalMachine(uniqueName("mutable"));
      body.spec.variables = { a: 1, b: { c: [1, 2] } };
      const stored = await update("terraformmachines", body, (object) => {
        object.spec.variables = { b: { c: [1, 2] }, a: 1 };
        object.spec.jobs = { activeDeadlineSeconds: 1800 };
        object.spec.drift = { intervalSeconds: 60 };
        object.spec.remediation = { annotateMachine: true };
      });
      expect(stored.spec.jobs).toEqual({ activeDeadlineSeconds: 1800 });
    });

    it("a TerraformMachine's providerID is set once, then never changed or cleared", async () => {
      const body = minimalMachine(uniqueName("provider"));
      const stored = await update("terraformmachines", body, (object) => (object.spec.providerID = "aws:///eu-west-1a/i-1"));
      expect(stored.spec.providerID).toBe("aws:///eu-west-1a/i-1");
      stored.spec.providerID = "aws:///eu-west-1a/i-2";
      expect((await rejection(replace("terraformmachines", stored))).message).toContain(
        "spec.providerID: Invalid value: spec.providerID is set once and then immutable",
      );
      delete stored.spec.providerID;
      expect((await rejection(replace("terraformmachines", stored))).message).toContain("spec.providerID is set once");
    });

    it.each([
      [
        "membershipRefreshIntervalSeconds below 15",
        { membershipRefreshIntervalSeconds: 14 },
        "spec.membershipRefreshIntervalSeconds: Invalid value: 14: spec.membershipRefreshIntervalSeconds in body should be " +
          "greater than or equal to 15",
      ],
      [
        "membershipRefreshIntervalSeconds above a day",
        { membershipRefreshIntervalSeconds: 86401 },
        "should be less than or equal to 86400",
      ],
      [
        "drift.intervalSeconds 0 (a pool's drift cannot be disabled)",
        { drift: { intervalSeconds: 0 } },
        "spec.drift.intervalSeconds in body should be greater than or equal to 1",
      ],
      [
        "activeDeadlineSeconds above a day",
        { jobs: { activeDeadlineSeconds: 86401 } },
        "spec.jobs.activeDeadlineSeconds in body should be less than or equal to 86400",
      ],
      [
        "lockTimeoutSeconds above an hour",
        { jobs: { lockTimeoutSeconds: 3601 } },
        "spec.jobs.lockTimeoutSeconds in body should be less than or equal to 3600",
      ],
      [
        "lockTimeoutSeconds not below activeDeadlineSeconds",
        { jobs: { lockTimeoutSeconds: 600, activeDeadlineSeconds: 600 } },
        "spec.jobs.lockTimeoutSeconds: Invalid value: lockTimeoutSeconds must be less than activeDeadlineSeconds",
      ],
      [
        "17 variablesFrom sources",
        { variablesFrom: Array.from({ length: 17 }, (_, i) => ({ configMapRef: { name: `s${i}` } })) },
        "spec.variablesFrom: Too many: 17: must have at most 16 items",
      ],
      [
        "a variablesFrom entry naming both kinds",
        { variablesFrom: [{ configMapRef: { name: "a" }, secretRef: { name: "b" } }] },
        "spec.variablesFrom[0]: Invalid value: set exactly one of configMapRef and secretRef",
      ],
      ["a variablesFrom entry naming neither", { variablesFrom: [{ optional: true }] }, "set exactly one of configMapRef and secretRef"],
      [
        "a variablesFrom format outside the enum",
        { variablesFrom: [{ configMapRef: { name: "a" }, format: "YAML" }] },
        'spec.variablesFrom[0].format: Unsupported value: "YAML"',
      ],
      [
        "257 inline variables",
        { variables: Object.fromEntries(Array.from({ length: 257 }, (_, i) => [`v${i}`, i])) },
        "spec.variables: Too many: 257: must have at most 256 items",
      ],
      ["an empty identityRef name", { identityRef: { name: "" } }, "spec.identityRef.name in body should be at least 1 chars long"],
      [
        "an imagePullPolicy outside the enum",
        { source: { image: "a/b:c", imagePullPolicy: "Sometimes" } },
        "spec.source.imagePullPolicy: Unsupported value",
      ],
    ])("a TerraformMachinePool with %s", async (_name, fields, expected) => {
      const body = minimalPool(uniqueName("limits"));
      Object.assign(body.spec, fields);
      const { code, message } = await rejection(create("terraformmachinepools", body));
      expect(code).toBe(422);
      expect(message).toContain(expected);
    });

    it.each([
      [
        "healthCheckIntervalSeconds below a minute",
        { remediation: { healthCheckIntervalSeconds: 59 } },
        "spec.remediation.healthCheckIntervalSeconds in body should be greater than or equal to 60",
      ],
      [
        "unhealthyThreshold above 100",
        { remediation: { unhealthyThreshold: 101 } },
        "spec.remediation.unhealthyThreshold in body should be less than or equal to 100",
      ],
      [
        "a negative drift interval",
        { drift: { intervalSeconds: -1 } },
        "spec.drift.intervalSeconds in body should be greater than or equal to 0",
      ],
      ["a providerID over 512 characters", { providerID: "x".repeat(513) }, "spec.providerID: Too long"],
    ])("a TerraformMachine with %s", async (_name, fields, expected) => {
      const body = minimalMachine(uniqueName("limits"));
      Object.assign(body.spec, fields);
      expect((await rejection(create("terraformmachines", body))).message).toContain(expected);
    });

    it.each([
      [
        "allowedNamespaces {}",
        { allowedNamespaces: {} },
        "spec.allowedNamespaces: Invalid value: allowedNamespaces {} is ambiguous and rejected: set list, or write selector: {} " +
          "to allow every namespace",
      ],
      ["an empty list", { allowedNamespaces: { list: [] } }, "spec.allowedNamespaces.list in body should have at least 1 items"],
      [
        "a list entry that is not a DNS label",
        { allowedNamespaces: { list: ["Team_A"] } },
        "spec.allowedNamespaces.list[0] in body should match",
      ],
      ["a secretRef without namespace", { secretRef: { name: "aws" } }, "spec.secretRef.namespace: Required value"],
    ])("a TerraformClusterIdentity with %s", async (_name, fields, expected) => {
      const body = identity(uniqueName("bad-id"));
      Object.assign(body.spec, fields);
      expect(
        (
          await rejection(
            clients.objects.createClusterCustomObject({ group: apiGroup, version: apiVersion, plural: "terraformclusteridentities", body }),
          )
        ).message,
      ).toContain(expected);
    });

    it("a machine template status naming source Image without the image", async () => {
      const template = await create("terraformmachinetemplates", machineTemplate(uniqueName("capacity")));
      template.status = { capacitySource: { source: "Image" } };
      expect((await rejection(replaceStatus("terraformmachinetemplates", template))).message).toContain(
        "status.capacitySource.image: Invalid value: image is required when source is Image",
      );
    });

    it("a status with 17 state backups", async () => {
      const cluster = await create("terraformclusters", minimalCluster(uniqueName("backups")));
      cluster.status = {
        stateBackups: Array.from({ length: 17 }, (_, i) => ({ serial: i + 1, takenAt: "2026-10-02T11:40:12Z", bytes: 10 })),
      };
      expect((await rejection(replaceStatus("terraformclusters", cluster))).message).toContain(
        "status.stateBackups: Too many: 17: must have at most 16 items",
      );
    });
  });
});

function withoutTemplateIdentity<T extends { spec: { template: { spec: { identityRef?: unknown } } } }>(template: T): T {
  delete template.spec.template.spec.identityRef;
  return template;
}

function readyCondition(): Condition {
  return { type: "Ready", status: "True", reason: "SecretFound", message: "", lastTransitionTime: "2026-10-02T11:40:12Z" };
}
