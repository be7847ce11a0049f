import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import type { Role } from "@captf/contract";
import { noopModuleDirectory } from "@captf/module-noop";
import { describeWithTools } from "@captf/testkit";
import type { Condition } from "../conditions/conditions.js";
import { recordingEvents } from "../events/recording-events.test-support.js";
import { startJobExecutor, type JobExecutor } from "../reconcile/job-executor.test-support.js";
import { createExternalCluster, createMachine } from "../reconcile/machine-fixture.test-support.js";
import { allJobsFinished, preparePlane, type PlaneClients, mergePatchOptions } from "../reconcile/plane.test-support.js";
import { reconcileWorkspace, type KindAdapter, type ReconcilerDeps } from "../reconcile/workspace-reconciler.js";
import { machineAdapter, poolAdapter } from "./adapters.js";

type Json = Record<string, unknown>;
/** A TerraformMachine or TerraformMachinePool as read back: the fields these tests check. */
interface ReadBack {
  spec: { providerID?: string };
  status: { conditions?: Condition[]; initialization?: { provisioned?: boolean }; instances?: unknown[]; interruptible?: boolean };
}

const infra = { group: "infrastructure.cluster.x-k8s.io", version: "v1alpha1" };
const capi = { group: "cluster.x-k8s.io", version: "v1beta2" };
const images = {
  pool: "registry.invalid/captf/noop-machinepool:v1",
  // provider_id from var.group_id ("" is null), var.instance_count instances.
  poolFields: "registry.invalid/captf/pool-fields:v1",
  machine: "registry.invalid/captf/noop-machine:v1",
  // interruptible from var.spot.
  spotMachine: "registry.invalid/captf/spot-machine:v1",
};

