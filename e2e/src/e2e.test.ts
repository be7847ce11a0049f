// captf as a Cluster API infrastructure provider, end to end: Cluster API's own core manager drives
// it, captf runs as installed from config/install.yaml (its Deployment, its ServiceAccount, its
// RBAC), and the user's objects come from e2e/manifests/demo. Scenarios run in order on one plane.
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import * as k8s from "@kubernetes/client-node";
import { describeWithTools, waitFor } from "@captf/testkit";
import { labels } from "@captf/contract/api";
import { applyObjects } from "./apply.js";
import { managerNamespace } from "./captf-install.js";
import { demoClusterName, demoNamespace, demoObjects, demoVariables, type DemoSecrets } from "./demo-objects.js";
import { startManagementPlane, type ManagementPlane } from "./management-plane.js";
import { formatProgress, readProgress } from "./progress.js";

type AnyObject = Record<string, any>;

const capi = { group: "cluster.x-k8s.io", version: "v1beta2", namespace: demoNamespace };
const infra = { group: "infrastructure.cluster.x-k8s.io", version: "v1alpha1", namespace: demoNamespace };
const mergePatch = k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch);

describeWithTools(
  ["etcd", "kube-apiserver", "kube-controller-manager", "tofu", "capi-manager", "go", "umoci", "skopeo", "docker-registry"],
  "captf under Cluster API, installed from its manifests",
  () => {
    const secrets: DemoSecrets = {
      credential: `canary-credential-${randomBytes(8).toString("hex")}`,
      variable: `canary-variable-${randomBytes(8).toString("hex")}`,
      bootstrap: `canary-bootstrap-${randomBytes(8).toString("hex")}`,
    };
    const planeLog: string[] = [];
    let plane: ManagementPlane;
    let custom: k8s.CustomObjectsApi;
    let core: k8s.CoreV1Api;
    let batch: k8s.BatchV1Api;

    const progressTable = async () => formatProgress((await readProgress(plane.kubeConfig, demoNamespace, demoClusterName)).rows);
    const waitReady = async (what: string, extra: () => Promise<boolean> = async () => true, timeoutMillis = 300_000) => {
      await waitFor(async () => ((await readProgress(plane.kubeConfig, demoNamespace, demoClusterName)).ready && (await extra()) ? true : undefined), timeoutMillis, `${what}\n${await progressTable()}`).catch(async (error) => {
        throw new Error(`${(error as Error).message}\nnow:\n${await progressTable()}\nplane:\n${planeLog.slice(-40).join("\n")}\nmanager:\n${(await plane.managerLog()).split("\n").slice(-40).join("\n")}`);
      });
    };
    const captfJobs = async () => (await batch.listNamespacedJob({ namespace: demoNamespace, labelSelector: labels.op })).items;
    const list = async (api: typeof capi, plural: string) => ((await custom.listNamespacedCustomObject({ ...api, plural })) as { items: AnyObject[] }).items;

    beforeAll(async () => {
      plane = await startManagementPlane({ log: (line) => planeLog.push(`${new Date().toISOString()} ${line}`) });
      custom = plane.kubeConfig.makeApiClient(k8s.CustomObjectsApi);
      core = plane.kubeConfig.makeApiClient(k8s.CoreV1Api);
      batch = plane.kubeConfig.makeApiClient(k8s.BatchV1Api);
    }, 900_000);

    afterAll(async () => {
      await plane?.stop();
    }, 120_000);

    it("brings the demo up to Cluster API's own readiness, one Job per object", async () => {
      const started = Date.now();
      await applyObjects(plane.applier, demoObjects(demoVariables(plane.images, secrets)));
      await waitReady("the demo Ready as Cluster API reports it");
      const seconds = (Date.now() - started) / 1000;
      planeLog.push(`demo ready in ${seconds.toFixed(1)} s`);

      const cluster = (await custom.getNamespacedCustomObject({ ...capi, plural: "clusters", name: demoClusterName })) as AnyObject;
      expect(cluster.status.initialization).toMatchObject({ infrastructureProvisioned: true, controlPlaneInitialized: true });
      expect(cluster.spec.controlPlaneEndpoint).toEqual({ host: "noop-demo.invalid", port: 6443 });
      const machines = await list(capi, "machines");
      expect(machines).toHaveLength(3);
      for (const machine of machines) {
        expect(machine.spec.providerID).toMatch(new RegExp(`^noop:///${demoNamespace}/demo-md-0-`));
        expect(machine.status.nodeRef.name).toBeTruthy();
      }
      const pool = (await custom.getNamespacedCustomObject({ ...capi, plural: "machinepools", name: "demo-mp-0" })) as AnyObject;
      expect(pool.spec.providerIDList).toHaveLength(3);
      expect(pool.status.readyReplicas).toBe(3);

      // One Job per object, plus at most the cluster's re-apply once its control plane is initialized.
      const jobs = await captfJobs();
      expect(jobs.length).toBeGreaterThanOrEqual(5);
      expect(jobs.length).toBeLessThanOrEqual(6);
      // The manager ran with its own ServiceAccount and was never refused.
      const managerPod = (await core.listNamespacedPod({ namespace: managerNamespace })).items[0]!;
      expect(managerPod.spec!.serviceAccountName).toBe("captf-controller-manager");
      expect(await plane.managerLog()).not.toMatch(/forbidden/i);
    });

    it("scales a MachineDeployment 3 → 5 → 2 and a MachinePool 3 → 1 through Cluster API", async () => {
      const scale = (plural: string, name: string, replicas: number) => custom.patchNamespacedCustomObject({ ...capi, plural, name, body: { spec: { replicas } } }, mergePatch);
      await scale("machinedeployments", "demo-md-0", 5);
      await waitReady("5 machines", async () => (await list(capi, "machines")).length === 5);
      expect(await list(infra, "terraformmachines")).toHaveLength(5);

      await scale("machinedeployments", "demo-md-0", 2);
      await waitReady("2 machines", async () => (await list(capi, "machines")).length === 2 && (await list(infra, "terraformmachines")).length === 2);
      const destroys = (await captfJobs()).filter((job) => job.metadata!.labels![labels.op] === "destroy");
      expect(destroys.length).toBeGreaterThanOrEqual(3);

      await scale("machinepools", "demo-mp-0", 1);
      await waitReady("a pool of 1", async () => {
        const pool = (await custom.getNamespacedCustomObject({ ...capi, plural: "machinepools", name: "demo-mp-0" })) as AnyObject;
        return pool.spec.providerIDList?.length === 1 && pool.status?.readyReplicas === 1;
      });
    });

    it("lets no secret value reach a log, an event, a status, a Job or a termination message", async () => {
      const haystacks: [string, string][] = [];
      haystacks.push(["manager log", await plane.managerLog()]);
      for (const file of readdirSync(join(plane.kubelet.workDir, "logs"))) haystacks.push([`container log ${file}`, readFileSync(join(plane.kubelet.workDir, "logs", file), "utf8")]);
      haystacks.push(["events", JSON.stringify((await core.listEventForAllNamespaces()).items)]);
      haystacks.push(["events.k8s.io", JSON.stringify(await plane.kubeConfig.makeApiClient(k8s.EventsV1Api).listEventForAllNamespaces())]);
      haystacks.push(["Jobs", JSON.stringify((await batch.listJobForAllNamespaces()).items)]);
      haystacks.push(["Pods", JSON.stringify((await core.listPodForAllNamespaces()).items)]);
      for (const plural of ["terraformclusters", "terraformmachines", "terraformmachinepools"]) haystacks.push([plural, JSON.stringify(await list(infra, plural))]);
      haystacks.push(["terraformclusteridentities", JSON.stringify(await custom.listClusterCustomObject({ group: infra.group, version: infra.version, plural: "terraformclusteridentities" }))]);
      expect(haystacks.length).toBeGreaterThan(8);
      for (const [where, text] of haystacks) {
        for (const [name, value] of Object.entries(secrets)) {
          if (text.includes(value) || text.includes(Buffer.from(value).toString("base64"))) throw new Error(`the ${name} canary appears in ${where}`);
        }
      }
      // The canaries are really in play: each sits in the Secret it was put in.
      const mirror = (await core.listNamespacedSecret({ namespace: demoNamespace, labelSelector: labels.mirrored })).items;
      expect(mirror.map((secret) => Buffer.from(secret.data?.NOOP_API_TOKEN ?? "", "base64").toString())).toContain(secrets.credential);
    });

    it("removes everything of captf when the Cluster is deleted", async () => {
      await custom.deleteNamespacedCustomObject({ ...capi, plural: "clusters", name: demoClusterName });
      await waitFor(async () => ((await list(capi, "clusters")).length === 0 ? true : undefined), 300_000, `the Cluster gone\n${await progressTable()}`).catch(async (error) => {
        throw new Error(`${(error as Error).message}\nnow:\n${await progressTable()}\nmanager:\n${(await plane.managerLog()).split("\n").slice(-30).join("\n")}`);
      });
      for (const plural of ["terraformclusters", "terraformmachines", "terraformmachinepools"]) expect(await list(infra, plural)).toEqual([]);
      for (const plural of ["machines", "machinepools", "machinedeployments", "machinesets"]) expect(await list(capi, plural)).toEqual([]);
      // Jobs and their Pods go with their owners (garbage collection), state and leases with the destroy.
      await waitFor(async () => ((await captfJobs()).length === 0 ? true : undefined), 120_000, "captf Jobs garbage-collected");
      const leftovers: string[] = [];
      for (const secret of (await core.listNamespacedSecret({ namespace: demoNamespace })).items) {
        const name = secret.metadata!.name!;
        if (name.startsWith("tfstate-") || name.startsWith("captf-") || secret.metadata!.labels?.[labels.managed]) leftovers.push(`Secret/${name}`);
      }
      const coordination = plane.kubeConfig.makeApiClient(k8s.CoordinationV1Api);
      for (const lease of (await coordination.listNamespacedLease({ namespace: demoNamespace })).items) leftovers.push(`Lease/${lease.metadata!.name}`);
      const rbac = plane.kubeConfig.makeApiClient(k8s.RbacAuthorizationV1Api);
      for (const binding of (await rbac.listNamespacedRoleBinding({ namespace: demoNamespace })).items) if (binding.metadata!.name!.startsWith("captf")) leftovers.push(`RoleBinding/${binding.metadata!.name}`);
      expect(leftovers).toEqual([]);
    });
  },
);
