import { createHash } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import type * as k8s from "@kubernetes/client-node";
import { noopModuleDirectory } from "@captf/module-noop";
import { stateLockLeaseName, stateSecretLabels, stateSecretName, stateSecretSuffix } from "@captf/render";
import { describeWithTools } from "@captf/testkit";
import { clusterAdapter, machineAdapter, poolAdapter } from "../kinds/adapters.js";
import { maxJobNameLength } from "../jobs/build-job.js";
import { durableInputsSecretName } from "./durable-inputs.js";
import { startJobExecutor, type JobExecutor } from "./job-executor.test-support.js";
import { allJobsFinished, preparePlane, type PlaneClients } from "./plane.test-support.js";
import { runLeaseName } from "./run-lease.js";
import type { KindAdapter } from "./types.js";
import { reconcileWorkspace, type ReconcilerDeps } from "./workspace-reconciler.js";

type Role = "cluster" | "machine" | "machinepool";
type Subject = { role: Role; plural: string; adapter: KindAdapter<Role>; name: string; clusterName: string };
type Read = { metadata?: { name?: string }; status?: { initialization?: { provisioned?: boolean } } };

const infra = { group: "infrastructure.cluster.x-k8s.io", version: "v1alpha1" };
const capi = { group: "cluster.x-k8s.io", version: "v1beta2" };
const images: Record<Role, string> = {
  cluster: "registry.invalid/captf/noop-cluster:v0.1.0",
  machine: "registry.invalid/captf/noop-machine:v0.1.0",
  machinepool: "registry.invalid/captf/noop-machinepool:v0.1.0",
};
const ownerNameLabel = "captf.infrastructure.cluster.x-k8s.io/owner-name";
const clusterNameLabel = "cluster.x-k8s.io/cluster-name";

/** A DNS-subdomain name of exactly `length` characters starting with `start`. */
const nameOfLength = (start: string, length: number) => `${start}-${"x".repeat(length)}`.slice(0, length);
/** What the reference writes for a name in a label: itself up to 63 characters, else the first 16 hex digits of its SHA-256. */
const referenceLabelValue = (name: string) => (name.length <= 63 ? name : createHash("sha256").update(name).digest("hex").slice(0, 16));

