// A cluster's progress as Cluster API reports it, object by object: the rows of the demo's live
// table and the e2e's definition of "Ready" (Cluster InfrastructureReady and Available, every
// Machine Running with a nodeRef, every MachinePool with all its replicas ready).
import * as k8s from "@kubernetes/client-node";
import type {
  Cluster,
  CustomObject,
  CustomObjectList,
  Machine,
  MachineDeployment,
  MachinePool,
  Status,
  TerraformObject,
} from "./objects.js";

export interface ProgressRow {
  object: string;
  phase: string;
  /** "Ready", or the conditions that are not True yet (type=status/reason). */
  conditions: string;
  /** The captf Job running for the object, if any. */
  activeJob: string;
  ready: boolean;
}

export interface Progress {
  rows: ProgressRow[];
  ready: boolean;
}

const capi = { group: "cluster.x-k8s.io", version: "v1beta2" };
const infra = { group: "infrastructure.cluster.x-k8s.io", version: "v1alpha1" };

/** Reads the cluster and everything of it, and says for each whether Cluster API counts it ready. */
export async function readProgress(kubeConfig: k8s.KubeConfig, namespace: string, clusterName: string): Promise<Progress> {
  const custom = kubeConfig.makeApiClient(k8s.CustomObjectsApi);
  const list = async <T extends CustomObject>(api: { group: string; version: string }, plural: string) =>
    (
      (await custom.listNamespacedCustomObject({
        ...api,
        namespace,
        plural,
        labelSelector: plural === "clusters" ? undefined : `cluster.x-k8s.io/cluster-name=${clusterName}`,
      })) as CustomObjectList<T>
    ).items;
  const [clusters, terraformClusters, deployments, machines, terraformMachines, pools, terraformPools] = await Promise.all([
    list<Cluster>(capi, "clusters"),
    list<TerraformObject>(infra, "terraformclusters"),
    list<MachineDeployment>(capi, "machinedeployments"),
    list<Machine>(capi, "machines"),
    list<TerraformObject>(infra, "terraformmachines"),
    list<MachinePool>(capi, "machinepools"),
    list<TerraformObject>(infra, "terraformmachinepools"),
  ]);
  const cluster = clusters.find((candidate) => candidate.metadata.name === clusterName);
  const rows: ProgressRow[] = [];
  if (!cluster)
    return { rows: [{ object: `Cluster/${clusterName}`, phase: "NotFound", conditions: "", activeJob: "", ready: false }], ready: false };

  rows.push(capiRow("Cluster", cluster, isTrue(cluster, "InfrastructureReady") && isTrue(cluster, "Available")));
  for (const object of terraformClusters) rows.push(captfRow("TerraformCluster", object));
  for (const deployment of deployments) {
    const desired = deployment.spec?.replicas ?? 0;
    rows.push(
      capiRow(
        "MachineDeployment",
        deployment,
        (deployment.status?.availableReplicas ?? 0) === desired &&
          (deployment.status?.replicas ?? 0) === desired &&
          isTrue(deployment, "Available"),
      ),
    );
  }
  for (const machine of machines)
    rows.push(
      capiRow(
        "Machine",
        machine,
        machine.status?.phase === "Running" && Boolean(machine.status?.nodeRef?.name) && isTrue(machine, "Ready"),
      ),
    );
  for (const object of terraformMachines) rows.push(captfRow("TerraformMachine", object));
  for (const pool of pools) {
    const desired = pool.spec?.replicas ?? 0;
    rows.push(
      capiRow(
        "MachinePool",
        pool,
        (pool.status?.readyReplicas ?? 0) === desired &&
          (pool.status?.replicas ?? 0) === desired &&
          (pool.status?.nodeRefs?.length ?? 0) === desired,
      ),
    );
  }
  for (const object of terraformPools) rows.push(captfRow("TerraformMachinePool", object));
  return { rows, ready: rows.every((row) => row.ready) };
}

/** An object whose status carries a phase and conditions. */
type Reporting = CustomObject<unknown, Status>;

function isTrue(object: Reporting, type: string): boolean {
  return (object.status?.conditions ?? []).some((condition) => condition.type === type && condition.status === "True");
}

function notTrue(object: Reporting): string {
  const pending = (object.status?.conditions ?? []).filter(
    (condition) => condition.status !== "True" && condition.type !== "Deleting" && condition.type !== "Paused",
  );
  return pending.map((condition) => `${condition.type}=${condition.status}/${condition.reason ?? ""}`).join(" ");
}

function capiRow(kind: string, object: Reporting, ready: boolean): ProgressRow {
  return {
    object: `${kind}/${object.metadata.name}`,
    phase: object.status?.phase ?? "",
    conditions: ready ? "Ready" : notTrue(object),
    activeJob: "",
    ready,
  };
}

function captfRow(kind: string, object: TerraformObject): ProgressRow {
  const ready = isTrue(object, "Ready");
  const job = object.status?.activeJob;
  return {
    object: `${kind}/${object.metadata.name}`,
    phase: ready ? "Ready" : object.metadata.deletionTimestamp ? "Deleting" : "Provisioning",
    conditions: ready ? "Ready" : notTrue(object),
    activeJob: job ? `${job.operation} ${job.name}` : "",
    ready,
  };
}

/** The rows as an aligned text table. */
export function formatProgress(rows: readonly ProgressRow[]): string {
  const header: ProgressRow = { object: "OBJECT", phase: "PHASE", conditions: "CONDITIONS", activeJob: "ACTIVE JOB", ready: true };
  const all = [header, ...rows];
  const width = (key: "object" | "phase" | "activeJob") => Math.max(...all.map((row) => row[key].length));
  const [objectWidth, phaseWidth, jobWidth] = [width("object"), width("phase"), width("activeJob")];
  return all
    .map((row) =>
      `${row.object.padEnd(objectWidth)}  ${row.phase.padEnd(phaseWidth)}  ${row.activeJob.padEnd(jobWidth)}  ${row.conditions}`.trimEnd(),
    )
    .join("\n");
}

/** The Jobs captf made in the namespace (labelled with their operation). */
export async function listCaptfJobs(kubeConfig: k8s.KubeConfig, namespace: string): Promise<k8s.V1Job[]> {
  return (
    await kubeConfig
      .makeApiClient(k8s.BatchV1Api)
      .listNamespacedJob({ namespace, labelSelector: "captf.infrastructure.cluster.x-k8s.io/op" })
  ).items;
}

/** Events of one reason in a namespace, oldest first (for example JobCreated: why each Job started). */
export async function listEventsOfReason(kubeConfig: k8s.KubeConfig, namespace: string, reason: string): Promise<k8s.CoreV1Event[]> {
  const events = (await kubeConfig.makeApiClient(k8s.CoreV1Api).listNamespacedEvent({ namespace, fieldSelector: `reason=${reason}` }))
    .items;
  const at = (event: k8s.CoreV1Event) => new Date(event.firstTimestamp ?? event.eventTime ?? 0).getTime();
  return events.sort((a, b) => at(a) - at(b));
}