// The contract fields a pool and a machine get from their modules' outputs, on the real API server with
// real Jobs and the real runner: the pool's spec.providerID (and ProviderIDSet) and status.instances (cut at
// 1000, InstancesTruncated; removed when empty), the machine's status.interruptible.
describeWithTools(
  ["etcd", "kube-apiserver", "kube-controller-manager", "tofu", "go"],
  "contract fields from a pool's and a machine's outputs",
  () => {
    const namespace = `fields-${Date.now().toString(36)}`;
    const work = mkdtempSync(join(tmpdir(), "captf-contract-fields-"));
    const { events, recorded } = recordingEvents();
    let plane: PlaneClients;
    let deps: ReconcilerDeps;
    let executor: JobExecutor;

    /** A copy of the no-op module of the role with each output's value expression replaced and files added. */
    function variant(name: string, role: Role, values: Record<string, string>, files: Record<string, string>): string {
      const dir = join(work, name);
      cpSync(noopModuleDirectory(role), dir, { recursive: true });
      const file = join(dir, "outputs.tf");
      let outputs = readFileSync(file, "utf8");
      for (const [output, value] of Object.entries(values)) {
        // The value runs to the output's closing brace at column 0.
        const replaced = outputs.replace(new RegExp(`(output "${output}" \\{[^]*?\\n  value\\s*=\\s*)[^]*?\\n\\}`), `$1${value}\n}`);
        if (replaced === outputs) throw new Error(`output ${output} not found in the no-op ${role} module`);
        outputs = replaced;
      }
      writeFileSync(file, outputs);
      for (const [extra, content] of Object.entries(files)) writeFileSync(join(dir, extra), content);
      return dir;
    }

    beforeAll(async () => {
      plane = await preparePlane(namespace);
      deps = { client: plane.client, events };
      const poolFields = variant(
        "pool-fields",
        "machinepool",
        {
          provider_id: 'var.group_id == "" ? null : var.group_id',
          instances:
            "[for i in range(var.instance_count) : { provider_id = " +
            '"noop:///${var.captf_object.namespace}/${var.captf_object.name}/member-${i}", state = "running" }]',
        },
        {
          "fields.tf":
            'variable "group_id" {\n  type    = string\n  default = ""\n}\n\nvariable "instance_count" {\n  type    = number\n  ' +
            "default = 1\n}\n",
        },
      );
      const spotMachine = variant(
        "spot-machine",
        "machine",
        { interruptible: "var.spot" },
        { "spot.tf": 'variable "spot" {\n  type    = bool\n  default = false\n}\n' },
      );
      executor = startJobExecutor({
        kubeconfigPath: plane.kubeconfigPath,
        namespace,
        modules: {
          [images.pool]: noopModuleDirectory("machinepool"),
          [images.poolFields]: poolFields,
          [images.machine]: noopModuleDirectory("machine"),
          [images.spotMachine]: spotMachine,
        },
      });
      // The externally managed cluster of the pools and machines; its manager publishes two failure domains.
      await createExternalCluster(plane, namespace);
      await plane.custom.patchNamespacedCustomObjectStatus(
        {
          ...infra,
          namespace,
          plural: "terraformclusters",
          name: "ext",
          body: {
            status: {
              failureDomains: [
                { name: "fd1", controlPlane: true },
                { name: "fd2", controlPlane: false },
              ],
            },
          },
        },
        mergePatchOptions(),
      );
    }, 120_000);
    afterAll(() => {
      executor?.close();
      rmSync(work, { recursive: true, force: true });
    });

    /** A MachinePool of "ext" with its bootstrap data Secret, and its TerraformMachinePool with the given spec. */
    async function createPool(name: string, replicas: number, spec: Json): Promise<void> {
      await plane.core.createNamespacedSecret({
        namespace,
        body: { metadata: { name: `${name}-bootstrap` }, stringData: { value: "#cloud-config\n" } },
      });
      const machinePool = (await plane.custom.createNamespacedCustomObject({
        ...capi,
        namespace,
        plural: "machinepools",
        body: {
          apiVersion: "cluster.x-k8s.io/v1beta2",
          kind: "MachinePool",
          metadata: { name, labels: { "cluster.x-k8s.io/cluster-name": "ext" } },
          spec: {
            clusterName: "ext",
            replicas,
            template: {
              spec: {
                clusterName: "ext",
                bootstrap: { dataSecretName: `${name}-bootstrap` },
                infrastructureRef: { apiGroup: "infrastructure.cluster.x-k8s.io", kind: "TerraformMachinePool", name },
              },
            },
          },
        },
      })) as { metadata: { uid: string } };
      await plane.custom.createNamespacedCustomObject({
        ...infra,
        namespace,
        plural: "terraformmachinepools",
        body: {
          apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
          kind: "TerraformMachinePool",
          metadata: {
            name,
            labels: { "cluster.x-k8s.io/cluster-name": "ext" },
            ownerReferences: [
              { apiVersion: "cluster.x-k8s.io/v1beta2", kind: "MachinePool", name, uid: machinePool.metadata.uid, controller: true },
            ],
          },
          spec,
        },
      });
    }

    const read = (adapter: { plural: string }, name: string) =>
      plane.custom.getNamespacedCustomObject({ ...infra, namespace, plural: adapter.plural, name }) as Promise<ReadBack>;
    const condition = (object: ReadBack, type: string) => (object.status?.conditions ?? []).find((c) => c.type === type);
    const providerIDSet = (name: string) =>
      recorded.filter((event) => event.name === name && event.reason === "ProviderIDSet").map((event) => event.note);

    /** Passes (the executor running each Job) until the object satisfies `until`; at least one pass. */
    async function drive<R extends Role>(adapter: KindAdapter<R>, name: string, until: (object: ReadBack) => boolean): Promise<ReadBack> {
      const actions: string[] = [];
      for (let pass = 0; pass < 12; pass++) {
        actions.push((await reconcileWorkspace(deps, adapter, namespace, name)).action);
        const object = await read(adapter, name);
        if (until(object)) return object;
        if (await executor.runPending()) await allJobsFinished(plane.batch, namespace);
      }
      throw new Error(`${name} did not converge: ${actions.join(" | ")}\nstatus: ${JSON.stringify((await read(adapter, name)).status)}`);
    }
    const provisioned = (object: ReadBack) => object.status?.initialization?.provisioned === true;
    const applied = (object: ReadBack) => condition(object, "InputsApplied")?.status === "True";

    it("the no-op pool: spec.providerID is its group's ID (ProviderIDSet once) and status.instances lists its members", async () => {
      await createPool("np", 2, { source: { image: images.pool } });
      const pool = await drive(poolAdapter, "np", provisioned);
      expect(pool.spec.providerID).toBe(`noop-group:///${namespace}/np`);
      expect(pool.status.instances).toEqual([
        { providerID: `noop:///${namespace}/np/0`, instanceID: "np-0", failureDomain: "fd1", state: "running" },
        { providerID: `noop:///${namespace}/np/1`, instanceID: "np-1", failureDomain: "fd2", state: "running" },
      ]);
      expect(condition(pool, "OutputsValid")).toMatchObject({ status: "True", reason: "OutputsValid" });
      expect(providerIDSet("np")).toEqual([`providerID set to noop-group:///${namespace}/np`]);

      expect((await reconcileWorkspace(deps, poolAdapter, namespace, "np")).action).toBe("UpToDate");
      expect(providerIDSet("np")).toHaveLength(1);
    }, 240_000);

    it("a pool's providerID follows a new group ID and stays on a null one; its instances are cut at 1000 (InstancesTruncated) " +
      "and removed when there are none", async () => {
      await createPool("grp", 1, {
        source: { image: images.poolFields },
        variables: { group_id: "noop-group:///first", instance_count: 1001 },
      });
      let pool = await drive(poolAdapter, "grp", provisioned);
      expect(pool.spec.providerID).toBe("noop-group:///first");
      expect(pool.status.instances).toHaveLength(1000);
      expect(pool.status.instances![999]).toEqual({ providerID: `noop:///${namespace}/grp/member-999`, state: "running" });
      expect(condition(pool, "OutputsValid")).toMatchObject({
        status: "True",
        reason: "InstancesTruncated",
        message: expect.stringContaining("1001 entries"),
      });
      expect(condition(pool, "Ready")).toMatchObject({ status: "True" });
      expect(providerIDSet("grp")).toEqual(["providerID set to noop-group:///first"]);

      const setVariables = (variables: Json) =>
        plane.custom.patchNamespacedCustomObject(
          { ...infra, namespace, plural: "terraformmachinepools", name: "grp", body: { spec: { variables } } },
          mergePatchOptions(),
        );
      await setVariables({ group_id: "noop-group:///second", instance_count: 0 });
      pool = await drive(poolAdapter, "grp", (p) => applied(p) && p.spec.providerID === "noop-group:///second");
      expect(pool.status.instances).toBeUndefined();
      expect(condition(pool, "OutputsValid")).toMatchObject({ status: "True", reason: "OutputsValid" });
      expect(providerIDSet("grp")).toEqual(["providerID set to noop-group:///first", "providerID set to noop-group:///second"]);

      await setVariables({ group_id: "" });
      const applies = async () =>
        (
          await plane.batch.listNamespacedJob({
            namespace,
            labelSelector: "captf.infrastructure.cluster.x-k8s.io/owner-name=grp,captf.infrastructure.cluster.x-k8s.io/op=apply",
          })
        ).items.length;
      expect(await applies()).toBe(2);
      pool = await drive(poolAdapter, "grp", applied);
      expect(await applies()).toBe(3);
      expect(pool.spec.providerID).toBe("noop-group:///second");
      expect(providerIDSet("grp")).toHaveLength(2);
    }, 360_000);

    it("a machine's status.interruptible is its module's interruptible output", async () => {
      await createMachine(plane, namespace, "regular", images.machine);
      await createMachine(plane, namespace, "spot", images.spotMachine, { machineSpec: { variables: { spot: true } } });
      expect((await drive(machineAdapter, "regular", provisioned)).status.interruptible).toBe(false);
      expect((await drive(machineAdapter, "spot", provisioned)).status.interruptible).toBe(true);
    }, 240_000);
  },
);