// Names of 253 characters, the longest Kubernetes accepts, for each role on the real API server, with
// the real runner and OpenTofu writing the state through the kubernetes backend: every label that
// carries a name holds what the reference writes (its 16-hex hash past 63), and the state is found
// again by the backend's label selector. Machines and pools join a Cluster of 63 characters (Cluster
// API's limit for spec.clusterName); the TerraformCluster's own Cluster is 253 long.
describeWithTools(["etcd", "kube-apiserver", "kube-controller-manager", "tofu", "go"], "names of 253 characters", () => {
  const namespace = `long-names-${Date.now().toString(36)}`;
  const longCluster = nameOfLength("cluster", 253);
  const memberCluster = nameOfLength("members", 63);
  const subjects: Subject[] = [
    { role: "cluster", plural: "terraformclusters", adapter: clusterAdapter, name: longCluster, clusterName: longCluster },
    {
      role: "machine",
      plural: "terraformmachines",
      adapter: machineAdapter,
      name: nameOfLength("machine", 253),
      clusterName: memberCluster,
    },
    {
      role: "machinepool",
      plural: "terraformmachinepools",
      adapter: poolAdapter,
      name: nameOfLength("pool", 253),
      clusterName: memberCluster,
    },
  ];
  let plane: PlaneClients;
  let deps: ReconcilerDeps;
  let executor: JobExecutor;
  /** Each subject's run Lease as read while its apply Job waited to run. */
  const runLeases = new Map<string, k8s.V1Lease>();
  /** Every Pod that ran, as it ended: its Job may go with its object before a test reads it. */
  const endedPods = new Map<string, k8s.V1Pod>();

  async function create(plural: string, body: Record<string, unknown>, group = capi): Promise<{ metadata: { uid: string } }> {
    return (await plane.custom.createNamespacedCustomObject({ ...group, namespace, plural, body })) as { metadata: { uid: string } };
  }
  const ownedBy = (kind: string, name: string, uid: string) => [
    { apiVersion: `${capi.group}/${capi.version}`, kind, name, uid, controller: true },
  ];

  /** A Cluster and its TerraformCluster of the same name, owned by it. */
  async function createCluster(name: string, annotations: Record<string, string> = {}): Promise<void> {
    const cluster = await create("clusters", {
      apiVersion: "cluster.x-k8s.io/v1beta2",
      kind: "Cluster",
      metadata: { name },
      spec: { infrastructureRef: { apiGroup: infra.group, kind: "TerraformCluster", name } },
    });
    await create(
      "terraformclusters",
      {
        apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
        kind: "TerraformCluster",
        metadata: { name, annotations, ownerReferences: ownedBy("Cluster", name, cluster.metadata.uid) },
        spec: { source: { image: images.cluster }, identityRef: { name: "unused" } },
      },
      infra,
    );
  }

  /** A Machine or MachinePool of the members' cluster, and its Terraform object of the same name, owned by it. */
  async function createMember(subject: Subject, kind: string, plural: string, spec: Record<string, unknown>): Promise<void> {
    const labels = { [clusterNameLabel]: memberCluster };
    const owner = await create(plural, {
      apiVersion: "cluster.x-k8s.io/v1beta2",
      kind,
      metadata: { name: subject.name, labels },
      spec: { clusterName: memberCluster, ...spec },
    });
    await create(
      subject.plural,
      {
        apiVersion: "infrastructure.cluster.x-k8s.io/v1alpha1",
        kind: `Terraform${kind}`,
        metadata: { name: subject.name, labels, ownerReferences: ownedBy(kind, subject.name, owner.metadata.uid) },
        spec: { source: { image: images[subject.role] } },
      },
      infra,
    );
  }

  beforeAll(async () => {
    plane = await preparePlane(namespace);
    deps = { client: plane.client };
    executor = startJobExecutor({
      kubeconfigPath: plane.kubeconfigPath,
      namespace,
      modules: Object.fromEntries(Object.entries(images).map(([role, image]) => [image, noopModuleDirectory(role as Role)])),
    });
    // The long Cluster and its TerraformCluster: no cluster-name label can hold the name, the ownerReference names it.
    await createCluster(longCluster);
    // The members' cluster is externally managed: its machines and pools receive {} as exports.
    await createCluster(memberCluster, { "cluster.x-k8s.io/managed-by": "external" });
    await plane.core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: "bootstrap" }, stringData: { value: "#cloud-config\n" } },
    });
    const [, machine, pool] = subjects as [unknown, Subject, Subject];
    await createMember(machine, "Machine", "machines", {
      bootstrap: { dataSecretName: "bootstrap" },
      infrastructureRef: { apiGroup: infra.group, kind: "TerraformMachine", name: machine.name },
      version: "v1.36.2",
    });
    await createMember(pool, "MachinePool", "machinepools", {
      replicas: 1,
      template: {
        spec: {
          clusterName: memberCluster,
          bootstrap: { dataSecretName: "bootstrap" },
          infrastructureRef: { apiGroup: infra.group, kind: "TerraformMachinePool", name: pool.name },
        },
      },
    });
  }, 120_000);
  afterAll(() => executor?.close());

  const read = (subject: Subject) =>
    plane.custom.getNamespacedCustomObject({ ...infra, namespace, plural: subject.plural, name: subject.name }).then(
      (object) => object as Read,
      () => undefined,
    );

  /** Passes until `until` holds of the object, running its Jobs between passes; keeps the run Lease a started Job holds. */
  async function drive(subject: Subject, until: (object: Read | undefined) => boolean): Promise<string[]> {
    const actions: string[] = [];
    const lease = runLeaseName(stateSecretSuffix({ role: subject.role, namespace, name: subject.name }));
    for (let pass = 0; pass < 12; pass++) {
      actions.push((await reconcileWorkspace(deps, subject.adapter, namespace, subject.name)).action);
      if (until(await read(subject))) return actions;
      const held = await plane.coordination.readNamespacedLease({ namespace, name: lease }).catch(() => undefined);
      if (held) runLeases.set(subject.name, held);
      if (await executor.runPending()) await allJobsFinished(plane.batch, namespace);
      for (const pod of (await plane.core.listNamespacedPod({ namespace })).items) endedPods.set(pod.metadata!.name!, pod);
    }
    throw new Error(`${subject.role} did not converge: ${actions.join(" | ")}`);
  }

  it.each(subjects.map((subject) => [subject.role, subject] as const))(
    "%s: applies, and its Job, Pod, run Lease, durable inputs and state carry the hashed name the backend finds its state by",
    async (_role, subject) => {
      await drive(subject, (object) => object?.status?.initialization?.provisioned === true);
      const ownerValue = referenceLabelValue(subject.name);
      const clusterValue = referenceLabelValue(subject.clusterName);
      expect(ownerValue).toMatch(/^[0-9a-f]{16}$/);
      const nameLabels = { [ownerNameLabel]: ownerValue, [clusterNameLabel]: clusterValue };
      const selector = `${ownerNameLabel}=${ownerValue}`;

      const [job, ...others] = (await plane.batch.listNamespacedJob({ namespace, labelSelector: selector })).items;
      expect(others).toEqual([]);
      expect(job!.metadata!.name!.length).toBeLessThanOrEqual(maxJobNameLength);
      expect(job!.metadata!.labels).toMatchObject({ ...nameLabels, "captf.infrastructure.cluster.x-k8s.io/op": "apply" });
      const pods = (await plane.core.listNamespacedPod({ namespace, labelSelector: selector })).items;
      expect(pods.map((pod) => [pod.metadata!.labels![clusterNameLabel], pod.status?.phase])).toEqual([[clusterValue, "Succeeded"]]);
      expect(runLeases.get(subject.name)).toMatchObject({
        metadata: { labels: nameLabels },
        spec: { holderIdentity: job!.metadata!.name },
      });

      const durableName = durableInputsSecretName(subject.role, subject.name);
      expect(durableName).toHaveLength(253);
      expect(durableName.endsWith(`-${createHash("sha256").update(subject.name).digest("hex").slice(0, 16)}`)).toBe(true);
      const durable = await plane.core.readNamespacedSecret({ namespace, name: durableName });
      expect(durable.metadata!.labels).toMatchObject({ [ownerNameLabel]: ownerValue });

      // The state as OpenTofu's backend wrote it, found by every label it lists with (its own three and captf's).
      const owner = { role: subject.role, namespace, name: subject.name, clusterName: subject.clusterName };
      const suffix = stateSecretSuffix(owner);
      const backendSelector = { ...stateSecretLabels(owner), tfstate: "true", tfstateSecretSuffix: suffix, tfstateWorkspace: "default" };
      const labelSelector = Object.entries(backendSelector)
        .map(([key, value]) => `${key}=${value}`)
        .join(",");
      const found = (await plane.core.listNamespacedSecret({ namespace, labelSelector })).items;
      expect(found.map((secret) => secret.metadata!.name)).toEqual([stateSecretName(suffix)]);
      expect(found[0]!.metadata!.labels).toMatchObject(nameLabels);
      const lock = await plane.coordination.readNamespacedLease({ namespace, name: stateLockLeaseName(suffix) });
      expect(lock.metadata!.labels).toMatchObject(nameLabels);
    },
    300_000,
  );

  it.each(subjects.map((subject) => [subject.role, subject] as const))(
    "%s: deleted, its destroy Job finds the state by the same labels and destroys what the apply created",
    async (_role, subject) => {
      await plane.custom.deleteNamespacedCustomObject({ ...infra, namespace, plural: subject.plural, name: subject.name });
      const actions = await drive(subject, (object) => object === undefined);
      expect(actions.some((action) => action.startsWith("started destroy"))).toBe(true);
      // The runner's result (the Pod's termination message) counts what the destroy step destroyed: none had it found no state.
      const destroys = [...endedPods.values()].filter(
        (pod) =>
          pod.metadata!.labels![ownerNameLabel] === referenceLabelValue(subject.name) &&
          pod.metadata!.labels!["captf.infrastructure.cluster.x-k8s.io/op"] === "destroy",
      );
      const results = destroys.map(
        (pod) =>
          JSON.parse(pod.status!.containerStatuses!.find((status) => status.name === "source")!.state!.terminated!.message!) as {
            changes?: { destroy: number };
            error: unknown;
          },
      );
      expect(results).toEqual([
        expect.objectContaining({ error: null, changes: expect.objectContaining({ destroy: expect.any(Number) }) }),
      ]);
      expect(results[0]!.changes!.destroy).toBeGreaterThan(0);
    },
    300_000,
  );
});
