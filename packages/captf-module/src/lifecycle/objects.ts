// The objects `captf-module test` creates for a role, and the ones it checks are gone: pure functions of the options.
import { apiGroup, groupVersion, kinds, labels } from "@captf/contract/api";
import type { Role } from "@captf/contract/roles";
import { boundedObjectName, nameLabelValue } from "@captf/contract/object-names";
import type { KubeObject, ObjectRef } from "./client.js";

export const capiGroupVersion = "cluster.x-k8s.io/v1beta2";

export interface LifecycleOptions {
  readonly role: Role;
  readonly namespace: string;
  /** The module image under test (spec.source.image). */
  readonly image: string;
  /** The name of every object the test creates. */
  readonly name: string;
  /** machine and machinepool: the Cluster (with a Ready TerraformCluster) to join. */
  readonly cluster?: string;
  /** spec.identityRef.name: required for a cluster; machines and pools fall back to their cluster's. */
  readonly identity?: string;
  /** spec.variables of the object at creation. */
  readonly variables?: Record<string, unknown>;
  /** The input change: merged into spec.variables (clusters; pools add it to their replica change). */
  readonly changeVariables?: Record<string, unknown>;
  /** machinepool: MachinePool.spec.replicas at creation; the input change adds one, the member delete takes it away. */
  readonly replicas: number;
  /** The drift check sets spec.drift.intervalSeconds to this for the check, then puts back what was there. */
  readonly driftIntervalSeconds: number;
  /** How long a step may wait for what it waits for. */
  readonly stepTimeoutSeconds: number;
  /** How often the objects are read while waiting. */
  readonly pollSeconds: number;
}

const kindOfRole = { cluster: kinds.cluster, machine: kinds.machine, machinepool: kinds.machinePool } as const;
const shortOfRole = { cluster: "c", machine: "m", machinepool: "mp" } as const;
const ownerKindOfRole = { cluster: "Cluster", machine: "Machine", machinepool: "MachinePool" } as const;

/** The Terraform object under test. */
export function subjectRef(options: LifecycleOptions): ObjectRef {
  return { apiVersion: groupVersion, kind: kindOfRole[options.role], namespace: options.namespace, name: options.name };
}

/** Its Cluster API owner the test creates: the Cluster, Machine or MachinePool. */
export function ownerRef(options: LifecycleOptions): ObjectRef {
  return { apiVersion: capiGroupVersion, kind: ownerKindOfRole[options.role], namespace: options.namespace, name: options.name };
}

export function bootstrapSecretRef(options: LifecycleOptions): ObjectRef {
  return { apiVersion: "v1", kind: "Secret", namespace: options.namespace, name: `${options.name}-bootstrap` };
}

/** The objects to create, in order: the bootstrap Secret (machines, pools), the Terraform object, its owner. */
export function lifecycleObjects(options: LifecycleOptions): KubeObject[] {
  const { role, namespace, name } = options;
  const metadata = (extra: Record<string, string> = {}) => ({
    name,
    namespace,
    labels: { "app.kubernetes.io/created-by": "captf-module", ...extra },
  });
  const infrastructureRef = { apiGroup, kind: kindOfRole[role], name };
  const spec: Record<string, unknown> = { source: { image: options.image } };
  if (options.identity) spec.identityRef = { name: options.identity };
  if (options.variables && Object.keys(options.variables).length > 0) spec.variables = options.variables;
  const subject: KubeObject = { apiVersion: groupVersion, kind: kindOfRole[role], metadata: metadata(), spec };
  if (role === "cluster")
    return [subject, { apiVersion: capiGroupVersion, kind: "Cluster", metadata: metadata(), spec: { infrastructureRef } }];
  const cluster = options.cluster!;
  const clusterLabel = { [labels.clusterName]: cluster };
  const secret = bootstrapSecretRef(options);
  const bootstrapSecret: KubeObject = {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { ...metadata(clusterLabel), name: secret.name },
    type: "cluster.x-k8s.io/secret",
    stringData: { format: "cloud-config", value: "#cloud-config\n" },
  };
  subject.metadata = metadata(clusterLabel);
  const bootstrap = { dataSecretName: secret.name };
  const owner: KubeObject =
    role === "machine"
      ? {
          apiVersion: capiGroupVersion,
          kind: "Machine",
          metadata: metadata(clusterLabel),
          spec: { clusterName: cluster, bootstrap, infrastructureRef },
        }
      : {
          apiVersion: capiGroupVersion,
          kind: "MachinePool",
          metadata: metadata(clusterLabel),
          spec: {
            clusterName: cluster,
            replicas: options.replicas,
            template: { spec: { clusterName: cluster, bootstrap, infrastructureRef } },
          },
        };
  return [bootstrapSecret, subject, owner];
}

/** `captf-inputs-<c|m|mp>-<name>`, bounded as the manager bounds a name too long for a Secret. */
export function durableInputsSecretName(role: Role, name: string): string {
  return boundedObjectName(`captf-inputs-${shortOfRole[role]}-`, name);
}

/** The label selector of the object's Jobs. */
export function jobSelector(options: LifecycleOptions): string {
  return `${labels.ownerKind}=${kindOfRole[options.role]},${labels.ownerName}=${nameLabelValue(options.name)}`;
}

/**
 * What is left of an object once it is gone, by name: its state Secrets (`tfstate-default-<suffix>` and Terraform's
 * `-part-N` chunks), its state backups (`captf-state-backup-<suffix>-<serial>`), its durable inputs, its run lease
 * (`captf-run-<suffix>`) and the backend's lock Lease (`lock-tfstate-default-<suffix>`), its Jobs.
 */
export function leftoverNames(
  options: LifecycleOptions,
  suffix: string | undefined,
  found: { secrets: readonly string[]; leases: readonly string[]; jobs: readonly string[] },
): string[] {
  const inputs = durableInputsSecretName(options.role, options.name);
  const secret = (name: string) =>
    name === inputs ||
    (suffix !== undefined && (name.startsWith(`tfstate-default-${suffix}`) || name.startsWith(`captf-state-backup-${suffix}-`)));
  const lease = (name: string) => suffix !== undefined && (name === `captf-run-${suffix}` || name === `lock-tfstate-default-${suffix}`);
  return [
    ...found.secrets.filter(secret).map((name) => `Secret/${name}`),
    ...found.leases.filter(lease).map((name) => `Lease/${name}`),
    ...found.jobs.map((name) => `Job/${name}`),
  ];
}
